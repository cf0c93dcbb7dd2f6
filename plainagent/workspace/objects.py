"""The objects of undo's content store (beyond the tutorial): one file per distinct content, named
by its SHA-256. A small one is written under its name (one that kill -9 cut short is known by its
size and made again); a large one is reflinked where the file system can (FICLONE on Linux,
clonefile on macOS) or copied, under a temporary name, then renamed. store.py holds them, with the
index of what each file's stat said when it was kept."""

import contextlib
import ctypes
import errno
import functools
import hashlib
import itertools
import os
import stat
import sys
import typing
from pathlib import Path

from plainagent.workspace.undo_record import READ_FLAGS

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]  # no fcntl on Windows

OBJECTS = "objects"  # the folder in the store that holds one file per content
FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
CHUNK = 1 << 20
LEFTOVER = ".new-"  # an object being made; what kill -9 left is removed by the next keep
NO_REFLINK: set[tuple[int, str]] = set()  # file systems and stores where a reflink failed
COUNTER = itertools.count()
NO_INHERIT = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)  # Windows has neither name


class Place(typing.NamedTuple):
    """Where a content is kept: an object of its own (the whole file at path), or `size` bytes at
    `offset` in a pack (packs.py)."""

    path: str
    offset: int = 0
    size: int | None = None


class NotKept(Exception):
    """A file whose content could not be kept: the message says why (it changed while it was read,
    it cannot be read, the disk is full)."""


def object_path(store: Path, digest: str) -> str:
    """Where the object for `digest` is: in a folder named by its first two digits, as git keeps
    its objects (a file system makes ten thousand files in 256 folders faster than in one)."""
    return f"{store}/{OBJECTS}/{digest[:2]}/{digest[2:]}"


def made_in_its_folder(make: typing.Callable[[], typing.Any], path: str) -> typing.Any:
    """make(), which makes the file at path, run again once path's folder is made if it was
    missing (an object the first of its two digits)."""
    try:
        return make()
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        return make()


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


def keep(
    store: Path,
    path: str,
    seen: os.stat_result,
    folder: int | None = None,
    into: typing.Callable[[bytes], str] | None = None,
) -> str:
    """Keep the regular file at path, whose lstat was `seen`, in the store; return its content's
    digest. Where `folder` is given, the folder of path held open, the file is opened by its name
    in it. A small file's content is kept by `into` (a walk's packs.Packer), or keep_bytes().
    Raises NotKept if it changed while it was read (its stat is no longer `seen`), or cannot
    be read or copied."""
    try:
        fd = os.open(named_in(path, folder), READ_FLAGS, dir_fd=folder)
    except OSError as error:
        raise NotKept(f"it cannot be read ({error.strerror})") from None
    try:
        if seen.st_size > CHUNK or (seen.st_dev, str(store)) not in NO_REFLINK:
            return kept_large(store, fd, path, seen)
        # A small file where no reflink can be made is read in one piece (one that grew shows by
        # its length) and kept by `into`: none made when its content is kept already
        data = os.read(fd, seen.st_size + 1)
        while len(data) < seen.st_size and (more := os.read(fd, seen.st_size + 1 - len(data))):
            data += more
        # Another file put at its name since the walk looked shows here too (its inode)
        if not same(os.fstat(fd), seen) or len(data) != seen.st_size:
            raise NotKept("it changed while it was being kept")
        return into(data) if into else keep_bytes(store, data)
    except OSError as error:
        raise NotKept(f"it could not be copied ({error.strerror or error})") from None
    finally:
        os.close(fd)


def named_in(path: str, folder: int | None) -> str:
    """How a call made in path's folder names it: its name alone where that folder is held open
    (`folder`, its descriptor), the whole path where none is (Windows)."""
    return path if folder is None else os.path.basename(path)


def kept_large(store: Path, fd: int, path: str, seen: os.stat_result) -> str:
    """keep() for a file over CHUNK or where a reflink may be made: reflinked, or copied a piece at
    a time, to a new file under a temporary name, renamed to its digest once whole."""
    made, temporary = new_file(store)
    with whole_or_removed(made, temporary):
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
            target = object_path(store, digest)
            made_in_its_folder(lambda: os.replace(temporary, target), target)
        return digest


def keep_bytes(store: Path, data: bytes, digest: str = "") -> str:
    """Keep content already read (a small file, a file tool's copy when a command changes the file
    next). It is written under its name at once, with no temporary name to rename (one file made,
    where a rename costs the file system two more changes of folders): an object a kill cut short
    is shorter than its content, known by its size, and made again. `digest` is data's where the
    caller has it."""
    digest = digest or hashlib.sha256(data).hexdigest()
    target, flags = object_path(store, digest), os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_INHERIT

    def create() -> int:
        return os.open(target, flags, 0o600)

    try:
        made = made_in_its_folder(create, target)
    except FileExistsError:
        if whole(store, digest, len(data)):
            return digest
        made = create()
    with whole_or_removed(made, target):
        written(made, data)
    return digest


@contextlib.contextmanager
def whole_or_removed(fd: int, path: str) -> typing.Iterator[None]:
    """Around making the file at path, open as fd: removed if it fails (a full disk, Ctrl-C), and
    fd closed whatever happens."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        os.close(fd)


def whole(store: Path, digest: str, size: int) -> bool:
    """Whether the object for `digest` is kept whole; one of another size (cut short by a kill) is
    removed, to be made again."""
    target = object_path(store, digest)
    try:
        if os.stat(target).st_size == size:
            return True
        os.unlink(target)
    except FileNotFoundError:
        pass
    return False


def written(fd: int, data: bytes) -> None:
    """All of data written to fd (os.write may write a part)."""
    done = os.write(fd, data)
    if done == len(data):
        return
    view = memoryview(data)[done:]
    while view:
        view = view[os.write(fd, view) :]


def key(info: os.stat_result) -> tuple[int, int, int, int, int]:
    """What a file's stat says of its content, as the store's index keeps it: size, mtime, inode,
    ctime, and its mode (permission bits)."""
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns, info.st_mode & 0o7777)


def same(now: os.stat_result, seen: os.stat_result) -> bool:
    """Whether a file is as it was seen (key())."""
    return key(now) == key(seen)


def read_object(place: Place, digest: str, limit: int) -> bytes:
    """The content at `place`, checked against its digest; OSError if it is missing, too large or
    not what was kept."""
    try:
        fd = os.open(place.path, READ_FLAGS)
    except FileNotFoundError:
        raise OSError(
            errno.ENOENT, "its content from before the run is gone from the undo store"
        ) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        size = info.st_size if place.size is None else place.size
        # a pack's index that says more than the pack holds is damaged: nothing is read past it
        if not stat.S_ISREG(info.st_mode) or size > limit or place.offset + size > info.st_size:
            raise OSError(errno.EINVAL, "not a file undo kept")
        file.seek(place.offset)
        data = file.read(size + (place.size is None))
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise OSError(errno.EINVAL, "it is not the content undo kept")
    return data


def kept_objects(store: Path) -> typing.Iterator[tuple[Path, str]]:
    """Each object file in the store, with the digest it is named by: its folder's two digits
    and its name (objects.object_path), or its name alone in a store made before objects were
    kept in folders."""
    for path in (store / OBJECTS).glob("*"):
        if path.is_dir():
            yield from ((inner, path.name + inner.name) for inner in path.glob("*"))
        else:
            yield path, path.name
