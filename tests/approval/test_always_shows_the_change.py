"""After 'always' for a file tool, its later calls run without a question, but never unseen: each
shows its change (an edit's diff, a write's) as the question would have, and says why it was not
asked."""

from fake_model import answer, calls
from helpers import edit, posix_only

pytestmark = posix_only  # pseudo-terminals


def test_an_edit_always_allowed_still_shows_its_diff(model, terminal, tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    model.queue(
        calls(edit("a.txt", "two\n", "TWO\n")),
        calls(edit("a.txt", "three\n", "THREE\n")),
        answer("edited"),
    )
    shown = terminal("--no-transcript", "shout")

    shown.read_until("[y]es / [N]o / [a]lways allow edit_file for this run: ")
    shown.type("a")

    assert shown.finish() == 0
    assert shown.output.count("[y]es / [N]o") == 1
    assert (
        "edit_file wants to edit a.txt (14 -> 14 bytes)\n  --- a.txt (now)\n  +++ a.txt (new)\n"
        "  @@ -1,3 +1,3 @@\n   one\n   TWO\n  -three\n  +THREE\n"
        "  (allowed: always edit_file, for this run)\n"
    ) in shown.output
    assert (tmp_path / "a.txt").read_text() == "one\nTWO\nTHREE\n"


def test_a_write_always_allowed_still_shows_what_it_writes(model, terminal, tmp_path):
    model.queue(
        calls(("write_file", {"path": "one.txt", "content": "1\n"})),
        calls(("write_file", {"path": "two.txt", "content": "2\n"})),
        answer("wrote both"),
    )
    shown = terminal("--no-transcript", "write two files")

    shown.read_until("[y]es / [N]o / [a]lways allow write_file for this run: ")
    shown.type("a")

    assert shown.finish() == 0
    assert (
        "write_file wants to create two.txt (new file, 2 bytes)\n  +2\n"
        "  (allowed: always write_file, for this run)\n"
    ) in shown.output
