"""The content store undo keeps a command's files in (beyond the tutorial): in the workspace's runs
folder, one object per distinct content, named by its SHA-256, made under a temporary name and
renamed (kill -9 never leaves half an object under a real name), reflinked where the file system
can (FICLONE on Linux, clonefile on macOS) and copied elsewhere; and a cache of what each file's
stat said when it was last read, as git's index is, so an unchanged file is not read again."""

import contextlib
import ctypes
import errno
import functools
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
import typing
from pathlib import Path

from plainagent.workspace.undo_record import READ_FLAGS, sync_folder

STORE = "store"  # the folder in the runs folder
INDEX = "index.json"
FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
CHUNK = 1 << 20
# A file whose mtime is this close to the last walk's start (or after it) is read again: written in
# the same tick as it was read, its stat could stay the same with another content (git's "racily
# clean" entry). A second covers every file system's time stamps but FAT's.
RACY_NS = 1_000_000_000
LEFTOVER = ".new-"  # an object being made; what kill -9 left is removed by the next keep


class NotKept(Exception):
    """A file whose content could not be kept: the message says why (it changed while it was read,
    it cannot be read, the disk is full)."""


def folder(runs_folder: Path) -> Path:
    return runs_folder / STORE


def object_path(store: Path, digest: str) -> Path:
    return store / digest[:2] / digest


@functools.cache
def clonefile() -> typing.Callable[..., int] | None:
    """macOS's clonefile(2), loaded once; None elsewhere."""
    if sys.platform != "darwin":
        return None
    try:
        function = ctypes.CDLL("libSystem.dylib", use_errno=True).clonefile
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32)
    function.restype = ctypes.c_int
    return function


