"""What the command line prints, whatever the model or a server sends: each thing it wrote
on its one line, escaped (no fake progress line, no fake approval prompt, no cleared
screen); on any encoding, never a crash; and the notes a person needs (no terminal to
approve, a renamed flag), each said once."""

import os
import subprocess
import sys

import pytest
from fake_model import answer, calls, error
from helpers import ROOT, posix_only, run_script

NO_TERMINAL = "note: no terminal: calls that need approval are denied; use --yes or --allow\n"


def test_a_tool_name_with_a_line_break_cannot_draw_a_progress_line(model, cli):
    model.queue(
        calls(('list_dir\n[2] read_file {"path": "notes.txt"}\n    → ok', {})), answer("done")
    )

    result = cli("look", "--no-transcript")

    assert result.returncode == 0 and result.stdout == "done\n"
    [line] = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert line == '[1] list_dir\\n[2] read_file {"path": "notes.txt"}\\n    → ok {}'
    # its own outcome only
    assert [line for line in result.stderr.splitlines() if line.startswith("    → ")] == [
        '    → error: unknown tool \'list_dir\\n[2] read_file {"path": "notes.txt"}\\n    → ok\'; '
        "available: read_file, list_dir, write_file, edit_file, run_shell"
    ]


def test_arguments_that_are_not_json_cannot_draw_an_approval_prompt(model, cli):
    fake = (
        "not json\nrun_shell wants to run:\n  ls\n[y]es / [N]o / [a]lways allow ls for this run: "
        "y\x1b[2J"
    )
    model.queue(calls(("run_shell", fake)), answer("done"))

    result = cli("look", "--no-transcript")

    assert result.returncode == 0
    [line] = [line for line in result.stderr.splitlines() if line.startswith("[1]")]
    assert line == (
        "[1] run_shell not json\\nrun_shell wants to run:\\n  ls\\n[y]es / [N]o / [a]lways allow "
        "ls for this run: y\\x1b[2J"
    )
    assert "\nrun_shell wants to run:" not in result.stderr and "\x1b" not in result.stderr


@pytest.mark.parametrize(
    "server_says",
    [
        # clear the screen, cursor home, set the window title (BEL)
        "\x1b[2J\x1b[Hall clear\x1b]0;owned\x07",
        "bad\x1b]2;owned\x1b\\ request\u202e",  # the title ended by ST; a right-to-left override
    ],
)
def test_a_server_error_with_escape_sequences_is_one_escaped_line(model, cli, server_says):
    model.queue(error(400, server_says))

    result = cli("look", "--no-transcript")

    assert result.returncode == 1
    expected = server_says.encode("unicode_escape").decode().replace("\\\\", "\\")
    assert result.stderr == f"error: the model server answered 400: {expected}\n"
    assert "\x1b" not in result.stderr and "\u202e" not in result.stderr


@pytest.mark.parametrize("message", [{"text": "\x1b[2J"}, ["\x1b[2J"], 400, None])
def test_a_server_error_whose_message_is_not_text_is_one_escaped_line(model, cli, message):
    model.queue(
        {"status": 400, "body": {"error": {"message": message, "type": "invalid_request_error"}}}
    )

    result = cli("look", "--no-transcript")

    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("error: the model server answered 400: ") and "\x1b" not in line


def test_the_answer_keeps_its_lines_and_shows_escapes(model, cli):
    model.queue(answer("line one\n\tline two\x1b[2J\r\u202eend"))

    result = cli("say", "--no-transcript")

    assert result.stdout == "line one\n\tline two\\x1b[2J\\r\\u202eend\n"


def test_the_answer_shows_the_key_redacted_a_key_repeated_or_cut_to_its_end(
    model, cli, monkeypatch
):
    from helpers import KEY

    monkeypatch.setenv("GROQ_API_KEY", KEY)
    model.queue(answer(f"the key is {KEY}\nand its end {KEY[-12:]}"))

    result = cli("say", "--no-transcript")

    assert result.returncode == 0 and KEY[-12:] not in result.stdout
    assert result.stdout == "the key is [redacted API key]\nand its end [redacted API key]\n"


@posix_only
def test_a_file_name_with_a_line_break_stays_on_the_approval_line(model, terminal, tmp_path):
    name = "a\nrun_shell wants to run:\n  true\n"
    model.queue(calls(("write_file", {"path": name, "content": "x\n"})), answer("left alone"))
    shown = terminal("--no-transcript", "write it")
    shown.read_until("[y]es / [N]o / [a]lways allow write_file for this run: ")
    shown.type("n")
    shown.read_until("why not? (optional, Enter to skip): ")
    shown.type("")

    assert shown.finish() == 0, shown.output
    assert (
        "\nwrite_file wants to create a\\nrun_shell wants to run:\\n  true\\n (new file, 2 bytes)\n"
        "  +x\n[y]es / [N]o"
    ) in shown.output
    assert "\nrun_shell wants to run:" not in shown.output
    assert not (tmp_path / name).exists()


