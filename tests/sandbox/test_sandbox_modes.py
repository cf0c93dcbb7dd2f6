"""The three ways a command runs, end to end: read-only (allowlisted, unasked: Landlock
read-only and seccomp NO_CHANGES), allowed (a program from AGENT_ALLOW, unasked: it may write
the workspace but has no network), and approved (it may write the workspace and use the
network). Also what every sandboxed command may read beside the system: git's settings files but
not the folder they live in, and the Python installation a workspace's venv runs on, wherever it
is, but nothing else of the home folder."""

import collections
import contextvars
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_model import answer, calls

import harness
import tools
from plainagent.approval import gate
from plainagent.approval import prompt as approval
from plainagent.sandbox import process as sandbox
from plainagent.sandbox import readable, seccomp
from plainagent.shell import allowlist, words

pytestmark = pytest.mark.skipif(
    bool(sandbox.landlock_missing() or seccomp.filter_missing()),
    reason=f"no Landlock or seccomp here: {sandbox.landlock_missing() or seccomp.filter_missing()}",
)
PROBE = """\
import socket
for name, family, kind, address in [
    ("udp", socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", {port})),
    ("unix", socket.AF_UNIX, socket.SOCK_STREAM, {path!r}),
]:
    try:
        with socket.socket(family, kind) as s:
            s.connect(address)
            s.send(b"hello")
        print(name, "sent")
    except OSError as error:
        print(name, error.strerror)
"""


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    """tmp_path/ws, with the tests' own Python first on PATH (python3 may be a pyenv shim the
    sandbox cannot read, and the shell would go on to another python3)."""
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "ws"


def told(
    model,
    workspace: Path,
    commands: list[str],
    decide=lambda name, arguments: "denied by the test",
    **settings,
) -> tuple[list[str], list[str]]:
    """Run the commands one a step through harness.run in the workspace: (what the model was told of
    each, the commands the approver was asked about). The approver denies unless told otherwise."""
    asked = []

    def approve(name: str, arguments: dict):
        asked.append(arguments["command"])
        return decide(name, arguments)

    model.queue(
        *(calls(("run_shell", {"command": command})) for command in commands), answer("done")
    )
    harness.run("go", approve=approve, workspace=workspace, **settings)
    return [model.messages(i + 1)[-1]["content"] for i in range(len(commands))], asked


