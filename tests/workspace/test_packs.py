"""Packs of undo's store: a walk that keeps many small files writes all but the first few into one
pack, read back (checked) by undo, pruned with the runs, and never half made."""

import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import (
    ROOT,
    audit_hooked,
    limited,
    posix_only,
    run_script,
    shell,
    store_of,
    tree,
)

from plainagent.core.settings import Settings, resolve
from plainagent.workspace import objects, packs, store, walk


def many_files(files: int, tmp_path: Path, monkeypatch) -> tuple[Path, Settings]:
    """A workspace of `files` files of distinct content in keep/, and the settings of a run."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    workspace = tmp_path / "ws"
    (workspace / "keep").mkdir(parents=True)
    for k in range(files):
        (workspace / "keep" / f"{k}.txt").write_bytes(f"file {k}\n".encode() * (k + 1))
    return workspace, resolve(require_key=False, workspace=workspace)


def in_store(settings: Settings) -> tuple[list[Path], list[Path]]:
    """The store's objects of their own, and its packs."""
    kept = store.folder(settings.runs_folder)
    return [p for p, _ in objects.kept_objects(kept)], sorted((kept / packs.PACKS).glob("*.pack"))


def test_a_walk_that_keeps_many_files_writes_one_pack_and_each_content_reads_back(
    tmp_path, monkeypatch
):
    workspace, settings = many_files(300, tmp_path, monkeypatch)

    shot = walk.look(settings)

    loose, packed = in_store(settings)
    # (and one more where this process had not yet learnt that this file system cannot reflink:
    # the first file is kept as a large one is, by a reflink tried)
    assert packs.LOOSE <= len(loose) <= packs.LOOSE + 1 and len(packed) == 1
    assert packed[0].with_suffix(".idx").is_file()
    kept = store.folder(settings.runs_folder)
    for k in range(300):
        content = (workspace / "keep" / f"{k}.txt").read_bytes()
        digest = shot.files[f"keep/{k}.txt"][1]
        assert digest == hashlib.sha256(content).hexdigest()
        place = packs.located([kept], digest)
        assert place is not None and objects.read_object(place, digest, 1 << 20) == content
    assert store.size(settings.runs_folder) >= sum(len(f"file {k}\n") * (k + 1) for k in range(300))


def test_content_the_store_holds_in_a_pack_is_not_kept_again(tmp_path, monkeypatch):
    workspace, settings = many_files(300, tmp_path, monkeypatch)
    walk.look(settings)
    before = in_store(settings)
    for k in range(300):  # each file seen anew (its stat changed), its content the same
        os.utime(workspace / "keep" / f"{k}.txt", ns=(10**9 * k, 10**9 * k))
    (workspace / "keep" / "copy.txt").write_bytes((workspace / "keep" / "250.txt").read_bytes())

    walk.look(settings)

    assert in_store(settings) == before


def kept_in_a_pack(tmp_path: Path, monkeypatch) -> tuple[objects.Place, str]:
    """Where the store keeps a content in a pack, and its digest."""
    workspace, settings = many_files(300, tmp_path, monkeypatch)
    walk.look(settings)
    kept = store.folder(settings.runs_folder)
    digest = min(packs.entries_of(next((kept / packs.PACKS).glob("*.pack"))))
    place = packs.located([kept], digest)
    assert place is not None and place.size
    return place, digest


def test_a_damaged_pack_is_read_as_not_the_content_kept(tmp_path, monkeypatch):
    place, digest = kept_in_a_pack(tmp_path, monkeypatch)
    with open(place.path, "r+b") as pack:
        pack.seek(place.offset + 3)
        byte = pack.read(1)
        pack.seek(place.offset + 3)
        pack.write(bytes([byte[0] ^ 1]))

    with pytest.raises(OSError, match="it is not the content undo kept"):
        objects.read_object(place, digest, 1 << 20)


def test_a_pack_index_that_points_past_its_pack_reads_nothing_past_it(tmp_path, monkeypatch):
    place, digest = kept_in_a_pack(tmp_path, monkeypatch)

    for wrong in (place._replace(size=1 << 40), place._replace(offset=1 << 40)):
        with pytest.raises(OSError, match="not a file undo kept"):
            objects.read_object(wrong, digest, 1 << 41)


def test_what_a_kill_left_of_a_pack_being_put_in_place_is_removed_by_the_next_keep(
    tmp_path, monkeypatch
):
    # A pack counts once its index is there: one renamed into place without it (a kill between the
    # two renames), or an index without its pack, is removed, and its files kept again
    workspace, settings = many_files(300, tmp_path, monkeypatch)
    kept = store.folder(settings.runs_folder)
    (kept / packs.PACKS).mkdir(parents=True)
    (kept / packs.PACKS / "aa.pack").write_bytes(b"half")
    (kept / packs.PACKS / "bb.idx").write_bytes(b"{}")

    shot = walk.look(settings)

    assert sorted(p.suffix for p in (kept / packs.PACKS).iterdir()) == [".idx", ".pack"]
    assert not (kept / packs.PACKS / "aa.pack").exists()
    assert all(shot.files[f"keep/{k}.txt"][1] for k in range(300))


