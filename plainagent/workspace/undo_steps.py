"""Undo of what a command changed (beyond the tutorial): each path a command's step names (a file,
a link or a folder) put back as it was before the task, by the same rules and the same writes as a
file tool's: under the file's lock, only if it still is what the run left there, a file replaced
whole (writes.replace_file) or removed aside and looked at (swaps.remove); a folder the command
removed made again before its files, one it made removed after them."""

import errno
import os
import stat
import typing
from pathlib import Path

from plainagent.core.ownfiles import real
from plainagent.core.settings import Settings
from plainagent.workspace import objects, store, swaps
from plainagent.workspace.files import confine, writable
from plainagent.workspace.objects import Place
from plainagent.workspace.packs import as_file, located
from plainagent.workspace.snapshot import OWNERS
from plainagent.workspace.undo_state import looked_at, state, still
from plainagent.workspace.writes import file_lock, open_folder, replace_file

FILE_LIMIT = 1 << 40  # what a store object may hold when read back (its size was bounded when kept)


def ordered(entries: list[dict]) -> list[dict]:
    """The entries in the order they are put back: folders a command removed first, outermost
    first; then files and links; then what a command made into a folder, innermost first (empty by
    then)."""

    def key(entry: dict) -> tuple[int, int]:
        if entry.get("kind") != "command":
            return 1, 0
        depth = entry["path"].count("/")
        if is_folder(entry["before"]):
            return 0, depth
        return (2, -depth) if is_folder(entry["after"]) else (1, 0)

    return sorted(entries, key=key)


def is_folder(node: dict | None) -> bool:
    return node is not None and node["type"] == "folder"


