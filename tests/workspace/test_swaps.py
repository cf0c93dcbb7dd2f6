"""Undo's last step, where a person's save may land in the same instant: what an exchange takes
out, or a file moved aside, is looked at and put back if it changed; a second save landing
while it is put back is kept too, and named. (The whole --undo, with a save landing in that
instant, is in test_undo.py.)"""

import os
from pathlib import Path

import pytest
from helpers import posix_only

from plainagent.workspace import swaps


class Changed(Exception):
    """What the look raises here, as undo's raises its own."""


def saved(path: Path, words: str) -> None:
    """A person's save: a new file renamed over the old one."""
    (path.parent / ".saving").write_text(words)
    os.rename(path.parent / ".saving", path)


@pytest.fixture
def folder(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY)
    yield fd
    os.close(fd)


@pytest.mark.skipif(swaps.renameat2() is None, reason="needs renameat2 (Linux)")
def test_a_save_landing_as_an_exchange_is_put_back_is_kept_beside_it_and_named(tmp_path, folder):
    # The exchange took out the person's first save; as undo put it back, a second save
    # landed at the name, and the put-back exchange carried it to the new file's name:
    # kept, not removed, and said where.
    (tmp_path / "notes.txt").write_text("the first save\n")
    (tmp_path / ".new").write_text("undo's copy\n")
    ours = os.stat(tmp_path / ".new")

    def unchanged(at_folder: int | None, name: str) -> None:
        assert (at_folder, (tmp_path / name).read_text()) == (folder, "the first save\n")
        saved(tmp_path / "notes.txt", "the second save\n")
        raise Changed

    with pytest.raises(OSError) as raised:
        swaps.exchanged(folder, ".new", "notes.txt", ours, unchanged)

    assert str(raised.value) == (
        "it was saved twice while undo was putting it back: the first save is at its "
        "name, the second beside it as .new"
    )
    assert (tmp_path / "notes.txt").read_text() == "the first save\n"
    assert (tmp_path / ".new").read_text() == "the second save\n"


@posix_only
@pytest.mark.parametrize("renameat2", ["present", "missing"])
def test_a_save_landing_as_a_removed_file_is_put_back_keeps_both_and_names_where(
    tmp_path, folder, monkeypatch, renameat2
):
    # Moved aside, the file was found changed (a first save); as it was put back, a
    # second save had taken its name: the put-back replaces nothing, with renameat2's
    # no-replace or, without, a link.
    if renameat2 == "missing":
        monkeypatch.setattr(swaps, "renameat2", lambda: None)
    (tmp_path / "new.txt").write_text("the first save\n")

    def unchanged(at_folder: int | None, name: str) -> None:
        if name != "new.txt":  # the look once it is aside
            saved(tmp_path / "new.txt", "the second save\n")
            raise Changed

    with pytest.raises(OSError) as raised:
        swaps.remove(folder, "new.txt", unchanged)

    [aside] = [p for p in tmp_path.iterdir() if p.name != "new.txt"]
    assert str(raised.value) == (
        f"it changed while undo was removing it, and is kept beside it as {aside.name} "
        "(a save was made at its name since)"
    )
    assert (tmp_path / "new.txt").read_text() == "the second save\n"
    assert aside.read_text() == "the first save\n" and aside.name.endswith(".agent-undo")


@posix_only
@pytest.mark.parametrize("renameat2", ["present", "missing"])
def test_a_removed_file_found_changed_aside_is_put_back_at_its_name(
    tmp_path, folder, monkeypatch, renameat2
):
    if renameat2 == "missing":
        monkeypatch.setattr(swaps, "renameat2", lambda: None)
    (tmp_path / "new.txt").write_text("the person's save\n")
    looked = []

    def unchanged(at_folder: int | None, name: str) -> None:
        looked.append(name)
        if name != "new.txt":
            raise Changed

    with pytest.raises(Changed):
        swaps.remove(folder, "new.txt", unchanged)

    assert looked[0] == "new.txt" and looked[1].endswith(".agent-undo")
    assert (
        os.listdir(tmp_path) == ["new.txt"]
        and (tmp_path / "new.txt").read_text() == "the person's save\n"
    )