def test_prune_writes_a_pack_again_with_what_is_wanted_and_removes_one_nothing_wants(
    tmp_path, monkeypatch
):
    workspace, settings = many_files(300, tmp_path, monkeypatch)
    walk.look(settings)
    kept = store.folder(settings.runs_folder)
    (pack,) = in_store(settings)[1]
    wanted = set(sorted(packs.entries_of(pack))[:3])
    held = pack.stat().st_size

    freed = packs.prune(kept, wanted)

    (smaller,) = in_store(settings)[1]
    assert smaller != pack and not pack.exists() and freed == held - smaller.stat().st_size
    assert set(packs.entries_of(smaller)) == wanted
    for digest in wanted:
        place = packs.located([kept], digest)
        assert place is not None and place.path == str(smaller)
        objects.read_object(place, digest, 1 << 20)
    packs.prune(kept, set())
    assert in_store(settings)[1] == []


def project(folder: Path, files: int) -> None:
    (folder / "keep").mkdir()
    for k in range(files):
        (folder / "keep" / f"{k}.txt").write_bytes(f"{k}\n".encode() * 100)


@posix_only
def test_undo_puts_back_files_kept_in_a_pack_and_names_a_file_for_one_left_alone(model, tmp_path):
    project(tmp_path, 200)
    before = tree(tmp_path)
    command = "for f in keep/1*.txt; do echo more >> $f; done && rm keep/199.txt"
    model.queue(calls(shell(command)), answer("done"))
    ran = run_script("harness.py", "--yes", "append", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (store_of(tmp_path) / packs.PACKS).is_dir()
    (tmp_path / "keep" / "150.txt").write_bytes(b"mine\n")

    undone = run_script("harness.py", "--undo", cwd=tmp_path)

    assert undone.returncode == 1, undone.stdout
    left = [line for line in undone.stdout.splitlines() if line.startswith("left alone")]
    assert len(left) == 1 and left[0].startswith("left alone keep/150.txt: changed since the run")
    where = Path(left[0].split("its content from before the run is in ")[1])
    assert where.read_bytes() == before["keep/150.txt"][2]
    assert tree(tmp_path) == {**before, "keep/150.txt": ("file", 0o644, b"mine\n")}


@posix_only
def test_a_full_disk_while_a_pack_is_written_names_what_it_could_not_keep(tmp_path, monkeypatch):
    # Past a limit on a file's size (EFBIG, as ENOSPC on a full disk) the pack takes no more: a
    # walk in a child under that limit names each file the pack could not hold as not kept, and
    # every other file's content reads back whole from the store
    workspace, settings = many_files(0, tmp_path, monkeypatch)
    for k in range(300):
        (workspace / "keep" / f"{k}.txt").write_bytes(f"{k:>9}\n".encode() * 100)
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from plainagent.core.settings import resolve\n"
        "from plainagent.workspace import walk\n"
        f"shot = walk.look(resolve(require_key=False, workspace={str(workspace)!r}))\n"
        "print(json.dumps({'files': {n: d for n, (_, d) in shot.files.items()}, "
        "'not_kept': shot.not_kept}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        **limited(resource.RLIMIT_FSIZE, 150_000),
    )
    assert done.returncode == 0, done.stderr
    shot = json.loads(done.stdout)

    assert 50 < len(shot["not_kept"]) < 300 - packs.LOOSE
    assert set(shot["not_kept"].values()) == {"it could not be copied (File too large)"}
    kept = store.folder(settings.runs_folder)
    for name, digest in shot["files"].items():
        assert (digest is None) == (name in shot["not_kept"])
        if digest:
            place = packs.located([kept], digest)
            assert (
                place
                and objects.read_object(place, digest, 1 << 20) == (workspace / name).read_bytes()
            )
    assert not [p for p in kept.iterdir() if p.name.startswith(".new-")]


def test_an_object_a_kill_cut_short_is_not_taken_for_a_content_kept(tmp_path, monkeypatch):
    # keep_bytes() writes an object under its name at once: one a kill cut short is shorter than
    # its content. A walk that comes to that content once it packs (past the first LOOSE) keeps it
    # whole in the pack, where it took the object's name for the content kept
    workspace, settings = many_files(300, tmp_path, monkeypatch)
    content = (workspace / "keep" / "299.txt").read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    kept = store.folder(settings.runs_folder)
    Path(objects.object_path(kept, digest)).parent.mkdir(parents=True)
    Path(objects.object_path(kept, digest)).write_bytes(content[:10])

    shot = walk.look(settings)

    assert shot.files["keep/299.txt"][1] == digest
    place = packs.located([kept], digest)
    assert place is not None and objects.read_object(place, digest, 1 << 20) == content


