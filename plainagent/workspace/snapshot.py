"""What an approved command changed, for undo (beyond the tutorial): before it runs, a walk of the
workspace keeps every file's content in the store (store.py; only what changed since the store last
saw it is read); after it, the same walk, compared, becomes one step of the task's undo record
(files made, changed, removed; modes, links, folders), named by the command. .git, virtual
environments and node_modules are not kept: a change there is named as git's or the package
manager's to undo."""

import contextlib
import dataclasses
import json
import os
import shutil
import stat
import sys
import tempfile
import typing
from pathlib import Path

from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import Settings
from plainagent.core.statefolder import make_folders
from plainagent.workspace import store
from plainagent.workspace.undo_record import (
    MANIFEST,
    UndoError,
    read_kept,
    read_manifest,
    sync_folder,
    write_private,
)
from plainagent.workspace.undo_state import state

MB = 1_000_000
# Folders whose changes are another program's to undo, by what marks them
NOT_KEPT = {".git": "git", "node_modules": "node_modules"}
VENV_MARK = "pyvenv.cfg"
# What to tell a person of a change in each
OWNERS = {
    "git": "history is git's to undo (git log, git reset, git checkout)",
    "venv": "installs are the package manager's to undo (pip uninstall, or make the venv again)",
    "node_modules": "installs are the package manager's to undo (npm uninstall, npm ci)",
}
# Notes said in this process, per task record: each file not kept is named once a run, this many
# at most at once
NAMED = 10
NOTED: dict[str, set[str]] = {}


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
    # the runs, a --transcript, where they are in the workspace
    inside = {str(p) for p in settings.protected if settings.workspace in p.parents}
    with store.opened(settings.runs_folder) as kept:
        index = store.read_index(kept)
        cache, held = index["files"], index["bytes"]
        started = store.now_ns()
        racy = index["started"] - store.RACY_NS
        shot = Snapshot()
        files, read = shot.files, False  # read: a file read this walk, the index then written again
        stack = [""]
        regular, lookup = stat.S_ISREG, cache.get  # looked up once, not once a file
        while stack:
            at = stack.pop()
            prefix = f"{at}/" if at else ""
            try:
                entries = list(os.scandir(settings.workspace / at if at else settings.workspace))
            except OSError as error:
                shot.not_kept[at or "."] = f"the folder cannot be read ({error.strerror})"
                continue
            for entry in entries:
                name = prefix + entry.name
                if inside and entry.path in inside:
                    continue
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                mode = info.st_mode
                if regular(mode):  # never a pipe, a socket or a device
                    seen = (
                        info.st_size,
                        info.st_mtime_ns,
                        info.st_ino,
                        info.st_ctime_ns,
                        mode & 0o7777,
                    )
                    hit = lookup(name)
                    if hit is not None and hit[0] == seen and seen[1] < racy:
                        files[name] = hit
                        continue
                    digest, read = None, True
                    if info.st_size > limit:
                        shot.not_kept[name] = f"over {settings.undo_file_limit} MB"
                    elif held + info.st_size > cap:
                        shot.not_kept[name] = (
                            f"the undo store is full ({settings.undo_store_limit} MB)"
                        )
                    else:
                        digest, info = kept_again(kept, entry.path, info, name, shot)
                        seen = (*stat_of(info), stat.S_IMODE(info.st_mode))
                        held += info.st_size if digest else 0
                    files[name] = (seen, digest)
                elif stat.S_ISDIR(mode):
                    if owner := left_to(entry):
                        shot.areas[name] = (owner, signature(Path(entry.path), owner))
                        continue
                    shot.folders[name] = stat.S_IMODE(mode)
                    stack.append(name)
                elif stat.S_ISLNK(mode):
                    with contextlib.suppress(OSError):
                        shot.links[name] = os.readlink(entry.path)
        cached = {n: e for n, e in files.items() if e[1]} if shot.not_kept else files
        # Written again where a file was read, even one that proved the same: a file a walk read
        # again only because it was changed just before the last index was written (racily clean)
        # is then trusted from this walk's start on, where it was read again at every walk
        if read or cached != cache:
            store.write_index(kept, {"started": started, "bytes": held, "files": cached}, index)
    return shot


def stat_of(info: os.stat_result) -> tuple[int, int, int, int]:
    """What the store's index keeps of a file's stat, but its mode: size, mtime, inode, ctime."""
    return (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns)


