"""The objects of undo's content store: one file per content, whole."""

import os

from plainagent.workspace import objects


def test_content_kept_already_is_not_made_again(tmp_path):
    kept = tmp_path / "store"
    (kept / objects.OBJECTS).mkdir(parents=True)
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text("same")
    two.write_text("same")

    digest = objects.keep(kept, str(one), os.lstat(one))
    made = os.stat(objects.object_path(kept, digest))
    assert objects.keep(kept, str(two), os.lstat(two)) == digest

    assert os.stat(objects.object_path(kept, digest)).st_ino == made.st_ino
    assert [p.name for p in kept.iterdir()] == [objects.OBJECTS]  # no temporary file left


def test_an_object_a_kill_cut_short_is_made_again_whole(tmp_path):
    # A small file's object is written under its own name: one cut short is known by its size
    kept = tmp_path / "store"
    (kept / objects.OBJECTS).mkdir(parents=True)
    one = tmp_path / "one.txt"
    one.write_bytes(b"x" * 5000)
    digest = objects.keep(kept, str(one), os.lstat(one))
    with open(objects.object_path(kept, digest), "r+b") as cut:
        cut.truncate(2000)

    assert objects.keep(kept, str(one), os.lstat(one)) == digest
    assert (
        objects.read_object(objects.Place(objects.object_path(kept, digest)), digest, 10_000)
        == b"x" * 5000
    )
