"""A write is whole or not at all (phase 2, the guardrails): the file tools write the new content
to a new file in the same folder and rename it over the old one, under a lock per file (and on its
folder, for other processes), so after any fault (a full disk, Ctrl-C, kill -9) the file holds its
old or its new content, and no edit is lost to another writer. And what is looked at before a
person is asked (looked_at, fingerprint) and compared again when the file is written."""

import contextlib
import errno
import os
import secrets
import stat
import threading
import time
import typing
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows

from plainagent.core.settings import Settings
from plainagent.workspace import swaps
from plainagent.workspace.files import (
    OPEN_FLAGS,
    refuse_if_escaped,
    refuse_unless_regular,
    writable,
)

WRITE_CHUNK = 1 << 20  # bytes per write(): Ctrl-C and SIGTERM stop a long write between two of them
# Linux can make a file with no name (O_TMPFILE) and give it one later by linking /proc/self/fd/N.
UNNAMED_FILES = hasattr(os, "O_TMPFILE")
# Everything relative to the folder opened once (os.replace is os.rename's other name; CPython lists
# rename).
IN_OPEN_FOLDER = {os.open, os.link, os.rename, os.unlink, os.stat} <= os.supports_dir_fd
# this system or file system
NO_UNNAMED_FILES = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT}
LOCKS: dict[str, threading.Lock] = {}  # one per file written in this process, by resolved path
LOCKS_LOCK = threading.Lock()
FOLDER_LOCKS: dict[str, threading.Lock] = {}  # one per folder locked for other processes, by path
# seconds another process's lock on a folder is waited for before a write there is refused
FOLDER_WAIT = 10.0
# a file system that cannot lock
NO_LOCKS = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class Locked(typing.NamedTuple):
    """What file_lock holds: the folder locked (the file's, or the nearest one that exists) and
    its stat (None: it could not be locked)."""

    folder: Path
    stat: os.stat_result | None


class Refused(Exception):
    """A write refused with a message already worded for the model: the harness shows it as `error:
    <message>`."""


def existing(path: str, target: Path) -> os.stat_result | None:
    """The file a write would replace, or None if there is none yet. A folder, a FIFO or a device is
    refused, and so is a file refuse_unwritable refuses."""
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    refuse_unless_regular(path, info.st_mode)
    refuse_unwritable(path, target, info)
    return info