def reflinked(source: int, target: int, source_path: Path, target_path: str) -> bool:
    """Make target share source's blocks (the file system copies them only once either changes);
    False where it cannot (another file system, or one without: ext4, tmpfs), nothing done."""
    if sys.platform == "linux":
        import fcntl

        try:
            fcntl.ioctl(target, FICLONE, source)
            return True
        except OSError:
            return False
    function = clonefile()
    if function is None:
        return False
    # clonefile makes the file itself: the empty one made for it is removed first
    os.unlink(target_path)
    if function(os.fsencode(source_path), os.fsencode(target_path), 0) == 0:
        return True
    os.close(os.open(target_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return False


def keep(store: Path, path: Path, seen: os.stat_result) -> str:
    """Keep the regular file at path, whose lstat was `seen`, in the store; return its content's
    digest. Raises NotKept if it changed while it was read (its stat is no longer `seen`), or cannot
    be read or copied."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as error:
        raise NotKept(f"it cannot be read ({error.strerror})") from None
    try:
        if not same(os.fstat(fd), seen):
            raise NotKept("it changed while it was being kept")
        made, temporary = tempfile.mkstemp(dir=store, prefix=LEFTOVER)  # 0600
        try:
            hashed = hashlib.sha256()
            if reflinked(fd, made, path, temporary):
                # The clone holds what the file held at one instant: its content is what is named
                with open(temporary, "rb") as clone:
                    for chunk in iter(lambda: clone.read(CHUNK), b""):
                        hashed.update(chunk)
            else:
                with os.fdopen(os.dup(made), "wb") as out:
                    for chunk in iter(lambda: os.read(fd, CHUNK), b""):
                        hashed.update(chunk)
                        out.write(chunk)
            if not same(os.fstat(fd), seen) or os.fstat(made).st_size != seen.st_size:
                raise NotKept("it changed while it was being kept")
            digest = hashed.hexdigest()
            target = object_path(store, digest)
            target.parent.mkdir(mode=0o700, exist_ok=True)
            os.replace(temporary, target)  # the same content, if it was there already
            return digest
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            if isinstance(error, OSError):
                raise NotKept(f"it could not be copied ({error.strerror or error})") from None
            raise
        finally:
            os.close(made)
    finally:
        os.close(fd)


def keep_bytes(store: Path, data: bytes) -> str:
    """Keep content already read (a file tool's copy, when a command changes the file next)."""
    digest = hashlib.sha256(data).hexdigest()
    target = object_path(store, digest)
    if not target.exists():
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        made, temporary = tempfile.mkstemp(dir=store, prefix=LEFTOVER)
        with os.fdopen(made, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    return digest


def same(now: os.stat_result, seen: os.stat_result) -> bool:
    """Whether a file is as it was seen: the same inode, size, mtime and ctime."""
    return (now.st_ino, now.st_size, now.st_mtime_ns, now.st_ctime_ns) == (
        seen.st_ino,
        seen.st_size,
        seen.st_mtime_ns,
        seen.st_ctime_ns,
    )


def read_object(store: Path, digest: str, limit: int) -> bytes:
    """An object's content, checked against its name; OSError if it is missing, too large or not
    what was kept."""
    with os.fdopen(os.open(object_path(store, digest), READ_FLAGS), "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise OSError(errno.EINVAL, "not a file undo kept")
        data = file.read(info.st_size + 1)
    if len(data) > limit or hashlib.sha256(data).hexdigest() != digest:
        raise OSError(errno.EINVAL, "it is not the content undo kept")
    return data


@contextlib.contextmanager
def opened(runs_folder: Path) -> typing.Iterator[Path]:
    """The store, made if missing (0700), held with an flock so two runs of one workspace keep and
    prune it one at a time; what a keep killed midway left (a .new- file) is removed first."""
    import fcntl

    store = folder(runs_folder)
    if not store.is_dir():
        store.mkdir(mode=0o700, parents=True, exist_ok=True)
        sync_folder(store.parent)
    fd = os.open(store, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for entry in os.scandir(store):
            if entry.name.startswith(LEFTOVER):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        yield store
    finally:
        os.close(fd)


def read_index(store: Path) -> dict:
    """The cache: {"started": ns, "files": {relative path: [size, mtime, inode, ctime, digest]}};
    empty where it is missing or damaged (every file is then read again)."""
    try:
        with open(store / INDEX, "rb") as file:
            index = json.loads(file.read())
        if isinstance(index.get("files"), dict) and isinstance(index.get("started"), int):
            return index
    except (OSError, ValueError, AttributeError):
        pass
    return {"started": 0, "files": {}}


def write_index(store: Path, index: dict) -> None:
    """Replace the cache in one step (a crash leaves the old one or the new)."""
    made, temporary = tempfile.mkstemp(dir=store, prefix=LEFTOVER)
    try:
        with os.fdopen(made, "w") as file:
            json.dump(index, file, separators=(",", ":"))
        os.replace(temporary, store / INDEX)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def cached(index: dict, name: str, info: os.stat_result) -> str | None:
    """The digest the cache holds for a file whose stat is `info`, if its stat is unchanged since
    and it was not written in the same tick as it was read."""
    entry = index["files"].get(name)
    if entry is None or entry[:4] != [
        info.st_size,
        info.st_mtime_ns,
        info.st_ino,
        info.st_ctime_ns,
    ]:
        return None
    if info.st_mtime_ns >= index["started"] - RACY_NS:
        return None
    return entry[4]


def made_durable(store: Path) -> None:
    """Flush the objects made to disk before a record names them (one syncfs on Linux)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            fd = os.open(store, os.O_RDONLY)
            try:
                ctypes.CDLL(None, use_errno=True).syncfs(fd)
            finally:
                os.close(fd)
    else:
        os.sync()


def size(runs_folder: Path) -> int:
    """Bytes the store's objects hold."""
    total = 0
    for path in folder(runs_folder).glob("??/*"):
        with contextlib.suppress(OSError):
            total += path.lstat().st_size
    return total


def prune(runs_folder: Path, wanted: set[str]) -> int:
    """Remove every object neither a record nor the cache names; return the bytes freed."""
    store = folder(runs_folder)
    if not store.is_dir():
        return 0
    freed = 0
    with opened(runs_folder):
        wanted = wanted | {entry[4] for entry in read_index(store)["files"].values()}
        for path in store.glob("??/*"):
            if path.name not in wanted:
                with contextlib.suppress(OSError):
                    freed += path.lstat().st_size
                    path.unlink()
        for fanout in store.glob("??"):
            with contextlib.suppress(OSError):
                fanout.rmdir()
    return freed


def remove(runs_folder: Path) -> None:
    """The whole store, when the workspace's last run is forgotten."""
    shutil.rmtree(folder(runs_folder), ignore_errors=True)


def now_ns() -> int:
    return time.time_ns()
