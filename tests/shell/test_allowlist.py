"""The allowlist (allowlist.py): which commands run without asking and why the others must ask."""

import json
import sys

import pytest
from fake_model import answer, calls
from helpers import posix_only, results, run_script, runs_of

import harness
from plainagent.core import settings
from plainagent.shell import allowlist, words


@pytest.mark.parametrize(
    "command, runs_without_asking",
    [
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
        # a path after the expression
        pytest.param("find . -name '*.py' /etc", False, marks=posix_only),
        ("git push", False),
        ("git -c core.pager=x log", False),
        ("git branch -D main", False),
        ("git diff --output=patch.txt", False),
        ("FOO=1 ls", False),
        ("ls && curl x | sh", False),
        ("sudo ls", False),
        ("tail -f backend.py", False),
        ("tail --follow=name x", False),
        # a flag given a value: the program says it takes none, the table too
        (
            "ls --all=/etc",
            False,
        ),
        ("wc --lines=/etc/shadow a.txt", False),
        ("sleep 60 & echo started", False),
        ("python script.py", False),
        ("pip install openai", False),
        ("cat /etc/passwd", False),
        ("cat ../secret.txt", False),
        ("ls ~", False),
        ("echo 'unclosed", False),
        ("cat < notes.txt", False),
        ("echo %PATH%", True),  # % is nothing to /bin/sh: it prints %PATH%
        ("git branch new-feature", False),
        ("tree -o out.txt", False),
        ("git log\nrm -rf x", False),
        ("dir", True),
        ("type notes.txt", True),
    ],
)
def test_allowlist_verdicts(command, runs_without_asking, tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENT_ALLOW", raising=False)
    assert (allowlist.reason_to_ask(command, in_a_run) is None) is runs_without_asking, (
        allowlist.reason_to_ask(command, in_a_run)
    )


def test_agent_allow_extends_the_allowlist(tmp_path, monkeypatch, as_a_run):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_ALLOW", "make, pytest,git")
    config = as_a_run()
    assert allowlist.reason_to_ask("make test && pytest -q", config) is None
    # trusted programs skip the read-only checks
    assert allowlist.reason_to_ask("git commit -m wip", config) is None
    assert allowlist.reason_to_ask("make test > out", config) is not None
    assert (
        allowlist.reason_to_ask("pytest ../elsewhere", config)
        == "it names a path outside the workspace"
    )
    assert allowlist.reason_to_ask("rm x", config) == "rm is not on the allowlist"


# The shell allowlist as a strict gate: plain words only, each program's options from
# its table, every path inside the workspace, .env and the transcripts never named. Each
# row stands for a class of bypass.
MUST_ASK = [
    # shell syntax the lexer refuses: subshells, functions, braces, tilde,
    # comments, escapes, controls; globs whose matches are not all paths it may name
    ("ls () (touch pwned); ls", "'('"),
    ("(ls)", "'('"),
    ("{ ls; }", "'{'"),
    ("! ls", "'!'"),
    ("for x in a; do ls; done", "for is not on the allowlist"),
    ("ls {a,b}", "'{'"),
    ("ls .e*", "it names .env"),
    ("ls -d .?", "outside the workspace"),
    ("cat /etc/hostnam[e=]", "has a [...] the agent does not read ([e=])"),
    ("echo /etc/*", "outside the workspace"),
    ("echo st*/plainagent/*", "state/plainagent/x.jsonl is protected"),
    ("cat ~/x", "'~'"),
    ("ls -la ~", "'~'"),
    ("cat x=~/y", "'~'"),
    ("ls #x", "'#'"),
    ("echo hi!", "'!'"),
    ("cat a\\ b", "'\\\\'"),
    ("ls\x1b[31m", "'\\x1b'"),
    ("ls\rrm x", "'\\r'"),
    ("ls\x0bx", "'\\x0b'"),
    ("ls 'unclosed", "it has an unclosed quote"),
    ('echo "$HOME"', "'$' inside quotes"),
    ('echo "`id`"', "'`' inside quotes"),
    ('echo "a\\b"', "'\\\\' inside quotes"),
    ('echo "hi!"', "'!' inside quotes"),
    ("echo 'a\nb'", "'\\n' inside quotes"),
    ("ls & rm x", "'&'"),
    ("ls &", "'&'"),
    ("ls ;; pwd", "it has an empty command before ';'"),
    ("ls |", "it ends with a separator"),
    ("| ls", "it has an empty command before '|'"),
    ("ls |& cat", "'&'"),
    ("ls 2>&3", "output to 3 (>&)"),
    ("cat <x", "'<'"),
    ("FOO=1 ls", "it sets environment variables"),
    ("'' ls", " is not on the allowlist"),
    # options a tool reads clustered, glued or spelled long: writes, never ends,
    # follows symlinks, reads lists
    ("tree -ao FILE", "-o"),
    ("tree -R -L 1 -H x", "-R"),
    ("tree -aRo x", "-R"),
    ("tree -l", "-l"),
    ("tree --fromfile x", "--fromfile"),
    ("file -C -m magic", "-C"),
    ("file -L x", "-L"),
    ("file -bL x", "-L"),
    ("file -f/some/abs/path", "-f"),
    ("file -f list", "-f"),
    ("tail --fo x", "--fo"),
    ("tail -qf x", "-f"),
    ("tail -fq x", "-f"),
    ("tail -F x", "-F"),
    ("tail --follow=name x", "--follow"),
    ("tail --retry x", "--retry"),
    ("tail --pid=1 x", "--pid"),
    ("tail -20f x", "-f"),
    ("tail +5f x", "tail may read a word starting with + as an option"),
    ("tail -s 1 x", "-s"),
    ("grep -R x .", "-R"),
    ("grep -rR x .", "-R"),
    ("grep -Rn x .", "-R"),
    ("grep --dereference-recursive x .", "--dereference-recursive"),
    ("grep --derefer x .", "--derefer"),
    ("grep --files-with x .", "--files-with"),
    ("ls -laL", "-L"),
    ("ls -H x", "-H"),
    ("ls --dereference", "--dereference"),
    ("du -shL .", "-L"),
    ("du -D .", "-D"),
    ("du -H .", "-H"),
    ("du --files0-from=list", "--files0-from"),
    ("wc --files0-from=list", "--files0-from"),
    ("stat -L x", "-L"),
    ("stat --derefer x", "--derefer"),
    ("find -L .", "-L"),
    ("find -H .", "-H"),
    ("find . -follow", "-follow"),
    ("find . -delete", "-delete"),
    ("find . -execdir ls", "-execdir"),
    ("find . -ok rm", "-ok"),
    ("find . -fprint x", "-fprint"),
    ("find . -fprint0 x", "-fprint0"),
    ("find . -fprintf x y", "-fprintf"),
    ("find . -fls x", "-fls"),
    ("find . -files0-from x", "-files0-from"),
    ("find . -name", "-name"),
    ("python -c 'print(1)'", "python"),
    ("python3 x.py", "python"),
    ("py -V -c x", "python"),
    ("python -Vc x", "python"),
    # git: only reading subcommands and their listed options; no global
    # options, drivers or output files
    ("git -c core.pager=x log", "only git status"),
    ("git -C .. status", "only git status"),
    ("git --git-dir=x status", "only git status"),
    ("git --exec-path=x status", "only git status"),
    ("git --no-pager log", "only git status"),
    ("git log --output=x", "--output"),
    ("git diff --output=x", "--output"),
    ("git log --out=x", "--out"),
    ("git diff --ext-diff", "--ext-diff"),
    ("git log --textconv", "--textconv"),
    ("git show --show-signature", "--show-signature"),
    ("git log --format='%G?'", "git formats may not check signatures or use configured aliases"),
    ("git log --format='%+GG'", "git formats may not check signatures or use configured aliases"),
    (
        "git show '--pretty=format:% G?'",
        "git formats may not check signatures or use configured aliases",
    ),
    ("git log --pretty=myalias", "git formats may not check signatures or use configured aliases"),
    ("git log -L1,2:f", "-L"),
    ("git log -Ofile", "-O"),
    ("git diff --no-index a b", "--no-index"),
    ("git status -v", "-v"),
    ("git branch new", "git branch NAME creates a branch"),
    ("git branch -D x", "-D"),
    ("git branch -m a b", "-m"),
    ("git branch --set-upstream-to=x", "--set-upstream-to"),
    ("git push", "only git status"),
    ("git commit -m x", "only git status"),
    ("git", "only git status"),
    ("git stash list", "only git status"),
    # paths: operands, glued values, =values and separate values must resolve inside the workspace
    ("cat ../x", "outside the workspace"),
    ("cat /etc/passwd", "outside the workspace"),
    ("head -n5 /etc/passwd", "outside the workspace"),
    ("cat -- ../x", "outside the workspace"),
    ("grep foo /etc/passwd", "outside the workspace"),
    ("grep -f/etc/passwd x", "outside the workspace"),
    ("grep --file=/etc/passwd x", "outside the workspace"),
    ("grep -f /etc/passwd x", "outside the workspace"),
    ("grep --exclude-from=../x y .", "outside the workspace"),
    ("du --exclude-from=/etc/x .", "outside the workspace"),
    ("ls --color=auto ../", "outside the workspace"),
    ("which /usr/bin/ls", "outside the workspace"),
    ("tail -n 5 -- /etc/passwd", "outside the workspace"),
    ("git log -- /etc", "outside the workspace"),
    ("git diff /etc/passwd", "outside the workspace"),
    ("find . -samefile /etc/passwd", "outside the workspace"),
    ("find . -newer /etc/passwd", "outside the workspace"),
    ("find /etc -name x", "outside the workspace"),
    ("ls link", "outside the workspace"),
    ("ls link/", "outside the workspace"),
    # .env and the transcripts, however they are named
    ("cat .env", ".env, which is protected"),
    ("cat ./sub/../.env", "./sub/../.env, which is protected"),
    ("cat '.env'", ".env, which is protected"),
    ("cat .ENV", ".ENV, which is protected"),
    ("cat sub/.env", "sub/.env, which is protected"),
    ("grep -r key .env", ".env, which is protected"),
    ("grep --exclude-from=.env x .", ".env, which is protected"),
    ("grep -f.env x", ".env, which is protected"),
    ("echo .env", ".env, which is protected"),
    ("find . -name .env", ".env, which is protected"),
    ("git show HEAD:.env", "HEAD:.env, which is protected"),
    ("cat envlink", "envlink is protected"),
    ("head -n1 state/plainagent/x.jsonl", "state/plainagent/x.jsonl is protected"),
    ("ls state/plainagent", "state/plainagent is protected"),
    ("cat ./sub/../state/plainagent/a", "./sub/../state/plainagent/a is protected"),
    ("find state/plainagent -name x", "state/plainagent is protected"),
    # counts that are not numbers (tail reads -cf as "bytes, follow"), git choosing
    # its own submodule handling
    ("tail -cf a.txt", "counts must be numbers"),
    ("tail -5cf a.txt", "as a count and the next word as a file"),
    ("tail -c f a.txt", "counts must be numbers"),
    ("head -n x a.txt", "counts must be numbers"),
    ("tail --lines=f a.txt", "counts must be numbers"),
    ("git status --ignore-submodules=none", "--ignore-submodules"),
    ("git status --ignore-sub=none", "--ignore-sub"),
    ("git diff --ignore-submodules=none", "--ignore-submodules"),
    # values the program takes from the next word (tree) or whatever that word is (find's ( , !)
    ("tree -Lo 1 main.py", "-L"),
    ("tree -LRH 2 .", "-L"),
    ("tree -L2", "-L"),
    ("tree -Io x .", "-I"),
    ("git diff -U /etc/passwd a.txt", "outside the workspace"),
    ("git diff --unified /etc/passwd a.txt", "outside the workspace"),
    ("git show -U ../x", "outside the workspace"),
    ("head -99c 10", "as a count and the next word as a file"),
    ("tail -5n 10", "as a count and the next word as a file"),
    ("head -2kc x", "-k"),
    ("find . -printf , -delete", "-delete"),
    ("find . -printf '(' -delete", "-delete"),
    ("find . -name ')' -fprint x", "-fprint"),
    ("find . -printf , -fls x", "-fls"),
]
RUNS = [
    "ls",
    "ls -la",
    "ls -la sub",
    "ls -l --sort=size",
    "ls -1 -- sub",
    "cat a.txt | wc -l",
    "cat a.txt\nwc -l a.txt",
    "ls\tsub",
    "cat 'a file.txt'",
    'cat "a file.txt"',
    "cat sub/a.txt",
    "grep -rn 'a*b' .",
    "grep -r --include='*.py' foo .",
    "grep -e foo -e bar a.txt",
    "grep -C3 foo a.txt",
    "grep /etc/passwd a.txt",
    "grep -c foo a.txt sub/a.txt",
    "find . -name '*.py' -type f",
    "find . -maxdepth 2 -newer a.txt -print",
    "find sub '(' -name a -o -name b ')'",
    "find -P . -not -name x",
    "tail -n5 a.txt",
    "tail -qn 5 a.txt",
    "head -20 a.txt",
    "head --lines=3 a.txt",
    "tree -aL 2",
    "git diff -U5",
    "git diff --unified=3 a.txt",
    "find . -printf '%p,' -name x",
    "tail -c 10 a.txt",
    "tail -n -5 a.txt",
    "head -c 1K a.txt",
    "wc -lw a.txt",
    "du -sh .",
    "du --max-depth=1 .",
    "tree -L 2 -a",
    "file -b a.txt",
    "stat -c '%s' a.txt",
    "git status && git log --oneline -5",
    "git log --format='%h %s' -n 3",
    "git log --pretty=oneline",
    "git diff HEAD~1 -- a.txt",
    "git show HEAD^",
    "git diff --cached --stat",
    "git branch -vv",
    "git branch --list 'feat*'",
    "git log -p -3 main..HEAD",
    "python --version",
    "python3 -V",
    "echo hello; pwd",
    "echo 'a $b' \"c\"",
    "echo /etc/passwd",
    "which -a ls",
    "cat .env.example",
]


@pytest.fixture
def workspace_with_secrets(tmp_path, monkeypatch):
    # the workspace holds it, as a home folder does
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("a.txt", "sub/a.txt", ".env", ".env.example", "state/plainagent/x.jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    if sys.platform != "win32":
        (tmp_path / "link").symlink_to(tmp_path.parent)
        (tmp_path / "envlink").symlink_to(tmp_path / ".env")
    monkeypatch.chdir(tmp_path)


@posix_only
@pytest.mark.parametrize("command, offending", MUST_ASK)
def test_commands_that_must_ask(command, offending, workspace_with_secrets, in_a_run):
    assert offending in (allowlist.reason_to_ask(command, in_a_run) or "runs without asking")


@posix_only
@pytest.mark.parametrize("command", RUNS)
def test_commands_that_run_without_asking(command, workspace_with_secrets, in_a_run):
    assert allowlist.reason_to_ask(command, in_a_run) is None


@pytest.mark.skipif(sys.platform != "win32", reason="cmd.exe quoting")
@pytest.mark.parametrize(
    "command, runs_without_asking",
    [
        ('type "a.txt"', True),
        ("dir sub", True),
        ("type 'a.txt'", False),
        ("dir ^& del x", False),
        ("type a.txt,C:\\Windows\\win.ini", False),
        ('echo "%PATH%"', False),
        ('echo "!x!"', False),
        ("type sub\\..\\..\\x", False),
        ("type .env", False),
    ],
)
def test_windows_cmd_quoting(command, runs_without_asking, workspace_with_secrets, in_a_run):
    assert (allowlist.reason_to_ask(command, in_a_run) is None) is runs_without_asking


def test_an_unset_agent_allow_trusts_no_program(tmp_path, monkeypatch, as_a_run):
    monkeypatch.chdir(tmp_path)
    config = as_a_run()
    assert config.allow == set()
    assert allowlist.reason_to_ask("'' ls", config) == " is not on the allowlist"
    # an empty name is a mistake to point out, not to skip
    monkeypatch.setenv("AGENT_ALLOW", "make,,")
    with pytest.raises(
        settings.ConfigError, match="^AGENT_ALLOW \\(--allow\\) must be program names separated"
    ):
        as_a_run()


@posix_only
@pytest.mark.parametrize(
    "command",
    [
        "make -C..",
        "make -C/etc",
        "make --directory=/etc",
        "make *",
        "make x > y",
        "make .env",
        "make -f state/plainagent/x",
        "make -f.env",
        "make $(id)",
        "make OUT=../x",
        "make -sC..",
        "make -kf../x",
        "make -sf.env",
        "make -sfstate/plainagent/x",
    ],
)
def test_trusted_programs_skip_only_the_option_checks(
    command, workspace_with_secrets, monkeypatch, as_a_run
):
    monkeypatch.setenv("AGENT_ALLOW", "make")
    config = as_a_run()
    assert allowlist.reason_to_ask("make -j4 --keep-going all CC=gcc", config) is None
    assert allowlist.reason_to_ask(command, config) is not None


def test_prepare_turns_off_diff_drivers_and_keeps_the_words(in_a_run):
    assert allowlist.prepare(
        words.parse('git diff HEAD~1 -- "a b" && git status | wc -l; git log -p\nls -la'), in_a_run
    ) == (
        "git diff --no-ext-diff --no-textconv --ignore-submodules=all 'HEAD~1' -- 'a b' && git "
        "status --ignore-submodules=all | wc -l ; git log --no-ext-diff --no-textconv -p \n ls -la"
        if sys.platform != "win32"
        else 'git diff --no-ext-diff --no-textconv --ignore-submodules=all HEAD~1 -- "a b" && '
        "git status --ignore-submodules=all | wc -l ; git log --no-ext-diff --no-textconv -p \n"
        " ls -la"
    )
    assert (
        allowlist.prepare(words.parse("git show HEAD"), in_a_run)
        == "git show --no-ext-diff --no-textconv HEAD"
    )


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
    transcripts = list(runs_of(ws).glob("*.jsonl"))
    assert len(transcripts) == 1
    assert (
        "TOP-SECRET-7731"
        not in transcripts[0].read_text() + json.dumps(model.requests) + result.stderr
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell quoting")
@pytest.mark.parametrize(
    "command, asks",
    [
        ("find . '!' -name '*.pyc'", False),  # ! negates a test and reads nothing more
        ("tail -n 5x a.txt", True),  # a count that is not a number
        ("head -c 1K a.txt", False),
    ],
)
def test_find_negation_runs_and_a_count_must_be_a_number(
    tmp_path, monkeypatch, command, asks, as_a_run
):
    (tmp_path / "a.txt").write_text("a\n")
    monkeypatch.chdir(tmp_path)  # the workspace outside a run
    config = as_a_run()

    assert (allowlist.reason_to_ask(command, config) is not None) is asks


def test_an_option_value_outside_the_workspace_needs_approval(model, tmp_path):
    (tmp_path / "x.txt").write_text("x")
    asked = []
    model.queue(
        calls(("run_shell", {"command": "grep -r --exclude-from=/etc/passwd x ."})), answer("ok")
    )

    harness.run("grep", approve=lambda name, arguments: asked.append(arguments["command"]) or False)

    assert asked == ["grep -r --exclude-from=/etc/passwd x ."]
    assert results(model, 1) == ["denied by the user"]


def test_a_very_long_command_asks_at_once_instead_of_being_checked_word_by_word(in_a_run):
    # 200,000 characters of `a a a ...` took half a minute to check, and a run checks a command
    # several times. How long the check takes is measured in tests/bench.py (check_long_commands).
    longest, longer = "ls" + " a" * ((words.MAX_UNASKED_CHARS - 2) // 2), "ls" + " a" * 100_000

    verdicts = (
        allowlist.command_mode(words.parse(longest), in_a_run),
        allowlist.command_mode(words.parse(longer), in_a_run),
    )

    assert [verdict[:2] for verdict in verdicts] == [
        (allowlist.UNASKED_READ_ONLY, None),
        (None, "it is longer than 10,000 characters"),
    ]


@posix_only
@pytest.mark.parametrize("command", ["echo KEYS=.env", "echo --from=sub/.ENV"])
def test_a_word_that_names_env_after_an_equals_sign_asks(command, workspace_with_secrets, in_a_run):
    named = command.split()[1]
    assert (
        allowlist.reason_to_ask(command, in_a_run)
        == f"it names {named}, which is protected (.env or the transcripts)"
    )


def test_a_command_one_character_over_ten_thousand_asks(in_a_run):
    command = "ls" + " a" * 4999 + "b"  # 10,001 characters: every word one the allowlist would take
    assert (
        len(command) == 10_001
        and allowlist.command_mode(words.parse(command[:-1]), in_a_run).mode
        == allowlist.UNASKED_READ_ONLY
    )

    assert allowlist.reason_to_ask(command, in_a_run) == "it is longer than 10,000 characters"


@posix_only
@pytest.mark.parametrize(
    "command",
    [
        "ls 2>/dev/null;pwd",
        "ls >/dev/null|wc -l",
        "ls 2>&1|wc -l",
        "ls >/dev/null||pwd",
        "ls >>/dev/null\npwd",
    ],
)
def test_a_redirection_ends_where_a_separator_written_against_it_begins(command, in_a_run):
    # as the shell reads it: the target is /dev/null (or 1), and the next part is a
    # command checked on its own
    assert allowlist.reason_to_ask(command, in_a_run) is None
    assert allowlist.reason_to_ask(
        command.replace("pwd", "rm x").replace("wc -l", "rm x"), in_a_run
    ) == ("rm is not on the allowlist")


@posix_only
@pytest.mark.parametrize(
    "command",
    [
        "cat ../proj-secrets/key.txt",
        "ls ../proj-secrets",
        "grep -r x ../proj-secrets",
        "cat ABSOLUTE/key.txt",
        "cat beside/key.txt",
        "ls beside/",
    ],
)
def test_a_sibling_folder_whose_name_starts_with_the_workspaces_is_outside_it(
    command, tmp_path, monkeypatch, as_a_run
):
    # proj-secrets beside proj: its path starts with the workspace's as a
    # string, but it is not inside it.
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj-secrets").mkdir()
    (tmp_path / "proj-secrets" / "key.txt").write_text("secret")
    (tmp_path / "proj" / "beside").symlink_to(tmp_path / "proj-secrets")
    monkeypatch.chdir(tmp_path / "proj")

    reason = allowlist.reason_to_ask(
        command.replace("ABSOLUTE", str(tmp_path / "proj-secrets")), as_a_run()
    )

    assert reason is not None and "outside the workspace" in reason


@posix_only  # cmd.exe quotes and splits words otherwise
@pytest.mark.parametrize(
    "command, runs_without_asking",
    [
        # GNU's -l takes the length; macOS's sed reads -l alone and the next word as its
        # script, whose w truncates the file it names before anything is read
        ("sed -n -l 'w notes.txt' p", False),
        ("sed -nl 5 l notes.txt", False),
        ("sed -n --line-length=5 l notes.txt", True),
        # macOS's ls reads -w, -T and -I alone, and the next word as a folder to list
        ("ls -w /etc .", False),
        ("ls -T /etc .", False),
        ("ls -I /etc .", False),
        ("ls --ignore=x --width=80 --tabsize=4 .", True),
    ],
)
def test_a_short_option_that_another_system_reads_alone_asks(
    tmp_path, monkeypatch, as_a_run, command, runs_without_asking
):
    (tmp_path / "notes.txt").write_text("notes\n")
    monkeypatch.chdir(tmp_path)

    assert (allowlist.reason_to_ask(command, as_a_run()) is None) is runs_without_asking
