"""Packs of undo's content store (beyond the tutorial): a walk that keeps many small files (a
workspace's first keep) writes all but the first LOOSE of them into one file, a pack, beside an
index of where each content is in it, as git packs its objects: a file system makes one file
where it would make ten thousand, the most of what a first keep costs. A pack counts once its
index is in place; one a kill left without it is removed by the next keep (tidy()). Content read
back from a pack is checked against its digest, as an object's is (objects.read_object)."""

import contextlib
import hashlib
import json
import os
import typing
from pathlib import Path

from plainagent.workspace import objects
from plainagent.workspace.objects import Place
from plainagent.workspace.undo_record import MAX_MANIFEST_BYTES, read_kept

PACKS = "packs"  # the folder in the store that holds the packs and their indexes
LOOSE = 64  # the contents a walk keeps as objects of their own before it starts a pack
# Each store's packs as this process last read them: the names and inodes of their indexes, and
# where each content is
READ: dict[str, tuple[frozenset, dict[str, Place]]] = {}


def packed(store: Path) -> dict[str, Place]:
    """Where each content the store's packs hold is, by digest. Read again only when the packs
    changed: an index made, removed or written again shows in the listing of their names and
    stats (identity, size, time). A pack whose index is damaged counts as holding nothing."""
    try:
        with os.scandir(store / PACKS) as entries:
            listed = frozenset(
                (e.name, objects.key(e.stat(follow_symlinks=False)))
                for e in entries
                if e.name.endswith(".idx")
            )
    except OSError:
        return {}
    memo = READ.get(str(store))
    if memo and memo[0] == listed:
        return memo[1]
    found = {}
    for name, _ in sorted(listed):
        pack = f"{store}/{PACKS}/{name[:-4]}.pack"
        with contextlib.suppress(OSError, ValueError):
            found.update({d: Place(pack, *at) for d, at in entries_of(Path(pack)).items()})
    READ[str(store)] = (listed, found)
    return found


def entries_of(pack: Path) -> dict[str, tuple[int, int]]:
    """A pack's index: each content's offset and size in it; ValueError if it is damaged."""
    try:  # read as undo's records are: not through a link, never waiting on a pipe, bounded
        entries = json.loads(read_kept(pack.with_suffix(".idx"), MAX_MANIFEST_BYTES))
    except RecursionError:  # nested past Python's depth
        raise ValueError("not an index") from None
    if not isinstance(entries, dict):
        raise ValueError("not an index")
    checked = {}
    for digest, at in entries.items():
        if not (len(digest) == 64 and isinstance(at, list) and len(at) == 2):
            raise ValueError("not an index")
        offset, size = at
        if not (type(offset) is int and type(size) is int and offset >= 0 and size >= 0):
            raise ValueError("not an index")
        checked[digest] = (offset, size)
    return checked


def located(stores: typing.Iterable[Path], digest: str) -> Place | None:
    """Where the content `digest` is kept in the first of `stores` that holds it: an object of its
    own (or, in a store made before objects were kept in folders, under its digest) or a pack."""
    for store in stores:
        for path in (objects.object_path(store, digest), f"{store}/{objects.OBJECTS}/{digest}"):
            if os.path.isfile(path):
                return Place(path)
        if (place := packed(store).get(digest)) is not None:
            return place
    return None


def as_file(place: Place, digest: str) -> str:
    """A file that holds the content at `place` alone, for a person to open: a pack's content
    is made an object of its own (its store's), the path of the pack where it cannot be."""
    if place.size is None:
        return Path(place.path).as_posix()
    store = Path(place.path).parent.parent
    with contextlib.suppress(OSError):
        return Path(
            objects.object_path(store, objects.keep_bytes(store, read(place, digest)))
        ).as_posix()
    return Path(place.path).as_posix()


def read(place: Place, digest: str) -> bytes:
    """objects.read_object() with no limit but the content's size."""
    return objects.read_object(place, digest, place.size or 0)


