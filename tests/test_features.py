"""Project instructions from AGENTS.md, the edit_file tool, and the approval prompt at a real terminal."""

import io
import os
import signal
import sys

import pytest

import previews

import terminal as screen

import tools


import context

import approval

import harness
from conftest import run_script
from fake_model import answer, calls

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, symlinks and pseudo-terminals")
BASE_PROMPT_END = "Once you have what you need, answer without calling tools."
HEADING = "\n\nProject instructions from AGENTS.md:\n"


def test_agents_md_is_in_the_system_prompt_of_every_request_of_the_run(model, cli, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Run the tests with `make test`.\nNever touch vendor/.\n")
    model.queue(calls(("write_file", {"path": "AGENTS.md", "content": "Changed mid-run."})), answer("done"))

    assert cli("--yes", "--no-transcript", "change the instructions").returncode == 0

    system = model.messages(0)[0]
    assert system["role"] == "system"
    assert system["content"].endswith(
        f"{BASE_PROMPT_END}{HEADING}Run the tests with `make test`.\nNever touch vendor/.\n")
    # Read once per run: the second request carries the same system message, though the file changed.
    assert (tmp_path / "AGENTS.md").read_text() == "Changed mid-run."
    assert model.messages(1)[0] == system


@pytest.mark.parametrize("text, left_out", [
    ("".join(f"line {i:05d}: {'x' * 87}\n" for i in range(2048)), "196,800"),  # 200 KB of ASCII
    ("é" * 10_000, "4,000"),  # two bytes a character: 8,000 characters are 16,000 of the 20,000 bytes
])
def test_a_long_agents_md_is_clipped_with_a_note_saying_how_much_was_left_out(model, cli, tmp_path, text,
                                                                              left_out):
    (tmp_path / "AGENTS.md").write_text(text, encoding="utf-8")
    model.queue(answer("ok"))

    cli("--no-transcript", "hi")

    base, heading, instructions = model.messages(0)[0]["content"].partition(HEADING)
    assert base.endswith(BASE_PROMPT_END) and heading
    note = f"\n[AGENTS.md was cut here: {left_out} more bytes were left out]"
    assert instructions == text[:context.AGENTS_MD_MAX_CHARS] + note


def test_without_agents_md_the_system_prompt_is_unchanged(model, cli):
    model.queue(answer("ok"))

    cli("--no-transcript", "hi")

    system = model.messages(0)[0]["content"]
    assert system.endswith(BASE_PROMPT_END) and "AGENTS.md" not in system


@posix_only
def test_an_agents_md_linking_out_of_the_workspace_is_not_read(model, cli, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret.md").write_text("SECRET")
    (workspace / "AGENTS.md").symlink_to(tmp_path / "secret.md")
    model.queue(answer("ok"))

    cli("--no-transcript", "--workspace", str(workspace), "hi")

    system = model.messages(0)[0]["content"]
    assert system.endswith(BASE_PROMPT_END) and "SECRET" not in system


@posix_only
def test_a_fifo_named_agents_md_is_skipped_without_waiting_for_a_writer(model, tmp_path):
    os.mkfifo(tmp_path / "AGENTS.md")
    model.queue(answer("ok"))

    result = run_script("harness.py", "--no-transcript", "hi", cwd=tmp_path, timeout=30)

    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr
    assert model.messages(0)[0]["content"].endswith(BASE_PROMPT_END)


APP = "def f():\n    return 1\n\ndef g():\n    return 2\n"


def edit(old_text: str, new_text: str, path: str = "app.py") -> dict:
    return calls(("edit_file", {"path": path, "old_text": old_text, "new_text": new_text}))


def test_edit_file_replaces_the_one_match_and_says_so(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(edit("    return 2\n", "    return 20\n"), answer("edited"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "app.py").read_text() == APP.replace("return 2", "return 20")
    assert model.messages(1)[-1]["content"] == "edited app.py: replaced 1 occurrence of old_text (45 -> 46 bytes)"


def test_edit_file_without_a_match_names_the_nearest_line_and_asks_nobody(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    asked = []
    model.queue(edit("def g(x):\n    return 2\n", "def g(x):\n    return x\n"), answer("will retry"))

    harness.run("edit", approve=lambda name, args: asked.append(previews.describe(name, args, screen.shown)) or True)

    assert (tmp_path / "app.py").read_text() == APP
    assert asked == []
    assert model.messages(1)[-1]["content"] == (
        "error: ValueError: old_text was not found in app.py; the closest line is 4: 'def g():'; "
        "copy the text exactly as read_file shows it, indentation and line breaks included")


def test_edit_file_with_two_matches_says_how_many_and_asks_for_more_context(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(edit("    return", "    yield"), answer("will retry"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "app.py").read_text() == APP
    assert model.messages(1)[-1]["content"] == (
        "error: ValueError: old_text occurs 2 times in app.py; include more of the surrounding lines in "
        "old_text so that it matches exactly one place")


def test_edit_file_refuses_an_empty_old_text(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(edit("", "# header\n"), answer("ok"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "app.py").read_text() == APP
    assert model.messages(1)[-1]["content"].startswith("error: ValueError: old_text is empty; give the exact text")


def test_edit_file_outside_the_workspace_is_refused(model, tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.py").write_text(APP)
    monkeypatch.chdir(workspace)
    model.queue(edit("return 1", "return 666", path="../outside.py"), answer("refused"))

    harness.run("escape", approve=approval.approve_all)

    assert (tmp_path / "outside.py").read_text() == APP
    assert model.messages(1)[-1]["content"].startswith(
        "error: PermissionError: ../outside.py is outside the workspace")


def test_edit_file_keeps_crlf_line_endings_and_every_other_byte(model, tmp_path):
    original = "\ufeffone\r\ntwo\r\nthree\r\n".encode("utf-8")
    (tmp_path / "win.txt").write_bytes(original)
    model.queue(edit("two\nthree\n", "TWO\nTHREE\n", path="win.txt"), answer("edited"))

    harness.run("edit", approve=approval.approve_all)

    assert (tmp_path / "win.txt").read_bytes() == "\ufeffone\r\nTWO\r\nTHREE\r\n".encode("utf-8")


def test_edit_file_asks_first_showing_sizes_and_a_diff(model, tmp_path, in_a_run):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    asked = []
    model.queue(edit("two", "TWO!", path="a.txt"), answer("not edited"))

    harness.run("edit", approve=lambda name, args: asked.append(previews.describe(name, args, screen.shown)) or False)

    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert model.messages(1)[-1]["content"] == "denied by the user"
    assert asked == ["edit_file wants to edit a.txt (8 -> 9 bytes)\n"
                     "  --- a.txt (now)\n  +++ a.txt (new)\n  @@ -1,2 +1,2 @@\n   one\n  -two\n  +TWO!"]


def test_edit_file_without_a_terminal_is_denied(model, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(edit("return 1", "return 10"), answer("denied"))

    result = run_script("harness.py", "--no-transcript", "edit", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "app.py").read_text() == APP
    assert model.messages(1)[-1]["content"].startswith("denied: nobody is at a terminal to approve it")


def test_edit_file_with_yes_edits(model, cli, tmp_path):
    (tmp_path / "app.py").write_text(APP)
    model.queue(edit("return 1", "return 10"), answer("edited"))

    assert cli("--yes", "--no-transcript", "edit").returncode == 0

    assert (tmp_path / "app.py").read_text() == APP.replace("return 1", "return 10")
    assert model.messages(1)[-1]["content"].startswith("edited app.py: replaced 1 occurrence")


@posix_only
def test_edit_file_refuses_a_fifo_instead_of_waiting(model, tmp_path):
    os.mkfifo(tmp_path / "pipe")
    model.queue(edit("a", "b", path="pipe"), answer("refused"))

    result = run_script("harness.py", "--yes", "--no-transcript", "edit", cwd=tmp_path, timeout=30)

    assert result.returncode == 0, result.stderr
    assert model.messages(1)[-1]["content"] == (
        f"error: OSError: {tmp_path.resolve() / 'pipe'} is a named pipe, not a regular file; "
        "only regular files can be read or written")


class Typed(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_always_for_a_program_named_edit_file_does_not_trust_the_edit_file_tool(model, tmp_path, monkeypatch,
                                                                                 capsys):
    (tmp_path / "app.py").write_text(APP)
    monkeypatch.setattr(sys, "stdin", Typed("a\nn\n\n"))
    model.queue(calls(("run_shell", {"command": "edit_file app.py"})), edit("return 1", "return 10"), answer("ok"))

    harness.run("edit")

    prompts = capsys.readouterr().err
    assert "[y]es / [N]o / [a]lways allow edit_file for this run: " in prompts
    assert prompts.count("[y]es / [N]o") == 2
    assert (tmp_path / "app.py").read_text() == APP


RM_PROMPT = "[y]es / [N]o / [a]lways allow rm for this run: "


@posix_only
def test_the_prompt_shows_its_default_and_asks_again_after_an_answer_it_does_not_understand(
        model, terminal, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    model.queue(calls(("run_shell", {"command": "rm a.txt"})), answer("kept it"))
    shown = terminal("--no-transcript", "remove a.txt")

    shown.read_until(RM_PROMPT)
    shown.type("maybe")
    shown.read_until(RM_PROMPT, count=2)
    shown.type("")  # Enter takes the default: no
    shown.read_until("why not? (optional, Enter to skip): ")
    shown.type("")

    assert shown.finish() == 0
    assert f"{RM_PROMPT}maybe\nplease answer y, n or a\n{RM_PROMPT}\nwhy not?" in shown.output
    assert "kept it\n" in shown.output
    assert (tmp_path / "a.txt").exists()
    assert model.messages(1)[-1]["content"] == "denied by the user"


@posix_only
def test_the_edit_file_prompt_shows_the_diff_and_always_allows_edit_file_for_the_run(model, terminal, tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    model.queue(edit("two\n", "TWO\n", path="a.txt"), edit("three\n", "THREE\n", path="a.txt"), answer("edited"))
    shown = terminal("--no-transcript", "shout")

    shown.read_until("[y]es / [N]o / [a]lways allow edit_file for this run: ")
    shown.type("a")

    assert shown.finish() == 0
    assert ("edit_file wants to edit a.txt (14 -> 14 bytes)\n  --- a.txt (now)\n  +++ a.txt (new)\n"
            "  @@ -1,3 +1,3 @@\n   one\n  -two\n  +TWO\n   three\n[y]es") in shown.output
    assert shown.output.count("[y]es / [N]o") == 1  # the second edit was not asked about
    assert (tmp_path / "a.txt").read_text() == "one\nTWO\nTHREE\n"


@posix_only
def test_ctrl_c_at_the_prompt_leaves_interrupted_on_a_line_of_its_own(model, terminal, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    model.queue(calls(("run_shell", {"command": "rm a.txt"})))
    shown = terminal("--no-transcript", "remove a.txt")

    shown.read_until(RM_PROMPT)
    os.killpg(shown.process.pid, signal.SIGINT)  # what Ctrl-C at a terminal sends to its foreground group

    assert shown.finish() == 130
    assert f"{RM_PROMPT}\ninterrupted\n" in shown.output
    assert (tmp_path / "a.txt").exists()
