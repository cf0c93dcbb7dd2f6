"""What a file holds now (beyond the tutorial), as undo compares it with what a run left there: a
digest read a piece at a time, or what kind of thing is there instead."""

import errno
import os
import stat
from pathlib import Path

from plainagent.workspace.undo_record import (
    READ_FLAGS,
    digest,
)

READ_CHUNK = 1 << 20  # bytes of a file read at a time to compare it with what a run left


def state(path: Path) -> str | None:
    """A file's content as a digest; None if there is no file; 'other' for a folder, a link or a
    device. Read a piece at a time: a file changed without a copy (over 10 MB) may have grown to any
    size since."""
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        return None if not os.path.lexists(path) else "other"
    except OSError as error:
        # A loop on the way, not a link at its name
        if error.errno == errno.ELOOP and not os.path.islink(path):
            raise
        return "other"
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "other"
        return digest(iter(lambda: file.read(READ_CHUNK), b""))


def looked_at(path: Path | str, folder: int | None = None) -> tuple | None:
    """What changes when anyone writes or replaces the file at path (in the open folder, if given):
    inode, size, mtime, ctime, a link there not followed; None if there is none. A loop of links on
    the way raises ELOOP."""
    try:
        info = os.lstat(path, dir_fd=folder)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return identity(info)


def identity(info: os.stat_result) -> tuple:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def still(name: str, folder: int | None, seen: tuple | None, content: str) -> bool:
    """Whether the file at name (in the open folder) is the one undo looked at (`seen`, from
    looked_at) and holds `content` (a digest): untouched, or moved there by undo, which changes its
    ctime alone, and read again to be sure no save in place kept its size and mtime."""
    now = looked_at(name, folder)
    if now is None or seen is None or now == seen:
        return now == seen
    if now[:4] != seen[:4]:
        return False
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=folder)
    except OSError:  # a link put there meanwhile
        return False
    with os.fdopen(fd, "rb") as file:
        read = digest(iter(lambda: file.read(READ_CHUNK), b""))
        return identity(os.fstat(fd)) == now and read == content