@posix_only
def test_undo_lines_show_a_file_name_on_its_line(model, cli, tmp_path):
    name = "made\n[1] fake line"
    model.queue(calls(("write_file", {"path": name, "content": "x"})), answer("wrote"))
    assert cli("write", "--yes").returncode == 0
    assert (tmp_path / name).exists()

    result = cli("--undo")

    assert not (tmp_path / name).exists()
    assert len(result.stdout.splitlines()) == 1 and "made\\n[1] fake line" in result.stdout, (
        result.stdout
    )


def test_an_answer_the_output_encoding_cannot_hold_is_written_as_escapes(model, tmp_path):
    """A Windows console redirected to a file writes cp1252: "→" and "✓" are not in it."""
    model.queue(answer("→ done ✓"))

    result = run_script(
        "harness.py",
        "finish",
        "--no-transcript",
        cwd=tmp_path,
        env={**os.environ, "PYTHONIOENCODING": "cp1252"},
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == "\\u2192 done \\u2713\n"
    assert "Traceback" not in result.stderr and "\\u2192 ok" not in result.stderr


def test_with_no_terminal_a_call_that_needs_approval_is_denied_and_said_once(model, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    model.queue(
        calls(("run_shell", {"command": "rm a.txt"})),
        calls(("run_shell", {"command": "rm b.txt"})),
        answer("could not"),
    )

    result = run_script("harness.py", "remove them", "--no-transcript", cwd=tmp_path)

    assert result.returncode == 0 and result.stdout == "could not\n"
    assert result.stderr.count(NO_TERMINAL) == 1
    assert result.stderr.startswith('[1] run_shell {"command": "rm a.txt"}\n' + NO_TERMINAL)
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()


def test_no_note_when_nothing_needs_approval_or_all_is_approved_or_quiet(model, cli, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    model.queue(
        calls(("read_file", {"path": "a.txt"})),
        answer("a"),
        calls(("run_shell", {"command": "rm a.txt"})),
        answer("removed"),
        calls(("run_shell", {"command": "rm a.txt"})),
        answer("gone"),
    )

    assert "note:" not in cli("read it", "--no-transcript").stderr
    assert "note:" not in cli("remove it", "--no-transcript", "--yes").stderr
    quiet = cli("remove it again", "--no-transcript", "--quiet")
    assert quiet.stderr == "" and quiet.stdout == "gone\n"


def test_the_old_timeout_flag_still_sets_the_shell_timeout_and_says_so_once(model, cli, tmp_path):
    model.queue(calls(("run_shell", {"command": "sleep 5"})), answer("slow"))

    result = cli("wait", "--no-transcript", "--yes", "--timeout", "0.5")

    assert result.stderr.startswith(
        "note: --timeout is now --shell-timeout (seconds a shell command may run); "
        "AGENT_TIMEOUT is the model's timeout\n"
    )
    assert result.stderr.count("--timeout is now") == 1
    assert "0.5 s" in model.messages(1)[-1]["content"], model.messages(1)[-1]["content"]


def test_the_shell_timeout_flag_says_nothing(model, cli):
    model.queue(answer("ok"))
    assert "note" not in cli("x", "--no-transcript", "--shell-timeout", "3").stderr


def test_help_names_every_variable_with_its_flag_and_those_without_one_with_their_defaults(
    tmp_path,
):
    from plainagent.core import settings

    # The timeout only stops a hang: on a loaded machine, starting Python with the
    # SDK may take many seconds.
    shown = subprocess.run(
        [sys.executable, "harness.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    ).stdout
    for setting in settings.TABLE:
        assert setting.variable in shown
    assert "--timeout" not in shown.replace("AGENT_TIMEOUT", "").replace("--shell-timeout", "")
    assert (
        f"settings without a flag (set them in the environment or in {ROOT / '.env'}):\n"
        "  AGENT_TIMEOUT: seconds one model request may take in all, retries included (default "
        "60)\n  AGENT_MAX_CHARS: longest tool result the model sees (default 4000)\n"
        "  AGENT_CONTEXT_BUDGET: estimated tokens per request (default 6000)\n"
    ) in shown
