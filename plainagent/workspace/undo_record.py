"""The undo data on disk (beyond the tutorial): a folder beside the transcript, a record per task
with its manifest and copies, each written whole and made durable, and read back only as regular
files of bounded size."""

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import tempfile
import threading
import typing
from pathlib import Path

from plainagent.workspace.files import OPEN_FLAGS

MANIFEST = "manifest.json"
RECORD_NAME = re.compile("[1-9][0-9]*")  # a record's folder, as next_record names it


# A manifest larger than this is not read (a command could make it a terabyte)
MAX_MANIFEST_BYTES = 100_000_000


READ_FLAGS = os.O_RDONLY | OPEN_FLAGS  # the file tools' own: no link followed, no pipe waited on


class UndoError(Exception):
    """There is nothing to undo, or what undo needs is missing or damaged; the message says
    which."""


def folder_for(transcript: Path) -> Path:
    """Where a transcript's undo data lives: a folder beside it, named after it."""
    return transcript.with_name(transcript.name + ".undo")


# The newest record each folder handed to a run of this process: runs going at once, none of
# which has made its record yet, would otherwise be handed the same one
HANDED_OUT: dict[str, int] = {}
HANDING_OUT = threading.Lock()


def next_record(folder: Path) -> Path:
    """The folder the next task keeps its undo data in (made only once the task changes a file):
    numbered past every record there, past a file so named, which no record can be renamed onto,
    and past every record handed to a run of this process, which may not have made it yet."""
    with HANDING_OUT:
        given = HANDED_OUT.get(os.path.abspath(folder), 0)
        number = max([*numbered(folder, lambda entry: True), given]) + 1
        HANDED_OUT[os.path.abspath(folder)] = number
    return folder / str(number)


def records(folder: Path) -> list[int]:
    """The numbers of the tasks that kept undo data in the folder, oldest first."""
    return numbered(folder, lambda entry: entry.is_dir())


def numbered(folder: Path, kind: typing.Callable[[os.DirEntry], bool]) -> list[int]:
    """The numbers of the folder's entries of a kind named as records are (ASCII digits, no leading
    zero), in order; none where it cannot be listed (not there, or a loop of links a command left:
    remember() then refuses the write, and undo finds nothing). Any other name is no record: int()
    would take '٣' or '03' for a record of another name, and raise on '²'."""
    try:
        return sorted(
            int(entry.name)
            for entry in os.scandir(folder)
            if RECORD_NAME.fullmatch(entry.name) and kind(entry)
        )
    except OSError:
        return []


def digest(chunks: typing.Iterable[bytes | memoryview]) -> str:
    """The content's SHA-256, which is all undo keeps of what a run left in a file."""
    hashed = hashlib.sha256()
    for chunk in chunks:
        hashed.update(chunk)
    return hashed.hexdigest()


def write_private(path: Path, content: bytes) -> None:
    """Replace path, in one step, with a file readable by its owner only: a crash leaves the old
    file or the new one, never half, and a link planted there is replaced, not followed."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".new-")  # created 0600
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    sync_folder(path.parent)  # the new name on disk too, before anything names the file


def sync_folder(folder: Path) -> None:
    """Flush the folder's entries to disk, as replace_file does (not where the file system
    cannot)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_manifest(record: Path) -> dict:
    """The record's manifest, checked; raises UndoError naming the record if it is missing or
    damaged."""
    try:
        manifest = json.loads(read_kept(record / MANIFEST, MAX_MANIFEST_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise UndoError(f"{record.as_posix()} has no {MANIFEST}") from None
    except (OSError, ValueError, RecursionError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise UndoError(f"{(record / MANIFEST).as_posix()} cannot be read ({reason})") from None
    if not (
        isinstance(manifest, dict)
        and isinstance(manifest.get("files"), list)
        and isinstance(manifest.get("undone"), bool)
        and all(map(well_formed, manifest["files"]))
    ):
        raise UndoError(f"{(record / MANIFEST).as_posix()} is not a manifest this program wrote")
    return manifest


def read_kept(path: Path, limit: int) -> bytes:
    """A file of the undo data, whole; not through a link, not a named pipe or a device, nor over
    `limit` bytes: a command that could write an older version's runs/ could put one there, and
    undo would wait on it for good, or run out of memory."""
    with os.fdopen(os.open(path, READ_FLAGS), "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"over {limit // 1_000_000} MB, more than undo ever keeps")
    return data


def well_formed(entry: typing.Any) -> bool:
    """Whether a manifest entry has the fields of one of its kinds, and no field of another kind
    with a value undo cannot use (a hand-edited record): created, copied, not copied by a file
    tool; changed by a command."""
    folders = entry.get("folders", []) if isinstance(entry, dict) else None
    if not (isinstance(folders, list) and all(isinstance(f, str) for f in folders)):
        return False
    if entry.get("kind") == "command":
        return (
            isinstance(entry.get("path"), str)
            and os.path.isabs(entry["path"])
            and isinstance(entry.get("by"), list)
            and all(isinstance(step, str) for step in entry["by"])
            and "before" in entry  # null for nothing there, but there
            and "after" in entry
            and well_formed_node(entry["before"])
            and well_formed_node(entry["after"])
            and entry.get("copy") is None
        )
    if not (
        isinstance(entry.get("path"), str)
        and os.path.isabs(entry["path"])
        and isinstance(entry.get("existed"), bool)
        and isinstance(entry.get("after"), str)
    ):
        return False
    if not entry["existed"]:
        return "folders" in entry and entry.get("copy") is None
    if entry.get("copy") is None:
        return isinstance(entry.get("reason"), str)
    return (
        isinstance(entry["copy"], str)
        and entry["copy"].isdigit()
        and isinstance(entry.get("before"), str)
        and type(entry.get("mode")) is int  # JSON's true is no mode, though bool is an int
        and 0 <= entry["mode"] <= 0o7777
        and type(entry.get("size")) is int
        and entry["size"] >= 0  # below, it would let a task keep past its bound of copies
    )


def well_formed_node(node: typing.Any) -> bool:
    """Whether a command step's node is one undo writes: nothing, a folder or a file with a mode, a
    link with its target; a file's content named by a digest (None: not kept, with a reason)."""
    if node is None:
        return True
    if not isinstance(node, dict):
        return False
    mode = node.get("mode")
    mode_ok = mode is None or type(mode) is int and 0 <= mode <= 0o7777
    if node.get("type") == "link":
        return isinstance(node.get("target"), str)
    if node.get("type") == "folder":
        return type(mode) is int and mode_ok
    digest = node.get("digest")
    return (
        node.get("type") == "file"
        and mode_ok
        and (digest is None and isinstance(node.get("reason", ""), str) or is_digest(digest))
    )


def is_digest(value: typing.Any) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def relocated(entry: dict, moved: Path | None, workspace: Path) -> dict:
    """A manifest's entry with its paths under `moved`, the folder the workspace moved from, put in
    the workspace; any other path stays as it is (undo then refuses it: outside the workspace)."""

    def here(path: str) -> str:
        if moved is None or moved not in Path(path).parents:
            return path
        return str(workspace / Path(path).relative_to(moved))

    return {**entry, "path": here(entry["path"]), "folders": [*map(here, entry.get("folders", []))]}
