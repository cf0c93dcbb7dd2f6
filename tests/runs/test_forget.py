"""--forget-runs DAYS removes a workspace's runs that started more than DAYS days ago from the state
folder, transcript and undo data, and nothing else: never a run still going (which --runs shows as
running), never what a link in the runs folder leads to."""

import json
import time

from fake_model import answer, calls
from helpers import posix_only, runs_of, under, wait_for

from plainagent.runs import listing

DAY = 86_400


def started_days_ago(transcript, days: float) -> None:
    """Make the run's start event say it started `days` days ago."""
    first, rest = transcript.read_text().split("\n", 1)
    event = json.loads(first)
    event["time"] = time.time() - days * DAY
    transcript.write_text(json.dumps(event) + "\n" + rest)


def test_runs_older_than_the_days_are_forgotten_with_their_undo_data(model, cli, tmp_path):
    model.queue(
        calls(("write_file", {"path": "a.txt", "content": "a"})),
        answer("one"),
        answer("two"),
        answer("three"),
    )
    for task in ("write a", "look", "look again"):
        assert cli("--yes", task).returncode == 0
    first, second, third = [run.path for run in listing.runs(runs_of(tmp_path), tmp_path)]
    started_days_ago(first, 40)
    started_days_ago(second, 31)
    assert listing.folder_for(first).is_dir()  # write a kept what undo needs

    result = cli("--forget-runs", "30")

    assert result.returncode == 0, result.stderr
    assert [line.split(" (")[0] for line in result.stdout.splitlines()] == [
        "forgot run 1",
        "forgot run 2",
    ]
    assert result.stderr == (
        f"forgot 2 runs of {tmp_path.resolve()} that started over 30 days ago\n"
    )
    assert sorted(runs_of(tmp_path).iterdir()) == [third]
    assert (tmp_path / "a.txt").read_text() == "a"  # forgetting a run undoes nothing
    assert cli("--runs").stdout.split()[-2:] == ["look", "again"]


def test_forgetting_runs_over_one_day_old_says_one_day(model, cli, tmp_path):
    model.queue(answer("ok"))
    assert cli("say ok").returncode == 0

    result = cli("--forget-runs", "1")

    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == f"forgot 0 runs of {tmp_path.resolve()} that started over 1 day ago\n"


def test_forgetting_every_run_leaves_no_folder_and_needs_no_key(model, cli, tmp_path, monkeypatch):
    model.queue(answer("ok"))
    assert cli("say ok").returncode == 0
    monkeypatch.delenv("GROQ_API_KEY")

    result = cli("--forget-runs", "0")

    assert (result.returncode, result.stderr) == (0, f"forgot 1 run of {tmp_path.resolve()}\n")
    assert not runs_of(tmp_path).exists()
    assert cli("--forget-runs", "0").stderr == f"forgot 0 runs of {tmp_path.resolve()}\n"


@posix_only
def test_a_run_still_going_is_listed_as_running_and_never_forgotten(
    model, cli, tmp_path, start_cli
):
    model.queue(calls(("run_shell", {"command": "sleep 300"})))
    going = start_cli(tmp_path, "wait", "--yes")
    wait_for(lambda: under(going.pid, "sleep 300"))

    listed = cli("--runs")
    forgotten = cli("--forget-runs", "0")

    assert listed.stdout.rstrip().endswith("  running        wait"), listed.stdout
    assert forgotten.returncode == 0 and forgotten.stdout == ""
    assert forgotten.stderr == (f"forgot 0 runs of {tmp_path.resolve()}; 1 run still going, kept\n")
    assert len(listing.runs(runs_of(tmp_path), tmp_path)) == 1


@posix_only
def test_what_a_link_in_the_runs_folder_leads_to_is_never_removed(model, cli, tmp_path):
    model.queue(calls(("write_file", {"path": "a.txt", "content": "a"})), answer("one"))
    assert cli("--yes", "write a").returncode == 0
    [run] = listing.runs(runs_of(tmp_path), tmp_path)
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    undo = listing.folder_for(run.path)
    kept = elsewhere / "transcript.jsonl"
    run.path.rename(kept)
    run.path.symlink_to(kept)
    undo.rename(elsewhere / "undo")
    undo.symlink_to(elsewhere / "undo")

    result = cli("--forget-runs", "0")

    assert result.returncode == 0, result.stderr
    assert not run.path.is_symlink() and not undo.is_symlink()
    assert (elsewhere / "keep.txt").read_text() == "mine" and kept.is_file()
    assert (elsewhere / "undo").is_dir() and any((elsewhere / "undo").iterdir())