def test_a_damaged_or_swapped_pack_index_counts_as_holding_nothing(tmp_path, monkeypatch):
    # Never a traceback, never a read outside the store nor a wait on a pipe: an index that is not
    # JSON, nested past Python's depth, of other types, a link (here to a true index outside) or a
    # named pipe holds nothing; one whose entries overlap or point past its pack reads as damaged
    workspace, settings = many_files(300, tmp_path, monkeypatch)
    walk.look(settings)
    kept = store.folder(settings.runs_folder)
    (pack,) = in_store(settings)[1]
    index = pack.with_suffix(".idx")
    true = packs.entries_of(pack)
    outside = tmp_path / "outside.idx"
    outside.write_bytes(index.read_bytes())
    first, second = sorted(true)[:2]
    wrong = {
        "not JSON": b"{nope",
        "nested": b"[" * 200_000 + b"]" * 200_000,
        "a list": b"[1, 2]",
        "a string for an offset": json.dumps({first: ["0", 5]}).encode(),
        "a negative size": json.dumps({first: [0, -5]}).encode(),
    }
    for what, text in wrong.items():
        index.unlink()
        index.write_bytes(text)
        assert packs.packed(kept) == {}, what  # an index written again is read again
    index.unlink()
    index.symlink_to(outside)
    assert packs.packed(kept) == {}, "a link"
    index.unlink()
    os.mkfifo(index)
    assert packs.packed(kept) == {}, "a named pipe"
    index.unlink()
    # overlapping, and past the end of the pack: found, and read as not what was kept
    index.write_bytes(json.dumps({first: true[second], second: [pack.stat().st_size, 9]}).encode())
    for digest in (first, second):
        place = packs.located([kept], digest)
        assert place is not None
        with pytest.raises(OSError):
            objects.read_object(place, digest, 1 << 20)
    # prune copies neither (damaged) and removes the pack
    held = pack.stat().st_size
    assert packs.prune(kept, {first, second}) == held and not pack.exists()


KILL_AT = """
if event == "os.rename" and str(args[1]).endswith(os.environ["KILL_AT"]):
    os.kill(os.getpid(), signal.SIGKILL)
if event == "os.remove" and str(args[0]).endswith(os.environ["KILL_AT"]):
    os.kill(os.getpid(), signal.SIGKILL)
if event == "open" and str(args[0]).endswith(os.environ["KILL_AT"]) and "UNDOING" in os.environ:
    os.kill(os.getpid(), signal.SIGKILL)
"""


def paired(kept: Path) -> bool:
    """Whether each pack in the store has its index, and each index its pack."""
    names = {p.name for p in (kept / packs.PACKS).iterdir()}
    return all(
        n.rpartition(".")[0] + (".idx" if n.endswith(".pack") else ".pack") in names for n in names
    )


@posix_only
def test_a_first_keep_killed_as_its_pack_is_put_in_place_then_a_run_and_its_undo(
    model, tmp_path, tmp_path_factory
):
    # kill -9 as the pack is renamed into place, then as its index is (the pack there, its index
    # not): the next run keeps the workspace again, and undo puts back every file exactly; nothing
    # half made is left in the store
    work = tmp_path / "work"
    work.mkdir()
    project(work, 2000)
    before = tree(work)
    env = audit_hooked(tmp_path_factory.mktemp("hook") / "python", KILL_AT)
    command = "for f in keep/1*.txt; do echo more >> $f; done && rm keep/199.txt"
    for point in (".pack", ".idx"):
        model.queue(calls(shell(command)))
        killed = run_script(
            "harness.py", "--yes", "append", cwd=work, env={**env, "KILL_AT": point}
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert tree(work) == before
    model.queue(calls(shell(command)), answer("done"))
    assert run_script("harness.py", "--yes", "append", cwd=work).returncode == 0
    kept = store_of(work)
    assert paired(kept)
    assert not [p for p in kept.iterdir() if p.name.startswith(".new-")]
    # undo killed as it opens the pack, then undone again
    undoing = {**env, "KILL_AT": ".pack", "UNDOING": "1"}
    assert run_script("harness.py", "--undo", cwd=work, env=undoing).returncode == -signal.SIGKILL

    undone = run_script("harness.py", "--undo", cwd=work)

    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert tree(work) == before


@posix_only
def test_a_prune_killed_as_it_removes_the_pack_it_wrote_again_loses_nothing_wanted(
    tmp_path, monkeypatch, tmp_path_factory
):
    workspace, settings = many_files(300, tmp_path, monkeypatch)
    walk.look(settings)
    kept = store.folder(settings.runs_folder)
    (pack,) = in_store(settings)[1]
    wanted = sorted(packs.entries_of(pack))[:20]
    env = audit_hooked(tmp_path_factory.mktemp("hook") / "python", KILL_AT)
    code = (
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom pathlib import Path\n"
        "from plainagent.workspace import packs\n"
        f"packs.prune(Path({str(kept)!r}), set({wanted!r}))\n"
    )
    for point in (f"{pack.stem}.idx", f"{pack.stem}.pack"):  # before the old index goes; the pack
        killed = subprocess.run([sys.executable, "-c", code], env={**env, "KILL_AT": point})
        assert killed.returncode == -signal.SIGKILL
        with store.opened(settings.runs_folder):  # what the next run does first
            pass
        for digest in wanted:
            place = packs.located([kept], digest)
            assert place is not None and objects.read_object(place, digest, 1 << 20)
        assert paired(kept), point