def now(path: Path) -> dict | None:
    """What is at path now, as a manifest's node."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(info.st_mode):
        return {"type": "folder", "mode": stat.S_IMODE(info.st_mode)}
    if stat.S_ISLNK(info.st_mode):
        return {"type": "link", "target": os.readlink(path)}
    if stat.S_ISREG(info.st_mode):
        return {"type": "file", "mode": stat.S_IMODE(info.st_mode), "digest": state(path)}
    return {"type": "other"}


def matches(here: dict | None, node: dict | None) -> bool:
    """Whether what is at a path is the node: the same kind, and content, mode or target (a mode
    not known, after a file tool wrote the file, is not compared)."""
    if here is None or node is None:
        return here is node
    if here["type"] != node["type"]:
        return False
    if here["type"] == "link":
        return here["target"] == node["target"]
    if here["type"] == "folder":
        return here["mode"] == node["mode"]
    if here["type"] == "file":
        same_mode = node.get("mode") is None or here["mode"] == node["mode"]
        return here["digest"] == node["digest"] and same_mode
    return False


def lost_copies(entries: list[dict], record: Path, settings: Settings) -> set[str]:
    """The contents a file the run made holds now (a command's `mv`, `cp`) that undo needs for a
    file the run changed but cannot read whole from the store (a copy gone or damaged): the file
    the run made is then their only copy, and put_back() leaves it."""
    made = {
        e["after"]["digest"]
        for e in entries
        if e.get("kind") == "command" and e["before"] is None and is_file(e["after"])
    }
    lost = set()
    for entry in (e for e in entries if e.get("kind") == "command"):
        digest: str = (entry["before"] or {}).get("digest") or ""
        # looked for in the stores only where a file the run made holds the same content
        if digest not in made:
            continue
        try:
            content_of(entry["before"], record, settings)
        except OSError:
            lost.add(digest)
    return lost


def put_back(
    entry: dict, name: str, record: Path, settings: Settings, lost: set[str], own: list
) -> tuple[str, bool]:
    """Undo one path's change by a command: say what was done, and whether it is as before. A file
    the run made that holds content of `lost` (lost_copies()) is left where it is; a file is
    written only where write_file may (`own`: the agent's own places, files.own_of())."""
    path = Path(entry["path"])
    before, after = entry["before"], entry["after"]
    by = f"changed by: {'; '.join(entry['by'])}"
    kept = kept_at(before, record, settings)

    def where() -> str:
        """Where the content from before is, a file of its own (made so if it is in a pack)."""
        if kept is None:
            return ""
        return f"; its content from before the run is in {as_file(kept, before['digest'])}"

    # write only where write_file may (a manifest may have been forged)
    if any(node and node["type"] == "link" for node in (before, after)):
        confine(str(path.parent), settings)  # a link is removed or made, never followed
    elif is_folder(before):
        confine(str(path), settings)
    else:
        writable(str(path), settings, own)
    with file_lock(name, path):
        seen, here = looked_at(path), now(path)
        if matches(here, before):
            return f"unchanged {name} (already as before the run)", True
        if not matches(here, after) or looked_at(path) != seen:
            return f"left alone {name}: changed since the run{where()}", False
        if is_file(before) and before["digest"] is None:
            return (
                f"not undone {name}: its content from before the run was not kept "
                f"({before['reason']}; {by})",
                False,
            )
        data = None
        if is_file(before):
            data = content_of(before, record, settings, kept)
        if is_file(before) and is_file(here):
            assert here is not None and data is not None
            if here["digest"] == before["digest"]:
                in_its_folder(
                    path, settings, lambda at, folder: set_mode(at, folder, before["mode"])
                )
                return f"restored the mode of {name} ({by})", True
            like = os.lstat(path)
            mode = stat.S_IFMT(like.st_mode) | before["mode"]
            like = os.stat_result((mode, *tuple(like)[1:]))

            def unchanged(folder: int | None, at: str) -> None:
                if not still(at, folder, seen, after["digest"]):
                    raise OSError(f"changed while undo was putting it back{where()}")

            replace_file(str(path), path, [data], settings, like, unchanged)
            return f"restored {name} ({by})", True
        if is_folder(before) and is_folder(here):
            in_its_folder(path, settings, lambda at, folder: set_mode(at, folder, before["mode"]))
            return f"restored the mode of {name}/ ({by})", True
        if before is None and is_file(after) and after["digest"] in lost:
            raise OSError(
                "not removed: it holds what a file the run changed held before it, whose copy "
                "is gone from the undo store"
            )
        take_away(path, here, seen, settings)
        if before is None and is_folder(here):  # named as a folder, as one made again is
            name = f"{name}/"
        return make(path, before, data, settings, name, by)


def is_file(node: dict | None) -> bool:
    return node is not None and node["type"] == "file"


def take_away(path: Path, here: dict | None, seen: tuple | None, settings: Settings) -> None:
    """Remove what the command left at path (checked already to be what it left): a file moved
    aside and looked at once more; a link; a folder it made, which must be empty by now."""
    if here is None:
        return
    if here["type"] == "folder":
        try:
            in_its_folder(path, settings, lambda at, folder: os.rmdir(at, dir_fd=folder))
        except OSError as error:
            raise OSError(f"it holds files made since the run ({error.strerror})") from None
        return
    if here["type"] == "link":
        in_its_folder(path, settings, lambda at, folder: os.unlink(at, dir_fd=folder))
        return
    folder = open_folder(path, settings)

    def unchanged(at_folder: int | None, at: str) -> None:
        if not still(at, at_folder, seen, here["digest"]):
            raise OSError("changed while undo was removing it")

    try:
        swaps.remove(folder, path.name if folder is not None else str(path), unchanged)
    finally:
        if folder is not None:
            os.close(folder)


def make(
    path: Path, before: dict | None, data: bytes | None, settings: Settings, name: str, by: str
) -> tuple[str, bool]:
    """Put back at path what was there before the task (nothing, a folder, a link or a file)."""
    if before is None:
        return f"removed {name} (the run created it; {by})", True
    if before["type"] == "folder":

        def made(at: str, folder: int | None) -> None:
            os.mkdir(at, 0o700, dir_fd=folder)
            set_mode(at, folder, before["mode"])

        in_its_folder(path, settings, made)
        return f"made {name}/ again ({by})", True
    if before["type"] == "link":
        in_its_folder(
            path, settings, lambda at, folder: os.symlink(before["target"], at, dir_fd=folder)
        )
        return f"made the link {name} again ({by})", True
    assert data is not None
    # This user's (Windows has no such ids, nor fchown)
    owner = (getattr(os, "geteuid", lambda: 0)(), getattr(os, "getegid", lambda: 0)())
    like = os.stat_result((stat.S_IFREG | before["mode"], 0, 0, 1, *owner) + (0,) * 4)
    replace_file(str(path), path, [data], settings, like)
    return f"restored {name} ({by})", True


def in_its_folder(
    path: Path, settings: Settings, act: typing.Callable[[str, int | None], None]
) -> None:
    """act(name, folder): a change at path made in its folder, opened and checked to be in the
    workspace (writes.open_folder), so a link a process swapped in for a folder of the path since
    it was looked at leads nowhere outside; by the path itself where the system cannot (Windows)."""
    folder = open_folder(path, settings)
    try:
        act(path.name if folder is not None else str(path), folder)
    finally:
        if folder is not None:
            os.close(folder)


def set_mode(at: str, folder: int | None, mode: int) -> None:
    """chmod of the file or folder `at` in folder, never of what a link put there leads to: by a
    descriptor of the very entry where the system has them (Linux's O_PATH and /proc)."""
    if folder is None or not hasattr(os, "O_PATH") or not os.path.isdir("/proc/self/fd"):
        os.chmod(at, mode, dir_fd=folder)
        return
    fd = os.open(at, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    try:
        if stat.S_ISLNK(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "a link was put in its place since undo looked")
        os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)


def kept_at(before: dict | None, record: Path, settings: Settings) -> Place | None:
    """Where a file's content from before the task is kept: the store of the workspace's runs
    folder, or of the folder the record is in (a --transcript elsewhere, a workspace that moved);
    where neither holds it, where it would be (reading it then says it is gone)."""
    if not is_file(before) or not before.get("digest"):  # type: ignore[union-attr]
        return None
    assert before is not None
    places = [store.folder(settings.runs_folder), store.folder(record.parent.parent)]
    digest = before["digest"]
    return located(places, digest) or Place(objects.object_path(places[0], digest))


def content_of(before: dict, record: Path, settings: Settings, kept: Place | None = None) -> bytes:
    """A file's content from before the task, checked, read where it is kept (`kept`, where the
    caller looked already: kept_at()); looked for once more where it was in a pack that another
    run's prune has written again meanwhile (the new pack is in place before the old one goes)."""
    kept = kept or kept_at(before, record, settings)
    assert kept is not None
    try:
        return objects.read_object(kept, before["digest"], FILE_LIMIT)
    except OSError:
        again = kept_at(before, record, settings) if kept.size is not None else None
        if again is None or again == kept:
            raise
        return objects.read_object(again, before["digest"], FILE_LIMIT)


def left(entry: dict, name: str) -> str:
    """The line for a folder a command changed that undo leaves to another program."""
    return f"left {name}/: changed by {entry['by']}; {OWNERS.get(entry['owner'], '')}"


def relative(path: Path) -> str:
    """A path as a person is shown it: relative to the working folder when it is inside it."""
    try:
        return path.relative_to(real(Path.cwd())).as_posix()
    except ValueError:
        return path.as_posix()
