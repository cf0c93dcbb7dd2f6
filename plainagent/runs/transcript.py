"""What a command-line run leaves behind (beyond the tutorial): one JSON line per event, in the
workspace's folder of the person's state folder (statefolder.py), readable by its owner only and
written by one run at a time. Reading it back for --continue is resume.py's job; listing a
workspace's runs, listing.py's."""

import contextlib
import errno
import json
import os
import re
import stat
import time
import typing
from pathlib import Path

from plainagent.core.keyboard import to_stderr
from plainagent.core.redaction import key_blocks, redactor
from plainagent.core.screen import shown
from plainagent.core.settings import Settings
from plainagent.core.statefolder import make_folders
from plainagent.workspace.undo_record import folder_for
from plainagent.workspace.writes import NO_LOCKS

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows
    import msvcrt

LOCKED_BYTE = 2**62  # Windows: the byte whose lock marks the transcript taken, far past any text
COPY_CHUNK = 1 << 20  # bytes copied at a time into a transcript made again (written_again)
# Written after a half-written last line is ended, before anything else: --continue then skips that
# line whatever is appended after it (a --undo note, a session's first task), as it skips one before
# a run's start.
MENDED = {
    "type": "mended",
    "note": "the line before was cut short (a run killed, or a full disk) and is not an event",
}


NO_TRANSCRIPT = "choose another file with --transcript PATH, or run with --no-transcript"


class TranscriptError(Exception):
    """The transcript cannot be created or written; the message says what to do instead."""


class InUse(TranscriptError):
    """Another run holds the transcript: it is writing to it now."""


def new_path(task: str, folder: Path) -> Path:
    """A new run's transcript in the workspace's runs folder, named by its start time and task."""
    slug = "-".join(re.findall(r"[a-z0-9]+", task.lower())[:5])[:40] or "task"
    return folder / f"{time.strftime('%Y-%m-%dT%H-%M-%S')}-{slug}.jsonl"


def open_new(
    path: Path, append: bool, runs: Path | None = None, hint: str = NO_TRANSCRIPT
) -> tuple[typing.TextIO, Path, bool]:
    """Create the transcript for the owner only; `runs`, the workspace's runs folder, is made
    private (0700, as is each folder made on its way). A new file is created exclusively (two runs
    started in the same second get two files); --continue and --transcript PATH append, after
    mending a half-written last line (ended, and marked MENDED). Opened for reading too, so the
    run's file can be copied whole if its name is removed while the run writes it (writer()).
    Returns the file, its path, and whether a half line was mended; `hint`: what the error says to
    do instead."""
    try:
        if path.parent == runs and path.parent.is_symlink():  # would send transcripts elsewhere
            raise OSError(errno.ENOTDIR, f"{runs.as_posix()} is a link, not a folder")
        # Else the reason would be "File exists"
        if path.parent.exists() and not path.parent.is_dir():
            raise OSError(errno.ENOTDIR, f"{path.parent.as_posix()} is not a folder")
        make_folders(path.parent, 0o700 if path.parent == runs else 0o777)
        # A FIFO would wait for a reader
        if path.exists() and not (path.is_file() or path.is_char_device()):
            raise OSError(errno.EINVAL, "it is not a regular file")
        # Non-blocking, so a FIFO put there since the check is refused at once instead of waiting
        # forever; no following a link, so one planted in runs/ cannot send the transcript
        # elsewhere.
        flags = (
            os.O_RDWR
            | os.O_CREAT
            | getattr(os, "O_BINARY", 0)
            | getattr(os, "O_NONBLOCK", 0)
            | getattr(os, "O_NOFOLLOW", 0)
        )
        for n in range(1, 100):
            candidate = (
                path if n == 1 or append else path.with_name(f"{path.stem}-{n}{path.suffix}")
            )
            with contextlib.suppress(FileExistsError):  # taken: try the next name
                fd = os.open(candidate, flags | (os.O_APPEND if append else os.O_EXCL), 0o600)
                file, mended = opened(fd, candidate)
                return file, candidate, mended
        raise FileExistsError(f"{path} and 98 more names like it exist")
    except OSError as error:
        raise TranscriptError(
            f"cannot create the transcript {path.as_posix()}: {error.strerror or error}; {hint}"
        ) from None


def opened(fd: int, path: Path) -> tuple[typing.TextIO, bool]:
    """The descriptor as a text file for events, once it is known to be a regular file or a device
    (/dev/null), and taken; and whether its last line was mended. A run killed while writing, or
    stopped by a full disk, leaves its last line unfinished: end it, and mark it, so what is
    appended next starts a line and --continue knows the broken one for what it is."""
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
            raise OSError(errno.EINVAL, "it is not a regular file")
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
        mended = False
        if stat.S_ISREG(mode):
            # Before anything is written: the line end mended below may be another run's
            take(fd, path)
            if mended := ends_mid_line(fd, path):
                line = json.dumps({"time": round(time.time(), 3), **MENDED})
                try:  # the line end never without its mark
                    append_whole(fd, f"\n{line}\n".encode())
                except OSError as error:
                    left = (
                        "its end is cut short"
                        if getattr(error, "cut", False)
                        else "it is left as it was"
                    )
                    raise TranscriptError(
                        f"cannot mend the half-written last line of {path.as_posix()}: "
                        f"{error.strerror or error}; {left}: free some disk space, or run with "
                        "--no-transcript"
                    ) from None
    except BaseException:  # InUse too
        os.close(fd)
        raise
    return os.fdopen(fd, "a", encoding="utf-8", errors="replace"), mended


