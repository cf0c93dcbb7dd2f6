"""The two changes the file tools make (phase 2 wraps them): a whole new text, or one exact
replacement, each under the file's lock, each kept for undo first, each whole or not at all, and
neither made to a file that changed since the person approved it."""

import contextlib
from pathlib import Path

from plainagent.core.settings import Settings
from plainagent.workspace import undo
from plainagent.workspace.edits import planned_edit
from plainagent.workspace.files import writable
from plainagent.workspace.writes import (
    ASKED_ABOUT,
    Refused,
    existing,
    file_lock,
    fingerprint,
    folder_lock,
    replace_file,
)


def write_text(path: str, content: str, config: Settings) -> str:
    """write_file's change: the file at path holds content (UTF-8), its folders made; says which."""

    # The name as written: the approval prompt showed this very file
    target = writable(path, config)
    data = content.encode("utf-8")
    with file_lock(path, target) as locked:
        info = existing(path, target)
        refuse_if_changed(path, target)
        # Before anything changes: the file as it was, or that it was not there
        with undo.remembered(target, [data], config):
            target.parent.mkdir(parents=True, exist_ok=True)
            # A folder made just now was not the one locked: another process may have written the
            # file in it already.
            with (
                folder_lock(path, target.parent)
                if locked != target.parent
                else contextlib.nullcontext()
            ):
                refuse_if_changed(path, target)
                replace_file(path, target, [data], config, info)
    return f"{'overwrote' if info else 'created'} {path} ({len(data)} bytes)"


def refuse_if_changed(path: str, target: Path) -> None:
    """Refuse to write a file that changed since the person was asked (if anyone was)."""
    asked = ASKED_ABOUT.get()
    if asked is not None and fingerprint(target) != asked:
        raise Refused(f"{path} changed since you were asked; read it again")


def edit_text(path: str, old_text: str, new_text: str, config: Settings) -> str:
    """edit_file's change: old_text, found exactly once, replaced by new_text; says the sizes."""

    # Planned again here, on the file as it is now: it may have changed
    with file_lock(path, writable(path, config)):
        edit = planned_edit(path, old_text, new_text, config)
        asked = ASKED_ABOUT.get()
        if asked is not None and (str(edit.target),) != asked:
            raise Refused(
                f"{path} leads to another file than when you were asked (a link on the way to it "
                "changed); read it again"
            )
        before = memoryview(edit.data)
        chunks = (before[: edit.start], edit.new, before[edit.end :])
        # before anything changes: the file as it was
        with undo.remembered(edit.target, chunks, config):
            size = replace_file(path, edit.target, chunks, config, edit.info)
    return f"edited {path}: replaced 1 occurrence of old_text ({len(edit.data)} -> {size} bytes)"
