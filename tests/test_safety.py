"""Guardrails: the allowlist, approval, the shell timeout, and confinement to the workspace."""

import io
import os
import sys
import time
from pathlib import Path

import pytest

import harness
import safety
import tools
from conftest import run_script
from fake_model import answer, calls

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell syntax")


@pytest.mark.parametrize("command, runs_without_asking", [
    ("ls -la", True),
    ("cat README.md | wc -l", True),
    ("grep -r foo .", True),
    ("git status && git log --oneline -5", True),
    ("git diff HEAD~1", True),
    ("git branch -a", True),
    ("find . -name '*.py'", True),
    ("tail -n 20 log.txt", True),
    ("python --version", True),
    ("echo hello; pwd", True),
    ("ls; rm -rf x", False),
    ("cat a > b", False),
    ("cat a >> b", False),
    ("ls 2> err.txt", False),
    ("echo $(rm x)", False),
    ("echo `id`", False),
    ("cat $HOME/.ssh/id_rsa", False),
    ("find . -delete", False),
    ("find . -exec rm {} ;", False),
    ("find . -fprint out.txt", False),
    ("git push", False),
    ("git -c core.pager=x log", False),
    ("git branch -D main", False),
    ("git diff --output=patch.txt", False),
    ("FOO=1 ls", False),
    ("ls && curl x | sh", False),
    ("sudo ls", False),
    ("tail -f backend.py", False),
    ("tail --follow=name x", False),
    ("sleep 60 & echo started", False),
    ("python script.py", False),
    ("pip install openai", False),
    ("cat /etc/passwd", False),
    ("cat ../secret.txt", False),
    ("ls ~", False),
    ("echo 'unclosed", False),
    ("cat < notes.txt", False),
    ("echo %PATH%", False),
    ("git branch new-feature", False),
    ("tree -o out.txt", False),
    ("git log\nrm -rf x", False),
    ("dir", True),
    ("type notes.txt", True),
])
def test_allowlist_verdicts(command, runs_without_asking, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENT_ALLOW", raising=False)
    assert (safety.shell_verdict(command) is None) is runs_without_asking, safety.shell_verdict(command)


def test_agent_allow_extends_the_allowlist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_ALLOW", "make, pytest,git")
    assert safety.shell_verdict("make test && pytest -q") is None
    assert safety.shell_verdict("git commit -m wip") is None  # trusted programs skip the read-only checks
    assert safety.shell_verdict("make test > out") is not None
    assert safety.shell_verdict("pytest ../elsewhere") == "it names a path outside the workspace"
    assert safety.shell_verdict("rm x") == "rm is not on the allowlist"


@posix_only
def test_sleep_is_killed_at_the_timeout_and_the_run_ends_normally(model, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_SHELL_TIMEOUT", "2")
    model.queue(calls(("run_shell", {"command": "sleep 60 & echo $!; wait"})), answer("it timed out"))

    started = time.monotonic()
    assert harness.run("sleep", approve=safety.approve_all) == "it timed out"
    elapsed = time.monotonic() - started

    result = model.messages(1)[-1]["content"]
    assert elapsed < 5
    assert result.startswith("timed out after 2 s; the command and its children were killed\nstdout:\n")
    assert_gone(int(result.splitlines()[2]))


@posix_only
def test_a_background_child_holding_the_output_does_not_hang_the_harness(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    result = tools.run_shell("sleep 60 & echo $!; echo started")
    assert time.monotonic() - started < 3
    assert result.startswith("exit code: 0\nstdout:\n") and result.endswith("started\n")
    assert_gone(int(result.splitlines()[2]))


def assert_gone(pid: int) -> None:
    """The process no longer runs: it does not exist, or is a zombie waiting to be reaped by init."""
    for _ in range(50):
        if not alive(pid):
            return
        time.sleep(0.05)
    pytest.fail(f"process {pid} is still running")


def alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except FileNotFoundError:
            return False
    try:
        os.kill(pid, 0)  # no /proc (macOS): signal 0 only asks whether the process exists
    except ProcessLookupError:
        return False
    return True


@posix_only
def test_commands_cannot_wait_for_a_person(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tools.run_shell("cat") == "exit code: 0"  # stdin is /dev/null, not the terminal
    assert tools.run_shell("echo $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $GIT_EDITOR $GCM_INTERACTIVE") == \
        "exit code: 0\nstdout:\ncat cat 0 true never\n"


def test_shell_runs_in_the_workspace(tmp_path, monkeypatch):
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    command = "cd" if sys.platform == "win32" else "pwd"
    assert tools.run_shell(command).splitlines()[2] == str((tmp_path / "ws").resolve())


def test_cli_denies_rm_when_stdin_is_not_a_terminal_and_the_run_goes_on(model, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keep.txt").write_text("precious")
    model.queue(calls(("run_shell", {"command": "rm -rf data"})), answer("I was not allowed to delete data."))

    result = run_script("harness.py", "delete data", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "I was not allowed to delete data.\n"
    assert (tmp_path / "data" / "keep.txt").read_text() == "precious"
    assert model.messages(1)[-1]["content"] == (
        "denied: nobody is at a terminal to approve it; run read-only commands instead, "
        "or the user can rerun with --yes to approve everything")


@posix_only
def test_cli_yes_approves_everything(model, tmp_path):
    (tmp_path / "data").mkdir()
    model.queue(calls(("run_shell", {"command": "rm -rf data"})), answer("deleted"))

    result = run_script("harness.py", "delete data", "--yes", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "data").exists()
    assert model.messages(1)[-1]["content"] == "exit code: 0"


def test_approve_callback_sees_the_call_and_decides(model, tmp_path):
    seen = []

    def approve(name, arguments):
        seen.append((name, arguments))
        return "touch" in arguments["command"] or "denied: not today"

    model.queue(calls(("run_shell", {"command": "touch made.txt"}), ("run_shell", {"command": "rm made.txt"}),
                      ("run_shell", {"command": "ls"})), answer("done"))

    harness.run("go", approve=approve)

    assert seen == [("run_shell", {"command": "touch made.txt"}), ("run_shell", {"command": "rm made.txt"})]
    results = [m["content"] for m in model.messages(1)[-3:]]
    assert results[0] == "exit code: 0" and results[1] == "denied: not today"
    assert results[2].startswith("exit code: 0\nstdout:\n") and "made.txt" in results[2]
    assert (tmp_path / "made.txt").exists()


class Terminal(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_always_is_remembered_for_the_rest_of_one_run_only(model, tmp_path, monkeypatch, capsys):
    for name in "abc":
        (tmp_path / name).write_text(name)
    monkeypatch.setattr(sys, "stdin", Terminal("a\nn\nnot again\n"))
    model.queue(calls(("run_shell", {"command": "rm a"})), calls(("run_shell", {"command": "rm b"})),
                answer("first run done"), calls(("run_shell", {"command": "rm c"})), answer("second run done"))

    assert harness.run("remove a and b") == "first run done"
    assert harness.run("remove c") == "second run done"

    prompts = capsys.readouterr().err
    assert prompts.count("[y]es / [N]o / [a]lways allow rm for this run") == 2
    assert "run_shell wants to run:\n  rm a\n" in prompts and "  rm c\n" in prompts and "rm b" not in prompts
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert (tmp_path / "c").read_text() == "c"
    assert model.messages(4)[-1]["content"] == "denied by the user: not again"


def test_always_trusts_the_program_beyond_the_read_only_checks(model, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", Terminal("a\n"))
    model.queue(calls(("run_shell", {"command": "git init -q"})), calls(("run_shell", {"command": "git add ."})),
                answer("done"))

    harness.run("make a repo")

    assert capsys.readouterr().err.count("[y]es / [N]o") == 1
    assert [m["content"] for m in (model.messages(1)[-1], model.messages(2)[-1])] == ["exit code: 0"] * 2


@pytest.mark.parametrize("path", ["../outside.txt", "ABSOLUTE", pytest.param(
    "link/outside.txt", marks=pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges"))])
def test_file_tools_refuse_paths_outside_the_workspace(model, tmp_path, monkeypatch, path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    if path.startswith("link/"):
        (workspace / "link").symlink_to(tmp_path)
    monkeypatch.chdir(workspace)
    path = str(tmp_path / "outside.txt") if path == "ABSOLUTE" else path
    model.queue(calls(("read_file", {"path": path}), ("list_dir", {"path": path.rsplit("/", 1)[0] or "/"})),
                answer("refused"))

    harness.run("read outside")

    for result in model.messages(1)[-2:]:
        assert result["content"].startswith("error: PermissionError: ")
        assert f"is outside the workspace {workspace.resolve()}; use a path inside it" in result["content"]


def test_paths_inside_the_workspace_still_work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "in.txt").write_text("inside")
    assert tools.read_file("sub/../sub/in.txt") == "inside"
    assert tools.read_file(str(tmp_path / "sub" / "in.txt")) == "inside"
    assert tools.list_dir("sub") == "in.txt  6 bytes"


def test_write_file_approved_creates_the_file_and_its_folders(model, tmp_path):
    asked = []
    model.queue(calls(("write_file", {"path": "notes/todo.md", "content": "- ship it\n"})), answer("written"))

    harness.run("write", approve=lambda name, args: asked.append(safety.describe(name, args)) or True)

    assert (tmp_path / "notes" / "todo.md").read_text() == "- ship it\n"
    assert asked == ["write_file wants to create notes/todo.md (new file, 10 bytes)"]
    assert model.messages(1)[-1]["content"] == "created notes/todo.md (10 bytes)"


def test_write_file_denied_leaves_the_file_unchanged(model, tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    asked = []
    model.queue(calls(("write_file", {"path": "a.txt", "content": "one\nTWO\n"})), answer("not written"))

    harness.run("edit", approve=lambda name, args: asked.append(safety.describe(name, args)) or False)

    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert model.messages(1)[-1]["content"] == "denied by the user"
    assert asked == ["write_file wants to overwrite a.txt (exists, 8 -> 8 bytes)\n"
                     "  --- a.txt (now)\n  +++ a.txt (new)\n  @@ -1,2 +1,2 @@\n   one\n  -two\n  +TWO"]


def test_write_file_outside_the_workspace_is_refused_before_asking(model, tmp_path):
    model.queue(calls(("write_file", {"path": "../escape.txt", "content": "x"})), answer("refused"))

    harness.run("escape", approve=safety.approve_all)

    assert not (tmp_path.parent / "escape.txt").exists()
    assert model.messages(1)[-1]["content"].startswith("error: PermissionError: ../escape.txt is outside")


def test_write_file_without_a_terminal_is_denied(model, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    model.queue(calls(("write_file", {"path": "x.txt", "content": "x"})), answer("denied"))

    harness.run("write")

    assert not (tmp_path / "x.txt").exists()
    assert model.messages(1)[-1]["content"].startswith("denied: nobody is at a terminal")
