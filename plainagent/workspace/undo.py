"""Undo (beyond the tutorial): what each command-line task changed with write_file and edit_file
is kept beside its transcript (`<transcript>.undo/<n>/`: a manifest and copies of the files as
they were before), and can be taken back; so are an approved command's changes, recorded as a step
of the same record (snapshot.py) and put back by undo_steps.py."""

import contextlib
import errno
import itertools
import json
import os
import shutil
import stat
import sys
import tempfile
import typing
from pathlib import Path

from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import Settings
from plainagent.core.statefolder import make_folders
from plainagent.workspace import swaps, undo_steps
from plainagent.workspace.files import confine, own_of, writable
from plainagent.workspace.undo_record import (
    MANIFEST,
    READ_FLAGS,
    UndoError,
    digest,
    read_kept,
    read_manifest,
    records,
    relocated,
    sync_folder,
    write_private,
)
from plainagent.workspace.undo_state import looked_at, state, still
from plainagent.workspace.undo_steps import relative
from plainagent.workspace.writes import file_lock, open_folder, read_only_file_system, replace_file

# A file larger than this is changed without a copy: that change cannot be undone
MAX_FILE_BYTES = 10_000_000
# Copies one task may keep in all; past this, changes are made without a copy
MAX_RUN_BYTES = 100_000_000
EARLIER = ".manifest-earlier.json"  # the manifest before a write, while the write is under way


class Changed(Exception):
    """A file that changed while undo was putting it back: left alone, and the task kept to undo
    again."""


class NotHere(Exception):
    """A file undo may not write from here (outside this workspace, or one no tool writes): left
    alone, and the task is not marked undone, so --undo with the run's own --workspace can still
    take it back."""


@contextlib.contextmanager
def remembered(
    target: Path, chunks: typing.Iterable[bytes | memoryview], settings: Settings
) -> typing.Iterator[None]:
    """Around a file tool's write of `chunks` to `target`: remember() before it; if the write fails
    (a full disk, EFBIG, EIO, a refusal, Ctrl-C) and the file does not hold the new content after
    all, the record is put back as it was, so undo never takes the tool's content for what the run
    left there."""
    earlier = remember(target, chunks, settings)
    try:
        yield
    except BaseException:
        if earlier is not None:
            earlier(False)
        raise
    if earlier is not None:
        earlier(True)


def remember(
    target: Path, chunks: typing.Iterable[bytes | memoryview], settings: Settings
) -> typing.Callable[[bool], None] | None:
    """Called by a file tool just before it writes `chunks` to `target`: the first time this task
    touches the file, keep its content (or that it did not exist); each time, record what the tool
    leaves there, so undo can tell whether the person changed it since. Returns what to call once
    the write is done (True) or failed (False); None in a run that keeps no undo data."""
    record = settings.undo
    # The tool refuses it next
    if record is None or os.path.lexists(target) and not os.path.isfile(target):
        return None
    # A task's first record is made whole in a folder of another name, then renamed: a record
    # without its manifest (Ctrl-C, SIGTERM or kill -9 while the first copy was written) would stop
    # every later --undo. Each file is flushed to disk with its folder before the next step names
    # it, as replace_file does, so after a power cut the record is whole or absent.
    fresh, folder, copy = not (record / MANIFEST).exists(), record, None
    try:
        if fresh:
            # Each folder private, the runs folder too where it was removed during the run
            for made in make_folders(record.parent, 0o700):
                sync_folder(made.parent)
            folder = Path(tempfile.mkdtemp(dir=record.parent, prefix=f".{record.name}-"))  # 0700
        manifest: dict[str, typing.Any] = (
            read_manifest(record) if not fresh else {"files": [], "undone": False}
        )
        entry = next((e for e in manifest["files"] if e["path"] == str(target)), None)
        if entry is None:
            entry = {"path": str(target), **before(target, folder, manifest, settings)}
            manifest["files"].append(entry)
            copy = entry.get("copy")
        entry["after"] = digest(chunks)
        if entry.get("kind") == "command":  # its mode is the one the file had
            entry["after"] = {"type": "file", "mode": None, "digest": entry["after"]}
        if not fresh:  # the manifest as it is, under a second name, to put back if the write fails
            (record / EARLIER).unlink(missing_ok=True)
            os.link(record / MANIFEST, record / EARLIER)
        # ASCII: a name not UTF-8 stays escaped
        write_private(folder / MANIFEST, json.dumps(manifest).encode())
        if fresh:
            # Only one an older version left without its manifest
            shutil.rmtree(record, ignore_errors=True)
            os.rename(folder, record)
            sync_folder(record.parent)
    except BaseException as error:
        if fresh:
            shutil.rmtree(folder, ignore_errors=True)
        if not isinstance(error, (OSError, UndoError)):
            raise
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise OSError(
            f"cannot keep what undo needs in {record}: {reason}; the file was not changed"
        ) from None

    def settle(written: bool) -> None:
        """Keep the record if the file holds what it says the tool left there; else put the earlier
        one back (a rename and a removal: they work on a full disk too)."""
        # Then the record says 'changed since the run': undo leaves the file be
        with contextlib.suppress(OSError):
            if not written and state(target) != entry["after"]:
                if fresh:
                    shutil.rmtree(record)
                    return
                os.replace(record / EARLIER, record / MANIFEST)
                sync_folder(record)
                if copy is not None:
                    (record / copy).unlink(missing_ok=True)
            (record / EARLIER).unlink(missing_ok=True)

    return settle