@pytest.fixture
def listeners(tmp_path):
    """A UDP socket and a Unix stream socket with a path, listening on this
    machine, outside the workspace."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(tmp_path / "listen.sock"))
    unix.listen()
    for listener in (udp, unix):
        listener.setblocking(False)
    yield udp, unix
    udp.close()
    unix.close()


def received(udp: socket.socket, unix: socket.socket) -> list[str]:
    """Which listeners got something (the command has ended, so all it sent is there)."""
    got = []
    try:
        got.append(f"udp {udp.recv(100).decode()}")
    except BlockingIOError:
        pass
    try:
        connection, _ = unix.accept()
        connection.settimeout(5)
        got.append(f"unix {connection.recv(100).decode()}")
        connection.close()
    except BlockingIOError:
        pass
    return got


@pytest.mark.parametrize(
    "settings, reaches",
    [
        ({"allow": "python3"}, False),  # trusted: runs unasked, offline
        ({"decide": approval.approve_all}, True),  # asked and approved: keeps the network
        # --yes approves everything, trusted programs too
        (
            {"allow": "python3", "approve_all": True},
            True,
        ),
    ],
    ids=["allowed", "approved", "yes"],
)
def test_a_trusted_program_has_no_network_and_an_approved_one_has(
    model, workspace, listeners, settings, reaches
):
    udp, unix = listeners
    (workspace / "probe.py").write_text(
        PROBE.format(port=udp.getsockname()[1], path=unix.getsockname())
    )

    (result,), asked = told(model, workspace, ["python3 probe.py"], **settings)

    if reaches:
        assert "udp sent\nunix sent" in result and received(udp, unix) == [
            "udp hello",
            "unix hello",
        ]
    else:
        assert "udp Operation not permitted\nunix Operation not permitted" in result
        assert received(udp, unix) == []
    assert asked == (["python3 probe.py"] if "decide" in settings else [])


@pytest.fixture(scope="module")
def home_python(tmp_path_factory) -> Path:
    """A Python installation in a home folder of its own (as pyenv, uv or conda keep one), made of
    hard links to the tests' own base installation (copies across file systems): the sandbox may
    read the original, not this. Returns its interpreter,
    home/.pyenv/versions/test/bin/pythonX.Y."""
    home = tmp_path_factory.mktemp("home")
    base, version = (
        Path(sys.base_prefix),
        f"python{sys.version_info.major}.{sys.version_info.minor}",
    )
    prefix = home / ".pyenv" / "versions" / "test"

    def link(source, target):
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)

    shutil.copytree(
        base / "lib" / version,
        prefix / "lib" / version,
        copy_function=link,
        symlinks=True,
        ignore=lambda folder, names: (
            {"site-packages", "dist-packages", "__pycache__", "test"} & set(names)
        ),
    )
    for library in base.glob("lib/libpython*"):
        link(library, prefix / "lib" / library.name)
    (prefix / "bin").mkdir()
    link(
        os.path.realpath(getattr(sys, "_base_executable", sys.executable)), prefix / "bin" / version
    )
    (prefix / "bin" / "python3").symlink_to(version)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_test").write_text("PRIVATE KEY\n")
    return prefix / "bin" / version


@pytest.fixture
def venv(workspace, home_python, monkeypatch) -> Path:
    """workspace/.venv made from the home Python, with HOME set to that home; it finds
    pytest where the tests' own Python keeps it (a folder the sandbox may read), and has
    a pytest command of its own."""
    monkeypatch.setenv("HOME", str(home_python.parents[4]))
    subprocess.run(
        [str(home_python), "-m", "venv", "--without-pip", str(workspace / ".venv")],
        check=True,
        timeout=60,
    )
    packages = next((workspace / ".venv" / "lib").glob("python*/site-packages"))
    (packages / "tests_own.pth").write_text(str(Path(pytest.__file__).parent.parent) + "\n")
    script = workspace / ".venv" / "bin" / "pytest"
    script.write_text(
        f"#!{workspace}/.venv/bin/python\nimport sys\nfrom pytest import console_main\n"
        "sys.exit(console_main())\n"
    )
    script.chmod(0o755)
    return workspace / ".venv"


def test_a_venv_on_a_python_in_the_home_folder_runs_and_the_rest_of_home_stays_unreadable(
    model, workspace, venv
):
    results, asked = told(
        model,
        workspace,
        [".venv/bin/python -c \"print('from the venv')\"", "cat ~/.ssh/id_test"],
        decide=approval.approve_all,
    )

    assert asked == [".venv/bin/python -c \"print('from the venv')\"", "cat ~/.ssh/id_test"]
    assert results[0] == "exit code: 0\nstdout:\nfrom the venv\n"
    assert results[1].startswith("exit code: 1") and "Permission denied" in results[1]


def test_a_venv_made_since_the_last_command_with_the_same_tmp_runs_on_its_python_in_the_home_folder(
    workspace, home_python
):
    # The rules for a tmp are built once and kept: a venv made since, on an installation nothing
    # could read before, needs rules of its own.
    tmp = sandbox.make_tmp()

    def run(command: str) -> tuple[int, str]:
        process = sandbox.popen(
            command,
            sandbox.Policy(workspace, tmp, sandbox.WORKSPACE_WRITE),
            cwd=workspace,
            env={**os.environ, "TMPDIR": str(tmp)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            return process.wait(timeout=30), process.stdout.read().decode()
        finally:
            sandbox.finish(process)

    try:
        before = run("python3 -c \"print('before')\"")
        subprocess.run(
            [str(home_python), "-m", "venv", "--without-pip", str(workspace / ".venv")],
            check=True,
            timeout=60,
        )
        after = run(".venv/bin/python -c \"print('from the venv')\"")
    finally:
        sandbox.remove_tmp(tmp)

    assert (before, after) == ((0, "before\n"), (0, "from the venv\n"))


@pytest.mark.parametrize("name", [".venv", "venv"])
def test_the_installation_a_workspace_venv_runs_on_is_found_whichever_name_it_has(
    name, workspace, home_python
):
    # Found from the venv itself, not from PATH (None here): a command may run it by its path, as
    # the second venv beside the one on PATH, say.
    subprocess.run(
        [str(home_python), "-m", "venv", "--without-pip", str(workspace / name)],
        check=True,
        timeout=60,
    )

    assert sandbox.python_installations(workspace, None) == (str(home_python.parent.parent),)


def test_the_installation_a_copied_venv_runs_on_is_found_whatever_the_case_of_home_in_pyvenv_cfg(
    workspace, home_python
):
    # With --copies, bin/python links nowhere: only pyvenv.cfg names the installation, and Python
    # reads its keys in any case ("Home = ...").
    subprocess.run(
        [str(home_python), "-m", "venv", "--copies", "--without-pip", str(workspace / ".venv")],
        check=True,
        timeout=60,
    )
    config = workspace / ".venv" / "pyvenv.cfg"
    config.write_text(config.read_text().replace("home =", "Home ="))

    assert sandbox.python_installations(workspace, None) == (str(home_python.parent.parent),)


def test_a_home_folder_made_to_look_like_a_python_installation_is_never_made_readable(
    workspace, tmp_path, monkeypatch
):
    # bin/python3 and lib/python3.X/os.py at the top of the home folder, which the model may write:
    # a real installation's shape, but its prefix would be the whole home folder.
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    (home / "bin").mkdir(parents=True)
    shutil.copy(os.path.realpath(sys.executable), home / "bin" / "python3")
    (home / "lib" / "python3.12").mkdir(parents=True)
    (home / "lib" / "python3.12" / "os.py").write_text("")
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "pyvenv.cfg").write_text(f"home = {home}/bin\n")

    assert str(home) not in sandbox.python_installations(workspace, str(home / "bin"))


def test_a_pyvenv_cfg_that_points_at_the_home_folder_opens_nothing(
    workspace, home_python, monkeypatch
):
    home = home_python.parents[4]
    monkeypatch.setenv("HOME", str(home))
    (home / "bin").mkdir(exist_ok=True)
    # a "prefix" at home, with no lib/pythonX.Y/os.py
    os.link(home_python, home / "bin" / "python3")
    (workspace / "venv").mkdir()
    (workspace / "venv" / "pyvenv.cfg").write_text(f"home = {home}/bin\n")
    (workspace / ".venv").mkdir()
    (workspace / ".venv" / "pyvenv.cfg").write_text(f"home = {home_python.parent}\n")
    (workspace / "venv" / "bin").mkdir()
    (workspace / "venv" / "bin" / "python").symlink_to(home / ".ssh" / "id_test")

    assert sandbox.python_installations(workspace, None) == (str(home_python.parent.parent),)


def test_allowed_programs_build_and_test_in_the_workspace_without_asking_and_not_outside(
    model, workspace, venv, tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    (workspace / "Makefile").write_text(
        "all:\n\techo built > out.txt\noutside:\n\techo x > ../outside.txt\n"
    )
    (workspace / "pytest.ini").write_text("[pytest]\n")
    # the shell would go on to another pytest on PATH if this one failed
    (workspace / "test_tiny.py").write_text(
        f"import sys\ndef test_one():\n    assert sys.prefix == {str(venv)!r}\n"
    )

    results, asked = told(
        model,
        workspace,
        ["make", "pytest -q -p no:xdist test_tiny.py", "make outside"],
        allow="make,pytest",
    )

    assert asked == []
    assert (
        results[0].startswith("exit code: 0") and (workspace / "out.txt").read_text() == "built\n"
    )
    assert results[1].startswith("exit code: 0") and "1 passed" in results[1]
    assert (workspace / ".pytest_cache").is_dir()
    assert results[2].startswith("exit code: 2") and "Permission denied" in results[2]
    assert not (tmp_path / "outside.txt").exists()


def test_make_asks_unless_it_is_allowed(model, workspace):
    (workspace / "Makefile").write_text("all:\n\techo built > out.txt\n")

    results, asked = told(model, workspace, ["make"])

    assert (
        asked == ["make"]
        and results == ["denied by the test"]
        and not (workspace / "out.txt").exists()
    )


@pytest.mark.parametrize(
    "listed, named",
    [
        ("make,,pytest", "an empty name"),
        ("make,pytest -x", "'pytest -x'"),
        ("make,/usr/bin/rm", "'/usr/bin/rm'"),
        ("make,..\\rm", "'..\\\\rm'"),
        ("make,-rf", "'-rf'"),
        (",", "an empty name"),
    ],
)
def test_an_allow_list_that_cannot_be_right_is_one_line_and_exit_2(cli, listed, named):
    result = cli("x", "--allow", listed)

    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        f"error: AGENT_ALLOW (--allow) must be program names separated by commas, like "
        f"make,pytest, not {listed!r}: {named} is not a program's name\n"
    )


def started(command: str, workspace: Path, mode: str | None, policy: str | None) -> tuple[int, str]:
    """Run a command under the sandbox mode and filter policy: (exit code, stdout and stderr)."""
    tmp = sandbox.make_tmp()
    try:
        process = sandbox.popen(
            command,
            sandbox.Policy(workspace, tmp, mode, seccomp=policy),
            cwd=workspace,
            env={**os.environ, "TMPDIR": str(tmp)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            output = process.communicate(timeout=30)[0].decode()
        finally:
            sandbox.finish(process)
    finally:
        sandbox.remove_tmp(tmp)
    return process.returncode, output


@pytest.mark.parametrize("change", ['chmod 600 "$TMPDIR/f"', 'touch -d 2001-01-01 "$TMPDIR/f"'])
def test_read_only_commands_cannot_change_files_metadata_even_in_their_tmpdir(workspace, change):
    command = f'touch "$TMPDIR/f" && {change}'

    assert started(command, workspace, sandbox.READ_ONLY, None) == (0, "")
    code, output = started(command, workspace, sandbox.READ_ONLY, seccomp.NO_CHANGES)
    assert code == 1 and "Operation not permitted" in output
    assert started(command, workspace, sandbox.WORKSPACE_WRITE, seccomp.NO_NETWORK) == (0, "")


def test_an_unasked_read_only_command_runs_under_the_filter(workspace, as_a_run, monkeypatch):
    """Seen from outside while it runs: cat waits on a pipe in the workspace, and
    its status shows a filter."""
    monkeypatch.chdir(workspace)
    config = as_a_run(workspace=workspace)
    os.mkfifo(workspace / "pipe")
    (workspace / "notes.txt").write_text("notes\n")
    statuses, done = [], []
    in_this_run = contextvars.copy_context()
    runner = threading.Thread(
        target=lambda: done.append(
            in_this_run.run(tools.run_shell, "cat pipe notes.txt", settings=config)
        )
    )
    runner.start()
    deadline, pipe = time.monotonic() + 10, None
    while pipe is None and time.monotonic() < deadline:
        with sandbox.lock:
            statuses = [Path(f"/proc/{pid}/status").read_text() for pid in sandbox.roots]
        # opened once cat reads from it (a blocking open would wait for good if cat never came)
        try:
            pipe = os.open(workspace / "pipe", os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            time.sleep(0.01)
    assert pipe is not None, "cat never opened the pipe"
    os.write(pipe, b"through the pipe\n")
    os.close(pipe)
    runner.join(10)

    assert statuses and "Seccomp:\t2" in statuses[0] and "NoNewPrivs:\t1" in statuses[0]
    assert done == ["exit code: 0\nstdout:\nthrough the pipe\nnotes\n"]


def test_git_reads_its_settings_files_but_not_its_credential_store(
    workspace, tmp_path, monkeypatch
):
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("[user]\n\tname = Settings Read\n")
    (home / ".config" / "git" / "credentials").write_text("https://me:token@example.com\n")
    monkeypatch.setenv("HOME", str(home))
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)

    assert started("git config user.name", workspace, sandbox.READ_ONLY, seccomp.NO_CHANGES) == (
        0,
        "Settings Read\n",
    )
    code, output = started(
        "cat ~/.config/git/credentials; ls ~/.config/git",
        workspace,
        sandbox.READ_ONLY,
        seccomp.NO_CHANGES,
    )
    assert "token" not in output and output.count("Permission denied") == 2
    code, output = started("cat ~/.config/git/credentials", workspace, None, None)
    # readable without the sandbox: the test can fail
    assert output == "https://me:token@example.com\n"


def test_where_seccomp_is_missing_the_run_says_so_in_one_note_and_commands_still_run(
    model, workspace, monkeypatch
):
    monkeypatch.setattr(
        seccomp, "filter_missing", lambda: "seccomp filters are not available on this kernel"
    )
    (workspace / "notes.txt").write_text("notes\n")
    events = []
    model.queue(calls(("run_shell", {"command": "cat notes.txt"})), answer("done"))

    harness.run("go", workspace=workspace, on_event=events.append)

    assert model.messages(1)[-1]["content"] == "exit code: 0\nstdout:\nnotes\n"
    assert [event["notes"] for event in events if event.get("type") == "start"] == [
        [
            "commands run without seccomp here (seccomp filters are not available on this kernel): "
            "those that run without asking can still use UDP and Unix sockets and change files' "
            "modes and times; the allowlist and approval still apply"
        ]
    ]


def test_one_note_names_both_missing_parts_once():

    assert sandbox.sandbox_note("not Linux", "not Linux") == (
        "commands run without a kernel sandbox here (not Linux); the allowlist and approval still "
        "apply; --undo takes back what approved commands change in the workspace only"
    )
    assert sandbox.sandbox_note("Landlock is turned off", "no filters") == (
        "commands run without a kernel sandbox here (Landlock is turned off; seccomp: no filters); "
        "the allowlist and approval still apply; --undo takes back what approved commands change "
        "in the workspace only"
    )


def test_a_trusted_git_commits_unasked_with_the_repositorys_hooks_off(
    model, workspace, tmp_path, monkeypatch
):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".gitconfig").write_text(
        "[user]\n\tname = From Gitconfig\n\temail = t@example.com\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    hook = workspace / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch hook-ran\n")
    hook.chmod(0o755)

    results, asked = told(model, workspace, ["git commit -q --allow-empty -m wip"], allow="git")

    assert asked == [] and results == ["exit code: 0"]
    log = subprocess.run(
        ["git", "log", "--format=%an %s"], cwd=workspace, capture_output=True, text=True
    ).stdout
    assert log == "From Gitconfig wip\n" and not (workspace / "hook-ran").exists()


@pytest.mark.parametrize(
    "command, verdict",
    [
        ("ls -la && head -n 3 notes.txt", allowlist.Verdict("read-only")),
        ("ls && make -j4 all && pytest -q", allowlist.Verdict("allowed")),
        # trusted git is not held to the read-only table
        (
            "git commit -m wip",
            allowlist.Verdict("allowed"),
        ),
        ("make && rm x", allowlist.Verdict(None, "rm is not on the allowlist")),
        ("make -C ..", allowlist.Verdict(None, "it names a path outside the workspace")),
        (
            "python3 -c 'print(1)'",
            allowlist.Verdict(None, "only python --version runs without asking"),
        ),
    ],
)
def test_one_decision_says_how_a_command_runs(command, verdict, tmp_path, monkeypatch, as_a_run):
    monkeypatch.chdir(tmp_path)
    config = as_a_run(allow="make,pytest,git")

    # (and, unasked, the command as it runs)
    assert allowlist.command_mode(words.parse(command), config)[:2] == verdict[:2]
    assert allowlist.reason_to_ask(command, config) == verdict.reason
    assert gate.needs_approval(tools.run_shell, {"command": command}, config) is (
        verdict.mode is None
    )


def test_a_pyvenv_cfg_that_is_a_link_is_not_followed(workspace, home_python, tmp_path):
    # A command may put a link there: the agent, unconfined, would open what
    # it names (a device, say).
    (tmp_path / "elsewhere.cfg").write_text(f"home = {home_python.parent}\n")
    (workspace / ".venv").mkdir()
    (workspace / ".venv" / "pyvenv.cfg").symlink_to(tmp_path / "elsewhere.cfg")

    assert sandbox.python_installations(workspace, None) == ()


def test_a_named_pipe_for_pyvenv_cfg_does_not_hold_up_a_command(workspace, as_a_run, monkeypatch):
    monkeypatch.chdir(workspace)
    config = as_a_run(workspace=workspace)
    (workspace / ".venv").mkdir()
    os.mkfifo(workspace / ".venv" / "pyvenv.cfg")
    (workspace / "notes.txt").write_text("notes\n")
    in_this_run, done = contextvars.copy_context(), []
    runner = threading.Thread(
        target=lambda: done.append(
            in_this_run.run(tools.run_shell, "cat notes.txt", settings=config)
        ),
        daemon=True,
    )
    runner.start()
    runner.join(10)

    assert done == ["exit code: 0\nstdout:\nnotes\n"]


SWAP_FOR_A_PIPE = """
import os, sys
venv = sys.argv[1]
while True:  # pyvenv.cfg a regular file, then a named pipe, each put there whole by a rename
    for kept in ("file", "pipe"):
        os.link(os.path.join(venv, kept), os.path.join(venv, "next"))
        os.replace(os.path.join(venv, "next"), os.path.join(venv, "pyvenv.cfg"))
