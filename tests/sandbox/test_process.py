"""The kernel sandbox and the clean-up behind run_shell, against real processes: what a
read-only or a workspace-write command may and may not do, and that nothing a command started is
left running after finish()."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import alive, needs_landlock

from plainagent.sandbox import landlock
from plainagent.sandbox import process as sandbox

LINUX = sys.platform == "linux"
needs_linux = pytest.mark.skipif(not LINUX, reason="the subreaper clean-up is Linux only")
PYTHON = sys.executable


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "workspace"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\n")
    return folder


@pytest.fixture
def private_tmp():
    folder = sandbox.make_tmp()
    yield folder
    sandbox.remove_tmp(folder)


@pytest.fixture
def leftovers():
    """Pids and processes a test saw; whatever still runs at the end is killed,
    even if the test failed."""
    seen: list[int | subprocess.Popen] = []
    yield seen
    for item in seen:
        try:
            if isinstance(item, int):
                os.kill(item, signal.SIGKILL)
            else:
                os.killpg(item.pid, signal.SIGKILL)
        except OSError:
            pass
    for item in seen:
        if not isinstance(item, int):
            sandbox.finish(item)


@pytest.fixture
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def run(
    command: str,
    mode: str | None,
    workspace: Path,
    tmp: Path,
    protected: tuple[Path, ...] = (),
    **popen_kwargs,
) -> tuple[int, str, str]:
    process = sandbox.popen(
        command,
        sandbox.Policy(workspace, tmp, mode, protected=protected),
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp)},
        **popen_kwargs,
    )
    try:
        out, err = process.communicate(timeout=60)
    finally:
        sandbox.finish(process)
    return process.returncode, out.decode(), err.decode()


def connect(port: int) -> str:
    return (
        f"{PYTHON} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), "
        'timeout=10)"'
    )


def got_connection(server: socket.socket) -> bool:
    """Whether anything connected: the kernel completes a connection into the
    backlog without accept()."""
    server.setblocking(False)
    try:
        server.accept()[0].close()
        return True
    except BlockingIOError:
        return False


@needs_landlock
def test_read_only_cannot_create_a_file_in_the_workspace(workspace, private_tmp):
    code, _, err = run("touch made.txt", sandbox.READ_ONLY, workspace, private_tmp)
    assert code != 0 and "Permission denied" in err
    assert sandbox.blocked(code, err)
    code, _, err = run(
        f"{PYTHON} -c \"open('made.txt', 'w')\"", sandbox.READ_ONLY, workspace, private_tmp
    )
    assert code != 0 and "PermissionError" in err
    code, _, _ = run("echo changed > notes.txt", sandbox.READ_ONLY, workspace, private_tmp)
    assert code != 0
    assert sorted(p.name for p in workspace.iterdir()) == ["notes.txt"]
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\n"


@needs_landlock
def test_read_only_cannot_write_outside_the_workspace(tmp_path, workspace, private_tmp):
    outside = tmp_path / "outside"
    outside.mkdir()
    code, _, err = run(f"echo x > {outside}/made.txt", sandbox.READ_ONLY, workspace, private_tmp)
    assert code != 0 and "Permission denied" in err
    assert list(outside.iterdir()) == []


@needs_landlock
@pytest.mark.parametrize("mode", [sandbox.READ_ONLY, sandbox.WORKSPACE_WRITE])
def test_no_command_truncates_a_file_by_its_path_where_it_may_not_write(
    mode, tmp_path, workspace, private_tmp
):
    # truncate(2) by path opens nothing: Landlock refuses it only where its ruleset
    # handles truncation (ABI 3 on).
    if landlock.landlock_status()[0] < 3:
        pytest.skip("Landlock before ABI 3 cannot refuse a truncate by path")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.txt").write_text("kept\n")
    (workspace / "notes.txt").write_text("notes\n")
    targets = [outside / "kept.txt"] + (
        [workspace / "notes.txt"] if mode == sandbox.READ_ONLY else []
    )
    for target in targets:
        code, _, err = run(
            f"python3 -c 'import os; os.truncate(\"{target}\", 0)'", mode, workspace, private_tmp
        )
        assert code != 0 and "Permission denied" in err, (target, err)
    assert (outside / "kept.txt").read_text() == "kept\n"
    assert (workspace / "notes.txt").read_text() == "notes\n"


@needs_landlock
def test_read_only_cannot_read_a_folder_that_is_neither_workspace_nor_system(
    tmp_path, workspace, private_tmp
):
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "key.txt").write_text("the-secret-value")
    code, out, err = run(
        f"cat {secrets}/key.txt; ls {secrets}", sandbox.READ_ONLY, workspace, private_tmp
    )
    assert code != 0 and "Permission denied" in err
    assert "the-secret-value" not in out and "key.txt" not in out


@needs_landlock
def test_read_only_cannot_connect_to_a_local_listener(workspace, private_tmp, listener):
    if sandbox.landlock_status()[0] < 4:
        pytest.skip("Landlock ABI < 4 cannot restrict TCP")
    code, _, err = run(
        connect(listener.getsockname()[1]), sandbox.READ_ONLY, workspace, private_tmp
    )
    assert code != 0 and "PermissionError" in err
    assert not got_connection(listener)


@needs_landlock
def test_read_only_still_reads_the_workspace_and_runs_programs(workspace, private_tmp):
    commands = {
        "ls": "notes.txt",
        "cat notes.txt": "alpha\nbeta",
        "grep -n beta notes.txt": "2:beta",
        "git --version": "git version",
        f"{PYTHON} -c 'print(1)'": "1",
    }
    for command, expected in commands.items():
        code, out, err = run(command, sandbox.READ_ONLY, workspace, private_tmp)
        assert (code, expected in out) == (0, True), (command, out, err)


@needs_landlock
def test_read_only_runs_git_in_a_repository_but_cannot_commit(workspace, private_tmp):
    subprocess.run(
        "git init -q && git add notes.txt && git -c user.name=t -c user.email=t@t commit -qm one",
        shell=True,
        cwd=workspace,
        check=True,
    )
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    code, out, err = run(
        "git status --short && git log --format=%s && git diff --stat",
        sandbox.READ_ONLY,
        workspace,
        private_tmp,
    )
    assert (code, out.splitlines()[:2]) == (0, [" M notes.txt", "one"]), err
    code, _, err = run(
        "git -c user.name=t -c user.email=t@t commit -qam two",
        sandbox.READ_ONLY,
        workspace,
        private_tmp,
    )
    assert code != 0 and sandbox.blocked(code, err)
    log = subprocess.run(
        ["git", "log", "--format=%s"], cwd=workspace, capture_output=True, text=True
    ).stdout
    assert log == "one\n"


@needs_landlock
def test_read_only_may_write_to_dev_null_and_its_private_tmp(workspace, private_tmp):
    code, out, err = run(
        'echo gone > /dev/null && echo kept > "$TMPDIR/scratch" && cat "$TMPDIR/scratch"',
        sandbox.READ_ONLY,
        workspace,
        private_tmp,
    )
    assert (code, out, err) == (0, "kept\n", "")
    assert (private_tmp / "scratch").read_text() == "kept\n"


@needs_landlock
def test_workspace_write_writes_in_the_workspace_only(tmp_path, workspace, private_tmp):
    outside = tmp_path / "outside"
    outside.mkdir()
    code, _, err = run(
        "echo new > made.txt && mkdir sub && mv made.txt sub/",
        sandbox.WORKSPACE_WRITE,
        workspace,
        private_tmp,
    )
    assert (code, err) == (0, "")
    assert (workspace / "sub" / "made.txt").read_text() == "new\n"
    code, _, err = run(
        f"echo x > {outside}/made.txt", sandbox.WORKSPACE_WRITE, workspace, private_tmp
    )
    assert code != 0 and "Permission denied" in err
    assert list(outside.iterdir()) == []


@needs_landlock
def test_workspace_write_moves_and_hard_links_a_file_from_one_folder_of_the_workspace_to_another(
    workspace, private_tmp
):
    # Landlock refuses reparenting (rename, link) with EXDEV unless the rule holds REFER; mv would
    # then copy and delete, so the file keeps its inode only where the move really is a rename.
    inode = (workspace / "notes.txt").stat().st_ino
    code, _, err = run(
        f"mkdir a b && ln notes.txt a/linked.txt && "
        f"{PYTHON} -c \"import os; os.rename('notes.txt', 'b/notes.txt')\"",
        sandbox.WORKSPACE_WRITE,
        workspace,
        private_tmp,
    )

    assert (code, err) == (0, "")
    moved, linked = (workspace / "b" / "notes.txt").stat(), (workspace / "a" / "linked.txt").stat()
    assert moved.st_ino == linked.st_ino == inode and moved.st_nlink == 2


@needs_landlock
def test_a_link_beside_a_hidden_file_lends_a_command_nothing_outside_the_workspace(
    tmp_path, workspace, private_tmp
):
    # With the agent's .env in the workspace, each entry beside it gets rules of its own: a link
    # among them must not, or the rule would land on what it points to, outside.
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / ".env").write_text("GROQ_API_KEY=hidden\n")
    (workspace / "out").symlink_to(outside)
    process = sandbox.popen(
        "echo x > out/made.txt; echo y > notes.txt",
        sandbox.Policy(
            workspace, private_tmp, sandbox.WORKSPACE_WRITE, hidden=(workspace / ".env",)
        ),
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _, err = process.communicate(timeout=60)
    finally:
        sandbox.finish(process)

    assert list(outside.iterdir()) == [] and b"Permission denied" in err
    assert (workspace / "notes.txt").read_text() == "y\n"  # the entries beside .env stay writable


@needs_landlock
def test_a_protected_folder_not_there_yet_keeps_the_rest_of_the_workspace_writable(
    workspace, private_tmp
):
    # The runs of a state folder inside the workspace (the home folder the workspace): while no
    # folder of its path is there, freezing its nearest one would be freezing the whole workspace.
    protected = workspace / ".local" / "state" / "plainagent"
    code, _, err = run(
        "touch made && mkdir sub && touch sub/made",
        sandbox.WORKSPACE_WRITE,
        workspace,
        private_tmp,
        protected=(protected,),
    )

    assert code == 0, err
    assert (workspace / "made").exists() and (workspace / "sub" / "made").exists()


@needs_landlock
@pytest.mark.parametrize("node", ["disk b 8 0", "null c 1 3"], ids=["block", "character"])
def test_workspace_write_cannot_make_device_nodes(workspace, private_tmp, node):
    # As root, mknod makes either kind (a block device opens a whole disk, a character device
    # /dev/mem's memory; a harmless one stands in here): each is a right of its own in
    # Landlock, and neither is given.
    code, _, _ = run(f"mknod {node}", sandbox.WORKSPACE_WRITE, workspace, private_tmp)
    assert code != 0
    assert not (workspace / node.split()[0]).exists()


@needs_landlock
def test_workspace_write_may_use_the_network(workspace, private_tmp, listener):
    code, _, err = run(
        connect(listener.getsockname()[1]), sandbox.WORKSPACE_WRITE, workspace, private_tmp
    )
    assert (code, err) == (0, "")
    assert got_connection(listener)


@needs_landlock
def test_a_sandboxed_command_cannot_signal_the_agent(workspace, private_tmp):
    if sandbox.landlock_status()[0] < 6:
        pytest.skip("Landlock ABI < 6 cannot scope signals")
    for mode in (sandbox.READ_ONLY, sandbox.WORKSPACE_WRITE):
        code, _, err = run(f"kill -0 {os.getpid()}", mode, workspace, private_tmp)
        assert code != 0 and "Operation not permitted" in err


@needs_landlock
def test_the_agent_itself_stays_unrestricted(tmp_path, workspace, private_tmp, listener):
    run("touch made.txt", sandbox.READ_ONLY, workspace, private_tmp)
    (tmp_path / "agent.txt").write_text("mine")
    (workspace / "agent.txt").write_text("mine")
    socket.create_connection(listener.getsockname(), timeout=10).close()
    assert got_connection(listener)
    assert (tmp_path / "agent.txt").read_text() == "mine"


@needs_landlock
def test_a_command_killed_by_a_signal_after_a_refusal_was_likely_blocked(workspace, private_tmp):
    # A program that aborts when the kernel refuses it something: its status is
    # the signal's, below zero
    aborts = (
        f"exec {PYTHON} -c \"import os, sys\ntry: open('made.txt', 'w')\n"
        'except OSError as e: sys.stderr.write(str(e)); sys.stderr.flush(); os.abort()"'
    )
    code, out, err = run(aborts, sandbox.READ_ONLY, workspace, private_tmp)

    assert code == -signal.SIGABRT and "Permission denied" in err, (code, out, err)
    assert sandbox.blocked(code, err)


@needs_landlock
@pytest.mark.parametrize("mode", [None, sandbox.READ_ONLY, sandbox.WORKSPACE_WRITE])
def test_a_command_starts_with_no_signal_blocked(mode, workspace, private_tmp):
    # The agent holds Ctrl-C, SIGTERM and SIGHUP while it starts a command; a mask is kept
    # across exec, and `timeout 1 sleep 5` would then never stop. dash clears it as it starts,
    # bash (sh on Fedora, Arch) does not.
    mask = (
        f'{PYTHON} -c "import signal; print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))"'
    )
    code, out, err = run(
        mask, mode, workspace, private_tmp, executable=shutil.which("bash") or "/bin/sh"
    )

    assert (code, out) == (0, "[]\n"), err


def test_blocked_reads_a_refusal_from_exit_status_and_stderr():
    assert sandbox.blocked(1, "touch: cannot touch 'a': Permission denied\n")
    assert sandbox.blocked(1, "kill: (1) - Operation not permitted\n")
    assert not sandbox.blocked(
        0, "warning: unable to access '/root/.gitconfig': Permission denied\n"
    )
    assert not sandbox.blocked(
        128,
        "warning: unable to access '/root/.gitconfig': Permission denied\n"
        "fatal: not a git repository (or any of the parent directories): .git\n",
    )
    assert not sandbox.blocked(2, "ls: cannot access 'x': No such file or directory\n")


def test_when_landlock_is_missing_available_says_why_and_sandboxed_popen_refuses(
    monkeypatch, workspace, private_tmp
):
    monkeypatch.setattr(
        sandbox, "landlock_status", lambda: (0, "Landlock is not available on this kernel")
    )
    assert sandbox.landlock_missing() == "Landlock is not available on this kernel"
    with pytest.raises(RuntimeError, match="Landlock is not available"):
        sandbox.popen("true", sandbox.Policy(workspace, private_tmp, sandbox.READ_ONLY))
    code, _, _ = run("touch made.txt", None, workspace, private_tmp)
    assert code == 0 and (workspace / "made.txt").exists()


def start(
    command: str, mode: str | None, workspace: Path, tmp: Path, out: Path
) -> subprocess.Popen:
    with open(out, "wb") as stdout:  # a file, not a pipe: leftovers keep it open
        return sandbox.popen(
            command,
            sandbox.Policy(workspace, tmp, mode),
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.STDOUT,
        )


def pids_in(out: Path, count: int) -> list[int]:
    """The pids a command printed, once it has printed them all (it prints them
    before doing anything else)."""
    deadline = time.monotonic() + 60  # a guard against hanging, not a speed check
    while len(words := out.read_text().split()) < count:
        assert time.monotonic() < deadline, f"the command printed {words}, not {count} pids"
        time.sleep(0.01)
    return [int(word) for word in words[:count]]


SETSID = "setsid sleep 300 & echo $!"
DOUBLE_FORK = (
    f'{PYTHON} -c "import os, time\nif os.fork(): os._exit(0)\nos.setsid()\n'
    f'if os.fork(): os._exit(0)\nprint(os.getpid(), flush=True)\ntime.sleep(300)"'
)
modes = pytest.mark.parametrize(
    "mode", [None, pytest.param(sandbox.READ_ONLY, marks=needs_landlock)]
)


@needs_linux
@modes
@pytest.mark.parametrize("command", [SETSID, DOUBLE_FORK], ids=["setsid", "double-fork"])
def test_what_a_finished_command_left_running_is_gone_after_finish(
    tmp_path, workspace, private_tmp, leftovers, mode, command
):
    process = start(command, mode, workspace, private_tmp, tmp_path / "out")
    leftovers.append(process)
    [pid] = pids_in(tmp_path / "out", 1)
    leftovers.append(pid)
    process.wait(timeout=60)
    assert alive(pid)
    sandbox.finish(process)
    assert not alive(pid)
    sandbox.finish(process)  # a second call is harmless


@needs_linux
def test_finish_after_a_timeout_kills_the_command_and_what_it_left(
    tmp_path, workspace, private_tmp, leftovers
):
    process = start(f"{SETSID}; echo $$; sleep 300", None, workspace, private_tmp, tmp_path / "out")
    leftovers.append(process)
    pids = pids_in(tmp_path / "out", 2)
    leftovers.extend(pids)
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.1)
    sandbox.finish(process)
    assert process.returncode == -signal.SIGKILL
    assert [alive(pid) for pid in pids] == [False, False]


@needs_linux
def test_finishing_one_command_leaves_another_running_command_and_its_orphans(
    tmp_path, workspace, private_tmp, leftovers
):
    running = start(f"{DOUBLE_FORK}; sleep 300", None, workspace, private_tmp, tmp_path / "running")
    leftovers.append(running)
    [orphan] = pids_in(tmp_path / "running", 1)
    leftovers.append(orphan)
    done = start(SETSID, None, workspace, private_tmp, tmp_path / "done")
    leftovers.append(done)
    [left] = pids_in(tmp_path / "done", 1)
    leftovers.append(left)
    done.wait(timeout=60)
    sandbox.finish(done)
    assert [alive(left), alive(running.pid), alive(orphan)] == [False, True, True]
    sandbox.finish(running)
    assert [alive(running.pid), alive(orphan)] == [False, False]


@needs_linux
def test_finish_leaves_the_agents_other_child_processes_alone(
    tmp_path, workspace, private_tmp, leftovers
):
    if "NoNewPrivs:\t1" in Path("/proc/self/status").read_text():
        pytest.skip("the agent runs with no_new_privs, so its other children cannot be told apart")
    other = subprocess.Popen(["sleep", "300"], start_new_session=True)
    leftovers.append(other.pid)
    try:
        process = start(SETSID, None, workspace, private_tmp, tmp_path / "out")
        leftovers.append(process)
        leftovers.extend(pids_in(tmp_path / "out", 1))
        process.wait(timeout=60)
        sandbox.finish(process)
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


@needs_landlock
def test_eight_threads_run_sandboxed_commands_at_once(tmp_path):
    results: dict[int, list] = {}

    def work(n: int) -> None:
        folder = tmp_path / f"run{n}"
        folder.mkdir()
        (folder / "notes.txt").write_text(f"run {n}\n")
        tmp = sandbox.make_tmp()
        try:
            results[n] = [
                run("cat notes.txt", sandbox.READ_ONLY, folder, tmp)[:2] for _ in range(5)
            ]
            results[n].append(
                run("echo written > out.txt", sandbox.WORKSPACE_WRITE, folder, tmp)[0]
            )
            results[n].append((folder / "out.txt").read_text())
        finally:
            sandbox.remove_tmp(tmp)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert results == {n: [(0, f"run {n}\n")] * 5 + [0, "written\n"] for n in range(8)}
