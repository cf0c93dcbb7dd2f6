"""Globs, `cd DIR && ...` and `date` (expansion.py, the allowlist): a glob runs without asking where
each of its matches is a path a command may name, found as /bin/sh finds them and run as those very
words; a cd into a folder of the workspace moves the rest of the line, checked from there; date runs
where it only prints. A glob reaching .env, the state folder or outside the workspace, and a cd
leaving it, still ask."""

import os
import subprocess

import pytest
from fake_model import answer, calls
from helpers import posix_only, results, run_script

import harness
from plainagent.core import settings as settings_module
from plainagent.shell import allowlist, decision, words

pytestmark = posix_only


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A workspace with files to match, a .env in it and in a subfolder, the state folder inside
    it (as in a home folder), and links: one out of it, one to its .env."""
    ws = tmp_path / "ws"
    monkeypatch.setenv("XDG_STATE_HOME", str(ws / "state"))
    names = ["a.txt", "b.txt", "c.py", ".hidden", ".env", "sub/d.py", "sub/e.py", "sub/.env"]
    for name in [*names, "state/plainagent/x.jsonl", "deep/er/f.py"]:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(f"{name}\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    (ws / "out").symlink_to(tmp_path)
    (ws / "envlink").symlink_to(ws / ".env")
    monkeypatch.chdir(ws)
    return ws


RUN_UNASKED = [
    "cat *.txt",
    "ls sub/*.py",
    "ls */*.py",
    "ls -d [ab].txt ?.py",
    "grep -n txt *.txt",
    "grep -rn --include=*.py py .",
    "cat no-such-*",  # no match: the word as it is
    "wc -l 'a'*",  # a quoted part is itself
    "ls -d d*/ su*/",
    "cd sub && cat *.py",
    "cd sub && cat ../a.txt",
    "cd deep && cd er && cat f.py ../../b.txt",
    "cd sub && ls | wc -l",
    "ls; cd sub && pwd",
    "cd deep && ls -d .* *",  # there, .. is the workspace
    "date +%F",
    "date -u +%Y-%m-%dT%H",
    "date -d @0 +%s",
    "date -r a.txt +%Y",
    "date --iso-8601=seconds --utc",
    "date -d '2024-01-02 10:00' +%F",
    "date --date='next monday, 1 day ago' -u",
]
ASK = [
    # a match that may not be named
    ("cat .e*", "it names .env"),
    ("cat .[e]nv", "it names .env"),
    ("cat */.env", "it names sub/.env"),
    ("cat envl*", "envlink is protected"),
    ("ls o*/", "outside the workspace"),
    ("ls -d .*", "outside the workspace"),  # .. is among its matches, as sh finds them
    ("ls st*/*", "state/plainagent is protected"),
    ("cat /etc/host*", "outside the workspace"),
    ("cat [[:alpha:]].txt", "has a [...] the agent does not read"),
    ("cat [z-a].txt", "has a [...] the agent does not read"),
    ("cat [!a].txt", "'!'"),
    ("*.py", "is a pattern"),
    # a cd it does not follow
    ("cd .. && cat ws/a.txt", "outside the workspace"),
    ("cd out && cat outside.txt", "outside the workspace"),
    ("cd state && cat plainagent/x.jsonl", "is protected"),
    ("cd sub && cat ../../outside.txt", "outside the workspace"),
    ("cd sub && cat ../.env", "it names ../.env"),
    ("cd sub && cat .e*", "it names .env"),
    ("cd - && ls", "only as cd FOLDER"),
    ("cd && ls", "only as cd FOLDER"),
    ("cd -P sub && ls", "only as cd FOLDER"),
    ("cd a.txt && ls", "is not a folder"),
    ("cd sub; cat ../../outside.txt", "at the start of a line"),
    ("cd sub || cat ../../outside.txt", "at the start of a line"),
    ("cd sub && ls || cat ../../outside.txt", "at the start of a line"),
    ("ls | cd sub && ls", "at the start of a line"),
    # in a pipe, cd changes only its own subshell's folder: cat runs at the top, where ../../ is
    # outside the workspace
    ("cd sub | cat ../../outside.txt", "at the start of a line"),
    ("cd sub && cd .. | cat ../outside.txt", "at the start of a line"),
    ("cd sub && git status", "git with no .git folder"),
    # date that sets the clock, or reads a file it may not
    ("date -s 2030-01-01", "-s is not an option"),
    ("date --set=2030-01-01", "--set is not an option"),
    ("date 010100002030", "date takes one operand at most, a +FORMAT"),
    ("date +%F +%T", "date takes one operand at most"),
    ("date -r .env", "it names .env"),
    ("date -f /etc/passwd", "-f is not an option"),
    # a TZ="PATH" in a date is a time-zone file date opens, wherever it is
    ("date -d 'TZ=\"/etc/passwd\" now'", 'TZ="FILE"'),
    ("date -ud'TZ=\"a.txt\"'", 'TZ="FILE"'),
    ("echo 'TZ=\"/etc/passwd\" now' | date -f -", "-f is not an option"),
]


@pytest.mark.parametrize("command", RUN_UNASKED)
def test_globs_cd_and_date_that_only_read_the_workspace_run_without_asking(command, workspace):
    settings = settings_module.resolve(require_key=False)

    decided = decision.decide(command, settings)

    assert decided.mode == allowlist.UNASKED_READ_ONLY, decided.reason


@pytest.mark.parametrize("command, reason", ASK)
def test_a_glob_or_cd_reaching_what_may_not_be_named_asks(command, reason, workspace):
    settings = settings_module.resolve(require_key=False)

    decided = decision.decide(command, settings)

    assert decided.asks and reason in decided.reason, decided.reason


def test_the_decision_carries_the_matches_and_the_folder_that_run(workspace):
    settings = settings_module.resolve(require_key=False)

    decided = decision.decide("cd sub && grep -c py *.py '*.py' no-*", settings)

    assert decided.command.text == "cd sub && grep -c py *.py '*.py' no-*"
    assert allowlist.prepare(decided.command, settings) == (
        f"cd -P {workspace / 'sub'} && grep -c py d.py e.py '*.py' 'no-*'"
    )


def test_a_trusted_programs_matches_are_checked_as_its_paths_are(workspace, monkeypatch):
    monkeypatch.setenv("AGENT_ALLOW", "make")
    settings = settings_module.resolve(require_key=False)

    assert decision.decide("cd sub && make *.py", settings).mode == allowlist.UNASKED_ALLOWED
    assert "it names .env" in decision.decide("make .e*", settings).reason
    assert "outside" in decision.decide("cd sub && make ../../*.txt", settings).reason


def test_the_lexer_marks_unquoted_glob_characters_only():
    parsed = words.parse("ls *.py '*.txt' a'?'b? x[ab] ]")

    found = [(word, isinstance(word, words.Glob)) for word in parsed.parts[0][0]]

    assert found == [
        ("ls", False),
        ("*.py", True),
        ("*.txt", False),
        ("a?b?", True),
        ("x[ab]", True),
        ("]", False),
    ]
    assert parsed.parts[0][0][3].pattern == "a\\?b?"


@pytest.mark.parametrize(
    "command", ["cat *.txt", "ls -d [ab].txt ?.py d*/", "cd deep && ls -d .* *", "cat no-such-*"]
)
def test_a_glob_gets_the_matches_sh_finds(command, workspace):
    settings = settings_module.resolve(require_key=False)
    decided = decision.decide(command, settings)
    prepared = allowlist.prepare(decided.command, settings)

    def run(text):
        done = subprocess.run(["sh", "-c", text], cwd=workspace, capture_output=True, text=True)
        return done.returncode, done.stdout, done.stderr

    assert not decided.asks and run(prepared) == run(command)


def test_cd_sub_and_a_glob_run_without_a_question_and_leaving_still_asks(
    model, workspace, tmp_path
):
    asked = []
    model.queue(
        calls(
            ("run_shell", {"command": "cd sub && cat *.py"}),
            ("run_shell", {"command": "cd .. && cat ../outside.txt"}),
        ),
        answer("done"),
    )

    harness.run(
        "look",
        approve=lambda name, arguments: asked.append(arguments["command"]) or False,
        workspace=workspace,
    )

    ran, refused = [m["content"] for m in model.messages(1)[-2:]]
    assert asked == ["cd .. && cat ../outside.txt"]
    assert ran == "exit code: 0\nstdout:\nsub/d.py\nsub/e.py\n"
    assert refused == "denied by the user"
    assert os.getcwd() == str(workspace)  # the cd was the command's, not the agent's


def test_git_after_cd_runs_in_the_workspaces_own_repository(model, workspace):
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    subprocess.run(["git", "add", "sub/d.py"], cwd=workspace, check=True)
    asked = []
    model.queue(calls(("run_shell", {"command": "cd sub && git status --short"})), answer("done"))

    harness.run(
        "look",
        approve=lambda name, arguments: asked.append(arguments["command"]) or False,
        workspace=workspace,
    )

    shown = model.messages(1)[-1]["content"]
    # from sub, the workspace's repository, its paths shown from there
    assert asked == [] and shown.startswith("exit code: 0\nstdout:\nA  d.py\n"), shown
    assert "?? ../a.txt\n" in shown


def test_a_date_cannot_open_a_file_outside_the_workspace_as_its_time_zone(model, tmp_path):
    """GNU date reads TZ="PATH" in a date (-d, or each line of -f FILE) as a time-zone file, and
    opens it: here a FIFO outside the workspace, where date would wait until its timeout. Without
    the kernel's sandbox, the allowlist is what keeps such a date from running unasked."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(tmp_path / "zone")
    (ws / "dates.txt").write_text(f'TZ="{tmp_path / "zone"}" now\n')
    commands = [
        f"date -d 'TZ=\"{tmp_path / 'zone'}\" now'",
        "date -f dates.txt",
        "cat dates.txt | date -f -",
        "date -u -d '2024-01-02 10:00' +%F",
    ]
    model.queue(calls(*[("run_shell", {"command": c}) for c in commands]), answer("done"))

    result = run_script(
        "harness.py", "--sandbox", "off", "--shell-timeout", "5", "what time", cwd=ws
    )

    assert result.returncode == 0, result.stderr
    sent = results(model, 1, 4)
    assert all(r.startswith("denied: nobody is at a terminal") for r in sent[:3]), sent
    assert sent[3] == "exit code: 0\nstdout:\n2024-01-02\n", sent
