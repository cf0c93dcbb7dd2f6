"""The walk that keeps the workspace for undo around a command."""

import time

from plainagent.core.settings import resolve
from plainagent.workspace import store, walk


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

    walk.look(settings)
    first = started()
    time.sleep(store.RACY_NS / 1e9 + 0.2)
    walk.look(settings)  # a.txt read again: the index now names this walk
    second = started()
    walk.look(settings)  # nothing read: the index stays as it was

    assert first < second == started()


def test_the_state_folder_in_the_workspace_is_not_walked(tmp_path, monkeypatch):
    # Its transcripts and the store itself: keeping them would keep the store in the store
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "a.txt").write_text("a")
    settings = resolve(require_key=False, workspace=tmp_path)
    walk.look(settings)

    shot = walk.look(settings)

    assert list(shot.files) == ["a.txt"]