class Packer:
    """The keeper of a walk's small files (objects.keep()'s `into`): the first `loose` contents
    as objects of their own (objects.keep_bytes), the rest appended to one new pack, put in place
    by done(). A content the store holds already is not kept again."""

    def __init__(self, store: Path, loose: int = LOOSE, known: dict | None = None) -> None:
        self.store, self.loose, self.known = store, loose, known
        self.entries: dict[str, list[int]] = {}  # each content's offset and size in the pack
        self.size = 0
        self.fd: int | None = None
        self.temporary = ""

    def __enter__(self) -> "Packer":
        return self

    def __exit__(self, *_: object) -> None:
        self.discard()  # a pack done() did not put in place

    def __call__(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        if self.known is None:
            self.known = packed(self.store)
        if digest in self.entries or self.holds(digest, len(data)):
            return digest
        if self.loose > 0:
            self.loose -= 1
            return objects.keep_bytes(self.store, data, digest)
        if self.fd is None:
            # the store's objects of their own, listed once, not looked for one at a time
            loose = {digest: Place(str(path)) for path, digest in objects.kept_objects(self.store)}
            self.known = {**self.known, **loose}
            if self.holds(digest, len(data)):
                return digest
            self.fd, self.temporary = objects.new_file(self.store)
        try:
            objects.written(self.fd, data)
        except BaseException:  # a part written is taken off: the next content starts where it did
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.size)
                os.lseek(self.fd, self.size, os.SEEK_SET)
            raise
        self.entries[digest] = [self.size, len(data)]
        self.size += len(data)
        return digest

    def holds(self, digest: str, size: int) -> bool:
        """Whether the store holds the content already: in a pack, or as a whole object of its own
        (one a kill cut short, smaller than its content, is not it: objects.whole() removes it)."""
        assert self.known is not None
        place = self.known.get(digest)
        return place is not None and (
            place.size is not None or objects.whole(self.store, digest, size)
        )

    def done(self) -> tuple[set[str], OSError | None]:
        """Put the pack in place, then its index (once the index is there the pack counts); nothing
        where it holds nothing. Where it cannot be (a full disk), return the contents it held, not
        kept, and why."""
        if self.fd is None:
            return set(), None
        fd, self.fd = self.fd, None
        name = f"{self.store}/{PACKS}/{os.urandom(16).hex()}"
        made, temporary = None, ""
        try:
            os.close(fd)
            with contextlib.suppress(FileExistsError):
                os.mkdir(self.store / PACKS, 0o700)
            os.replace(self.temporary, f"{name}.pack")
            made, temporary = objects.new_file(self.store)
            with objects.whole_or_removed(made, temporary):
                objects.written(made, json.dumps(self.entries, separators=(",", ":")).encode())
            os.replace(temporary, f"{name}.idx")
        except OSError as error:
            for each in (self.temporary, f"{name}.pack", temporary):
                with contextlib.suppress(OSError):
                    os.unlink(each)
            return set(self.entries), error
        return set(), None

    def discard(self) -> None:
        """The pack being made removed (the walk failed)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)


def tidy(store: Path) -> None:
    """Remove what a kill left of a pack being put in place: a pack without its index, or an
    index without its pack."""
    try:
        names = set(os.listdir(store / PACKS))
    except OSError:
        return
    for name in names:
        stem, _, kind = name.rpartition(".")
        if f"{stem}.{'idx' if kind == 'pack' else 'pack'}" not in names:
            with contextlib.suppress(OSError):
                os.unlink(store / PACKS / name)


def size(store: Path) -> int:
    """Bytes the store's packs and their indexes hold."""
    total = 0
    with contextlib.suppress(OSError), os.scandir(store / PACKS) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                total += entry.stat(follow_symlinks=False).st_size
    return total


def prune(store: Path, wanted: set[str]) -> int:
    """Remove each pack that holds nothing `wanted`, and write again, with only what is wanted,
    one where less than half is; return the bytes freed. The new pack is in place before the old
    one goes: a kill between leaves both, never neither."""
    freed = 0
    for index in sorted((store / PACKS).glob("*.idx")):
        pack = index.with_suffix(".pack")
        try:
            entries, held = entries_of(pack), pack.stat().st_size
        except (OSError, ValueError):
            continue
        needed = {d: at for d, at in entries.items() if d in wanted}
        if 2 * sum(size for _, size in needed.values()) >= held:
            continue
        if needed:
            with Packer(store, loose=0, known={}) as packer:
                for digest, at in needed.items():
                    with contextlib.suppress(OSError):  # a damaged content is not copied
                        packer(read(Place(str(pack), *at), digest))
                if packer.done()[1]:  # a full disk: the old pack stays
                    continue
            freed -= packer.size
        index.unlink()
        pack.unlink()
        freed += held
    return freed


def durable_files(store: Path, digests: typing.Iterable[str]) -> set[str]:
    """The files that hold the contents `digests`: their objects, or the packs they are in."""
    in_packs = None
    files = set()
    for digest in digests:
        path = objects.object_path(store, digest)
        if not os.path.exists(path):
            in_packs = packed(store) if in_packs is None else in_packs
            path = in_packs[digest].path if digest in in_packs else path
        files.add(path)
    return files
