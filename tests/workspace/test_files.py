"""The workspace on disk (files.py): confinement, protected files, and opening
only regular files safely."""

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import in_child, posix_only, runs_of

import harness
import tools
from plainagent.approval import previews
from plainagent.approval import prompt as approval
from plainagent.core import screen
from plainagent.workspace import files


@posix_only
@pytest.mark.parametrize(
    "call",
    ["tools.read_file('pipe', settings=config)", "tools.write_file('pipe', 'x', settings=config)"],
)
def test_a_fifo_is_refused_clearly_instead_of_hanging(tmp_path, call):
    os.mkfifo(tmp_path / "pipe")

    # in a child with a timeout: if the call hung, the test fails and the child is killed
    child = in_child(
        f"try:\n    {call}\nexcept OSError as error:\n    result = str(error)", tmp_path
    )

    assert (
        child["result"]
        == "pipe is a named pipe, not a regular file; only regular files can be read or written"
    )


@posix_only
def test_a_socket_is_refused_and_listed_as_what_it_is(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        with pytest.raises(OSError, match="^sock is a socket, not a regular file"):
            tools.read_file("sock", settings=in_a_run)
        assert tools.list_dir(settings=in_a_run) == "sock  (socket)"


def make_socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))  # the file stays when the socket is closed


@posix_only
@pytest.mark.parametrize(
    "kind, make",
    [
        ("socket", make_socket),
        pytest.param(
            "character device",
            lambda path: os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3)),
            marks=pytest.mark.skipif(
                not hasattr(os, "geteuid") or os.geteuid() != 0,
                reason="only root makes device nodes",
            ),
        ),
    ],
)
@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file"])
def test_a_socket_or_a_device_is_refused_by_the_tools_that_read_and_write(
    tmp_path, monkeypatch, in_a_run, kind, make, tool
):
    # The named pipe was tested for reading and writing, the socket for
    # reading: each kind, each tool.
    monkeypatch.chdir(tmp_path)
    make(tmp_path / "node")
    arguments = {
        "read_file": {},
        "write_file": {"content": "x"},
        "edit_file": {"old_text": "a", "new_text": "b"},
    }

    with pytest.raises(
        OSError,
        match=f"^node is a {kind}, not a regular file; only regular files can be read or written$",
    ):
        getattr(tools, tool)("node", **arguments[tool], settings=in_a_run)
    assert stat.S_IFMT(os.lstat(tmp_path / "node").st_mode) != stat.S_IFREG


def test_a_link_swapped_in_after_the_check_is_refused_at_open(tmp_path, monkeypatch, in_a_run):
    (tmp_path / "ws").mkdir()
    monkeypatch.chdir(tmp_path / "ws")
    (tmp_path / "secret.txt").write_text("secret")
    (tmp_path / "ws" / "a.txt").write_text("fine")
    target = files.confine("a.txt", in_a_run)  # the check passes: a regular file inside

    (tmp_path / "ws" / "a.txt").unlink()
    # then the file becomes a link out
    (tmp_path / "ws" / "a.txt").symlink_to(tmp_path / "secret.txt")

    with pytest.raises(OSError):
        files.open_regular("a.txt", target, os.O_RDONLY, in_a_run)


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc")
# the second: a sibling named with ws's name first
@pytest.mark.parametrize("outside", ["outside", "ws-secrets"])
def test_a_folder_swapped_for_a_link_after_the_check_is_refused_at_open(
    tmp_path, monkeypatch, as_a_run, outside
):
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / outside).mkdir()
    monkeypatch.chdir(tmp_path / "ws")
    config = as_a_run()
    (tmp_path / outside / "a.txt").write_text("secret")
    (tmp_path / "ws" / "sub" / "a.txt").write_text("fine")
    target = files.confine("sub/a.txt", config)

    (tmp_path / "ws" / "sub" / "a.txt").unlink()
    (tmp_path / "ws" / "sub").rmdir()
    (tmp_path / "ws" / "sub").symlink_to(tmp_path / outside)  # a folder on the way now leads out

    with pytest.raises(PermissionError, match="^sub/a.txt led outside the workspace "):
        files.open_regular("sub/a.txt", target, os.O_RDONLY, config)
    (tmp_path / "ws" / "inside.txt").write_text("fine")
    # inside still opens
    os.close(
        files.open_regular("inside.txt", files.confine("inside.txt", config), os.O_RDONLY, config)
    )


