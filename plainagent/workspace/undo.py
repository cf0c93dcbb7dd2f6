"""Undo: what each command-line task changed with write_file and edit_file is kept beside its
transcript (`runs/<transcript>.undo/<n>/`: a manifest and copies of the files as they were before),
and can be taken back. Commands run with run_shell are not covered: nothing records what a command
changes."""

import contextlib
import errno
import hashlib
import itertools
import json
import os
import shutil
import stat
import sys
import tempfile
import typing
from pathlib import Path

from plainagent.core.settings import current
from plainagent.core.terminal import redactor, shown
from plainagent.workspace.files import OPEN_FLAGS, confine, writable
from plainagent.workspace.writes import file_lock, replace_file

MAX_FILE_BYTES = (
    10_000_000  # a file larger than this is changed without a copy: that change cannot be undone
)
MAX_RUN_BYTES = (
    100_000_000  # copies one task may keep in all; past this, changes are made without a copy
)
MANIFEST = "manifest.json"
EARLIER = ".manifest-earlier.json"  # the manifest before a write, while the write is under way
MAX_MANIFEST_BYTES = (
    100_000_000  # a manifest larger than this is not read (a command could make it a terabyte)
)
READ_CHUNK = 1 << 20  # bytes of a file read at a time to compare it with what a run left
READ_FLAGS = os.O_RDONLY | OPEN_FLAGS  # the file tools' own: no link followed, no pipe waited on


class UndoError(Exception):
    """There is nothing to undo, or what undo needs is missing or damaged; the message says
    which."""


class Changed(Exception):
    """A file that changed while undo was putting it back: left alone, and the task kept to undo
    again."""


class NotHere(Exception):
    """A file undo may not write from here (outside this workspace, or one no tool writes): left
    alone, and the task is not marked undone, so --undo with the run's own --workspace can still
    take it back."""


def folder_for(transcript: Path) -> Path:
    """Where a transcript's undo data lives: a folder beside it, named after it."""
    return transcript.with_name(transcript.name + ".undo")


def next_record(folder: Path) -> Path:
    """The folder the next task keeps its undo data in (made only once the task changes a file)."""
    return folder / str(max(records(folder), default=0) + 1)


def records(folder: Path) -> list[int]:
    """The numbers of the tasks that kept undo data in the folder, oldest first; none where it
    cannot be listed (not there, or a loop of links a command left: remember() then refuses the
    write, and undo finds nothing)."""
    try:
        return sorted(
            int(entry.name)
            for entry in os.scandir(folder)
            if entry.name.isdigit() and entry.is_dir()
        )
    except OSError:
        return []


@contextlib.contextmanager
def remembered(target: Path, chunks: typing.Iterable[bytes | memoryview]) -> typing.Iterator[None]:
    """Around a file tool's write of `chunks` to `target`: remember() before it; if the write fails
    (a full disk, EFBIG, EIO, a refusal, Ctrl-C) and the file does not hold the new content after
    all, the record is put back as it was, so undo never takes the tool's content for what the run
    left there."""
    earlier = remember(target, chunks)
    try:
        yield
    except BaseException:
        if earlier is not None:
            earlier(False)
        raise
    if earlier is not None:
        earlier(True)


def remember(
    target: Path, chunks: typing.Iterable[bytes | memoryview]
) -> typing.Callable[[bool], None] | None:
    """Called by a file tool just before it writes `chunks` to `target`: the first time this task
    touches the file, keep its content (or that it did not exist); each time, record what the tool
    leaves there, so undo can tell whether the person changed it since. Returns what to call once
    the write is done (True) or failed (False); None in a run that keeps no undo data."""
    record = current().undo
    if (
        record is None or os.path.lexists(target) and not os.path.isfile(target)
    ):  # the tool refuses it next
        return None
    # A task's first record is made whole in a folder of another name, then renamed: a record
    # without its
    # manifest (Ctrl-C, SIGTERM or kill -9 while the first copy was written) would stop every later
    # --undo.
    # Each file is flushed to disk with its folder before the next step names it, as replace_file
    # does, so after
    # a power cut the record is whole or absent.
    fresh, folder, copy = not (record / MANIFEST).exists(), record, None
    try:
        if fresh:
            made = not os.path.isdir(record.parent)
            os.makedirs(record.parent, mode=0o700, exist_ok=True)
            if made:
                sync_folder(record.parent.parent)
            folder = Path(tempfile.mkdtemp(dir=record.parent, prefix=f".{record.name}-"))  # 0700
        manifest: dict[str, typing.Any] = (
            read_manifest(record) if not fresh else {"files": [], "undone": False}
        )
        entry = next((e for e in manifest["files"] if e["path"] == str(target)), None)
        if entry is None:
            entry = {"path": str(target), **before(target, folder, manifest)}
            manifest["files"].append(entry)
            copy = entry.get("copy")
        entry["after"] = digest(chunks)
        if not fresh:  # the manifest as it is, under a second name, to put back if the write fails
            (record / EARLIER).unlink(missing_ok=True)
            os.link(record / MANIFEST, record / EARLIER)
        write_private(
            folder / MANIFEST, json.dumps(manifest).encode()
        )  # ASCII: a name not UTF-8 stays escaped
        if fresh:
            shutil.rmtree(
                record, ignore_errors=True
            )  # only one an older version left without its manifest
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
        with contextlib.suppress(
            OSError
        ):  # then the record says 'changed since the run': undo leaves the file be
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


