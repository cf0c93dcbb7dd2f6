"""The content store undo keeps a command's files in (beyond the tutorial): in the workspace's runs
folder, one object per distinct content, named by its SHA-256; a small one written under its name
(one that kill -9 cut short is known by its size and made again), a large one reflinked where the
file system can (FICLONE on Linux, clonefile on macOS) or copied, under a temporary name, then
renamed; and a cache of what each file's stat said when it was last read, as git's index is, so
an unchanged file is not read again."""

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
INDEX = "index.jsonl"
JOURNAL = 200  # lines of changes added to the index before it is written whole again
FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
CHUNK = 1 << 20
# A file whose mtime is this close to the last walk's start (or after it) is read again: written in
# the same tick as it was read, its stat could stay the same with another content (git's "racily
# clean" entry). A second covers every file system's time stamps but FAT's.
RACY_NS = 1_000_000_000
LEFTOVER = ".new-"  # an object being made; what kill -9 left is removed by the next keep
# The cache as this process last read or wrote it, by store, with the file's identity then and
# how many lines it holds
READ: dict[str, tuple[tuple, dict, int]] = {}
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


def reflinked(source: int, target: int, source_path: str, target_path: str, device: int) -> bool:
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


def keep(store: Path, path: str, seen: os.stat_result) -> str:
    """Keep the regular file at path, whose lstat was `seen`, in the store; return its content's
    digest. Raises NotKept if it changed while it was read (its stat is no longer `seen`), or cannot
    be read or copied."""
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as error:
        raise NotKept(f"it cannot be read ({error.strerror})") from None
    try:
        if seen.st_size > CHUNK or (seen.st_dev, str(store)) not in NO_REFLINK:
            return kept_large(store, fd, path, seen)
        # A small file where no reflink can be made is read in one piece (one that grew shows by
        # its length) and kept by keep_bytes: one file made, none when its content is kept already
        data = os.read(fd, seen.st_size + 1)
        while len(data) < seen.st_size and (more := os.read(fd, seen.st_size + 1 - len(data))):
            data += more
        # Another file put at its name since the walk looked shows here too (its inode)
        if not same(os.fstat(fd), seen) or len(data) != seen.st_size:
            raise NotKept("it changed while it was being kept")
        return keep_bytes(store, data)
    except OSError as error:
        raise NotKept(f"it could not be copied ({error.strerror or error})") from None
    finally:
        os.close(fd)


def kept_large(store: Path, fd: int, path: str, seen: os.stat_result) -> str:
    """keep() for a file over CHUNK or where a reflink may be made: reflinked, or copied a piece at
    a time, to a new file under a temporary name, renamed to its digest once whole."""
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
            size = 0  # one that grew shows in its stat below
            while size < seen.st_size and (chunk := os.read(fd, CHUNK)):
                hashed.update(chunk)
                size += len(chunk)
                written(made, chunk)
        if not same(os.fstat(fd), seen) or size != seen.st_size:
            raise NotKept("it changed while it was being kept")
        digest = hashed.hexdigest()
        # The same content kept already: renaming onto it would cost a flush of the disk (ext4
        # writes out a file replaced by rename)
        if whole(store, digest, size):
            os.unlink(temporary)
        else:
            os.replace(temporary, object_path(store, digest))
        return digest
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    finally:
        os.close(made)


