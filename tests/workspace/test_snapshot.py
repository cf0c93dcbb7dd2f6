"""The walk that keeps the workspace for undo around a command, and the store it keeps files in."""

import json
import os
import time

from plainagent.core.settings import resolve
from plainagent.workspace import snapshot, store


def test_a_file_changed_just_before_a_walk_is_read_again_once_then_trusted(tmp_path, monkeypatch):
    # Racily clean, as git says: changed within the stat cache's window before the walk that
    # recorded it, so the next walk reads it again; once read again it is trusted, where it was
    # read again at every walk and a large generated tree cost seconds each command
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a")
    settings = resolve(require_key=False, workspace=workspace)

    def started() -> int:
        with store.opened(settings.runs_folder) as kept:
            return store.read_index(kept)["started"]

    snapshot.look(settings)
    first = started()
    time.sleep(store.RACY_NS / 1e9 + 0.2)
    snapshot.look(settings)  # a.txt read again: the index now names this walk
    second = started()
    snapshot.look(settings)  # nothing read: the index stays as it was

    assert first < second == started()


def test_content_kept_already_is_not_made_again(tmp_path):
    kept = tmp_path / "store"
    (kept / store.OBJECTS).mkdir(parents=True)
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text("same")
    two.write_text("same")

    digest = store.keep(kept, str(one), os.lstat(one))
    made = os.stat(store.object_path(kept, digest))
    assert store.keep(kept, str(two), os.lstat(two)) == digest

    assert os.stat(store.object_path(kept, digest)).st_ino == made.st_ino
    assert [p.name for p in kept.iterdir()] == [store.OBJECTS]  # no temporary file left


def test_an_object_a_kill_cut_short_is_made_again_whole(tmp_path):
    # A small file's object is written under its own name: one cut short is known by its size
    kept = tmp_path / "store"
    (kept / store.OBJECTS).mkdir(parents=True)
    one = tmp_path / "one.txt"
    one.write_bytes(b"x" * 5000)
    digest = store.keep(kept, str(one), os.lstat(one))
    with open(store.object_path(kept, digest), "r+b") as cut:
        cut.truncate(2000)

    assert store.keep(kept, str(one), os.lstat(one)) == digest
    assert store.read_object(kept, digest, 10_000) == b"x" * 5000


def index_lines(settings) -> list[bytes]:
    return (store.folder(settings.runs_folder) / store.INDEX).read_bytes().splitlines()


def index_from_disk(settings) -> dict:
    store.READ.clear()  # as another process reads it
    with store.opened(settings.runs_folder) as kept:
        return store.read_index(kept)


def test_a_walk_that_read_one_file_adds_one_line_to_the_index_not_the_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for k in range(300):
        (workspace / f"{k}.txt").write_text(str(k))
    settings = resolve(require_key=False, workspace=workspace)
    snapshot.look(settings)
    time.sleep(store.RACY_NS / 1e9 + 0.2)
    snapshot.look(settings)  # every file read again once (racily clean), then trusted
    lines = index_lines(settings)
    (workspace / "7.txt").write_text("seven")
    (workspace / "8.txt").unlink()

    shot = snapshot.look(settings)

    added = json.loads(index_lines(settings)[-1])
    assert len(index_lines(settings)) == len(lines) + 1
    assert added["files"]["8.txt"] is None and list(added["files"]) == ["7.txt", "8.txt"]
    assert index_from_disk(settings)["files"] == shot.files


def test_an_index_line_a_kill_cut_short_ends_the_index_and_the_next_walk_writes_it_whole(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for k in range(20):
        (workspace / f"{k}.txt").write_text(str(k))
    settings = resolve(require_key=False, workspace=workspace)
    shot = snapshot.look(settings)
    with open(store.folder(settings.runs_folder) / store.INDEX, "ab") as index:
        index.write(b'{"started":1,"bytes":2,"files":{"3.txt":[1,2')

    assert index_from_disk(settings)["files"] == shot.files
    (workspace / "3.txt").write_text("three")
    snapshot.look(settings)
    assert len(index_lines(settings)) == 1


def test_past_its_count_of_lines_the_index_is_written_whole_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(store, "JOURNAL", 3)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = resolve(require_key=False, workspace=workspace)
    counts = []
    for k in range(5):
        (workspace / f"{k}.txt").write_text(str(k))
        shot = snapshot.look(settings)
        counts.append(len(index_lines(settings)))

    assert counts == [1, 2, 3, 1, 2]
    assert index_from_disk(settings)["files"] == shot.files
