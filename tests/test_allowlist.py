"""The allowlist (allowlist.py): which commands run without asking and why the others must ask."""

import json
import sys

import pytest

import allowlist
import harness
from fake_model import answer, calls
from helpers import posix_only, results, run_script


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell quoting")
@pytest.mark.parametrize("command, asks", [
    ("find . '!' -name '*.pyc'", False),  # ! negates a test and reads nothing more
    ("tail -n 5x a.txt", True),  # a count that is not a number
    ("head -c 1K a.txt", False),
])
def test_find_negation_runs_and_a_count_must_be_a_number(tmp_path, monkeypatch, command, asks, as_a_run):
    (tmp_path / "a.txt").write_text("a\n")
    monkeypatch.chdir(tmp_path)  # the workspace outside a run
    as_a_run()

    assert (allowlist.reason_to_ask(command) is not None) is asks


def test_an_option_value_outside_the_workspace_needs_approval(model, tmp_path):
    (tmp_path / "x.txt").write_text("x")
    asked = []
    model.queue(calls(("run_shell", {"command": "grep -r --exclude-from=/etc/passwd x ."})), answer("ok"))

    harness.run("grep", approve=lambda name, arguments: asked.append(arguments["command"]) or False)

    assert asked == ["grep -r --exclude-from=/etc/passwd x ."]
    assert results(model, 1) == ["denied by the user"]


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
    monkeypatch.setenv("AGENT_ALLOW", "make,,")
    assert as_a_run().allow == {"make"}


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
