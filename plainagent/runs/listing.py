"""A workspace's runs (beyond the tutorial), as --runs lists them and --continue, --undo and
--run N take them: its transcripts in the state folder, numbered in the order they started (1 the
first), each with its start time, its task's first line and whether it changed files with
write_file or edit_file (and the size of what undo keeps, amount()). A transcript another workspace
started is none of its runs, though their folders share a name."""

import contextlib
import dataclasses
import json
import os
import stat
import time
import typing
from pathlib import Path

from plainagent.runs.transcript import held
from plainagent.workspace.undo_record import UndoError, folder_for, read_manifest, records

FIRST_LINE_BYTES = 1_000_000  # the most of a transcript read for its start event
TASK_SHOWN = 60  # characters of a task's first line in the list
# The latest start time taken from a transcript: 3000-01-01 UTC, the most Windows' clock shows
LATEST_START = 32_503_680_000

# What a run's undo data says of it
CHANGED = "changed files"
UNDONE = "undone"
UNCHANGED = "no changes"
RUNNING = "running"  # a run still going holds its transcript: what it changes is not settled yet


@dataclasses.dataclass(frozen=True)
class ListedRun:
    """One run of the workspace: its number in the list, its transcript, when it started, its task
    and what undo could take back of it (CHANGED, UNDONE or UNCHANGED), or RUNNING."""

    number: int
    path: Path
    started: float
    task: str
    changes: str

    def named(self) -> str:
        """The run as a message names it: run 3 (2026-11-29 10:00, 'fix the tests')."""
        return f"run {self.number} ({when(self.started)}, '{self.task}')"

    def line(self) -> str:
        """The run's line in the list."""
        return f"{self.number:>4}  {when(self.started)}  {self.changes:<13}  {self.task}"


def when(started: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(started))


def runs(folder: Path, workspace: Path) -> list[ListedRun]:
    """The workspace's runs in the folder, oldest first. A transcript that holds nothing (a session
    left before its first task) is no run, and what cannot be read as a file (a dangling link) is
    passed over; so is a run whose start names another workspace: the folder's name holds 40 bits
    of its workspace's path, and two workspaces whose bits are the same share it."""
    found = []
    for path in folder.glob("*.jsonl") if folder.is_dir() else ():
        with contextlib.suppress(OSError):
            info = path.stat()
            if info.st_size and stat.S_ISREG(info.st_mode):
                started, task, started_in = opening(path, info.st_mtime)
                if started_in is None or same_folder(started_in, workspace):
                    found.append((started, path.name, path, task))
    found.sort()
    return [
        ListedRun(number, path, started, task, changes(path))
        for number, (started, _, path, task) in enumerate(found, 1)
    ]


def opening(path: Path, modified: float) -> tuple[float, str, str | None]:
    """When the run started, its task's first line and the workspace it started in, from the
    transcript's first event (its start); the file's time, no task and no workspace where that
    cannot be read. A start time is taken only if it is one (a number from 1970 to LATEST_START):
    1e400 would stop the list, and NaN would sort an older run last, for --undo to take."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as file:
            first = file.read(FIRST_LINE_BYTES).split(b"\n", 1)[0]
        event = json.loads(first.decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return modified, "", None
    if not isinstance(event, dict) or event.get("type") != "start":
        return modified, "", None
    task = event.get("task")
    lines = task.strip().split("\n") if isinstance(task, str) else [""]
    shown = lines[0] if len(lines[0]) <= TASK_SHOWN else lines[0][: TASK_SHOWN - 1] + "…"
    started = event["time"] if a_time(event.get("time")) else modified
    workspace = event.get("workspace")
    return float(started), shown, workspace if isinstance(workspace, str) else None


def a_time(value: typing.Any) -> bool:
    """Whether a start event's time is one a run can have: a number (not true or false) from 1970 to
    LATEST_START. NaN is not: it compares false with both."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and 0 <= value <= LATEST_START
    )