"""


def test_a_pyvenv_cfg_swapped_for_a_named_pipe_after_the_look_does_not_hold_up_a_command(workspace):
    # Between the agent's look at pyvenv.cfg (a regular file) and its open, a command left running
    # may put a named pipe there: the open itself must not wait for a writer that never comes.
    venv = workspace / ".venv"
    venv.mkdir()
    (venv / "file").write_text("home = /usr/bin\n")
    os.mkfifo(venv / "pipe")
    swapper = subprocess.Popen([sys.executable, "-c", SWAP_FOR_A_PIPE, str(venv)])
    looks = []

    def look_for_five_seconds():
        began = time.monotonic()
        while time.monotonic() - began < 5:
            sandbox.python_installations(workspace, None)
            looks.append(1)

    looker = threading.Thread(target=look_for_five_seconds, daemon=True)
    try:
        looker.start()
        looker.join(20)
        held_up = looker.is_alive()
    finally:
        swapper.kill()
        swapper.wait()
        if looker.is_alive():  # let it go: a writer opens the pipe it waits on
            os.close(os.open(venv / "pipe", os.O_WRONLY | os.O_NONBLOCK))
    assert not held_up, f"held up by a named pipe after {len(looks)} looks"
    assert len(looks) > 100


SWAP_FOR_A_LINK = """
import os, sys
venv = sys.argv[1]
# pyvenv.cfg a regular file, then a link to a file elsewhere, each put there whole by a rename
while True:
    os.link(os.path.join(venv, "file"), os.path.join(venv, "next"))
    os.replace(os.path.join(venv, "next"), os.path.join(venv, "pyvenv.cfg"))
    os.symlink(sys.argv[2], os.path.join(venv, "next"))
    os.replace(os.path.join(venv, "next"), os.path.join(venv, "pyvenv.cfg"))
