"""The store undo keeps a command's files in: its objects, and its index as walks write it."""

import json
import time
from pathlib import Path

from fake_model import answer, calls
from helpers import posix_only, shell, wait_for

from plainagent.core.settings import Settings, resolve
from plainagent.workspace import store, walk


def workspace_of(files: int, tmp_path: Path, monkeypatch) -> tuple[Path, Settings]:
    """A workspace of `files` files, 0.txt, 1.txt, ..., and the settings of a run in it."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for k in range(files):
        (workspace / f"{k}.txt").write_text(str(k))
    return workspace, resolve(require_key=False, workspace=workspace)


def index_lines(settings) -> list[bytes]:
    return (store.folder(settings.runs_folder) / store.INDEX).read_bytes().splitlines()


def index_from_disk(settings) -> dict:
    store.READ.clear()  # as another process reads it
    with store.opened(settings.runs_folder) as kept:
        return store.read_index(kept)


def test_a_walk_that_read_one_file_adds_one_line_to_the_index_not_the_whole(tmp_path, monkeypatch):
    workspace, settings = workspace_of(300, tmp_path, monkeypatch)
    walk.look(settings)
    time.sleep(store.RACY_NS / 1e9 + 0.2)
    walk.look(settings)  # every file read again once (racily clean), then trusted
    lines = index_lines(settings)
    (workspace / "7.txt").write_text("seven")
    (workspace / "8.txt").unlink()

    shot = walk.look(settings)

    added = json.loads(index_lines(settings)[-1])
    assert len(index_lines(settings)) == len(lines) + 1
    assert added["files"]["8.txt"] is None and list(added["files"]) == ["7.txt", "8.txt"]
    assert index_from_disk(settings)["files"] == shot.files


def test_an_index_line_a_kill_cut_short_ends_the_index_and_the_next_walk_writes_it_whole(
    tmp_path, monkeypatch
):
    workspace, settings = workspace_of(20, tmp_path, monkeypatch)
    shot = walk.look(settings)
    with open(store.folder(settings.runs_folder) / store.INDEX, "ab") as index:
        index.write(b'{"started":1,"bytes":2,"files":{"3.txt":[1,2')

    assert index_from_disk(settings)["files"] == shot.files
    (workspace / "3.txt").write_text("three")
    walk.look(settings)
    assert len(index_lines(settings)) == 1


def test_past_its_count_of_lines_the_index_is_written_whole_again(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "JOURNAL", 3)
    workspace, settings = workspace_of(0, tmp_path, monkeypatch)
    counts = []
    for k in range(5):
        (workspace / f"{k}.txt").write_text(str(k))
        shot = walk.look(settings)
        counts.append(len(index_lines(settings)))

    assert counts == [1, 2, 3, 1, 2]
    assert index_from_disk(settings)["files"] == shot.files


def test_an_index_line_cut_just_before_its_newline_is_not_added_to(tmp_path, monkeypatch):
    # A write cut by a full disk may end a whole line but for its newline: the next walk's line
    # was added after it on the same line, and both were lost to the next reader
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for k in range(20):
        (workspace / f"{k}.txt").write_text(str(k))
    settings = resolve(require_key=False, workspace=workspace)
    walk.look(settings)
    (workspace / "3.txt").write_text("three")
    walk.look(settings)
    index = store.folder(settings.runs_folder) / store.INDEX
    index.write_bytes(index.read_bytes()[:-1])
    (workspace / "4.txt").write_text("four")

    shot = walk.look(settings)

    assert index_from_disk(settings)["files"] == shot.files


@posix_only
def test_a_prune_while_a_command_runs_keeps_what_the_command_changed(
    model, start_cli, cli, tmp_path
):
    # The content a file held before a command is named by no record until the command ends, and
    # by no index once another run of the workspace walks it: a prune then (another run's
    # --forget-runs) waits for no command, and removed it, so undo could not put the file back
    (tmp_path / "a.txt").write_text("before\n")
    command = "echo after > a.txt && while [ ! -e go ]; do sleep 0.1; done"
    model.queue(calls(shell(command)), answer("done"))
    running = start_cli(tmp_path, "--yes", "change it")
    wait_for(lambda: (tmp_path / "a.txt").read_text() == "after\n")
    walk.look(resolve(require_key=False, workspace=tmp_path))  # another run's walk
    assert cli("--forget-runs", "0").returncode == 0
    (tmp_path / "go").write_text("")
    assert running.wait(timeout=30) == 0, running.communicate()
    (tmp_path / "go").unlink()

    undone = cli("--undo")

    assert undone.returncode == 0, undone.stdout
    assert (tmp_path / "a.txt").read_text() == "before\n"