def refuse_unwritable(path: str, target: Path, info: os.stat_result) -> None:
    """Refuse a read-only file, and one this user may not write: replacing it by rename would work
    all the same."""
    refuse_read_only(path, info)
    refuse_read_only_file_system(path, target)
    if not os.access(target, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        raise PermissionError(f"{path} may not be written by this user; it was not changed")


def refuse_read_only(path: str, info: os.stat_result) -> None:
    """Refuse a file with no write bit for anyone, even where we could write it anyway (as root, by
    rename)."""
    if stat.S_ISREG(info.st_mode) and not info.st_mode & 0o222:
        raise Refused(
            f"{path} is read-only (mode {stat.S_IMODE(info.st_mode):04o}), so it was not changed; "
            f"if it should change, ask the user to make it writable (chmod u+w {path}); else "
            "write another file"
        )


def read_only_file_system(target: Path) -> bool:
    """Whether target (or, not there yet, the folder it would be made in) is on a file system
    mounted read-only, where no mode lets anything change."""
    for place in (target, *target.parents):
        try:
            return bool(os.statvfs(place).f_flag & os.ST_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (AttributeError, OSError):  # no statvfs (Windows)
            return False
    return False


def refuse_read_only_file_system(path: str, target: Path) -> None:
    """Refuse a file on a read-only file system by that name: the refusal for a file no one may
    write (its mode, or this user's rights) would send the person to chmod, which cannot help."""
    if read_only_file_system(target):
        raise Refused(
            f"{path} is on a read-only file system, so nothing was written; ask the user to mount "
            "it read-write if it should change; else write elsewhere"
        )


def fingerprint(target: Path) -> tuple:
    """What changes when anyone writes the file or a link on its way: (where it is, device, inode,
    size, mtime,
    ctime: a writer may put the mtime back, as cp -p does, but not the ctime); only where it is for
    a new file."""
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return (str(target),)
    return str(target), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def looked_at(path: str, settings: Settings) -> Path:
    """Where a write to path would land, looked at before a person is asked to approve it: a path
    that may not be written (files.writable) or a read-only file is refused now."""
    target = writable(path, settings)
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        refuse_read_only(path, os.stat(target))
    refuse_read_only_file_system(path, target)
    return target


@contextlib.contextmanager
def file_lock(path: str, target: Path) -> typing.Iterator[Locked]:
    """Hold the file's lock: two runs never interleave their read, check and replace of one file. In
    this process a lock per resolved path (not inode: a replace gives the file a new inode); for
    other processes (another `python harness.py`, another script calling run()) an flock on its
    folder, whose inode a replace keeps (on the nearest folder that exists, for a file in folders
    still to be made; no lock file is left anywhere). Where there is no flock (Windows) only runs in
    one process are kept apart. Yields the folder locked, and its stat for replace_file."""
    with LOCKS_LOCK:
        lock = LOCKS.setdefault(str(target), threading.Lock())
    folder = target.parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    with lock, folder_lock(path, folder) as held:
        yield Locked(folder, held)


@contextlib.contextmanager
def folder_lock(path: str, folder: Path) -> typing.Iterator[os.stat_result | None]:
    """Hold an exclusive flock on the folder, waiting FOLDER_WAIT seconds at most: another program
    may hold it for ever (a command left running). Then the write is refused, nothing changed. The
    descriptor is closed on exec, so no command gets it; a file system that cannot lock, or a folder
    this user may write but not read (mode 0300), is written without, as before there was this
    lock. Yields the folder's stat while it is locked (replace_file's locked=), else None."""
    with LOCKS_LOCK:  # threads of this process wait here, without a bound, for each other's writes
        lock = FOLDER_LOCKS.setdefault(str(folder), threading.Lock())
    with lock:
        try:
            fd = (
                os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | OPEN_FLAGS)
                if fcntl
                else None
            )
        except PermissionError:
            fd = None
        if fd is None:
            yield None
            return
        try:
            give_up, pause = time.monotonic() + FOLDER_WAIT, 0.001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as error:
                    if error.errno in NO_LOCKS:
                        break
                    if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                        raise
                    if time.monotonic() > give_up:
                        raise OSError(
                            f"cannot write {path}: another program has held a lock on its "
                            f"folder for {FOLDER_WAIT:g} s (another agent run writing there, or a "
                            "command holding it); nothing was written; try again when it is done"
                        ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.01)
            yield os.fstat(fd)
        finally:
            # now, even if a child forked meanwhile still has the descriptor
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def replace_file(
    path: str,
    target: Path,
    chunks: typing.Iterable[bytes | memoryview],
    settings: Settings,
    like: os.stat_result | None = None,
    unchanged: swaps.Look | None = None,
    locked: os.stat_result | None = None,
) -> int:
    """Give target exactly these bytes, all at once, through a new file in its folder flushed to
    disk and renamed over it; return how many. like: the file replaced, whose mode, owner and
    extended attributes the new one keeps.
    unchanged: looks at target once the new file is on disk, and at what came out once their names
    are exchanged (swaps.exchanged, where the system can); raises to leave target be. On Linux the
    new file has no name until complete, and is named only right before the rename; elsewhere it is
    named from the start. A failure removes it; what kill -9 or a power cut leaves, a later write in
    the folder does (swaps.clear_leftovers), except the .agent-undo an exchange may have filled.
    Other hard links to the old file keep the old text.
    locked: the folder held with folder_lock (its stat), which must be the one written in."""
    folder = open_folder(target, settings)
    if folder is not None and locked is not None and not os.path.samestat(os.fstat(folder), locked):
        # another folder than the one locked stands at its name now: not ours to write in unlocked
        os.close(folder)
        raise OSError(
            f"cannot write {path}: its folder was moved or replaced while it was being written; "
            "nothing was written; read it again"
        )
    if folder is not None and locked is not None and os.scandir in os.supports_fd:
        swaps.clear_leftovers(folder)
    # random: if it exists, it is ours; one that may hold what an exchange took out is never cleared
    kind = "agent-undo" if unchanged and swaps.renameat2() else "agent-write"
    name = f".{secrets.token_hex(8)}.{kind}"
    here = name if folder is not None else str(target.parent / name)
    fd = unnamed = None
    try:
        fd = unnamed = unnamed_file(folder)
        if fd is None:
            fd = os.open(
                here, os.O_WRONLY | os.O_CREAT | os.O_EXCL | OPEN_FLAGS, 0o666, dir_fd=folder
            )
        if like is not None:  # before the file is flushed to disk, these with it
            keep_attributes(target, fd, like)
        size = 0
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                written = os.write(fd, view[:WRITE_CHUNK])
                view, size = view[written:], size + written
        os.fsync(fd)
        if unchanged is not None:
            unchanged(folder, target.name if folder is not None else str(target))
        if unnamed is not None:  # named only now, complete, and renamed over target right away
            os.link(f"/proc/self/fd/{fd}", here, dst_dir_fd=folder, follow_symlinks=True)
        if folder is None:
            os.replace(here, target)
        else:
            ours = os.fstat(fd)
            if not unchanged or not swaps.exchanged(folder, name, target.name, ours, unchanged):
                os.replace(name, target.name, src_dir_fd=folder, dst_dir_fd=folder)
            with contextlib.suppress(OSError):  # the rename too, on disk
                os.fsync(folder)
    except BaseException as error:  # Ctrl-C and SIGTERM too
        with contextlib.suppress(OSError):  # the new file; never what an exchange took out
            if fd is not None and os.path.samestat(
                os.stat(here, dir_fd=folder, follow_symlinks=False), os.fstat(fd)
            ):
                os.unlink(here, dir_fd=folder)
        if isinstance(error, OSError) and error.strerror:
            outcome = "it was left as it was" if like else "it was not created"
            raise OSError(f"cannot write {path}: {error.strerror}; {outcome}") from error
        raise
    finally:
        for descriptor in (fd, folder):
            if descriptor is not None:
                os.close(descriptor)
    return size


def open_folder(target: Path, settings: Settings) -> int | None:
    """target's folder, opened and checked to be inside the workspace, so the new file is made and
    renamed in this very folder even if a link is swapped in on the way; None where the system
    cannot (Windows)."""
    if not IN_OPEN_FOLDER:
        return None
    folder = os.open(target.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | OPEN_FLAGS)
    try:
        refuse_if_escaped(folder, str(target), target.parent, settings)
    except BaseException:
        os.close(folder)
        raise
    return folder


def unnamed_file(folder: int | None) -> int | None:
    """A new file with no name in the open folder; None where the system or file system cannot make
    one (or cannot name it later, without /proc)."""
    if not UNNAMED_FILES or folder is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=folder)
    except OSError as error:
        if error.errno in NO_UNNAMED_FILES:
            return None
        raise


def keep_attributes(source: Path, fd: int, like: os.stat_result) -> None:
    """Give the new file what the one it replaces has: its extended attributes (its ACL, security
    label, user.* notes; each the system refuses is left out; not file capabilities, which belonged
    to the old content), owner and mode."""
    if hasattr(os, "listxattr"):
        with contextlib.suppress(OSError):  # a file system without them
            for name in os.listxattr(source, follow_symlinks=False):
                if name != "security.capability":
                    with contextlib.suppress(OSError):
                        os.setxattr(fd, name, os.getxattr(source, name, follow_symlinks=False))
    if hasattr(os, "fchown"):
        with contextlib.suppress(PermissionError):  # only root may give a file away
            os.fchown(fd, like.st_uid, like.st_gid)
    if hasattr(os, "fchmod"):  # after fchown, which may clear the set-id bits
        os.fchmod(fd, stat.S_IMODE(like.st_mode))


def links_note(info: os.stat_result) -> str:
    """'; it has N other hard links, which keep the old text', for a file with more than one
    name."""
    others = info.st_nlink - 1
    if others < 1:
        return ""
    return (
        f"; it has {others} other hard link{'s, which keep' if others > 1 else ', which keeps'} "
        "the old text"
    )