def before(target: Path, record: Path, manifest: dict, settings: Settings) -> dict:
    """What undo needs about a file the task is about to change: that it did not exist (and which of
    its folders did not either), or a copy of its content and mode, unless the copy would pass a
    size bound."""
    folders = [
        str(folder)
        for folder in itertools.takewhile(lambda f: not os.path.lexists(f), target.parents)
    ]
    try:
        fd = os.open(target, READ_FLAGS)
    except FileNotFoundError:
        return {"existed": False, "folders": folders}
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        kept = sum(e.get("size", 0) for e in manifest["files"] if e.get("copy"))
        if info.st_size > MAX_FILE_BYTES:
            reason = f"over {MAX_FILE_BYTES // 1_000_000} MB"
        elif kept + info.st_size > MAX_RUN_BYTES:
            reason = f"the run already keeps {MAX_RUN_BYTES // 1_000_000} MB for undo"
        else:
            data = file.read()
            # A name no entry uses: one left by a failed try is replaced
            copy = str(len(manifest["files"]) + 1)
            write_private(record / copy, data)
            return {
                "existed": True,
                "copy": copy,
                "size": len(data),
                "mode": stat.S_IMODE(info.st_mode),
                "before": digest([data]),
            }
    print(
        shown(
            f"note: {relative(target)} is changed without keeping a copy for undo ({reason}): "
            "--undo cannot take this change back",
            redact=redactor(settings.secrets),
        ),
        file=sys.stderr,
        flush=True,
    )
    return {"existed": True, "copy": None, "reason": reason}


def take_back(
    folder: Path, settings: Settings, moved: Path | None = None
) -> tuple[list[str], bool]:
    """Undo the newest task in the folder not undone yet, leaving alone each file the person changed
    since; return one line per file saying what was done, and whether every file is now as it was.
    `moved`: the folder the workspace moved from, whose files the task changed: each is put back at
    its place in this workspace. Raises UndoError, having changed nothing, when there is no undo
    data, when every task was undone already, or when the data is damaged."""
    numbers = records(folder)
    if not numbers:
        raise UndoError(
            f"no undo data in {folder.as_posix()}/: the run changed no file with write_file, "
            "edit_file, an approved command or a writing MCP server"
        )
    for record in (folder / str(n) for n in reversed(numbers)):
        if not (manifest := read_manifest(record))["undone"]:
            break
    else:
        raise UndoError(f"the changes kept in {folder.as_posix()}/ were all undone already")
    copies, total = {}, 0
    for entry in (e for e in manifest["files"] if e.get("copy")):
        kept = record / entry["copy"]
        try:
            copies[entry["copy"]] = read_kept(kept, MAX_FILE_BYTES)
            total += len(copies[entry["copy"]])
            if total > MAX_RUN_BYTES:  # one file's hard links, say, named again and again
                raise OSError(
                    errno.EFBIG, f"the copies are over {MAX_RUN_BYTES // 1_000_000} MB in all"
                )
        except OSError as error:
            raise UndoError(f"{kept.as_posix()} cannot be read ({error.strerror})") from None
        if digest([copies[entry["copy"]]]) != entry["before"]:
            raise UndoError(f"{kept.as_posix()} is not the copy undo kept")
    lines, done, failed = [], [], False
    lost = undo_steps.lost_copies(manifest["files"], record, settings)
    own = own_of(settings)  # worked out once for every file, not again for each
    for entry in undo_steps.ordered(
        [relocated(e, moved, settings.workspace) for e in manifest["files"]]
    ):
        try:
            if entry.get("kind") == "command":
                name = relative(Path(entry["path"]))
                line, restored = undo_steps.put_back(entry, name, record, settings, lost, own)
            else:
                copy = copies.get(entry.get("copy"))
                line, restored = put_back(entry, copy, record, settings, own)
        except (NotHere, Changed) as refusal:
            line, restored, failed = (
                f"left alone {relative(Path(entry['path']))}: {refusal}",
                False,
                True,
            )
        # a loop of links: Python 3.13's resolve() no longer raises on one, os.lstat does
        except OSError as error:
            reason = (
                "a loop of links is on its way"
                if error.errno == errno.ELOOP
                else error.strerror or error
            )
            line, restored, failed = (
                f"failed {relative(Path(entry['path']))}: {reason}",
                False,
                True,
            )
        lines.append(line)
        if restored:
            done.append(entry)
    lines += [undo_steps.left(e, relative(Path(e["path"]))) for e in manifest.get("left", [])]
    # A folder made for one file may have held another's, made later: newest first, it is empty now
    for entry in reversed(done):
        swaps.remove_folders(entry.get("folders", []))
    if not failed:  # a failure or a refusal keeps the record as it is, so undo can be tried again
        manifest["undone"] = True
        write_private(record / MANIFEST, json.dumps(manifest).encode())
        for entry in done:
            if entry.get("copy"):
                (record / entry["copy"]).unlink(missing_ok=True)
    return lines, len(done) == len(manifest["files"]) and not manifest.get("left")