def kept_again(
    kept: Path, path: str, info: os.stat_result, name: str, shot: Snapshot
) -> tuple[str | None, os.stat_result]:
    """store.keep(), tried once more if the file changed while it was read; what it could not keep
    is named in shot.not_kept."""
    for _ in range(2):
        try:
            return store.keep(kept, path, info), info
        except store.NotKept as error:
            shot.not_kept[name] = str(error)
            try:
                info = os.lstat(path)
            except OSError:
                break
            if not stat.S_ISREG(info.st_mode):
                break
    return None, info


def left_to(entry: os.DirEntry) -> str | None:
    """Whose a folder is to undo: git's (.git), a package manager's (a venv, node_modules); None
    for the workspace's own."""
    if entry.name in NOT_KEPT:
        return NOT_KEPT[entry.name]
    return "venv" if os.path.isfile(os.path.join(entry.path, VENV_MARK)) else None


def signature(folder: Path, owner: str) -> frozenset:
    """What changes when a program writes in the folder: .git's every file and folder; in a venv
    or node_modules, the folders where packages are put (three levels down, one for node_modules),
    so a walk never reads a hundred thousand files there."""
    depth = {"git": 1_000, "venv": 3, "node_modules": 1}[owner]
    seen, stack = set(), [(folder, 0)]
    while stack:
        at, level = stack.pop()
        with contextlib.suppress(OSError):
            info = at.lstat()
            seen.add((str(at), info.st_size, info.st_mtime_ns, info.st_ino))
            if level >= depth or not stat.S_ISDIR(info.st_mode):
                continue
            for entry in os.scandir(at):
                if owner == "git" or entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), level + 1))
    return frozenset(seen)


def tell(settings: Settings, shot: Snapshot) -> None:
    """Say once a run, on stderr, each file whose content before the command is not kept; past
    NAMED of them, how many more (a full store would name every file of a large workspace)."""
    noted = NOTED.setdefault(str(settings.undo), set())
    redact = redactor(settings.secrets)
    new = [(name, reason) for name, reason in shot.not_kept.items() if name not in noted]
    noted.update(name for name, _ in new)
    for name, reason in new[:NAMED]:
        line = f"note: {name} is not kept for undo ({reason}): --undo cannot take back a change"
        print(shown(f"{line} a command makes to it", redact=redact), file=sys.stderr)
    if len(new) > NAMED:
        more = f"note: {len(new) - NAMED} more files are not kept for undo ({new[NAMED][1]}, ...)"
        print(shown(more, redact=redact), file=sys.stderr)


def node(entry: tuple | None, name: str, shot: Snapshot) -> dict | None:
    """A walk's node (Snapshot.node) as the manifest keeps it."""
    if entry is None:
        return None
    if entry[0] == "folder":
        return {"type": "folder", "mode": entry[1]}
    if entry[0] == "link":
        return {"type": "link", "target": entry[1]}
    made = {"type": "file", "mode": entry[1][4], "size": entry[1][0], "digest": entry[2]}
    if entry[2] is None:
        made["reason"] = shot.not_kept.get(name, "it was not kept")
    return made


def changed(before: tuple | None, after: tuple | None) -> bool:
    """Whether a path's node differs after the command: a file by content and mode (by its stat
    where the content was not kept)."""
    if before is None or after is None or before[0] != after[0] or before[0] != "file":
        return before != after
    if before[2] is None or after[2] is None:
        return before[1] != after[1]
    return (before[1][4], before[2]) != (after[1][4], after[2])


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """The paths a command changed, in order. A file as the store saw it is one object in both
    walks, so the dictionaries compare at the speed of C."""
    names: set[str] = set()
    for old, new in (
        (before.files, after.files),
        (before.links, after.links),
        (before.folders, after.folders),
    ):
        if old != new:
            names.update(n for n, now in new.items() if old.get(n) != now)
            names.update(n for n in old if n not in new)
    return sorted(n for n in names if changed(before.node(n), after.node(n)))


def without_undo(settings: Settings) -> Settings:
    """The settings of a command that only reads: nothing to keep (the kernel holds it to that)."""
    return dataclasses.replace(settings, undo=None)