def before(target: Path, record: Path, manifest: dict) -> dict:
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
            copy = str(
                len(manifest["files"]) + 1
            )  # a name no entry uses: one left by a failed try is replaced
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
            redact=redactor(current().secrets),
        ),
        file=sys.stderr,
        flush=True,
    )
    return {"existed": True, "copy": None, "reason": reason}


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
    `limit` bytes: a command that may write runs/ could put one there, and undo would wait on it for
    good, or run out of memory."""
    with os.fdopen(os.open(path, READ_FLAGS), "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"over {limit // 1_000_000} MB, more than undo ever keeps")
    return data


def well_formed(entry: typing.Any) -> bool:
    """Whether a manifest entry has the fields of one of its three kinds: created, copied, not
    copied."""
    if not (
        isinstance(entry, dict)
        and isinstance(entry.get("path"), str)
        and os.path.isabs(entry["path"])
        and isinstance(entry.get("existed"), bool)
        and isinstance(entry.get("after"), str)
    ):
        return False
    if not entry["existed"]:
        return isinstance(entry.get("folders"), list) and all(
            isinstance(f, str) for f in entry["folders"]
        )
    if entry.get("copy") is None:
        return isinstance(entry.get("reason"), str)
    return (
        isinstance(entry["copy"], str)
        and entry["copy"].isdigit()
        and isinstance(entry.get("before"), str)
        and isinstance(entry.get("mode"), int)
        and 0 <= entry["mode"] <= 0o7777
        and isinstance(entry.get("size"), int)
    )


def take_back(folder: Path) -> tuple[list[str], bool]:
    """Undo the newest task in the folder not undone yet, leaving alone each file the person changed
    since; return one line per file saying what was done, and whether every file is now as it was.
    Raises UndoError, having changed nothing, when there is no undo data, when every task was undone
    already, or when the data is damaged."""
    numbers = records(folder)
    if not numbers:
        raise UndoError(
            f"no undo data in {folder.as_posix()}/: the run changed no file with write_file or "
            "edit_file (changes made by commands are not undoable)"
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
    for entry in manifest["files"]:
        try:
            line, restored = put_back(entry, copies.get(entry.get("copy")), record)
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
    if not failed:  # a failure or a refusal keeps the record as it is, so undo can be tried again
        manifest["undone"] = True
        write_private(record / MANIFEST, json.dumps(manifest).encode())
        for entry in done:
            if entry.get("copy"):
                (record / entry["copy"]).unlink(missing_ok=True)
    return lines, len(done) == len(manifest["files"])


def put_back(entry: dict, copy: bytes | None, record: Path) -> tuple[str, bool]:
    """Undo one file's change if it still holds what the run left; say what was done, and whether it
    is as before."""
    path = Path(entry["path"])
    name = relative(path)
    # the manifest may have been forged by a command that could write runs/: write only where
    # write_file may
    try:
        writable(str(path))
        for folder in entry.get("folders", []):
            confine(folder)
    except OSError as refusal:
        raise NotHere(
            f"{str(refusal).removesuffix('; use a path inside it')}; kept to undo again: if the "
            "run had a "
            "--workspace, give it (--undo --workspace DIR)"
        ) from None
    except (
        RuntimeError
    ):  # Python 3.10-3.12's resolve() on a loop of links: a failure, kept to undo again
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
    # Decided and done under the lock write_file takes, looking again there: a run writing in the
    # folder holds it,
    # and a save made while undo waited for it is the person's, left alone.
    with file_lock(name, path):
        seen = looked_at(path)
        now = state(path)
        was = digest([copy]) if copy is not None else None if not entry["existed"] else "unknown"
        if now == was:
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
        if (
            now != entry.get("after") or looked_at(path) != seen
        ):  # or it changed while it was being read
            return f"left alone {name}: changed since the run{kept}", False
        if not os.stat(path).st_mode & 0o222 or not os.access(
            path, os.W_OK
        ):  # as write_file refuses, even as root
            raise PermissionError(
                f"it is read-only now; make it writable (chmod u+w {name}), then undo again"
            )

        def unchanged() -> None:
            """Looked at once more right before the file is replaced or removed: an editor takes no
            lock."""
            if looked_at(path) != seen:
                raise Changed(f"changed while undo was putting it back{kept}")

        if copy is None:
            unchanged()
            path.unlink()
            for folder in entry[
                "folders"
            ]:  # the folders write_file made for it, innermost first, if left empty
                try:
                    os.rmdir(folder)
                except OSError:
                    break
            return f"removed {name} (the run created it)", True
        info = os.stat(
            path
        )  # its owner and attributes, with the mode from before the run, set on the new file
        like = os.stat_result((stat.S_IFMT(info.st_mode) | entry["mode"], *tuple(info)[1:]))
        replace_file(
            str(path), path, [copy], like, unchanged
        )  # the same whole-or-nothing write as write_file's
    return f"restored {name}", True


def state(path: Path) -> str | None:
    """A file's content as a digest; None if there is no file; 'other' for a folder, a link or a
    device. Read a piece at a time: a file changed without a copy (over 10 MB) may have grown to any
    size since."""
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        return None if not os.path.lexists(path) else "other"
    except OSError as error:
        if error.errno == errno.ELOOP and not os.path.islink(
            path
        ):  # a loop on the way, not a link at its name
            raise
        return "other"
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "other"
        return digest(iter(lambda: file.read(READ_CHUNK), b""))


def looked_at(path: Path) -> tuple | None:
    """What changes when anyone writes or replaces the file at path (inode, size, mtime, ctime), a
    link there not followed; None if there is none. A loop of links on the way raises ELOOP."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def relative(path: Path) -> str:
    """A path as a person is shown it: relative to the working folder when it is inside it."""
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()
