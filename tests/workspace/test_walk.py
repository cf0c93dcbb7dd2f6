"""The walk that keeps the workspace for undo around a command."""

import hashlib
import os
import subprocess
import sys
import threading
import time

from plainagent.core.settings import resolve
from plainagent.workspace import objects, store, walk


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


def test_a_folder_swapped_for_a_link_during_the_walk_leads_it_nowhere_outside(
    tmp_path, monkeypatch
):
    # A command's process left running swaps a/ for a link once the walk has listed it (while the
    # walk copies a/'s large file): neither a/b/ nor a/x may then be read from where the link leads
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    secret = b"outside the workspace"
    outside = tmp_path / "outside"
    (outside / "b").mkdir(parents=True)
    (outside / "b" / "secret").write_bytes(secret)
    (outside / "x").write_bytes(secret)
    workspace = tmp_path / "ws"
    (workspace / "a" / "b").mkdir(parents=True)
    (workspace / "a" / "big").write_bytes(b"b" * 40_000_000)
    (workspace / "a" / "x").write_bytes(b"mine, same size.....!")
    settings = resolve(require_key=False, workspace=workspace)
    kept = store.folder(settings.runs_folder)

    def swap() -> None:
        while not (kept.is_dir() and any(n.startswith(".new-") for n in os.listdir(kept))):
            time.sleep(0.0005)
        os.rename(workspace / "a", workspace / "a-old")
        os.symlink(outside, workspace / "a")

    swapper = threading.Thread(target=swap)
    swapper.start()
    shot = walk.look(settings)
    swapper.join()

    assert "a/b/secret" not in shot.files
    digest = hashlib.sha256(secret).hexdigest()
    assert not os.path.exists(objects.object_path(kept, digest))
    assert shot.files["a/x"][1] in (None, hashlib.sha256(b"mine, same size.....!").hexdigest())


def test_a_folder_in_git_swapped_for_a_link_is_not_followed_by_its_signature(tmp_path, monkeypatch):
    # .git is signed, not kept, by a walk of its own: a process flipping .git/sub between a folder
    # and a link to a large tree outside must not lead that walk there (it would walk the disk)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    outside = tmp_path / "outside"
    for k in range(30):
        (outside / f"elsewhere{k}").mkdir(parents=True)
    workspace = tmp_path / "ws"
    git = workspace / ".git"
    (git / "sub").mkdir(parents=True)
    for k in range(10):
        (git / f"f{k}").write_text("x")
    settings = resolve(require_key=False, workspace=workspace)
    flip = (
        "import os, sys\n"
        "git, outside = sys.argv[1:]\n"
        "while True:\n"
        "    os.rename(git + '/sub', git + '/aside'); os.symlink(outside, git + '/sub')\n"
        "    os.unlink(git + '/sub'); os.rename(git + '/aside', git + '/sub')\n"
    )
    flipper = subprocess.Popen([sys.executable, "-c", flip, str(git), str(outside)])
    try:
        signed = set()
        for _ in range(1000):
            signed |= {str(e[0]) for e in walk.look(settings).areas[".git"][1]}
    finally:
        flipper.kill()
        flipper.wait()

    assert not [name for name in signed if "elsewhere" in name]
