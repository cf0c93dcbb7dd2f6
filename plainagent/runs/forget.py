"""--forget-runs DAYS (beyond the tutorial): a workspace's runs that started more than DAYS days
ago removed from the state folder, each transcript with its undo data, and what the undo store kept
for them alone; never a run still going (it holds its transcript), and nothing outside the
workspace's runs folder."""

import contextlib
import os
import shutil
import time
from pathlib import Path

from plainagent.runs.listing import ListedRun, runs
from plainagent.runs.transcript import InUse, take
from plainagent.workspace import store
from plainagent.workspace.undo_record import folder_for

DAY = 86_400  # seconds


def forget(folder: Path, workspace: Path, days: float) -> tuple[list[ListedRun], list[ListedRun]]:
    """Remove the workspace's runs in its runs folder that started more than `days` days ago (0:
    every one); return those removed, and those left because a run still holds them. Raises
    OSError for a runs folder that is a link (it would lead outside the state folder), or for a
    run that cannot be removed, having removed those before it."""
    if folder.is_symlink():
        raise OSError(f"{folder.as_posix()} is a link, not a folder; nothing was removed")
    before = time.time() - days * DAY
    removed, going = [], []
    for run in runs(folder, workspace):
        if run.started > before:
            continue
        try:
            remove(run.path)
        except InUse:
            going.append(run)
            continue
        removed.append(run)
    # What undo kept of the files commands changed, for the runs that are left; all of it if none is
    if not any(folder.glob("*.jsonl")):
        store.remove(folder)
    else:
        store.prune(folder)
    with contextlib.suppress(OSError):  # empty now: the workspace has no run left
        folder.rmdir()
    return removed, going


def remove(transcript: Path) -> None:
    """Remove a transcript and its undo data, while holding it as a run does (InUse if a run holds
    it): its undo data first, so a removal cut short leaves a run that changed nothing, not undo
    data without its run. A link named so is removed, never what it leads to."""
    fd = None
    try:
        fd = os.open(
            transcript, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        )
    except OSError:
        if not transcript.is_symlink():  # no run writes through a link (transcript.open_new)
            raise
    try:
        if fd is not None:
            take(fd, transcript)
        undo = folder_for(transcript)
        if undo.is_symlink() or undo.exists() and not undo.is_dir():
            undo.unlink()
        elif undo.exists():
            shutil.rmtree(undo)  # its links are removed, never followed
        if os.name != "nt":  # Windows removes no file that is open
            transcript.unlink()
    finally:
        if fd is not None:
            os.close(fd)
    if os.name == "nt":
        transcript.unlink()