@contextlib.contextmanager
def kept_for_undo(step: str, settings: Settings) -> typing.Iterator[None]:
    """Around a command that may write: the workspace kept before, and what the command changed
    recorded after as one step of the task's undo record, named `step`. A keep that fails never
    stops the command: what is not covered is said, and the run goes on."""
    if settings.undo is None:
        yield
        return
    redact = redactor(settings.secrets)
    try:
        before: Snapshot | None = look(settings)
        tell(settings, before)  # type: ignore[arg-type]
    except OSError as error:
        before = None
        said = f"note: undo data could not be kept before this command ({error}); --undo cannot "
        print(shown(f"{said}take back what it changes", redact=redact), file=sys.stderr)
    try:
        yield
    finally:
        if before is not None:
            try:
                after = look(settings)
                # Under the store's lock: another run's prune or keep waits until it is recorded
                with store.opened(settings.runs_folder):
                    record_step(step, before, after, settings)
            except (OSError, UndoError) as error:
                said = f"note: what this command changed could not be recorded for undo ({error})"
                print(shown(said, redact=redact), file=sys.stderr)


def record_step(step: str, before: Snapshot, after: Snapshot, settings: Settings) -> None:
    """Write what the command changed into the task's record: each path's first node before the
    task and its node now (a file a file tool changed first keeps the copy it kept), named by
    the step; and each folder left to another program that changed."""
    record = settings.undo
    assert record is not None
    names = changes(before, after)
    areas = [a for a, (_, sig) in after.areas.items() if before.areas.get(a, ("", sig))[1] != sig]
    areas = sorted(areas + [a for a in before.areas if a not in after.areas])
    if not names and not areas:
        return
    kept = store.folder(settings.runs_folder)
    digests = (before.files.get(n, ((), None))[1] for n in names)
    store.made_durable(kept, (digest for digest in digests if digest))
    fresh = not (record / MANIFEST).exists()
    manifest: dict[str, typing.Any] = (
        read_manifest(record) if not fresh else {"files": [], "undone": False}
    )
    by_path = {e["path"]: e for e in manifest["files"]}
    for name in names:
        path = str(settings.workspace / name)
        now = node(after.node(name), name, after)
        if now is not None and now["type"] == "file" and now["digest"] is None:
            now = {"type": "file", "mode": now["mode"], "digest": state(Path(path))}
        entry = by_path.get(path)
        if entry is None:
            entry = {"path": path, "kind": "command", "by": []}
            entry["before"] = node(before.node(name), name, before)
            manifest["files"].append(entry)
        elif entry.get("kind") != "command":  # a file tool's, made a command's step
            converted = {"path": path, **from_file_tool(entry, record, kept)}
            entry.clear()
            entry.update(converted)
        entry["after"] = now
        if step not in entry["by"]:
            entry["by"].append(step)
    left = manifest.setdefault("left", [])
    for area in areas:
        owner = (after.areas.get(area) or before.areas[area])[0]
        left.append({"path": str(settings.workspace / area), "owner": owner, "by": step})
    write_record(record, manifest, fresh)


def from_file_tool(entry: dict, record: Path, kept: Path) -> dict:
    """A file tool's entry as a command's: its copy moved into the store."""
    if not entry["existed"]:  # and the folders write_file made for it, removed once it is
        return {"kind": "command", "by": [], "before": None, "folders": entry["folders"]}
    if entry.get("copy") is None:
        before = {
            "type": "file",
            "mode": None,
            "size": 0,
            "digest": None,
            "reason": entry["reason"],
        }
    else:
        digest = store.keep_bytes(kept, read_kept(record / entry["copy"], entry["size"]))
        before = {"type": "file", "mode": entry["mode"], "size": entry["size"], "digest": digest}
    return {"kind": "command", "by": [], "before": before}


def write_record(record: Path, manifest: dict, fresh: bool) -> None:
    """The manifest written whole; a task's first record made in a folder of another name and
    renamed, as remember() makes it, so kill -9 never leaves a record without its manifest."""
    if not fresh:
        write_private(record / MANIFEST, json.dumps(manifest).encode())
        return
    for made in make_folders(record.parent, 0o700):
        sync_folder(made.parent)
    folder = Path(tempfile.mkdtemp(dir=record.parent, prefix=f".{record.name}-"))
    try:
        write_private(folder / MANIFEST, json.dumps(manifest).encode())
        shutil.rmtree(record, ignore_errors=True)
        os.rename(folder, record)
        sync_folder(record.parent)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
