"""The walk of the workspace undo keeps a command's files by (beyond the tutorial): each file the
store has not seen as it is now is kept in it (store.py; only what changed since the store last saw
it is read), and the walk's result, a Snapshot, is what snapshot.py compares before and after the
command. .git, virtual environments and node_modules are not walked but signed: their changes are
another program's to undo."""

import contextlib
import dataclasses
import errno
import os
import stat
import time
import typing
from pathlib import Path

from plainagent.core.settings import Settings
from plainagent.workspace import objects, packs, store

MB = 1_000_000
# Folders whose changes are another program's to undo, by what marks them
NOT_KEPT = {".git": "git", "node_modules": "node_modules"}
VENV_MARK = "pyvenv.cfg"
# A folder listed by its descriptor (Linux, macOS; not Windows), opened as a folder only
BY_DESCRIPTOR = os.scandir in os.supports_fd
FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclasses.dataclass
class Snapshot:
    """One walk: each file's stat (size, mtime, inode, ctime, mode) and digest (None where its
    content could not be kept), each link's target, each folder's mode; what of the files could not
    be kept and why; and a signature of each folder left to another program."""

    files: dict[str, tuple[tuple, str | None]] = dataclasses.field(default_factory=dict)
    links: dict[str, str] = dataclasses.field(default_factory=dict)
    folders: dict[str, int] = dataclasses.field(default_factory=dict)
    not_kept: dict[str, str] = dataclasses.field(default_factory=dict)
    areas: dict[str, tuple[str, frozenset]] = dataclasses.field(default_factory=dict)

    def node(self, name: str) -> tuple | None:
        """What is at `name`: ("file", stat, digest), ("link", target), ("folder", mode), None."""
        if name in self.files:
            return ("file", *self.files[name])
        if name in self.links:
            return ("link", self.links[name])
        return ("folder", self.folders[name]) if name in self.folders else None


def look(settings: Settings) -> Snapshot:
    """Walk the workspace, keeping in the store each file the store has not seen as it is now.
    Written for speed: a person waits for it twice around each command. A file the store saw as
    it is now is the very entry of the store's index (one lookup, nothing made)."""
    limit, cap = settings.undo_file_limit * MB, settings.undo_store_limit * MB
    root = str(settings.workspace)
    # the runs, a --transcript, where they are in the workspace
    inside = {
        p.relative_to(settings.workspace).as_posix()
        for p in settings.protected
        if settings.workspace in p.parents
    }
    with (
        store.opened(settings.runs_folder) as kept,
        workspace_folder(root) as top,
        packs.Packer(kept) as packer,
    ):
        index = store.read_index(kept)
        cache, held = index["files"], index["bytes"]
        started = time.time_ns()
        racy = index["started"] - store.RACY_NS
        shot = Snapshot()
        files, read = shot.files, []  # read: the files read this walk, the index then written again
        stack: list[tuple[str, tuple | None]] = [("", None)]  # a folder, and its (dev, inode)
        regular, lookup, key = stat.S_ISREG, cache.get, objects.key  # looked up once, not a file
        while stack:
            at, listed_as = stack.pop()
            prefix = f"{at}/" if at else ""
            try:
                folder, entries = listed(root, at, top, listed_as)
            except OSError as error:
                shot.not_kept[at or "."] = f"the folder cannot be read ({error.strerror})"
                continue
            try:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:  # gone since it was listed
                        continue
                    name = prefix + entry.name
                    if inside and name in inside:
                        continue
                    mode = info.st_mode
                    if regular(mode):  # never a pipe, a socket or a device
                        seen = key(info)
                        hit = lookup(name)
                        if hit is not None and hit[0] == seen and seen[1] < racy:
                            files[name] = hit
                            continue
                        digest = None
                        read.append(name)
                        if info.st_size > limit:
                            shot.not_kept[name] = f"over {settings.undo_file_limit} MB"
                        elif held + info.st_size > cap:
                            shot.not_kept[name] = (
                                f"the undo store is full ({settings.undo_store_limit} MB)"
                            )
                        else:
                            path = os.path.join(root, name)
                            digest, info = kept_again(kept, path, folder, info, name, shot, packer)
                            seen = key(info)
                            held += info.st_size if digest else 0
                        files[name] = (seen, digest)
                    elif stat.S_ISDIR(mode):
                        if owner := left_to(root, name):
                            shot.areas[name] = (owner, signature(root, name, info, owner, top))
                            continue
                        shot.folders[name] = stat.S_IMODE(mode)
                        stack.append((name, (info.st_dev, info.st_ino)))
                    elif stat.S_ISLNK(mode):
                        with contextlib.suppress(OSError):
                            shot.links[name] = read_link(root, name, folder)
            finally:
                if folder is not None:
                    os.close(folder)
        lost, failure = packer.done()
        for name, (seen, digest) in files.items() if lost else ():  # what the pack could not hold
            if digest in lost:
                files[name] = (seen, None)
                held -= seen[0]
                shot.not_kept[name] = f"it could not be copied ({failure and failure.strerror})"
        cached = {n: e for n, e in files.items() if e[1]} if shot.not_kept else files
        # Written again where a file was read, even one that proved the same: a file a walk read
        # again only because it was changed just before the last index was written (racily clean)
        # is then trusted from this walk's start on, where it was read again at every walk
        # The index is a cache: one that cannot be written (a full disk) leaves what this walk kept
        # standing, and the next walk reads every file again
        if read or cached != cache:
            with contextlib.suppress(OSError):
                written = {"started": started, "bytes": held, "files": cached}
                store.write_index(kept, written, index, read)
    return shot