def keep_bytes(store: Path, data: bytes) -> str:
    """Keep content already read (a small file, a file tool's copy when a command changes the file
    next). It is written under its name at once, with no temporary name to rename (one file made,
    where a rename costs the file system two more changes of folders): an object a kill cut short
    is shorter than its content, known by its size, and made again."""
    digest = hashlib.sha256(data).hexdigest()
    target, flags = f"{store}/{OBJECTS}/{digest}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_INHERIT
    try:
        made = os.open(target, flags, 0o600)
    except FileExistsError:
        if whole(store, digest, len(data)):
            return digest
        made = os.open(target, flags, 0o600)
    except FileNotFoundError:  # not made yet: kept outside a walk, before any
        os.makedirs(f"{store}/{OBJECTS}", mode=0o700, exist_ok=True)
        made = os.open(target, flags, 0o600)
    try:
        written(made, data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise
    finally:
        os.close(made)
    return digest


def whole(store: Path, digest: str, size: int) -> bool:
    """Whether the object for `digest` is kept whole; one of another size (cut short by a kill) is
    removed, to be made again."""
    target = f"{store}/{OBJECTS}/{digest}"
    try:
        if os.stat(target).st_size == size:
            return True
        os.unlink(target)
    except FileNotFoundError:
        pass
    return False


def written(fd: int, data: bytes) -> None:
    """All of data written to fd (os.write may write a part)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
    """The cache: {"started": ns, "bytes": n, "files": {relative path: ((size, mtime, inode, ctime,
    mode), digest)}}; empty where it is missing or damaged (every file is then read again). Its
    file is one whole index, then a line for each walk since that changed it; a line a kill cut
    short ends it. Read from disk only when it changed since this process last read or wrote it."""
    try:
        with open(store / INDEX, "rb") as file:
            info = os.fstat(file.fileno())
            seen = (info.st_ino, info.st_size, info.st_mtime_ns)
            if (memo := READ.get(str(store))) and memo[0] == seen:
                return memo[1]
            lines = file.read().splitlines()
    except OSError:
        return {"started": 0, "bytes": 0, "files": {}}
    index: dict = {"started": 0, "bytes": 0, "files": {}}
    count = 0
    for count, line in enumerate(lines):
        try:
            part = json.loads(line)
            files = {name: (tuple(e[:5]), e[5]) if e else None for name, e in part["files"].items()}
            if not all(e is None or len(e[0]) == 5 and len(e[1]) == 64 for e in files.values()):
                break
            started, held = int(part["started"]), int(part["bytes"])
        except (ValueError, AttributeError, KeyError, TypeError, IndexError):
            break  # what is before it stands: each line was true when it was written
        if count == 0:
            index["files"] = {name: e for name, e in files.items() if e}
        else:
            for name, e in files.items():
                if e:
                    index["files"][name] = e
                else:
                    index["files"].pop(name, None)
        index["started"], index["bytes"] = started, held
    else:  # whole: later walks may add to it
        READ[str(store)] = (seen, index, len(lines))
    return index


def write_index(store: Path, index: dict, since: dict | None = None) -> None:
    """Record the cache. Where `since`, the index as read_index gave it, is what the file holds and
    it has fewer than JOURNAL lines, one line of what changed is added (a walk that read one file
    of ten thousand writes one entry); else the whole index is made under a temporary name and
    renamed (a crash leaves the old one or the new)."""
    memo = READ.get(str(store))
    if since is not None and memo and memo[1] is since and memo[2] < JOURNAL:
        files, old = index["files"], since["files"]
        changed = {name: [*e[0], e[1]] for name, e in files.items() if old.get(name) is not e}
        changed.update({name: None for name in old if name not in files})
        line = {"started": index["started"], "bytes": index["bytes"], "files": changed}
        with open(store / INDEX, "ab") as file:
            info = os.fstat(file.fileno())
            if (info.st_ino, info.st_size, info.st_mtime_ns) == memo[0]:
                file.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
                file.flush()
                info = os.fstat(file.fileno())
                READ[str(store)] = (
                    (info.st_ino, info.st_size, info.st_mtime_ns),
                    index,
                    memo[2] + 1,
                )
                return
    made, temporary = new_file(store)
    files = {name: [*seen, digest] for name, (seen, digest) in index["files"].items()}
    try:
        # dumps, not dump: one call into C's encoder, where dump runs Python's a piece at a time
        with os.fdopen(made, "wb") as file:
            file.write(
                json.dumps({**index, "files": files}, separators=(",", ":")).encode() + b"\n"
            )
            file.flush()
            info = os.fstat(file.fileno())
        os.replace(temporary, store / INDEX)
        READ[str(store)] = ((info.st_ino, info.st_size, info.st_mtime_ns), index, 1)
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
