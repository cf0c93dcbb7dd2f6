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
import itertools
import json
import os
import shutil
import stat
import sys
import time
import typing
from pathlib import Path

from plainagent.workspace.undo_record import READ_FLAGS, UndoError, read_manifest, sync_folder

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows

STORE = "store"  # the folder in the runs folder
OBJECTS = "objects"  # the folder in the store that holds one file per content
INDEX = "index.json"
FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
CHUNK = 1 << 20
# A file whose mtime is this close to the last walk's start (or after it) is read again: written in
# the same tick as it was read, its stat could stay the same with another content (git's "racily
# clean" entry). A second covers every file system's time stamps but FAT's.
RACY_NS = 1_000_000_000
LEFTOVER = ".new-"  # an object being made; what kill -9 left is removed by the next keep
# The cache as this process last read or wrote it, by store, with the file's identity then
READ: dict[str, tuple[tuple, dict]] = {}
NO_REFLINK: set[tuple[int, str]] = set()  # file systems and stores where a reflink failed
COUNTER = itertools.count()
NO_INHERIT = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)  # Windows has neither name


class NotKept(Exception):
    """A file whose content could not be kept: the message says why (it changed while it was read,
    it cannot be read, the disk is full)."""


def folder(runs_folder: Path) -> Path:
    return runs_folder / STORE


def object_path(store: Path, digest: str) -> Path:
    return store / OBJECTS / digest


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


