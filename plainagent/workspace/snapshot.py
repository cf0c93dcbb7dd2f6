"""What an approved command changed, for undo (beyond the tutorial): before it runs, a walk of the
workspace (walk.py) keeps every file's content in the store; after it, the same walk, compared,
becomes one step of the task's undo record (files made, changed, removed; modes, links, folders),
named by the command. A change in .git, a virtual environment or node_modules is named as git's or
the package manager's to undo."""

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import typing
from pathlib import Path

from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import Settings
from plainagent.core.statefolder import make_folders
from plainagent.workspace import objects, store
from plainagent.workspace.undo_record import (
    MANIFEST,
    UndoError,
    read_kept,
    read_manifest,
    sync_folder,
    write_private,
)
from plainagent.workspace.undo_state import state
from plainagent.workspace.walk import Snapshot, look

# What to tell a person of a change in a folder left to another program (walk.NOT_KEPT, a venv)
OWNERS = {
    "git": "history is git's to undo (git log, git reset, git checkout)",
    "venv": "installs are the package manager's to undo (pip uninstall, or make the venv again)",
    "node_modules": "installs are the package manager's to undo (npm uninstall, npm ci)",
}
# Notes said in this process, per task record: each file not kept is named once a run, this many
# at most at once
NAMED = 10
NOTED: dict[str, set[str]] = {}


def tell(settings: Settings, shot: Snapshot) -> None:
    """Say once a run, on stderr, each file whose content before the command is not kept; past
    NAMED of them, how many more (a full store would name every file of a large workspace)."""
    noted = NOTED.setdefault(str(settings.undo), set())
    redact = redactor(settings.secrets)
    new = [(name, reason) for name, reason in shot.not_kept.items() if name not in noted]
    noted.update(name for name, _ in new)
    for name, reason in new[:NAMED]:
        line = f"note: {name} is not kept for undo ({reason}): --undo cannot take back a change"
        print(shown(f"{line} a command makes to it", redact=redact), file=sys.stderr)
    if len(new) > NAMED:
        more = f"note: {len(new) - NAMED} more files are not kept for undo ({new[NAMED][1]}, ...)"
        print(shown(more, redact=redact), file=sys.stderr)


def node(entry: tuple | None, name: str, shot: Snapshot) -> dict | None:
    """A walk's node (Snapshot.node) as the manifest keeps it."""
    if entry is None:
        return None
    if entry[0] == "folder":
        return {"type": "folder", "mode": entry[1]}
    if entry[0] == "link":
        return {"type": "link", "target": entry[1]}
    made = {"type": "file", "mode": entry[1][4], "size": entry[1][0], "digest": entry[2]}
    if entry[2] is None:
        made["reason"] = shot.not_kept.get(name, "it was not kept")
    return made


def changed(before: tuple | None, after: tuple | None) -> bool:
    """Whether a path's node differs after the command: a file by content and mode (by its stat
    where the content was not kept)."""
    if before is None or after is None or before[0] != after[0] or before[0] != "file":
        return before != after
    if before[2] is None or after[2] is None:
        return before[1] != after[1]
    return (before[1][4], before[2]) != (after[1][4], after[2])


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """The paths a command changed, in order. A file as the store saw it is one object in both
    walks, and the entries that differ (or are in one walk only) are found by set operations, at
    the speed of C: a Python loop over ten thousand entries took a millisecond."""
    names: set[str] = set()
    for old, new in (
        (before.files, after.files),
        (before.links, after.links),
        (before.folders, after.folders),
    ):
        if old != new:
            names.update(name for name, _ in old.items() ^ new.items())
    return sorted(n for n in names if changed(before.node(n), after.node(n)))


def without_undo(settings: Settings) -> Settings:
    """The settings of a command that only reads: nothing to keep (the kernel holds it to that)."""
    return dataclasses.replace(settings, undo=None)


@contextlib.contextmanager
def kept_for_undo(step: str, settings: Settings) -> typing.Iterator[None]:
    """Around a command that may write: the workspace kept before, and what the command changed
    recorded after as one step of the task's undo record, named `step`. A keep that fails never
    stops the command: what is not covered is said, and the run goes on."""
    if settings.undo is None:
        yield
        return
    with store.commanding(settings.runs_folder):
        yield from recorded(step, settings)


