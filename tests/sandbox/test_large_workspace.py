"""A workspace too large to look through for .env files (/, a home folder): the look stops after
readable.MOST_ENTRIES entries, so a read or a command costs there what it costs in a large project,
and what it could not look through is treated as holding a .env anywhere: the file tools read
nothing and no command runs without asking, while a command the person approves still runs."""

import time
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import posix_only, results

import harness
from plainagent.sandbox import readable

pytestmark = posix_only


@pytest.fixture
def large(tmp_path, monkeypatch):
    """A workspace of 60 files and a .env in a folder past them, with a bound of 50 entries."""
    monkeypatch.setattr(readable, "MOST_ENTRIES", 50)
    for n in range(60):
        (tmp_path / f"f{n}.txt").write_text(f"file {n}\n")
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / ".env").write_text("SECRET=past-the-bound-7731\n")
    return tmp_path


def test_past_the_bound_nothing_is_read_and_no_command_runs_without_asking(model, large):
    model.queue(
        calls(
            ("read_file", {"path": "f1.txt"}),
            ("run_shell", {"command": "cat z/.env f1.txt"}),
            ("run_shell", {"command": "grep -r SECRET ."}),
        ),
        answer("done"),
    )

    harness.run("look", workspace=large, approve=lambda name, arguments: False)

    refusal = (
        f"error: PermissionError: the workspace {large} holds over 50 files and folders, too "
        "many to look through for .env files"
    )
    found = results(model, 1, 3)
    assert found[0].startswith(refusal), found[0]
    assert found[1] == "denied by the user"  # it names a .env: it asks, as it always did
    assert found[2].startswith(refusal) and "past-the-bound" not in found[2]


def test_past_the_bound_an_approved_command_still_runs(model, large):
    model.queue(calls(("run_shell", {"command": "echo hi > out.txt"})), answer("done"))

    harness.run("write", workspace=large, approve=lambda name, arguments: True)

    assert (large / "out.txt").read_text() == "hi\n"


def test_within_the_bound_the_look_is_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(readable, "MOST_ENTRIES", 50)
    for n in range(45):
        (tmp_path / f"f{n}.txt").write_text(f"file {n}\n")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / ".env").write_text("SECRET=x\n")

    assert readable.dotenv_files(tmp_path) == (tmp_path / "deep" / "er" / ".env",)


def test_a_command_in_the_root_folder_costs_seconds_not_minutes(model, monkeypatch):
    model.queue(
        calls(("run_shell", {"command": "true"}), ("read_file", {"path": "etc/hostname"})),
        answer("done"),
    )
    events = []

    started = time.monotonic()
    harness.run("look", workspace=Path("/"), on_event=events.append)

    assert time.monotonic() - started < 20
    assert [e["seconds"] < 10 for e in events if e["type"] == "tool"] == [True, True]