def reflinked(source: int, target: int, source_path: Path, target_path: str, device: int) -> bool:
    """Make target share source's blocks (the file system copies them only once either changes);
    False where it cannot (another file system, or one without: ext4, tmpfs), nothing done, and
    not tried again from source's file system (`device`) to the store."""
    pair = (device, os.path.dirname(target_path))
    if pair in NO_REFLINK:
        return False
    if sys.platform == "linux" and fcntl:
        try:
            fcntl.ioctl(target, FICLONE, source)
            return True
        except OSError:
            NO_REFLINK.add(pair)
            return False
    function = clonefile()
    if function is None:
        NO_REFLINK.add(pair)
        return False
    # clonefile makes the file itself: the empty one made for it is removed first
    os.unlink(target_path)
    if function(os.fsencode(source_path), os.fsencode(target_path), 0) == 0:
        return True
    NO_REFLINK.add(pair)
    os.close(os.open(target_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return False


def new_file(store: Path) -> tuple[int, str]:
    """A new empty file in the store (0600), under a name no other is using: an object being
    made."""
    while True:
        name = f"{store}/{LEFTOVER}{os.getpid()}-{next(COUNTER)}"
        try:
            return os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | NO_INHERIT, 0o600), name
        except FileExistsError:  # one that kill -9 left, of a process with this number
            continue


def keep(store: Path, path: Path, seen: os.stat_result) -> str:
    """Keep the regular file at path, whose lstat was `seen`, in the store; return its content's
    digest. Raises NotKept if it changed while it was read (its stat is no longer `seen`), or cannot
    be read or copied."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as error:
        raise NotKept(f"it cannot be read ({error.strerror})") from None
    try:
        made, temporary = new_file(store)
        try:
            hashed = hashlib.sha256()
            size = seen.st_size
            if reflinked(fd, made, path, temporary, seen.st_dev):
                # The clone holds what the file held at one instant: its content is what is named
                # (read by its name: clonefile made a new file there)
                with open(temporary, "rb") as clone:
                    for chunk in iter(lambda: clone.read(CHUNK), b""):
                        hashed.update(chunk)
                size = os.stat(temporary).st_size
            else:
                # Read in one piece when it is small (a 1 MB buffer for each file costs more than
                # copying it); one that grew shows in its stat below
                want, size = min(CHUNK, seen.st_size), 0
                while size < seen.st_size and (chunk := os.read(fd, want)):
                    hashed.update(chunk)
                    view = memoryview(chunk)
                    size += len(view)
                    while view:
                        view = view[os.write(made, view) :]
            # Another file put at its name since the walk looked shows here too (its inode)
            if not same(os.fstat(fd), seen) or size != seen.st_size:
                raise NotKept("it changed while it was being kept")
            digest = hashed.hexdigest()
            kept = object_path(store, digest)
            # The same content kept already: renaming onto it would cost a flush of the disk (ext4
            # writes out a file replaced by rename), and an object is whole from its first name
            if os.path.exists(kept):
                os.unlink(temporary)
            else:
                os.replace(temporary, kept)
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
        made, temporary = new_file(store)
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
    prune it one at a time; what a keep killed midway left (a .new- file) is removed first. Windows
    has no flock: there a keep of another run going at once may fail, and names what it could not
    keep."""
    store = folder(runs_folder)
    if not store.is_dir():
        store.mkdir(mode=0o700, parents=True, exist_ok=True)
        sync_folder(store.parent)
    fd = os.open(store, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if fcntl else None
    try:
        if fcntl and fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        for entry in os.scandir(store):
            if entry.name.startswith(LEFTOVER):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        with contextlib.suppress(FileExistsError):
            (store / OBJECTS).mkdir(mode=0o700)
        yield store
    finally:
        if fd is not None:
            os.close(fd)


def read_index(store: Path) -> dict:
    """The cache: {"started": ns, "bytes": n, "files": {relative path: ((size, mtime, inode,
    ctime), digest)}}; empty where it is missing or damaged (every file is then read again). Read
    from disk only when it changed since this process last read or wrote it."""
    try:
        with open(store / INDEX, "rb") as file:
            info = os.fstat(file.fileno())
            seen = (info.st_ino, info.st_size, info.st_mtime_ns)
            if (memo := READ.get(str(store))) and memo[0] == seen:
                return memo[1]
            index = json.loads(file.read())
        files = {name: (tuple(e[:4]), e[4]) for name, e in index["files"].items()}
        if all(len(s) == 4 and isinstance(d, str) and len(d) == 64 for s, d in files.values()):
            index = {"started": int(index["started"]), "bytes": int(index["bytes"]), "files": files}
            READ[str(store)] = (seen, index)
            return index
    except (OSError, ValueError, AttributeError, KeyError, TypeError, IndexError):
        pass
    return {"started": 0, "bytes": 0, "files": {}}


def write_index(store: Path, index: dict) -> None:
    """Replace the cache in one step (a crash leaves the old one or the new)."""
    made, temporary = new_file(store)
    files = {name: [*seen, digest] for name, (seen, digest) in index["files"].items()}
    try:
        # dumps, not dump: one call into C's encoder, where dump runs Python's a piece at a time
        with os.fdopen(made, "wb") as file:
            file.write(json.dumps({**index, "files": files}, separators=(",", ":")).encode())
            file.flush()
            info = os.fstat(file.fileno())
        os.replace(temporary, store / INDEX)
        READ[str(store)] = ((info.st_ino, info.st_size, info.st_mtime_ns), index)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def made_durable(store: Path, digests: typing.Iterable[str]) -> None:
    """Flush to disk the objects a record is about to name, and their folders."""
    folders = set()
    for digest in digests:
        path = object_path(store, digest)
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            folders.add(path.parent)
    for each in folders:
        sync_folder(each)


def size(runs_folder: Path) -> int:
    """Bytes the store's objects hold."""
    total = 0
    for path in (folder(runs_folder) / OBJECTS).glob("*"):
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
        index = read_index(store)
        wanted = wanted | {digest for _, digest in index["files"].values()}
        for path in (store / OBJECTS).glob("*"):
            if path.name not in wanted:
                with contextlib.suppress(OSError):
                    freed += path.lstat().st_size
                    path.unlink()
        write_index(store, {**index, "bytes": size(runs_folder)})
    return freed


def remove(runs_folder: Path) -> None:
    """The whole store, when the workspace's last run is forgotten."""
    shutil.rmtree(folder(runs_folder), ignore_errors=True)


def now_ns() -> int:
    return time.time_ns()


def named_objects(runs_folder: Path) -> set[str]:
    """The store's objects the records in the runs folder name (a damaged record names none)."""
    named = set()
    for record in runs_folder.glob("*.jsonl.undo/*"):
        with contextlib.suppress(UndoError):
            for entry in read_manifest(record)["files"]:
                before = entry.get("before")
                if entry.get("kind") == "command" and before and before.get("digest"):
                    named.add(before["digest"])
    return named