def recorded(step: str, settings: Settings) -> typing.Iterator[None]:
    """kept_for_undo()'s work, once store.commanding() holds off a prune."""
    redact = redactor(settings.secrets)
    try:
        before: Snapshot | None = look(settings)
        tell(settings, before)  # type: ignore[arg-type]
    except OSError as error:
        before = None
        said = f"note: undo data could not be kept before this command ({error}); --undo cannot "
        print(shown(f"{said}take back what it changes", redact=redact), file=sys.stderr)
    try:
        yield
    finally:
        if before is not None:
            try:
                after = look(settings)
                # Under the store's lock: another run's prune or keep waits until it is recorded
                with store.opened(settings.runs_folder):
                    record_step(step, before, after, settings)
            except (OSError, UndoError) as error:
                said = f"note: what this command changed could not be recorded for undo ({error})"
                print(shown(said, redact=redact), file=sys.stderr)


def record_step(step: str, before: Snapshot, after: Snapshot, settings: Settings) -> None:
    """Write what the command changed into the task's record: each path's first node before the
    task and its node now (a file a file tool changed first keeps the copy it kept), named by
    the step; and each folder left to another program that changed."""
    record = settings.undo
    assert record is not None
    names = changes(before, after)
    areas = [a for a, (_, sig) in after.areas.items() if before.areas.get(a, ("", sig))[1] != sig]
    areas = sorted(areas + [a for a in before.areas if a not in after.areas])
    if not names and not areas:
        return
    kept = store.folder(settings.runs_folder)
    digests = (before.files.get(n, ((), None))[1] for n in names)
    store.made_durable(kept, (digest for digest in digests if digest))
    fresh = not (record / MANIFEST).exists()
    manifest: dict[str, typing.Any] = (
        read_manifest(record) if not fresh else {"files": [], "undone": False}
    )
    by_path = {e["path"]: e for e in manifest["files"]}
    for name in names:
        path = str(settings.workspace / name)
        now = node(after.node(name), name, after)
        if now is not None and now["type"] == "file" and now["digest"] is None:
            now = {"type": "file", "mode": now["mode"], "digest": state(Path(path))}
        entry = by_path.get(path)
        if entry is None:
            entry = {"path": path, "kind": "command", "by": []}
            entry["before"] = node(before.node(name), name, before)
            manifest["files"].append(entry)
        elif entry.get("kind") != "command":  # a file tool's, made a command's step
            converted = {"path": path, **from_file_tool(entry, record, kept)}
            entry.clear()
            entry.update(converted)
        entry["after"] = now
        if step not in entry["by"]:
            entry["by"].append(step)
    left = manifest.setdefault("left", [])
    for area in areas:
        owner = (after.areas.get(area) or before.areas[area])[0]
        left.append({"path": str(settings.workspace / area), "owner": owner, "by": step})
    write_record(record, manifest, fresh)


def from_file_tool(entry: dict, record: Path, kept: Path) -> dict:
    """A file tool's entry as a command's: its copy moved into the store."""
    if not entry["existed"]:  # and the folders write_file made for it, removed once it is
        return {"kind": "command", "by": [], "before": None, "folders": entry["folders"]}
    if entry.get("copy") is None:
        before = {
            "type": "file",
            "mode": None,
            "size": 0,
            "digest": None,
            "reason": entry["reason"],
        }
    else:
        digest = objects.keep_bytes(kept, read_kept(record / entry["copy"], entry["size"]))
        before = {"type": "file", "mode": entry["mode"], "size": entry["size"], "digest": digest}
    return {"kind": "command", "by": [], "before": before}


def write_record(record: Path, manifest: dict, fresh: bool) -> None:
    """The manifest written whole; a task's first record made in a folder of another name and
    renamed, as remember() makes it, so kill -9 never leaves a record without its manifest."""
    if not fresh:
        write_private(record / MANIFEST, json.dumps(manifest).encode())
        return
    for made in make_folders(record.parent, 0o700):
        sync_folder(made.parent)
    folder = Path(tempfile.mkdtemp(dir=record.parent, prefix=f".{record.name}-"))
    try:
        write_private(folder / MANIFEST, json.dumps(manifest).encode())
        shutil.rmtree(record, ignore_errors=True)
        os.rename(folder, record)
        sync_folder(record.parent)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
