"""The two changes the file tools make (phase 2 wraps them): a whole new text, or one exact
replacement, each under the file's lock, each kept for undo first, each whole or not at all, and
neither made to a file that changed since the person approved it: what the gate saw of the file
before asking (Seen) is given to the change, which compares it again."""

import contextlib
import dataclasses
import typing
from pathlib import Path

from plainagent.core.settings import Settings
from plainagent.workspace import undo
from plainagent.workspace.edits import planned_edit
from plainagent.workspace.files import writable
from plainagent.workspace.writes import (
    Refused,
    existing,
    file_lock,
    fingerprint,
    folder_lock,
    looked_at,
    replace_file,
)


@dataclasses.dataclass(frozen=True)
class Seen:
    """What the person was shown of a file before approving a change to it, looked at by the gate
    before asking: `target`, where its path led; and, for a whole new text, its `fingerprint`: what
    was approved must still be what is overwritten. An edit is planned again on the file as it is
    (an edit made meanwhile is kept), but never lands in another file."""

    target: str
    fingerprint: tuple | None = None
    asks: typing.ClassVar[bool] = True  # a person approves every change of a file

    def approved(self) -> "Seen":
        return self


def seen_before_write(arguments: dict, settings: Settings) -> Seen:
    """write_file's look at the gate (its @asks(deciding=...)): a read-only file is refused before
    anyone is asked; else its fingerprint, which must not change before it is overwritten."""
    target = looked_at(arguments["path"], settings)
    return Seen(str(target), fingerprint(target))


def seen_before_edit(arguments: dict, settings: Settings) -> Seen:
    """edit_file's look at the gate (its @asks(deciding=...)): a read-only file is refused before
    anyone is asked; else where its path leads, which the edit must still land in."""
    return Seen(str(looked_at(arguments["path"], settings)))


def write_text(path: str, content: str, settings: Settings, seen: Seen | None = None) -> str:
    """write_file's change: the file at path holds content (UTF-8), its folders made; says which.
    seen: what the person was shown (None: nobody was asked)."""

    # The name as written: the approval prompt showed this very file
    target = writable(path, settings)
    data = content.encode("utf-8")
    with file_lock(path, target) as locked:
        info = existing(path, target)
        refuse_if_changed(path, target, seen)
        # Before anything changes: the file as it was, or that it was not there
        with undo.remembered(target, [data], settings):
            target.parent.mkdir(parents=True, exist_ok=True)
            # A folder made just now was not the one locked: another process may have written the
            # file in it already.
            with (
                folder_lock(path, target.parent)
                if locked.folder != target.parent
                else contextlib.nullcontext(locked.stat)
            ) as folder:
                refuse_if_changed(path, target, seen)
                replace_file(path, target, [data], settings, info, locked=folder)
    return f"{'overwrote' if info else 'created'} {path} ({len(data)} bytes)"


def refuse_if_changed(path: str, target: Path, seen: Seen | None) -> None:
    """Refuse to write a file that changed since the person was asked (if anyone was)."""
    if seen is not None and fingerprint(target) != seen.fingerprint:
        raise Refused(f"{path} changed since you were asked; read it again")


def edit_text(
    path: str, old_text: str, new_text: str, settings: Settings, seen: Seen | None = None
) -> str:
    """edit_file's change: old_text, found exactly once, replaced by new_text; says the sizes.
    seen: what the person was shown (None: nobody was asked)."""

    # Planned again here, on the file as it is now: it may have changed
    with file_lock(path, writable(path, settings)) as locked:
        edit = planned_edit(path, old_text, new_text, settings)
        if seen is not None and str(edit.target) != seen.target:
            raise Refused(
                f"{path} leads to another file than when you were asked (a link on the way to it "
                "changed); read it again"
            )
        before = memoryview(edit.data)
        chunks = (before[: edit.start], edit.new, before[edit.end :])
        # before anything changes: the file as it was
        with undo.remembered(edit.target, chunks, settings):
            size = replace_file(path, edit.target, chunks, settings, edit.info, locked=locked.stat)
    return f"edited {path}: replaced 1 occurrence of old_text ({len(edit.data)} -> {size} bytes)"