def put_back(
    entry: dict, copy: bytes | None, record: Path, settings: Settings, own: list
) -> tuple[str, bool]:
    """Undo one file's change if it still holds what the run left; say what was done, and whether it
    is as before. Written only where write_file may (`own`: the agent's own places)."""
    path = Path(entry["path"])
    name = relative(path)
    # the manifest may have been forged (an older version's runs/, which commands could write):
    # write only where write_file may
    try:
        writable(str(path), settings, own)
        for folder in entry.get("folders", []):
            confine(folder, settings)
    except OSError as refusal:
        raise NotHere(
            f"{str(refusal).removesuffix('; use a path inside it')}; kept to undo again: if the "
            "run had a --workspace, give it (--undo --workspace DIR)"
        ) from None
    # A loop of links (confine() raises RuntimeError for one, on every Python): a failure, kept to
    # undo again
    except RuntimeError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
    # Decided and done under the lock write_file takes, looking again there: a run writing in the
    # folder holds it, and a save made while undo waited for it is the person's, left alone.
    with file_lock(name, path) as locked:
        seen = looked_at(path)
        now = state(path)
        was = digest([copy]) if copy is not None else None if not entry["existed"] else "unknown"
        if now == was:
            # An undo stopped between the file and its folders (kill -9, Ctrl-C) left these
            if not entry["existed"] and swaps.remove_folders(entry["folders"]):
                made = f"removed the folders the run made for {name}"
                return f"{made} (the file was gone already)", True
            return f"unchanged {name} (already as before the run)", True
        if entry["existed"] and copy is None:
            return (
                f"not undone {name}: its content from before the run was not kept "
                f"({entry['reason']})",
                False,
            )
        kept = (
            f"; its content from before the run is in {(record / entry['copy']).as_posix()}"
            if copy
            else ""
        )
        # Or it changed while it was being read
        if now != entry.get("after") or looked_at(path) != seen:
            return f"left alone {name}: changed since the run{kept}", False
        if read_only_file_system(path):
            raise PermissionError(
                "it is on a read-only file system; mount it read-write, then undo again"
            )
        # As write_file refuses, even as root
        if not os.stat(path).st_mode & 0o222 or not os.access(path, os.W_OK):
            raise PermissionError(
                f"it is read-only now; make it writable (chmod u+w {name}), then undo again"
            )

        def unchanged(folder: int | None, at: str) -> None:
            """Looked at once more right before the file is replaced or removed (an editor takes no
            lock), and once it is out of the way, at the name it was moved to (see swaps.py)."""
            if not still(at, folder, seen, entry["after"]):
                raise Changed(f"changed while undo was putting it back{kept}")

        if copy is None:
            folder = open_folder(path, settings)
            try:
                swaps.remove(folder, path.name if folder is not None else str(path), unchanged)
            finally:
                if folder is not None:
                    os.close(folder)
            swaps.remove_folders(entry["folders"])
            return f"removed {name} (the run created it)", True
        # Its owner and attributes, with the mode from before the run, set on the new file
        info = os.stat(path)
        like = os.stat_result((stat.S_IFMT(info.st_mode) | entry["mode"], *tuple(info)[1:]))
        # The same whole-or-nothing write as write_file's
        replace_file(str(path), path, [copy], settings, like, unchanged, locked.stat)
    return f"restored {name}", True
