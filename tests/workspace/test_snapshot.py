"""The walk that keeps the workspace for undo around a command, and the store it keeps files in."""

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

    digest = store.keep(kept, one, os.lstat(one))
    made = os.stat(store.object_path(kept, digest))
    assert store.keep(kept, two, os.lstat(two)) == digest

    assert os.stat(store.object_path(kept, digest)).st_ino == made.st_ino
    assert [p.name for p in kept.iterdir()] == [store.OBJECTS]  # no temporary file left