"""


def test_a_pyvenv_cfg_swapped_for_a_link_after_the_look_is_not_read_through_it(workspace, tmp_path):
    # Between the agent's look at pyvenv.cfg (a regular file) and its open, a command left
    # running may put a link there: the agent, unconfined, must not read the file it leads to
    # (whose home would be made readable).
    venv, elsewhere = workspace / ".venv", tmp_path / "elsewhere.cfg"
    venv.mkdir()
    (venv / "file").write_text("home = /usr/bin\n")
    elsewhere.write_text(f"home = {tmp_path / 'secret'}\n")
    swapper = subprocess.Popen([sys.executable, "-c", SWAP_FOR_A_LINK, str(venv), str(elsewhere)])
    homes = collections.Counter()
    try:
        began = time.monotonic()
        while time.monotonic() - began < 3:
            homes[readable.venv_home(venv / "pyvenv.cfg")] += 1
    finally:
        swapper.kill()
        swapper.wait()
    assert homes["/usr/bin"] > 0 and str(tmp_path / "secret") not in homes, homes


CAPABILITIES = (
    "import ctypes; header = (ctypes.c_uint32 * 2)(0x20080522, 0); sets = (ctypes.c_uint32 * 6)(); "
    "ctypes.CDLL(None).capget(header, sets); print(list(sets))"
)


def capabilities() -> list[int]:
    """This process's capability sets as capget() gives them (effective, permitted,
    inheritable; twice 32 bits)."""
    namespace: dict = {}
    exec(CAPABILITIES.replace("print(list(sets))", "found = list(sets)"), namespace)
    return namespace["found"]


@pytest.mark.parametrize(
    "settings, kept",
    [({"allow": "python3"}, False), ({"decide": approval.approve_all}, True)],
    ids=["allowed", "approved"],
)
def test_an_unasked_command_has_no_capabilities_even_as_root_and_an_approved_one_keeps_them(
    model, workspace, settings, kept
):
    # As root, a trusted python3 could otherwise reboot the machine, set its
    # clock or load a kernel module.
    results, _ = told(model, workspace, [f"python3 -c '{CAPABILITIES}'"], **settings)

    assert results[0] == f"exit code: 0\nstdout:\n{capabilities() if kept else [0] * 6}\n"


@pytest.mark.parametrize(
    "settings",
    [{"allow": "python3"}, {"decide": approval.approve_all}],
    ids=["allowed", "approved"],
)
def test_the_agents_env_in_a_folder_commands_may_read_stays_hidden(
    model, workspace, home_python, monkeypatch, settings
):
    # As if the agent were installed in /opt or /usr/local: a readable folder outside the
    # workspace. Here, in the Python installation the command's python3 runs on, which
    # the sandbox lets commands read.
    agent = home_python.parents[1] / "agent"
    agent.mkdir(exist_ok=True)
    (agent / ".env").write_text("NOT_A_KEY=hidden value\n")
    (agent / "README.md").write_text("readable\n")
    monkeypatch.setattr("plainagent.core.settings.DOTENV", agent / ".env")
    monkeypatch.setenv("PATH", f"{home_python.parent}{os.pathsep}{os.environ['PATH']}")
    read = "python3 -c 'print(open(\"{}\").read())'"

    results, _ = told(
        model,
        workspace,
        [read.format(agent / "README.md"), read.format(agent / ".env")],
        **settings,
    )

    assert results[0] == "exit code: 0\nstdout:\nreadable\n\n"
    assert results[1].startswith("exit code: 1\nstderr:\n") and "Permission denied" in results[1]


def test_the_python_installation_the_agent_runs_on_is_read_only_when_the_workspace_holds_it(
    model, workspace, monkeypatch
):
    # As when the agent runs on the project's own .venv: a .pth file put in its site-packages would
    # run inside the agent at its next start, outside any sandbox.
    packages = workspace / ".venv" / "lib" / "site-packages"
    packages.mkdir(parents=True)
    (workspace / "src").mkdir()
    monkeypatch.setattr(sys, "prefix", str(workspace / ".venv"))
    write = 'python3 -c \'open("{}", "w").write("import os")\''

    results, asked = told(
        model,
        workspace,
        [write.format(".venv/lib/site-packages/evil.pth"), write.format("src/fine.py")],
        allow="python3",
    )

    assert (
        asked == [] and "Permission denied" in results[0] and not (packages / "evil.pth").exists()
    )
    assert (
        results[1] == "exit code: 0" and (workspace / "src" / "fine.py").read_text() == "import os"
    )


def test_a_link_in_place_of_gits_settings_file_opens_nothing_outside_when_the_workspace_is_home(
    model, workspace, tmp_path, monkeypatch
):
    # ~/.gitconfig is readable to commands; with the home folder as the workspace, a command could
    # make it a link to any folder, and the next command's rules would have let it read that folder.
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP SECRET")
    (workspace / ".gitconfig").symlink_to(tmp_path / "outside")
    (workspace / "notes.txt").write_text("mine")
    monkeypatch.setenv("HOME", str(workspace))
    read = "python3 -c 'print(open(\"{}\").read())'"

    results, _ = told(
        model,
        workspace,
        [read.format(tmp_path / "outside" / "secret.txt"), read.format("notes.txt")],
        allow="python3",
    )

    assert "Permission denied" in results[0] and "TOP SECRET" not in results[0]
    assert results[1] == "exit code: 0\nstdout:\nmine\n"


def test_a_pyvenv_cfg_that_points_above_the_home_folder_opens_nothing(
    workspace, home_python, monkeypatch
):
    # A "prefix" that holds the home folder, with bin/python3 and
    # lib/pythonX.Y/os.py made to look like one.
    home = home_python.parents[4]
    above = home.parent
    monkeypatch.setenv("HOME", str(home))
    (above / "bin").mkdir(exist_ok=True)
    os.link(home_python, above / "bin" / "python3")
    (above / "lib" / home_python.name).mkdir(parents=True, exist_ok=True)
    (above / "lib" / home_python.name / "os.py").write_text("")
    (workspace / ".venv").mkdir()
    (workspace / ".venv" / "pyvenv.cfg").write_text(f"home = {above}/bin\n")

    assert sandbox.python_installations(workspace, None) == ()


def test_with_the_sandbox_off_a_trusted_program_runs_without_the_system_call_filter(
    workspace, monkeypatch, as_a_run
):
    monkeypatch.setenv("AGENT_WORKSPACE", str(workspace))
    monkeypatch.setenv("AGENT_ALLOW", "python3")
    # prctl(PR_GET_SECCOMP): 2 under a filter, 0 without
    status = (
        "python3 -c \"import ctypes; print('seccomp', ctypes.CDLL(None).prctl(21, 0, 0, 0, 0))\""
    )
    on, off = as_a_run(sandbox="auto"), as_a_run(sandbox="off")

    filtered, unfiltered = (tools.run_shell(status, settings=config) for config in (on, off))

    assert filtered == "exit code: 0\nstdout:\nseccomp 2\n"
    assert unfiltered == "exit code: 0\nstdout:\nseccomp 0\n"


@pytest.mark.parametrize("shape", ["an activated venv", "pyenv's root"])
def test_a_home_folder_made_to_look_like_a_venv_or_pyenvs_root_is_never_made_readable(
    shape, tmp_path, monkeypatch
):
    # The model can write pyvenv.cfg, bin/python3, shims/ and libexec/pyenv at the top of a home
    # folder it may write (the workspace is the home folder, say): PATH then leads to the home
    # folder itself, which stays closed.
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    if shape == "an activated venv":
        (home / "bin").mkdir(parents=True)
        (home / "bin" / "python3").symlink_to(os.path.realpath(sys.executable))
        (home / "pyvenv.cfg").write_text(
            f"home = {os.path.dirname(os.path.realpath(sys.executable))}\n"
        )
        path = str(home / "bin")
    else:
        (home / "shims").mkdir(parents=True)
        (home / "libexec").mkdir()
        (home / "libexec" / "pyenv").write_text("#!/bin/sh\n")
        path = str(home / "shims")
    workspace = tmp_path / "workspace"
    workspace.mkdir()

    assert str(home) not in sandbox.python_installations(workspace, path)
