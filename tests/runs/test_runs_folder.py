"""Runs are kept out of the project: transcripts and undo data live in the person's state folder,
one folder per workspace, so a project's own runs/ is its own (nothing written there, its files
editable); --runs lists a workspace's runs, --continue and --undo take the newest or --run N, and no
tool or command of a run changes them, even where the workspace holds the state folder. Transcripts
an older version left in runs/ stay reachable by name."""

import json
import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import (
    copy_of_the_agent,
    needs_landlock,
    only_transcript,
    posix_only,
    read_events,
    run_script,
    runs_of,
    write,
)

from plainagent.core import statefolder
from plainagent.runs import listing

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git")


def a_project_with_its_own_runs(folder: Path) -> Path:
    """A project whose runs/ is its own (as TensorBoard's): a log file in it, in git."""
    (folder / "runs").mkdir()
    (folder / "runs" / "events.log").write_text("step 1\n")
    return folder / "runs"


@needs_git
def test_a_run_writes_nothing_into_the_projects_runs_folder_and_its_files_stay_editable(
    model, cli, tmp_path
):
    project_runs = a_project_with_its_own_runs(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    model.queue(calls(write("runs/events.log", "step 2\n")), answer("written"))

    result = cli("--yes", "log the next step")

    assert result.returncode == 0, result.stderr
    assert not model.messages(1)[-1]["content"].startswith("error"), model.messages(1)[-1][
        "content"
    ]
    # the project's own file, edited with --yes
    assert (project_runs / "events.log").read_text() == "step 2\n"
    # no transcript, no .gitignore there
    assert sorted(p.name for p in project_runs.iterdir()) == ["events.log"]
    transcript = only_transcript(tmp_path)
    assert transcript.parent == runs_of(tmp_path) and tmp_path not in transcript.parents
    # a person can tell which workspace
    assert runs_of(tmp_path).name.startswith(tmp_path.name + "-")
    assert result.stderr.splitlines()[-1].endswith(f"transcript {transcript.as_posix()}")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == "?? runs/events.log\n"  # the project's file, and nothing of the agent's


def test_two_workspaces_of_one_name_keep_their_runs_apart(model, tmp_path):
    for side in ("a", "b"):
        (tmp_path / side / "project").mkdir(parents=True)
    assert runs_of(tmp_path / "a" / "project") != runs_of(tmp_path / "b" / "project")
    assert runs_of(tmp_path / "a" / "project").name.startswith("project-")


def test_the_runs_folder_of_a_workspace_whose_name_starts_with_a_dot_is_not_hidden(tmp_path):
    # ~/.dotfiles keeps its runs in dotfiles-<hash>, which ls shows; a name of
    # dots only in root-<hash>.
    for name in (".dotfiles", "..."):
        (tmp_path / name).mkdir()
    assert runs_of(tmp_path / ".dotfiles").name.startswith("dotfiles-")
    assert runs_of(tmp_path / "...").name.startswith("root-")


def test_a_relative_xdg_state_home_is_ignored_and_runs_are_kept_in_the_home_folders_state(
    model, cli, tmp_path, monkeypatch
):
    # The XDG rule: a relative path is not a state folder (read from the working folder, it would
    # put the runs in the project, where its commands and git reach them).
    home = tmp_path / "home"
    workspace = tmp_path / "project"
    workspace.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", "state")
    monkeypatch.chdir(workspace)
    model.queue(answer("hello"))

    result = cli("hi")

    assert result.returncode == 0, result.stderr
    assert list(workspace.iterdir()) == []
    # ~/.local/state on Linux
    [transcript] = (statefolder.state_home({}) / "plainagent").glob("project-*/*.jsonl")
    assert home in transcript.parents
    assert result.stderr.splitlines()[-1].endswith(f"transcript {transcript.as_posix()}")


def test_the_run_list_and_undo_need_no_api_key(model, cli, tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    model.queue(calls(write("notes.txt", "one\n")), answer("wrote"))
    assert cli("--yes", "write the notes").returncode == 0
    monkeypatch.delenv("GROQ_API_KEY")
    # with no .env, whatever the developer's folder holds
    agent = copy_of_the_agent(tmp_path / "agent")

    listed, undone = (
        run_script("harness.py", *flags, cwd=workspace, root=agent)
        for flags in (["--runs"], ["--undo", "--run", "1"])
    )

    for done in (listed, undone):
        assert done.returncode == 0 and "KEY" not in done.stderr, done.stderr
    assert "write the notes" in listed.stdout and not (workspace / "notes.txt").exists()
    assert model.requests[2:] == []


def test_the_run_list_continue_and_undo_find_the_runs_of_this_workspace(model, cli, tmp_path):
    a_project_with_its_own_runs(tmp_path)
    model.queue(
        calls(write("notes.txt", "one\n")), answer("wrote"), answer("read"), answer("nothing")
    )
    assert cli("--yes", "write the notes\nsecond line of the task").returncode == 0
    assert cli("read the notes").returncode == 0
    # appends to the newest run: "read the notes"
    assert cli("--continue", "and now?").returncode == 0

    listed = cli("--runs")

    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["2", "1"]  # newest first
    assert lines[0].endswith("  no changes     read the notes") and lines[1].endswith(
        "  changed files  write the notes"
    )
    assert (
        listed.stderr
        == f"kept in {runs_of(tmp_path)}; take one with --continue --run N or --undo --run N\n"
    )
    first, newest = [run.path for run in listing.runs(runs_of(tmp_path), tmp_path.resolve())]
    assert [e["task"] for e in read_events(newest) if e["type"] == "start"] == [
        "read the notes",
        "and now?",
    ]

    # The newest run changed nothing: --undo says which run did, and takes nothing back.
    nothing = cli("--undo")
    assert nothing.returncode == 2 and (tmp_path / "notes.txt").exists()
    assert re.fullmatch(
        r"error: cannot undo: the newest run \(2, [-0-9]+ [0-9:]+, 'read the notes'\) changed no "
        r"file; run 1 \([-0-9]+ [0-9:]+, 'write the notes'\) did: --undo --run 1\n",
        nothing.stderr,
    )

    undone = cli("--undo", "--run", "1")
    assert (undone.returncode, undone.stdout) == (0, "removed notes.txt (the run created it)\n"), (
        undone.stderr
    )
    assert "  undone         write the notes" in cli("--runs").stdout

    model.queue(answer("went on"))
    assert cli("--continue", "--run", "1", "go on").returncode == 0
    assert [e["task"] for e in read_events(first) if e["type"] == "start"][-1] == "go on"


def test_a_run_number_no_run_has_and_flags_that_do_not_go_together_are_one_line(
    model, cli, tmp_path, capsys
):
    model.queue(answer("ok"))
    assert cli("say ok").returncode == 0

    assert cli("--undo", "--run", "2").stderr == (
        "error: there is no run 2 of this workspace (runs 1 to 1); --runs lists them\n"
    )
    with pytest.raises(SystemExit):
        cli("--run", "1", "a task")
    for flags in (("--runs", "--undo"), ("--runs", "--run", "1")):
        with pytest.raises(SystemExit):
            cli(*flags)
        assert capsys.readouterr().err == (
            "error: --runs takes no task and no other flag of a run; it only lists them; "
            "see python harness.py --help\n"
        )
    # runs are counted from 1: 0 is a usage error, never the newest run
    with pytest.raises(SystemExit):
        cli("--undo", "--run", "0")
    with pytest.raises(LookupError, match=r"^there is no run 0 of this workspace \(runs 1 to 1\)"):
        listing.pick(runs_of(tmp_path), tmp_path.resolve(), 0)


BOTH = "--run N and --transcript PATH both name a run; give one"
LISTS_ONLY = "--runs takes no task and no other flag of a run; it only lists them"


@pytest.mark.parametrize(
    "flags, said",
    [
        (("--undo", "--run", "1", "--transcript", "t.jsonl"), BOTH),
        (("--continue", "--run", "1", "--transcript", "t.jsonl", "go on"), BOTH),
        (("--transcript", "t.jsonl", "--continue", "go on", "--run", "1"), BOTH),
        (("--runs", "--run", "1"), LISTS_ONLY),
        (("--runs", "--transcript", "t.jsonl"), LISTS_ONLY),
    ],
    ids=["undo", "continue", "continue-in-another-order", "runs-and-run", "runs-and-transcript"],
)
def test_flags_that_name_a_run_twice_are_refused_and_do_nothing(
    model, cli, tmp_path, capsys, flags, said
):
    # Each pair that names a run two ways is refused before anything is done: --run N with
    # --transcript PATH (with --undo, with --continue, in either order), and --runs with either.
    model.queue(calls(write("notes.txt", "n\n")), answer("written"))
    assert cli("--yes", "--transcript", "t.jsonl", "write the notes").returncode == 0
    before = (tmp_path / "t.jsonl").read_bytes()

    with pytest.raises(SystemExit) as stopped:
        cli(*flags)

    assert stopped.value.code == 2
    assert capsys.readouterr() == ("", f"error: {said}; see python harness.py --help\n")
    assert (tmp_path / "notes.txt").exists() and (tmp_path / "t.jsonl").read_bytes() == before


def test_undo_of_a_run_named_by_its_number_speaks_of_that_run_only(model, cli, tmp_path):
    # --run 2 names the run: that it changed nothing is the answer, with no pointer to another run.
    model.queue(calls(write("notes.txt", "n\n")), answer("written"), answer("nothing to change"))
    assert cli("--yes", "write the notes").returncode == 0
    assert cli("look only").returncode == 0

    named = cli("--undo", "--run", "2")

    assert named.returncode == 2 and (tmp_path / "notes.txt").exists()
    assert named.stderr.startswith("error: cannot undo") and "--run 1" not in named.stderr, (
        named.stderr
    )
    assert len(named.stderr.splitlines()) == 1


def test_undo_after_a_run_that_changed_nothing_points_at_the_newest_run_that_did(
    model, cli, tmp_path
):
    model.queue(
        calls(write("a.txt", "1")),
        answer("one"),
        calls(write("b.txt", "2")),
        answer("two"),
        answer("none"),
    )
    for task in ("write a", "write b", "look only"):
        assert cli("--yes", task).returncode == 0

    nothing = cli("--undo")

    assert nothing.returncode == 2 and nothing.stderr.endswith(
        "'write b') did: --undo --run 2\n"
    ), nothing.stderr


def test_listing_the_runs_needs_no_key(model, cli, tmp_path, monkeypatch):
    model.queue(answer("ok"))
    assert cli("say ok").returncode == 0
    monkeypatch.delenv("GROQ_API_KEY")  # a person looking at their runs on a machine without one

    listed = cli("--runs")

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[0] == "1" and listed.stdout.rstrip().endswith(
        "no changes     say ok"
    )


def test_no_run_yet_says_where_runs_are_kept_and_names_an_older_versions_runs_folder(
    model, cli, tmp_path
):
    assert (
        cli("--runs").stderr
        == f"no run of {tmp_path.resolve()} yet (its runs are kept in {runs_of(tmp_path)})\n"
    )
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "2025-01-01T10-00-00-old.jsonl").write_text("{}\n")

    result = cli("--continue", "go on")

    assert result.returncode == 2
    assert result.stderr == (
        f"error: cannot continue: no run of {tmp_path.resolve()} yet (its runs are kept in "
        f"{runs_of(tmp_path)}); transcripts of an older version are in runs/: name one with "
        "--transcript runs/NAME.jsonl; start a new run without --continue\n"
    )


def test_a_transcript_an_older_version_left_in_runs_is_continued_and_undone_by_name(
    model, cli, tmp_path
):
    # As an older version kept it: runs/ in the working folder, the undo data beside the transcript.
    model.queue(calls(write("a.txt", "new\n")), answer("wrote"), answer("went on"))
    (tmp_path / "a.txt").write_text("old\n")
    assert (
        cli("--yes", "--transcript", "runs/2025-01-01T10-00-00-old.jsonl", "change a").returncode
        == 0
    )
    old = tmp_path / "runs" / "2025-01-01T10-00-00-old.jsonl"

    went_on = cli("--continue", "--transcript", "runs/2025-01-01T10-00-00-old.jsonl", "go on")
    undone = cli("--undo", "--transcript", "runs/2025-01-01T10-00-00-old.jsonl")

    assert went_on.returncode == 0, went_on.stderr
    assert (undone.returncode, undone.stdout) == (0, "restored a.txt\n"), undone.stderr
    assert (tmp_path / "a.txt").read_text() == "old\n"
    assert [e["task"] for e in read_events(old) if e["type"] == "start"] == ["change a", "go on"]
    assert not runs_of(tmp_path).exists() or not list(runs_of(tmp_path).glob("*.jsonl"))


def test_no_tool_writes_the_state_folder_when_the_workspace_holds_it(
    model, cli, tmp_path, monkeypatch
):
    # the workspace holds it, as a home folder does
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    model.queue(answer("first"))
    assert cli("first").returncode == 0
    transcript = only_transcript(tmp_path)
    forged = transcript.relative_to(tmp_path.resolve()).as_posix()
    model.queue(
        calls(write(forged, "{}\n"), write("state/plainagent/x.jsonl", "{}\n")), answer("tried")
    )

    assert cli("--yes", "forge them").returncode == 0

    results = [m["content"] for m in model.messages(1) if m["role"] == "tool"]
    assert all(r.startswith("error: PermissionError: ") and "is protected" in r for r in results), (
        results
    )
    assert json.loads(transcript.read_text().splitlines()[0])["task"] == "first"
    assert not (tmp_path / "state" / "plainagent" / "x.jsonl").exists()


@needs_landlock
def test_an_approved_command_cannot_change_the_runs_when_the_workspace_holds_the_state_folder(
    model, tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "sub").mkdir()
    model.queue(answer("first"))
    assert run_script("harness.py", "first", cwd=tmp_path).returncode == 0
    transcript = only_transcript(tmp_path)
    before = transcript.read_bytes()
    model.queue(
        calls(
            (
                "run_shell",
                {
                    "command": f"echo forged >> {transcript}; rm -rf state; "
                    "touch state/plainagent/new.jsonl; touch sub/mine.txt; ls state"
                },
            )
        ),
        answer("tried"),
    )

    result = run_script("harness.py", "--yes", "forge the transcript", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    output = model.messages(2)[-1]["content"]
    # the rest is writable
    assert "Permission denied" in output and (tmp_path / "sub" / "mine.txt").exists()
    assert transcript.read_bytes() == before
    assert sorted(p.name for p in runs_of(tmp_path).parent.iterdir()) == [runs_of(tmp_path).name]


@needs_landlock
def test_an_approved_command_in_a_workspace_holding_the_state_folder_cannot_change_others_runs(
    model, tmp_path, monkeypatch
):
    # every workspace's runs are in this one
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "other").mkdir()
    (tmp_path / "sub").mkdir()
    model.queue(answer("elsewhere"))
    assert run_script("harness.py", "elsewhere", cwd=tmp_path / "other").returncode == 0
    theirs = only_transcript(tmp_path / "other")
    before = theirs.read_bytes()
    model.queue(
        calls(("run_shell", {"command": f"echo forged >> {theirs}; touch sub/mine.txt"})),
        answer("tried"),
    )

    result = run_script("harness.py", "--yes", "forge their transcript", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert (
        "Permission denied" in model.messages(2)[-1]["content"]
        and (tmp_path / "sub" / "mine.txt").exists()
    )
    assert theirs.read_bytes() == before


@posix_only
def test_a_state_folder_removed_mid_run_returns_private_with_the_whole_run_and_later_edits_undoable(
    model, cli, tmp_path
):
    # It came back 0755, holding an undo record and no transcript: --runs and
    # --undo said "no run of … yet".
    state = Path(os.environ["XDG_STATE_HOME"])
    replies = iter([calls(write("a.txt", "one\n")), calls(write("b.txt", "two\n")), answer("done")])

    def removing_the_state_folder_before_the_second_reply(body: dict) -> dict:
        if len(model.requests) == 2:
            shutil.rmtree(state)
        return next(replies)

    model.router = removing_the_state_folder_before_the_second_reply

    result = cli("--yes", "write them")
    model.router = None

    transcript = only_transcript(tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        f"note: the transcript {transcript.as_posix()} was removed during the run; it is made "
        "again with the whole run so far, and the run goes on there (any undo data kept before "
        "then was removed with it)\n"
    ) in result.stderr
    made = [runs_of(tmp_path), runs_of(tmp_path).parent, state, Path(f"{transcript}.undo")]
    assert {folder.name: stat.S_IMODE(folder.stat().st_mode) for folder in made} == {
        folder.name: 0o700 for folder in made
    }
    assert stat.S_IMODE(transcript.stat().st_mode) == 0o600
    # the whole run: from its start, events before the removal included
    events = read_events(transcript)
    assert [e["type"] for e in events][:1] == ["start"] and events[-1]["reason"] == "answer"
    assert [e["name"] for e in events if e["type"] == "call"] == ["write_file", "write_file"]

    listed = cli("--runs")
    undone = cli("--undo")
    model.queue(answer("went on"))
    went_on = cli("--continue", "and now?")

    assert listed.stdout.split()[0] == "1" and listed.stdout.rstrip().endswith(
        "changed files  write them"
    )
    assert (undone.returncode, undone.stdout) == (0, "removed b.txt (the run created it)\n"), (
        undone.stderr
    )
    # a.txt's record went with the state
    assert (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()
    assert went_on.returncode == 0, went_on.stderr
    assert [m["content"] for m in model.messages(3)][-3:] == [
        "done",
        "(I undid the file changes of your latest task that still had any, with --undo: removed "
        "b.txt (the run created it).)",
        "and now?",
    ]


@posix_only
def test_a_transcript_removed_mid_run_is_made_again_where_its_undo_data_still_is(
    model, cli, tmp_path
):
    model.queue(calls(write("a.txt", "one\n")), calls(write("b.txt", "two\n")), answer("done"))
    model.router = lambda body: (
        (only_transcript(tmp_path).unlink() if len(model.requests) == 2 else None)
        or (model.script.popleft())
    )

    result = cli("--yes", "write them")
    model.router = None
    undone = cli("--undo")

    assert result.returncode == 0, result.stderr
    transcript = only_transcript(tmp_path)
    # nothing of undo was lost
    assert (
        f"note: the transcript {transcript.as_posix()} was removed during the run; it is made "
        "again with the whole run so far, and the run goes on there\n"
    ) in result.stderr
    assert (undone.returncode, undone.stdout) == (
        0,
        "removed a.txt (the run created it)\nremoved b.txt (the run created it)\n",
    ), undone.stderr


def test_a_run_another_workspace_left_in_this_ones_runs_folder_is_never_listed_continued_or_undone(
    model, cli, tmp_path, monkeypatch
):
    # The folder's name holds 40 bits of the workspace's path: two workspaces whose bits are the
    # same share it. Forged here by giving a run in b a transcript in a's folder, as b's own runs
    # would be kept if they collided.
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    model.queue(
        calls(write("a.txt", "a\n")),
        answer("wrote a"),
        calls(write("b.txt", "b\n")),
        answer("wrote b"),
    )
    monkeypatch.chdir(tmp_path / "a")
    assert cli("--yes", "write a").returncode == 0
    shared = runs_of(tmp_path / "a")
    monkeypatch.chdir(tmp_path / "b")
    assert (
        cli(
            "--yes", "--transcript", str(shared / "2999-01-01T00-00-00-write-b.jsonl"), "write b"
        ).returncode
        == 0
    )
    assert len(list(shared.glob("*.jsonl"))) == 2 and runs_of(tmp_path / "b") != shared
    monkeypatch.chdir(tmp_path / "a")

    listed = cli("--runs")
    undone = cli("--undo")
    model.queue(answer("went on"))
    went_on = cli("--continue", "and now?")
    monkeypatch.chdir(tmp_path / "b")
    theirs = cli("--runs")

    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 1, listed.stdout
    assert listed.stdout.rstrip().endswith("changed files  write a")
    assert (undone.returncode, undone.stdout) == (0, "removed a.txt (the run created it)\n"), (
        undone.stderr
    )
    assert (tmp_path / "b" / "b.txt").exists()
    assert went_on.returncode == 0, went_on.stderr
    assert [m["content"] for m in model.messages(4)][1:] == [
        "write a",
        None,
        "created a.txt (2 bytes)",
        "wrote a",
        "(I undid the file changes of your latest task that still had any, with --undo: "
        "removed a.txt (the run created it).)",
        "and now?",
    ]
    # b's runs are kept under another name than a's: the forged one is in a's folder
    assert theirs.stdout == ""


def start_time_made(path: Path, value: str) -> None:
    """The run's start event given the time `value`, as JSON spells it, the file's own time kept."""
    was = path.stat()
    first, rest = path.read_text().split("\n", 1)
    path.write_text(re.sub(r'^\{"time": [0-9.]+,', f'{{"time": {value},', first) + "\n" + rest)
    os.utime(path, ns=(was.st_atime_ns, was.st_mtime_ns))


@pytest.mark.parametrize(
    "value", ["1e400", "-1e400", "NaN", "Infinity", "1e12", "-1", "true", '"10:00"']
)
def test_a_start_time_that_is_no_time_gives_way_to_the_files_time(model, cli, tmp_path, value):
    # 1e400 stopped --runs and --undo with an OverflowError; NaN sorted the runs at random, and
    # --undo took back an older run by itself.
    model.queue(
        calls(write("a.txt", "a\n")),
        answer("wrote a"),
        calls(write("b.txt", "b\n")),
        answer("wrote b"),
    )
    assert cli("--yes", "write a").returncode == 0
    first = only_transcript(tmp_path)
    assert cli("--yes", "write b").returncode == 0
    start_time_made(first, value)
    assert (
        json.loads(first.read_text().split("\n", 1)[0].replace("1e400", "1e308"))["type"] == "start"
    )

    listed = cli("--runs")
    undone = cli("--undo")

    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["2", "1"]
    shown = time.strftime("%Y-%m-%d %H:%M", time.localtime(first.stat().st_mtime))
    assert listed.stdout.splitlines()[1] == f"   1  {shown}  changed files  write a"
    assert (undone.returncode, undone.stdout) == (0, "removed b.txt (the run created it)\n"), (
        undone.stderr
    )
    assert (tmp_path / "a.txt").exists()


@pytest.mark.parametrize("flags", [("--undo",), ("--continue", "go on")])
def test_neither_undo_nor_continue_takes_a_transcript_an_older_version_left_in_runs_unless_named(
    model, cli, tmp_path, flags
):
    # Commands of those runs could write runs/: only --continue's refusal was tested,
    # --undo's was not, and an --undo that took the newest transcript there would write
    # back what a forged record says.
    model.queue(calls(write("a.txt", "new\n")), answer("wrote"))
    (tmp_path / "a.txt").write_text("old\n")
    assert (
        cli("--yes", "--transcript", "runs/2025-01-01T10-00-00-old.jsonl", "change a").returncode
        == 0
    )
    before = (tmp_path / "runs" / "2025-01-01T10-00-00-old.jsonl").read_bytes()

    result = cli(*flags)

    doing = flags[0].removeprefix("--")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(
        f"error: cannot {doing}: no run of {tmp_path.resolve()} yet (its runs are kept in "
        f"{runs_of(tmp_path)}); transcripts of an older version are in runs/: name one with "
        "--transcript runs/NAME.jsonl"
    ), result.stderr
    assert (tmp_path / "a.txt").read_text() == "new\n"
    assert (tmp_path / "runs" / "2025-01-01T10-00-00-old.jsonl").read_bytes() == before
