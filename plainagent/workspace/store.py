"""Undo's content store (beyond the tutorial): the `store/` folder of the workspace's runs folder,
holding the objects a command's files are kept as (objects.py), under a lock; and an index of what
each file's stat said when it was last kept, as git's index is, so an unchanged file is not read
again."""

import contextlib
import json
import os
import shutil
import typing
from pathlib import Path

from plainagent.workspace import objects, packs
from plainagent.workspace.objects import LEFTOVER, OBJECTS, new_file
from plainagent.workspace.undo_record import UndoError, read_manifest, sync_folder

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows

STORE = "store"  # the folder in the runs folder
INDEX = "index.jsonl"
RUNNING = "running"  # held by each command of a run going (commanding())
RUNNING_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
JOURNAL = 200  # lines of changes added to the index before it is written whole again
# A file whose mtime is this close to the last walk's start (or after it) is read again: written in
# the same tick as it was read, its stat could stay the same with another content (git's "racily
# clean" entry). A second covers every file system's time stamps but FAT's.
RACY_NS = 1_000_000_000
# The index as this process last read or wrote it, by store, with the file's identity then and
# how many lines it holds
READ: dict[str, tuple[tuple, dict, int]] = {}


def folder(runs_folder: Path) -> Path:
    return runs_folder / STORE


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
        packs.tidy(store)
        with contextlib.suppress(FileExistsError):
            (store / OBJECTS).mkdir(mode=0o700)
        yield store
    finally:
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def commanding(runs_folder: Path) -> typing.Iterator[None]:
    """Around a command from the walk before it to its record: the store's RUNNING file held with
    a shared flock, so prune() knows a command is going. What the files it changes held before it
    is then named by no record yet, and by no index once another run walks the workspace. Nothing
    held where the system has no flock (Windows)."""
    store = folder(runs_folder)
    fd = None
    if fcntl:
        with contextlib.suppress(OSError):  # the walk then says why it cannot keep
            store.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(store / RUNNING, RUNNING_FLAGS, 0o600)
    try:
        if fcntl and fd is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield
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
            lines = file.read().split(b"\n")
            # After the last newline: nothing, or a line a kill or a full disk cut short (if only
            # by its newline: a line added after it would join it)
            whole = lines.pop() == b""
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
    else:
        if whole:  # later walks may add to it
            READ[str(store)] = (seen, index, len(lines))
    return index


def write_index(
    store: Path, index: dict, since: dict | None = None, read: typing.Iterable[str] = ()
) -> None:
    """Record the cache. Where `since`, the index as read_index gave it, is what the file holds and
    it has fewer than JOURNAL lines, one line of what changed is added (a walk that read one file
    of ten thousand writes one entry): the entries of `read` (the files the walk read; each other
    is since's own) and those gone. Else the whole index is made under a temporary name and
    renamed (a crash leaves the old one or the new)."""
    memo = READ.get(str(store))
    if since is not None and memo and memo[1] is since and memo[2] < JOURNAL:
        files, old = index["files"], since["files"]
        changed = {name: [*files[name][0], files[name][1]] for name in read if name in files}
        changed.update(dict.fromkeys(old.keys() - files.keys()))
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
    """Flush to disk the objects (or packs) a record is about to name, and their folders."""
    folders = set()
    for path in map(Path, packs.durable_files(store, digests)):
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            folders |= {path.parent, path.parent.parent}  # its folder, and where that is
    for each in folders:
        sync_folder(each)


def size(runs_folder: Path) -> int:
    """Bytes the store's objects and packs hold."""
    total = packs.size(folder(runs_folder))
    for path, _ in objects.kept_objects(folder(runs_folder)):
        with contextlib.suppress(OSError):
            total += path.lstat().st_size
    return total


def prune(runs_folder: Path) -> int:
    """Remove every object neither a record nor the cache names; return the bytes freed. The
    records are read under the store's lock (a command's record is written under it); nothing is
    removed while a command of another run is going (commanding()): the next prune does."""
    store = folder(runs_folder)
    if not store.is_dir():
        return 0
    freed = 0
    with opened(runs_folder), no_command(store) as idle:
        if not idle:
            return 0
        index = read_index(store)
        wanted = named_objects(runs_folder) | {digest for _, digest in index["files"].values()}
        for path, digest in list(objects.kept_objects(store)):
            if digest not in wanted:
                with contextlib.suppress(OSError):
                    freed += path.lstat().st_size
                    path.unlink()
                    if path.parent.name != OBJECTS:  # its folder, once empty
                        path.parent.rmdir()
        freed += packs.prune(store, wanted)
        write_index(store, {**index, "bytes": size(runs_folder)})
    return freed


@contextlib.contextmanager
def no_command(store: Path) -> typing.Iterator[bool]:
    """Whether no command is going (none holds RUNNING), held so until the end; True where the
    system has no flock."""
    if not fcntl:
        yield True
        return
    fd = os.open(store / RUNNING, RUNNING_FLAGS, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def remove(runs_folder: Path) -> None:
    """The whole store, when the workspace's last run is forgotten."""
    shutil.rmtree(folder(runs_folder), ignore_errors=True)


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