def append_whole(fd: int, data: bytes) -> None:
    """Append data to the file whole or not at all: a write cut short (a disk filling up) goes on
    with the rest, and where the rest cannot be written the file is cut back to where it ended, so
    no part of data stays to break the line after it. Raises the OSError; one whose file could not
    be cut back (its last line cut short: the next opening mends it) has `cut` set."""
    info = os.fstat(fd)  # the transcript is taken: nothing else appends to it meanwhile
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as error:
        try:
            if stat.S_ISREG(info.st_mode):  # a device (/dev/full, a terminal) keeps nothing back
                os.ftruncate(fd, info.st_size)
        except OSError:
            error.cut = True  # type: ignore[attr-defined]  # read back with getattr
        raise


def take(fd: int, path: Path) -> None:
    """Hold the transcript for this run alone until its process ends (the lock goes with the
    descriptor, which no command inherits): two runs appending to one file would interleave their
    events, so the second is refused at once. Where the file system cannot lock at all, the run goes
    on without the lock."""
    try:
        if fcntl:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Windows locks bytes, and a locked byte cannot be read: lock one far past the text, not the
        # text
        else:
            os.lseek(fd, LOCKED_BYTE, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # Windows-only stubs
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES, errno.EDEADLK):
            raise InUse(f"{path.as_posix()} is in use by another run") from None
        if error.errno not in NO_LOCKS:
            raise


def held(path: Path) -> bool:
    """Whether a run holds the transcript now (it is still going): its lock cannot be taken. Looked
    at through a descriptor of our own, closed at once; a link (no run writes through one) or a
    file that cannot be opened is held by none."""
    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
        )
    except OSError:
        return False
    try:
        take(fd, path)
    except InUse:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # and the lock with it
    return False


def ends_mid_line(fd: int, path: Path) -> bool:
    """Whether the file taken as fd ends in the middle of a line. It is read through its name,
    opened without waiting (a FIFO swapped in since never blocks) and only if it is still the same
    file."""
    try:
        check = os.open(
            path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        )
    except OSError:  # a file we may write but not read: nothing to mend that we could see
        return False
    try:
        os.lseek(check, -1, os.SEEK_END)  # EINVAL if the file is empty
        return os.path.samestat(os.fstat(check), os.fstat(fd)) and os.read(check, 1) != b"\n"
    except OSError:
        return False
    finally:
        os.close(check)


def writer(file: typing.TextIO, path: Path, settings: Settings) -> typing.Callable[[dict], None]:
    """A listener that appends each event as one JSON line, flushed at once, so a crash loses
    nothing written so far. Keys are redacted wherever they appear (a tool may have read them); a
    call's arguments are stored once, in its message. Each line is written whole or not at all, and
    a failed write (a full disk) stops the run once, then writes nothing more. A transcript whose
    name is removed during the run (its folder with it) is made again there first
    (written_again)."""
    redact, failed = redactor(settings.secrets), list[OSError]()
    # JSON writes each character of a string on its own, so a string holding a block of a key makes
    # a line holding that block as JSON writes it: a line holding none has nothing to redact, and is
    # written without the walk.
    blocks = [json.dumps(block, ensure_ascii=False)[1:-1] for block in key_blocks(settings.secrets)]

    def write(event: dict) -> None:
        if failed:
            return
        if event["type"] in ("call", "tool"):
            event = {k: v for k, v in event.items() if k != "arguments"}
        event = {"time": round(time.time(), 3), **event}
        line = json.dumps(event, ensure_ascii=False)
        if any(block in line for block in blocks):
            line = json.dumps(redacted(event, redact), ensure_ascii=False)
        try:
            if removed(file.fileno(), path):
                written_again(file.fileno(), path)
            # Bytes, past the file object: a line it held back unwritten would be tried again later
            append_whole(file.fileno(), (line + "\n").encode("utf-8", errors="replace"))
        except OSError as error:
            failed.append(error)
            cut = "; its last line is cut short" if getattr(error, "cut", False) else ""
            raise TranscriptError(
                f"cannot write the transcript {path.as_posix()}: {error.strerror or error}{cut}; "
                "free some disk space, or run with --no-transcript"
            ) from None

    return write


def removed(fd: int, path: Path) -> bool:
    """Whether the run's transcript, a file, no longer has its name: it, or a folder on its way (the
    state folder), was removed during the run. Events written on would be lost with the file."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        return False
    try:
        os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return True
    return False


def written_again(fd: int, path: Path) -> None:
    """Make the transcript again at its name, each folder on its way private, holding all of the
    run's file (read from fd), and write on there: the run keeps its number, --continue finds its
    conversation whole, and the undo data its later tasks keep beside it is found with it. Says so.
    The new file takes over fd, so whoever holds the file object holds the new file, taken."""
    kept_before = folder_for(path).is_dir()
    make_folders(path.parent, 0o700)
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    new = os.open(path, flags | getattr(os, "O_BINARY", 0), 0o600)
    try:
        take(new, path)
        os.lseek(fd, 0, os.SEEK_SET)
        while chunk := os.read(fd, COPY_CHUNK):
            append_whole(new, chunk)
        os.dup2(new, fd, inheritable=False)
    except BaseException:  # no half copy left under the run's name
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        os.close(new)
    lost = "" if kept_before else " (any undo data kept before then was removed with it)"
    to_stderr(
        shown(
            f"note: the transcript {path.as_posix()} was removed during the run; it is made again "
            f"with the whole run so far, and the run goes on there{lost}"
        )
    )


def redacted(value: typing.Any, redact: typing.Callable[[str], str]) -> typing.Any:
    """The value with every string in it redacted. Done before encoding, so a key is found as it was
    written: a JSON escape next to it (the \\n of a line break) neither hides it nor is cut in half
    by the redaction."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redacted(k, redact): redacted(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v, redact) for v in value]
    return value
