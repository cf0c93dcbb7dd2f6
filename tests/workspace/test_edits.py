"""edit_file (edits.py): one exact match replaced, every other byte kept, asked first."""

import os

import pytest
from fake_model import answer, calls
from helpers import APP, edit, posix_only, run_script

import harness
from plainagent.approval import previews
from plainagent.approval import prompt as approval
from plainagent.core import screen


def test_edit_file_replaces_the_one_match_and_says_so(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(calls(edit("app.py", "    return 2\n", "    return 20\n")), answer("edited"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "app.py").read_text() == APP.replace("return 2", "return 20")
    assert (
        model.messages(1)[-1]["content"]
        == "edited app.py: replaced 1 occurrence of old_text (45 -> 46 bytes)"
    )


def test_edit_file_without_a_match_names_the_nearest_line_and_asks_nobody(
    model, tmp_path, in_a_run
):
    (tmp_path / "app.py").write_text(APP)
    asked = []
    model.queue(
        calls(edit("app.py", "def g(x):\n    return 2\n", "def g(x):\n    return x\n")),
        answer("will retry"),
    )

    harness.run(
        "edit",
        approve=lambda name, args: (
            asked.append(previews.describe(name, args, screen.shown, in_a_run)) or True
        ),
    )

    assert (tmp_path / "app.py").read_text() == APP
    assert asked == []
    assert model.messages(1)[-1]["content"] == (
        "error: ValueError: old_text was not found in app.py; the closest line is 4: 'def g():'; "
        "copy the text exactly as read_file shows it, indentation and line breaks included"
    )


def test_edit_file_with_two_matches_says_how_many_and_asks_for_more_context(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(calls(edit("app.py", "    return", "    yield")), answer("will retry"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "app.py").read_text() == APP
    assert model.messages(1)[-1]["content"] == (
        "error: ValueError: old_text occurs 2 times in app.py; include more of the surrounding "
        "lines in old_text so that it matches exactly one place"
    )


def test_edit_file_refuses_an_old_text_that_occurs_twice_back_to_back(model, tmp_path):
    # A line doubled by mistake: the second match starts right where the first ends, and is a match
    # all the same (the model cannot say which of the two it meant).
    (tmp_path / "app.py").write_text("total = 0\ntotal += 1\ntotal += 1\n")
    model.queue(calls(edit("app.py", "total += 1\n", "")), answer("will retry"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "app.py").read_text() == "total = 0\ntotal += 1\ntotal += 1\n"
    assert model.messages(1)[-1]["content"] == (
        "error: ValueError: old_text occurs 2 times in app.py; include more of the surrounding "
        "lines in old_text so that it matches exactly one place"
    )


def test_edit_file_refuses_an_empty_old_text(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(calls(edit("app.py", "", "# header\n")), answer("ok"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "app.py").read_text() == APP
    assert model.messages(1)[-1]["content"].startswith(
        "error: ValueError: old_text is empty; give the exact text"
    )


def test_edit_file_outside_the_workspace_is_refused(model, tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.py").write_text(APP)
    monkeypatch.chdir(workspace)
    model.queue(calls(edit("../outside.py", "return 1", "return 666")), answer("refused"))

    harness.run("escape", approve=approval.approve_all)

    assert (tmp_path / "outside.py").read_text() == APP
    assert model.messages(1)[-1]["content"].startswith(
        "error: PermissionError: ../outside.py is outside the workspace"
    )


def test_edit_file_keeps_crlf_line_endings_and_every_other_byte(model, tmp_path):
    original = "\ufeffone\r\ntwo\r\nthree\r\n".encode("utf-8")
    (tmp_path / "win.txt").write_bytes(original)
    model.queue(calls(edit("win.txt", "two\nthree\n", "TWO\nTHREE\n")), answer("edited"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "win.txt").read_bytes() == "\ufeffone\r\nTWO\r\nTHREE\r\n".encode("utf-8")


@pytest.mark.parametrize(
    "original, old_text, new_text, expected",
    [
        (b"one\r\ntwo\r\nlast", "last", "last\nadded", b"one\r\ntwo\r\nlast\r\nadded"),
        (b"one\r\ntwo\r\nlast", "as", "as\n\n", b"one\r\ntwo\r\nlas\r\n\r\nt"),
        (b"one\r\ntwo\nlast", "ast", "ast\nadded", b"one\r\ntwo\nlast\nadded"),
        (b"one\ntwo\nlast", "last", "last\nadded", b"one\ntwo\nlast\nadded"),
        (b"last", "last", "last\nadded", b"last\nadded"),
    ],
    ids=["crlf-file", "crlf-file-mid-line", "mostly-lf-file", "lf-file", "no-line-ending-anywhere"],
)
def test_edit_file_on_a_last_line_without_an_ending_breaks_new_lines_as_the_file_does(
    model, tmp_path, original, old_text, new_text, expected
):
    (tmp_path / "end.txt").write_bytes(original)
    model.queue(calls(edit("end.txt", old_text, new_text)), answer("edited"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "end.txt").read_bytes() == expected


def test_edit_file_asks_first_showing_sizes_and_a_diff(model, tmp_path, in_a_run):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    asked = []
    model.queue(calls(edit("a.txt", "two", "TWO!")), answer("not edited"))

    harness.run(
        "edit",
        approve=lambda name, args: (
            asked.append(previews.describe(name, args, screen.shown, in_a_run)) or False
        ),
    )

    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert model.messages(1)[-1]["content"] == "denied by the user"
    assert asked == [
        "edit_file wants to edit a.txt (8 -> 9 bytes)\n"
        "  --- a.txt (now)\n  +++ a.txt (new)\n  @@ -1,2 +1,2 @@\n   one\n  -two\n  +TWO!"
    ]


def test_edit_file_without_a_terminal_is_denied(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(calls(edit("app.py", "return 1", "return 10")), answer("denied"))

    result = run_script("harness.py", "--no-transcript", "edit", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "app.py").read_text() == APP
    assert model.messages(1)[-1]["content"].startswith(
        "denied: nobody is at a terminal to approve it"
    )


def test_edit_file_with_yes_edits(model, cli, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(calls(edit("app.py", "return 1", "return 10")), answer("edited"))

    assert cli("--yes", "--no-transcript", "edit").returncode == 0

    assert (tmp_path / "app.py").read_text() == APP.replace("return 1", "return 10")
    assert model.messages(1)[-1]["content"].startswith("edited app.py: replaced 1 occurrence")


@posix_only
def test_edit_file_refuses_a_fifo_instead_of_waiting(model, tmp_path):
    os.mkfifo(tmp_path / "pipe")
    model.queue(calls(edit("pipe", "a", "b")), answer("refused"))

    result = run_script("harness.py", "--yes", "--no-transcript", "edit", cwd=tmp_path, timeout=30)

    assert result.returncode == 0, result.stderr
    assert model.messages(1)[-1]["content"] == (
        "error: OSError: pipe is a named pipe, not a regular file; only regular files can be read "
        "or written"
    )


@pytest.mark.parametrize("tail", [b"caf\xc3", b"\xe2\x82", b"\xf0\x9f\x98"])
def test_a_file_that_ends_in_a_cut_utf8_character_is_not_text_to_edit_file(model, tmp_path, tail):
    data = b"def f():\n    return 1\n# " + tail
    (tmp_path / "app.py").write_bytes(data)
    model.queue(calls(edit("app.py", "return 1", "return 2")), answer("no"))

    harness.run("edit", approve=approval.approve_all)

    assert model.messages(1)[-1]["content"] == (
        "error: ValueError: app.py is not UTF-8 text; edit_file only changes UTF-8 text files"
    )
    assert (tmp_path / "app.py").read_bytes() == data


def test_an_edit_whose_new_text_is_its_old_text_is_an_error(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(calls(edit("app.py", "    return 2\n", "    return 2\n")), answer("no change"))

    harness.run("edit", approve=approval.approve_all)

    assert model.messages(1)[-1]["content"] == (
        "error: ValueError: new_text is the same as old_text; there is nothing to change"
    )
    assert (tmp_path / "app.py").read_text() == APP