@pytest.mark.parametrize(
    "path",
    [
        "../outside.txt",
        "ABSOLUTE",
        pytest.param(
            "link/outside.txt",
            marks=pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges"),
        ),
    ],
)
def test_file_tools_refuse_paths_outside_the_workspace(model, tmp_path, monkeypatch, path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    if path.startswith("link/"):
        (workspace / "link").symlink_to(tmp_path)
    monkeypatch.chdir(workspace)
    path = str(tmp_path / "outside.txt") if path == "ABSOLUTE" else path
    model.queue(
        calls(("read_file", {"path": path}), ("list_dir", {"path": path.rsplit("/", 1)[0] or "/"})),
        answer("refused"),
    )

    harness.run("read outside")

    for result in model.messages(1)[-2:]:
        assert result["content"].startswith("error: PermissionError: ")
        assert (
            f"is outside the workspace {workspace.resolve()}; use a path inside it"
            in result["content"]
        )


@pytest.mark.parametrize(
    "how",
    [
        "relative",
        "absolute",
        pytest.param(
            "link",
            marks=pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges"),
        ),
    ],
)
def test_file_tools_refuse_a_sibling_folder_whose_name_starts_with_the_workspaces(
    model, tmp_path, monkeypatch, how
):
    # proj-secrets beside proj: its path starts with the workspace's as a
    # string, but it is not inside it.
    workspace, sibling = tmp_path / "proj", tmp_path / "proj-secrets"
    workspace.mkdir(), sibling.mkdir()
    (sibling / "key.txt").write_text("secret-beside-7731")
    if how == "link":
        (workspace / "beside").symlink_to(sibling)
    monkeypatch.chdir(workspace)
    folder = {"relative": "../proj-secrets", "absolute": str(sibling), "link": "beside"}[how]
    model.queue(
        calls(
            ("list_dir", {"path": folder}),
            ("read_file", {"path": f"{folder}/key.txt"}),
            ("write_file", {"path": f"{folder}/key.txt", "content": "overwritten"}),
        ),
        answer("refused"),
    )

    harness.run("read beside", approve=lambda name, arguments: True)

    for result in model.messages(1)[-3:]:
        assert result["content"].startswith("error: PermissionError: ")
        assert (
            f"is outside the workspace {workspace.resolve()}; use a path inside it"
            in result["content"]
        )
    assert "secret-beside" not in json.dumps(model.requests)
    assert (sibling / "key.txt").read_text() == "secret-beside-7731"


def test_paths_inside_the_workspace_still_work(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "in.txt").write_text("inside")
    assert tools.read_file("sub/../sub/in.txt", settings=in_a_run) == "inside"
    assert tools.read_file(str(tmp_path / "sub" / "in.txt"), settings=in_a_run) == "inside"
    assert tools.list_dir("sub", settings=in_a_run) == "in.txt  6 bytes"


def test_write_file_outside_the_workspace_is_refused_before_asking(model, tmp_path):
    model.queue(calls(("write_file", {"path": "../escape.txt", "content": "x"})), answer("refused"))

    harness.run("escape", approve=approval.approve_all)

    assert not (tmp_path.parent / "escape.txt").exists()
    assert model.messages(1)[-1]["content"].startswith(
        "error: PermissionError: ../escape.txt is outside"
    )


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "sub/.env",
        ".ENV",
        "state/plainagent/x.jsonl",
        "state/plainagent/../plainagent/w-0123456789/new.jsonl",
    ],
)
def test_file_tools_never_write_dot_env_or_the_transcripts(
    model, tmp_path, path, in_a_run, monkeypatch
):
    # the workspace holds it, as a home folder does
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    model.queue(
        calls(("write_file", {"path": path, "content": "GROQ_API_KEY=stolen"})), answer("refused")
    )

    harness.run("write", approve=approval.approve_all)

    assert model.messages(1)[-1]["content"].startswith(
        f"error: PermissionError: {path} is protected"
    )
    assert not any("stolen" in p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert (
        tools.write_file("sub/notes.env.txt", "fine", settings=in_a_run)
        == "created sub/notes.env.txt (4 bytes)"
    )


@posix_only
@pytest.mark.parametrize("name", [".env", "sub/.ENV"])
def test_a_dot_env_that_is_a_link_to_a_file_of_another_name_is_never_written_through(
    model, tmp_path, name
):
    # .env as a link to the file that really holds the keys (keys.conf, say):
    # protected by the name it is given.
    (tmp_path / "sub").mkdir()
    (tmp_path / "keys.conf").write_text("GROQ_API_KEY=the-persons-key\n")
    (tmp_path / name).symlink_to(tmp_path / "keys.conf")
    model.queue(
        calls(
            ("write_file", {"path": name, "content": "GROQ_API_KEY=stolen"}),
            ("edit_file", {"path": name, "old_text": "the-persons-key", "new_text": "stolen"}),
        ),
        answer("refused"),
    )

    harness.run("write", approve=approval.approve_all)

    assert [
        m["content"].startswith(f"error: PermissionError: {name} is protected")
        for m in model.messages(1)[-2:]
    ] == [True, True]
    assert (tmp_path / "keys.conf").read_text() == "GROQ_API_KEY=the-persons-key\n"


@posix_only
def test_asking_to_write_over_a_named_pipe_never_waits_on_it(model, tmp_path, in_a_run):
    import harness

    os.mkfifo(tmp_path / "pipe")
    asked = []
    model.queue(calls(("write_file", {"path": "pipe", "content": "x"})), answer("refused"))

    harness.run(
        "write",
        approve=lambda name, arguments: (
            asked.append(previews.describe(name, arguments, screen.shown, in_a_run)) or True
        ),
    )

    assert asked == []  # describing it refused the pipe before anyone was asked
    assert (
        model.messages(1)[-1]["content"].startswith("error: OSError: ")
        and "named pipe" in model.messages(1)[-1]["content"]
    )


def test_the_transcript_named_by_the_flag_is_protected_from_the_file_tools(model, cli, tmp_path):
    model.queue(calls(("write_file", {"path": "t.jsonl", "content": "forged"})), answer("refused"))

    result = cli("forge it", "--transcript", "t.jsonl", "--yes")

    assert result.returncode == 0, result.stderr
    assert model.messages(1)[-1]["content"].startswith(
        "error: PermissionError: t.jsonl is protected"
    )
    assert "forged" not in (tmp_path / "t.jsonl").read_text().splitlines()[0]
    assert all(json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines())


@posix_only
def test_the_safe_open_does_not_follow_block_or_leak_into_commands():
    for flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_NOCTTY"):
        assert files.OPEN_FLAGS & getattr(os, flag), flag


@posix_only
def test_a_fifo_swapped_in_between_the_check_and_the_open_is_refused_without_waiting(
    tmp_path, monkeypatch, in_a_run
):
    (tmp_path / "a.txt").write_text("fine")
    target = files.confine("a.txt", in_a_run)
    real_stat = os.stat

    # the check sees the file; then a FIFO takes its place
    def stat_then_swap(path, *args, **kwargs):
        seen = real_stat(path, *args, **kwargs)
        if Path(path) == target and not stat.S_ISFIFO(seen.st_mode):
            target.unlink()
            os.mkfifo(target)
        return seen

    monkeypatch.setattr(os, "stat", stat_then_swap)
    outcome = []
    opener = threading.Thread(
        target=lambda: outcome.append(
            catch(files.open_regular, "a.txt", target, os.O_RDONLY, in_a_run)
        )
    )

    opener.start()
    opener.join(timeout=2)
    blocked = opener.is_alive()
    if blocked:  # waiting for a writer to the FIFO: one lets it go before the test fails
        os.close(os.open(target, os.O_WRONLY | os.O_NONBLOCK))
        opener.join()
    monkeypatch.undo()

    assert not blocked
    assert outcome == [
        "a.txt is a named pipe, not a regular file; only regular files can be read or written"
    ]


def catch(function, *args) -> str | int:
    """What function(*args) returned, or the message of the OSError it raised."""
    try:
        return function(*args)
    except OSError as error:
        return str(error)


@posix_only
def test_a_link_to_a_file_inside_swapped_in_after_the_check_is_refused_at_open(
    tmp_path, monkeypatch, in_a_run
):
    (tmp_path / "a.txt").write_text("the file that was checked")
    (tmp_path / "b.txt").write_text("another file inside")
    target = files.confine("a.txt", in_a_run)

    (tmp_path / "a.txt").unlink()
    # inside the workspace, so only O_NOFOLLOW refuses it
    (tmp_path / "a.txt").symlink_to(tmp_path / "b.txt")

    with pytest.raises(OSError):
        os.close(files.open_regular("a.txt", target, os.O_RDONLY, in_a_run))


@posix_only
def test_a_file_the_tools_have_open_is_not_inherited_by_a_command(tmp_path, in_a_run):
    # Python's os.open adds O_CLOEXEC itself (PEP 446): this pins the promise,
    # OPEN_FLAGS the belt and braces.
    (tmp_path / "a.txt").write_text("fine")
    fd = files.open_regular("a.txt", files.confine("a.txt", in_a_run), os.O_RDONLY, in_a_run)
    try:
        child = subprocess.run(
            [sys.executable, "-c", f"import os; os.fstat({fd})"],
            close_fds=False,
            capture_output=True,
            text=True,
        )
    finally:
        os.close(fd)

    assert child.returncode == 1 and "Bad file descriptor" in child.stderr


def test_the_state_folder_is_protected_where_the_workspace_holds_it_and_runs_is_the_projects(
    model, cli, tmp_path, monkeypatch
):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # as a home folder holds ~/.local/state
    monkeypatch.setenv("XDG_STATE_HOME", str(workspace / "state"))
    monkeypatch.chdir(workspace)
    model.queue(
        calls(
            ("write_file", {"path": "runs/notes.txt", "content": "a folder of the project"}),
            ("write_file", {"path": "state/plainagent/forged.jsonl", "content": "{}"}),
        ),
        answer("done"),
    )

    result = cli("write both", "--yes")

    assert result.returncode == 0, result.stderr
    allowed, refused = (m["content"] for m in model.messages(1)[-2:])
    assert allowed == "created runs/notes.txt (23 bytes)"
    assert refused.startswith("error: PermissionError: state/plainagent/forged.jsonl is protected")
    assert (workspace / "runs" / "notes.txt").read_text() == "a folder of the project"
    assert [p.name for p in (workspace / "state" / "plainagent").iterdir()] == [
        runs_of(workspace).name
    ]
    # the run's own transcript, and nothing forged
    assert len(list(runs_of(workspace).glob("*.jsonl"))) == 1


def test_the_file_tools_never_write_the_python_installation_the_agent_runs_on(
    tmp_path, monkeypatch, in_a_run
):
    # The project's own .venv, when the agent runs on it: a .pth file there runs inside
    # the agent at its next start.
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv"))

    with pytest.raises(
        PermissionError,
        match=r"^\.venv/lib/evil\.pth is in the Python installation the agent "
        r"runs on, which no tool changes",
    ):
        tools.write_file(".venv/lib/evil.pth", "import os", settings=in_a_run)
    assert not (tmp_path / ".venv" / "lib" / "evil.pth").exists()
    assert tools.write_file("fine.txt", "x", settings=in_a_run) == "created fine.txt (1 bytes)"


@posix_only
def test_a_hard_link_in_the_workspace_to_one_of_the_agents_modules_is_refused_by_the_file_tools(
    model, tmp_path
):
    from helpers import copy_of_the_agent, run_script

    agent, ws = copy_of_the_agent(tmp_path / "agent"), tmp_path / "ws"
    ws.mkdir()
    module = agent / "plainagent" / "shell" / "allowlist.py"
    os.link(module, ws / "allowlist.py")
    os.link(agent / "harness.py", ws / "h.py")
    before = module.read_bytes(), (agent / "harness.py").read_bytes()
    model.queue(
        calls(
            ("write_file", {"path": "allowlist.py", "content": "x = 1\n"}),
            ("edit_file", {"path": "h.py", "old_text": "def main", "new_text": "def evil"}),
        ),
        answer("done"),
    )

    result = run_script("harness.py", "change it", "--yes", "--no-transcript", cwd=ws, root=agent)

    assert result.returncode == 0, result.stderr
    told = [m["content"] for m in model.messages(1)[-2:]]
    for path, text in zip(["allowlist.py", "h.py"], told, strict=True):
        assert text == (
            f"error: PermissionError: {path} is another name (a hard link) for one of the agent's "
            "own files, which no tool changes; write a new file instead"
        ), text
    assert (module.read_bytes(), (agent / "harness.py").read_bytes()) == before


@pytest.mark.parametrize(
    "data, is_binary", [(b"\xff" * 3 + b"a" * 7, False), (b"\xff" * 4 + b"a" * 7, True)]
)
def test_a_file_is_binary_just_past_the_undecodable_share_and_text_at_it(
    tmp_path, in_a_run, data, is_binary
):
    # 3 of 10 bytes undecodable is 30 %, text with odd bytes; 4 of 11 is 36 %, binary.
    (tmp_path / "f.dat").write_bytes(data)

    result = tools.read_file("f.dat", settings=in_a_run)

    assert (
        result.endswith(f"is a binary file ({len(data)} bytes), not text; it was not read")
        == is_binary
    ), result


@posix_only
@pytest.mark.parametrize("path", ["loop", "loop/x", "a", "sub/../a"])
def test_a_loop_of_links_is_refused_alike_on_every_python(path, tmp_path, monkeypatch, in_a_run):
    # Python 3.10-3.12's resolve() raises on a loop; 3.13's returns the path as it
    # is: the tools answer the same.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")

    for tool, arguments in (
        (tools.read_file, (path,)),
        (tools.write_file, (path, "x")),
        (tools.list_dir, (path,)),
    ):
        with pytest.raises(RuntimeError, match=f"^Symlink loop from '{tmp_path}/"):
            tool(*arguments, settings=in_a_run)