def same_folder(recorded: str, workspace: Path) -> bool:
    """Whether a start's recorded workspace is this one, as the transcript writes its name: with a
    character UTF-8 cannot hold (a name of undecodable bytes) as '?'."""
    return recorded == str(workspace).encode("utf-8", errors="replace").decode("utf-8")


def changes(path: Path) -> str:
    """Whether undo could take back any of the run: CHANGED while a task's change is still kept,
    UNDONE once each one was undone, UNCHANGED where none changed a file; RUNNING while a run
    still holds the transcript. Damaged undo data counts as changes: --undo then says what is
    wrong with it."""
    if held(path):
        return RUNNING
    kept = folder_for(path)
    numbers = records(kept)
    if not numbers:
        return UNCHANGED
    for number in numbers:
        try:
            if not read_manifest(kept / str(number))["undone"]:
                return CHANGED
        except UndoError:
            return CHANGED
    return UNDONE


def pick(
    folder: Path, workspace: Path, number: int | None
) -> tuple[ListedRun | None, list[ListedRun]]:
    """The run of the workspace --continue or --undo takes: run `number`, or the newest (None if
    there is none); and every run, for what a message says of the others. Raises LookupError,
    saying what to do, for a number no run has."""
    every = runs(folder, workspace)
    if number is None:
        return (every[-1] if every else None), every
    if not 1 <= number <= len(every):
        have = f"runs 1 to {len(every)}" if every else "no runs yet"
        raise LookupError(f"there is no run {number} of this workspace ({have}); --runs lists them")
    return every[number - 1], every


def elsewhere(newest: ListedRun, every: list[ListedRun]) -> str | None:
    """What --undo says when the newest run has nothing left to undo and an older one has: which
    one, and how to take it back; None when the newest has changes, or is still going (undo then
    says so), or no other run has."""
    if newest.changes in (CHANGED, RUNNING):
        return None
    older = next((r for r in reversed(every) if r.changes == CHANGED), None)
    if older is None:
        return None
    did = "changed no file" if newest.changes == UNCHANGED else "had its changes undone already"
    return (
        f"the newest run ({newest.number}, {when(newest.started)}, '{newest.task}') {did}; "
        f"{older.named()} did: --undo --run {older.number}"
    )


def undo_instead(folder: Path, workspace: Path, this: Path | None) -> str:
    """What /undo adds when the session's conversation has nothing left to undo and an earlier run
    has (the conversation before /new, or a run before the session): which one, and how to take it
    back; '' when none has."""
    older = (r for r in reversed(runs(folder, workspace)) if r.changes == CHANGED)
    if (run := next((r for r in older if this is None or r.path.name != this.name), None)) is None:
        return ""
    return f"; {run.named()} did: --undo --run {run.number}"


def namesakes(state: Path, workspace: Path) -> list[tuple[Path, bool]]:
    """The other folders whose runs may be this workspace's from before it moved, each with whether
    it is still there: one of the same name elsewhere (moved), and one beside it that is gone
    (renamed). Each workspace's runs folder in the state folder is known by its newest
    transcript's start."""
    found, folders = set(), []
    with contextlib.suppress(OSError):
        folders = list(state.iterdir())
    for folder in folders:
        with contextlib.suppress(OSError):
            named = sorted(folder.glob("*.jsonl"), reverse=True)  # named by their start time
            newest = next((p for p in named if p.is_file() and p.stat().st_size), None)
            started_in = opening(newest, 0)[2] if newest else None
            if started_in is None or same_folder(started_in, workspace):
                continue
            other = Path(started_in)
            gone = not other.is_dir()
            if other.name == workspace.name or other.parent == workspace.parent and gone:
                found.add((other, not gone))
    return sorted(found)


def amount(size: int) -> str:
    """Bytes as a person reads them: KB under a megabyte (at least 1), then MB, then GB, where a
    small store was '0.0 MB'."""
    if size < 999_500:
        return f"{max(1, round(size / 1000))} KB"
    if size < 999_950_000:
        return f"{size / 1e6:.1f} MB"
    return f"{size / 1e9:.1f} GB"
