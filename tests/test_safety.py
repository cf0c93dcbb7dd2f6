"""Guardrails: the allowlist, approval, the shell timeout, and confinement to the workspace."""

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import previews

import terminal as screen


import settings

import gitguard

import approval

import allowlist

import harness
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
    pytest.param("find . -name '*.py'", True, marks=posix_only),  # cmd.exe has no single quotes
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
def test_allowlist_verdicts(command, runs_without_asking, tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENT_ALLOW", raising=False)
    assert (allowlist.reason_to_ask(command) is None) is runs_without_asking, allowlist.reason_to_ask(command)


def test_agent_allow_extends_the_allowlist(tmp_path, monkeypatch, as_a_run):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_ALLOW", "make, pytest,git")
    as_a_run()
    assert allowlist.reason_to_ask("make test && pytest -q") is None
    assert allowlist.reason_to_ask("git commit -m wip") is None  # trusted programs skip the read-only checks
    assert allowlist.reason_to_ask("make test > out") is not None
    assert allowlist.reason_to_ask("pytest ../elsewhere") == "it names a path outside the workspace"
    assert allowlist.reason_to_ask("rm x") == "rm is not on the allowlist"


@posix_only
def test_sleep_is_killed_at_the_timeout_and_the_run_ends_normally(model, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_SHELL_TIMEOUT", "2")
    model.queue(calls(("run_shell", {"command": "sleep 60 & echo $!; wait"})), answer("it timed out"))

    started = time.monotonic()
    assert harness.run("sleep", approve=approval.approve_all) == "it timed out"
    elapsed = time.monotonic() - started

    result = model.messages(1)[-1]["content"]
    assert elapsed < 5
    assert result.startswith("timed out after 2 s; the command and its children were killed\nstdout:\n")
    assert_gone(int(result.splitlines()[2]))


@posix_only
def test_a_background_child_holding_the_output_does_not_hang_the_harness(tmp_path, monkeypatch, in_a_run):
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
def test_commands_cannot_wait_for_a_person(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    assert tools.run_shell("cat") == "exit code: 0"  # stdin is /dev/null, not the terminal
    assert tools.run_shell("echo $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $GIT_EDITOR $GCM_INTERACTIVE") == \
        "exit code: 0\nstdout:\ncat cat 0 true never\n"


def test_shell_runs_in_the_workspace(tmp_path, monkeypatch, as_a_run):
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    as_a_run()
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


def test_paths_inside_the_workspace_still_work(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "in.txt").write_text("inside")
    assert tools.read_file("sub/../sub/in.txt") == "inside"
    assert tools.read_file(str(tmp_path / "sub" / "in.txt")) == "inside"
    assert tools.list_dir("sub") == "in.txt  6 bytes"


def test_write_file_approved_creates_the_file_and_its_folders(model, tmp_path):
    asked = []
    model.queue(calls(("write_file", {"path": "notes/todo.md", "content": "- ship it\n"})), answer("written"))

    harness.run("write", approve=lambda name, args: asked.append(previews.describe(name, args, screen.shown)) or True)

    assert (tmp_path / "notes" / "todo.md").read_text() == "- ship it\n"
    assert asked == ["write_file wants to create notes/todo.md (new file, 10 bytes)\n  +- ship it"]
    assert model.messages(1)[-1]["content"] == "created notes/todo.md (10 bytes)"


def test_write_file_denied_leaves_the_file_unchanged(model, tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    asked = []
    model.queue(calls(("write_file", {"path": "a.txt", "content": "one\nTWO\n"})), answer("not written"))

    harness.run("edit", approve=lambda name, args: asked.append(previews.describe(name, args, screen.shown)) or False)

    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert model.messages(1)[-1]["content"] == "denied by the user"
    assert asked == ["write_file wants to overwrite a.txt (exists, 8 -> 8 bytes)\n"
                     "  --- a.txt (now)\n  +++ a.txt (new)\n  @@ -1,2 +1,2 @@\n   one\n  -two\n  +TWO"]


def test_write_file_outside_the_workspace_is_refused_before_asking(model, tmp_path):
    model.queue(calls(("write_file", {"path": "../escape.txt", "content": "x"})), answer("refused"))

    harness.run("escape", approve=approval.approve_all)

    assert not (tmp_path.parent / "escape.txt").exists()
    assert model.messages(1)[-1]["content"].startswith("error: PermissionError: ../escape.txt is outside")


def test_write_file_without_a_terminal_is_denied(model, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    model.queue(calls(("write_file", {"path": "x.txt", "content": "x"})), answer("denied"))

    harness.run("write")

    assert not (tmp_path / "x.txt").exists()
    assert model.messages(1)[-1]["content"].startswith("denied: nobody is at a terminal")


# The shell allowlist as a strict gate: plain words only, each program's options from its table, every
# path inside the workspace, .env and the transcripts never named. Each row stands for a class of bypass.
MUST_ASK = [
    # shell syntax the lexer refuses: subshells, functions, globs, braces, tilde, comments, escapes, controls
    "ls () (touch pwned); ls", "(ls)", "{ ls; }", "! ls", "for x in a; do ls; done", "ls {a,b}", "ls a*",
    "cat .?/outside/secret.txt", "cat /etc/hostnam[e=]", "echo /some/dir/*", "echo a*", "cat ~/x", "ls -la ~",
    "cat x=~/y", "ls #x", "echo hi!", "cat a\\ b", "ls\x1b[31m", "ls\rrm x", "ls\x0bx", "ls 'unclosed",
    "echo \"$HOME\"", "echo \"`id`\"", "echo \"a\\b\"", "echo \"hi!\"", "echo 'a\nb'", "ls & rm x", "ls &",
    "ls ;; pwd", "ls |", "| ls", "ls |& cat", "ls 2>&1", "cat <x", "echo %PATH%", "FOO=1 ls", "'' ls",
    # options a tool reads clustered, glued or spelled long: writes, never ends, follows symlinks, reads lists
    "tree -ao FILE", "tree -R -L 1 -H x", "tree -aRo x", "tree -l", "tree --fromfile x", "file -C -m magic",
    "file -L x", "file -bL x", "file -f/some/abs/path", "file -f list", "tail --fo x", "tail -qf x",
    "tail -fq x", "tail -F x", "tail --follow=name x", "tail --retry x", "tail --pid=1 x", "tail -20f x",
    "tail +5f x", "tail -s 1 x", "grep -R x .", "grep -rR x .", "grep -Rn x .", "grep --dereference-recursive x .",
    "grep --derefer x .", "grep --files-with x .", "ls -laL", "ls -H x", "ls --dereference", "du -shL .",
    "du -D .", "du -H .", "du --files0-from=list", "wc --files0-from=list", "stat -L x", "stat --derefer x",
    "find -L .", "find -H .", "find . -follow", "find . -delete", "find . -execdir ls", "find . -ok rm",
    "find . -fprint x", "find . -fprint0 x", "find . -fprintf x y", "find . -fls x", "find . -files0-from x",
    "find . -name", "python -c 'print(1)'", "python3 x.py", "py -V -c x", "python -Vc x",
    # git: only reading subcommands and their listed options; no global options, drivers or output files
    "git -c core.pager=x log", "git -C .. status", "git --git-dir=x status", "git --exec-path=x status",
    "git --no-pager log", "git log --output=x", "git diff --output=x", "git log --out=x", "git diff --ext-diff",
    "git log --textconv", "git show --show-signature", "git log --format='%G?'", "git log --pretty=myalias",
    "git log -L1,2:f", "git log -Ofile", "git diff --no-index a b", "git status -v", "git branch new",
    "git branch -D x", "git branch -m a b", "git branch --set-upstream-to=x", "git push", "git commit -m x",
    "git", "git stash list",
    # paths: operands, glued values, =values and separate values must resolve inside the workspace
    "cat ../x", "cat /etc/passwd", "head -n5 /etc/passwd", "cat -- ../x", "grep foo /etc/passwd",
    "grep -f/etc/passwd x", "grep --file=/etc/passwd x", "grep -f /etc/passwd x", "grep --exclude-from=../x y .",
    "du --exclude-from=/etc/x .", "ls --color=auto ../", "which /usr/bin/ls", "tail -n 5 -- /etc/passwd",
    "git log -- /etc", "git diff /etc/passwd", "find . -samefile /etc/passwd", "find . -newer /etc/passwd",
    "find /etc -name x", "ls link", "ls link/",
    # .env and the transcripts, however they are named
    "cat .env", "cat ./sub/../.env", "cat '.env'", "cat .ENV", "cat sub/.env", "grep -r key .env",
    "grep --exclude-from=.env x .", "grep -f.env x", "echo .env", "find . -name .env", "git show HEAD:.env",
    "cat envlink", "head -n1 runs/x.jsonl", "ls runs", "cat ./sub/../runs/a", "find runs -name x",
    # counts that are not numbers (tail reads -cf as "bytes, follow"), git choosing its own submodule handling
    "tail -cf a.txt", "tail -5cf a.txt", "tail -c f a.txt", "head -n x a.txt", "tail --lines=f a.txt",
    "git status --ignore-submodules=none", "git status --ignore-sub=none", "git diff --ignore-submodules=none",
    # values the program takes from the next word (tree) or whatever that word is (find's ( , !)
    "tree -Lo 1 main.py", "tree -LRH 2 .", "tree -L2", "tree -Io x .",
    "git diff -U /etc/passwd a.txt", "git diff --unified /etc/passwd a.txt", "git show -U ../x", "head -99c 10",
    "tail -5n 10", "head -2kc x",
    "find . -printf , -delete", "find . -printf '(' -delete", "find . -name ')' -fprint x", "find . -printf , -fls x",
]
RUNS = [
    "ls", "ls -la", "ls -la sub", "ls -l --sort=size", "ls -1 -- sub", "cat a.txt | wc -l", "cat a.txt\nwc -l a.txt",
    "ls\tsub", "cat 'a file.txt'", "cat \"a file.txt\"", "cat sub/a.txt", "grep -rn 'a*b' .",
    "grep -r --include='*.py' foo .", "grep -e foo -e bar a.txt", "grep -C3 foo a.txt", "grep /etc/passwd a.txt",
    "grep -c foo a.txt sub/a.txt", "find . -name '*.py' -type f", "find . -maxdepth 2 -newer a.txt -print",
    "find sub '(' -name a -o -name b ')'", "find -P . -not -name x", "tail -n5 a.txt", "tail -qn 5 a.txt",
    "head -20 a.txt", "head --lines=3 a.txt", "tree -aL 2", "git diff -U5", "git diff --unified=3 a.txt", "find . -printf '%p,' -name x", "tail -c 10 a.txt", "tail -n -5 a.txt", "head -c 1K a.txt", "wc -lw a.txt", "du -sh .", "du --max-depth=1 .", "tree -L 2 -a",
    "file -b a.txt", "stat -c '%s' a.txt", "git status && git log --oneline -5", "git log --format='%h %s' -n 3",
    "git log --pretty=oneline", "git diff HEAD~1 -- a.txt", "git show HEAD^", "git diff --cached --stat",
    "git branch -vv", "git branch --list 'feat*'", "git log -p -3 main..HEAD", "python --version", "python3 -V",
    "echo hello; pwd", "echo 'a $b' \"c\"", "echo /etc/passwd", "which -a ls", "cat .env.example",
]


@pytest.fixture
def workspace_with_secrets(tmp_path, monkeypatch):
    for name in ("a.txt", "sub/a.txt", ".env", ".env.example", "runs/x.jsonl"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x")
    if sys.platform != "win32":
        (tmp_path / "link").symlink_to(tmp_path.parent)
        (tmp_path / "envlink").symlink_to(tmp_path / ".env")
    monkeypatch.chdir(tmp_path)


@posix_only
@pytest.mark.parametrize("command", MUST_ASK)
def test_commands_that_must_ask(command, workspace_with_secrets, in_a_run):
    assert allowlist.reason_to_ask(command) is not None


@posix_only
@pytest.mark.parametrize("command", RUNS)
def test_commands_that_run_without_asking(command, workspace_with_secrets, in_a_run):
    assert allowlist.reason_to_ask(command) is None


@pytest.mark.skipif(sys.platform != "win32", reason="cmd.exe quoting")
@pytest.mark.parametrize("command, runs_without_asking", [
    ("type \"a.txt\"", True), ("dir sub", True), ("type 'a.txt'", False), ("dir ^& del x", False),
    ("type a.txt,C:\\Windows\\win.ini", False), ("echo \"%PATH%\"", False), ("echo \"!x!\"", False),
    ("type sub\\..\\..\\x", False), ("type .env", False)])
def test_windows_cmd_quoting(command, runs_without_asking, workspace_with_secrets):
    assert (allowlist.reason_to_ask(command) is None) is runs_without_asking


def test_an_unset_agent_allow_trusts_no_program(tmp_path, monkeypatch, as_a_run):
    monkeypatch.chdir(tmp_path)
    assert as_a_run().allow == set()
    assert allowlist.reason_to_ask("'' ls") == " is not on the allowlist"
    monkeypatch.setenv("AGENT_ALLOW", "make,,")  # an empty name is a mistake to point out, not to skip
    with pytest.raises(settings.ConfigError, match="^AGENT_ALLOW \\(--allow\\) must be program names separated"):
        as_a_run()


@posix_only
@pytest.mark.parametrize("command", ["make -C..", "make -C/etc", "make --directory=/etc", "make *", "make x > y",
                                     "make .env", "make -f runs/x", "make -f.env", "make $(id)", "make OUT=../x"])
def test_trusted_programs_skip_only_the_option_checks(command, workspace_with_secrets, monkeypatch, as_a_run):
    monkeypatch.setenv("AGENT_ALLOW", "make")
    as_a_run()
    assert allowlist.reason_to_ask("make -j4 --keep-going all CC=gcc") is None
    assert allowlist.reason_to_ask(command) is not None


def test_prepare_turns_off_diff_drivers_and_keeps_the_words():
    assert allowlist.prepare("git diff HEAD~1 -- \"a b\" && git status | wc -l; git log -p\nls -la") == (
        "git diff --no-ext-diff --no-textconv --ignore-submodules=all 'HEAD~1' -- 'a b' && "
        "git status --ignore-submodules=all | wc -l ; git log --no-ext-diff --no-textconv -p \n ls -la"
        if sys.platform != "win32" else
        "git diff --no-ext-diff --no-textconv --ignore-submodules=all HEAD~1 -- \"a b\" && "
        "git status --ignore-submodules=all | wc -l ; git log --no-ext-diff --no-textconv -p \n ls -la")
    assert allowlist.prepare("git show HEAD") == "git show --no-ext-diff --no-textconv HEAD"


@pytest.mark.parametrize("path", [".env", "sub/.env", ".ENV", "runs/x.jsonl", "runs/../runs/new.jsonl"])
def test_file_tools_never_write_dot_env_or_the_transcripts(model, tmp_path, path, in_a_run):
    model.queue(calls(("write_file", {"path": path, "content": "GROQ_API_KEY=stolen"})), answer("refused"))

    harness.run("write", approve=approval.approve_all)

    assert model.messages(1)[-1]["content"].startswith(f"error: PermissionError: {path} is protected")
    assert not any("stolen" in p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert tools.write_file("sub/notes.env.txt", "fine") == "created sub/notes.env.txt (4 bytes)"


def use_environment(monkeypatch, env: dict) -> None:
    """Make os.environ exactly `env`, as the harness would hand it to a command."""
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def git(*args: str, cwd: Path) -> None:
    import subprocess
    identity = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **identity})


def test_git_never_uses_a_repository_above_the_workspace(tmp_path, monkeypatch, as_a_run):
    (tmp_path / "outer.txt").write_text("outer")
    git("init", "-q", cwd=tmp_path)
    git("add", "outer.txt", cwd=tmp_path)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "untracked-inner.txt").write_text("inner")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    as_a_run()
    use_environment(monkeypatch, gitguard.git_environment(settings.current().workspace, dict(os.environ)))

    result = tools.run_shell(allowlist.prepare("git status"))

    assert "not a git repository" in result and "outer" not in result and "inner" not in result


@posix_only
@pytest.mark.parametrize("sandbox", ["off", "auto"])  # off: git's own settings alone must hold
def test_a_hostile_repository_config_runs_nothing_and_git_status_leaves_the_index_alone(tmp_path, monkeypatch,
                                                                                         sandbox, as_a_run):
    monkeypatch.setenv("AGENT_SANDBOX", sandbox)
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "evil.sh").write_text(f'#!/bin/sh\ntouch "{tmp_path}/MARKER-$1"\ncat\n')
    (tmp_path / "evil.sh").chmod(0o755)
    (ws / "f.txt").write_text("a\n")
    (ws / ".gitattributes").write_text("*.txt diff=evil filter=evil\n")
    git("init", "-q", cwd=ws)
    git("add", "-A", cwd=ws)
    git("commit", "-qm", "first", cwd=ws)
    for key in ("core.fsmonitor", "diff.evil.textconv", "diff.evil.command", "filter.evil.clean",
                "filter.evil.process", "gpg.program"):
        git("config", key, f"{tmp_path}/evil.sh {key.replace('.', '-')}", cwd=ws)
    git("config", "log.showSignature", "true", cwd=ws)
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    as_a_run()
    subprocess.run(["git", "status"], cwd=ws, capture_output=True, check=True)
    assert (tmp_path / "MARKER-core-fsmonitor").exists()  # the repository really is hostile to a plain git
    for marker in tmp_path.glob("MARKER-*"):
        marker.unlink()

    (ws / "f.txt").write_text("a\nb\n")
    os.utime(ws / "f.txt", (1, 1))  # stale stat data: a plain git status would refresh and rewrite the index
    index = (ws / ".git" / "index").stat().st_mtime_ns
    results = {}
    for command in ("git status", "git diff", "git log -p", "git show", "git diff --stat", "git log --stat"):
        assert allowlist.reason_to_ask(command) is None
        results[command] = tools.run_shell(command)  # run_shell itself applies git_environment and prepare
        if command == "git status":
            assert (ws / ".git" / "index").stat().st_mtime_ns == index

    assert all(result.startswith("exit code: 0") for result in results.values()), results
    assert "+b" in results["git diff"] and "modified:   f.txt" in results["git status"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.sh", "ws"]


def test_cli_denies_shell_tricks_and_nothing_leaks(model, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP-SECRET-7731")
    tricks = ["ls () (touch pwned); ls", "tree -ao out.txt", "cat .?/outside/secret.txt"]
    allowed = "type notes.txt" if sys.platform == "win32" else "cat notes.txt"
    model.queue(calls(*[("run_shell", {"command": c}) for c in tricks + [allowed]]), answer("done"))

    result = run_script("harness.py", "look around", cwd=ws)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    results = [m["content"] for m in model.messages(1)[-4:]]
    assert all(r.startswith("denied: nobody is at a terminal") for r in results[:3]), results
    assert results[3] == "exit code: 0\nstdout:\nhello"
    assert not (ws / "pwned").exists() and not (ws / "out.txt").exists()
    transcripts = list((ws / "runs").glob("*.jsonl"))
    assert len(transcripts) == 1
    assert "TOP-SECRET-7731" not in transcripts[0].read_text() + json.dumps(model.requests) + result.stderr