@contextlib.contextmanager
def workspace_folder(root: str) -> typing.Iterator[int | None]:
    """The workspace held open for listed(), where the system lists a folder by its descriptor;
    None elsewhere (Windows)."""
    if not BY_DESCRIPTOR:
        yield None
        return
    top = os.open(root, FOLDER_FLAGS)
    try:
        yield top
    finally:
        os.close(top)


def listed(
    root: str, at: str, top: int | None, listed_as: tuple | None
) -> tuple[int | None, list[os.DirEntry]]:
    """The workspace's folder `at` ("" for its top), held open (None where the system lists a
    folder by its path: Windows), and its entries (whose lstat the caller makes while it is held
    open); OSError if it cannot be read. Opened from the workspace's (`top`): each stat then looks
    up one name, not every folder of the path (a fifth of a walk). A link put in place of a folder
    of its path since its parent was listed leads to another folder than the one listed there
    (`listed_as`, its device and inode): that one is not walked, nor is anything outside the
    workspace."""
    fd = None if top is None else os.open(at or ".", FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=top)
    try:
        if fd is not None and listed_as is not None:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != listed_as:
                raise OSError(errno.ELOOP, "it was replaced while it was walked")
        with os.scandir(os.path.join(root, at) if fd is None else fd) as entries:
            found = list(entries)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise
    return fd, found


def with_stats(
    entries: list[os.DirEntry],
) -> typing.Iterator[tuple[os.DirEntry, os.stat_result]]:
    """Each entry with its lstat, made as it is reached (its folder held open); one gone since it
    was listed is left out."""
    for entry in entries:
        try:
            yield entry, entry.stat(follow_symlinks=False)
        except OSError:
            continue


def read_link(root: str, name: str, folder: int | None) -> str:
    """The target of the link `name`, read in its folder where it is held open."""
    return os.readlink(objects.named_in(os.path.join(root, name), folder), dir_fd=folder)


def kept_again(
    kept: Path,
    path: str,
    folder: int | None,
    info: os.stat_result,
    name: str,
    shot: Snapshot,
    packer: packs.Packer,
) -> tuple[str | None, os.stat_result]:
    """objects.keep(), tried once more if the file changed while it was read; what it could not keep
    is named in shot.not_kept. The file is opened and looked at again in its folder where it is
    held open (`folder`): never by a path whose folders a link could have replaced."""
    for _ in range(2):
        try:
            return objects.keep(kept, path, info, folder, packer), info
        except objects.NotKept as error:
            shot.not_kept[name] = str(error)
            try:
                info = os.stat(objects.named_in(path, folder), dir_fd=folder, follow_symlinks=False)
            except OSError:
                break
            if not stat.S_ISREG(info.st_mode):
                break
    return None, info


def left_to(root: str, name: str) -> str | None:
    """Whose the workspace's folder `name` is to undo: git's (.git), a package manager's (a venv,
    node_modules); None for the workspace's own."""
    owner = NOT_KEPT.get(name.rpartition("/")[2])
    return owner or ("venv" if os.path.isfile(os.path.join(root, name, VENV_MARK)) else None)


def signature(root: str, name: str, info: os.stat_result, owner: str, top: int | None) -> frozenset:
    """What changes when a program writes in the folder `name`, listed as `info`: .git's every
    file and folder; in a venv or node_modules, the folders where packages are put (three levels
    down, one for node_modules), so a walk never reads a hundred thousand files there. Listed as
    the walk lists the workspace (listed()): a folder in it replaced by a link is not followed."""
    depth = {"git": 1_000, "venv": 3, "node_modules": 1}[owner]
    seen = {mark(name, info, owner)}
    stack = [(name, (info.st_dev, info.st_ino), 0)]
    while stack:
        at, listed_as, level = stack.pop()
        if level >= depth:
            continue
        try:
            folder, entries = listed(root, at, top, listed_as)
        except OSError:
            continue
        try:
            for entry, found in with_stats(entries):
                if owner == "git" or stat.S_ISDIR(found.st_mode):
                    path = f"{at}/{entry.name}"
                    seen.add(mark(path, found, owner))
                    if stat.S_ISDIR(found.st_mode):
                        stack.append((path, (found.st_dev, found.st_ino), level + 1))
        finally:
            if folder is not None:
                os.close(folder)
    return frozenset(seen)


def mark(path: str, info: os.stat_result, owner: str) -> tuple:
    """One entry of a signature. A folder of .git is marked without its size and time: git makes
    and removes a lock file there (git status does, and a test runner asking git for the commit),
    which changes neither history nor any file in .git."""
    if owner == "git" and stat.S_ISDIR(info.st_mode):
        return (path, None, None, info.st_ino)
    return (path, info.st_size, info.st_mtime_ns, info.st_ino)
