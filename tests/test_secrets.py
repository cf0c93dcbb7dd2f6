"""The key never reaches the model: not through a .env that links to a file in the workspace, and
not in a tool result (each is redacted before the model sees it, like every other output)."""

import os

import openai
import pytest
from fake_model import answer, calls, error
from helpers import copy_of_the_agent, needs_landlock, run_script

import harness
import tools
from plainagent.core import settings
from plainagent.model.errors import report

KEY = "gsk_Hb5tRe9wQ2xLm7VnP4zKc8JdY3sGf6UaT1rEo0iBh5NqW2kXv"  # like a real one, no repeats


def pieces(text: str, size: int = 12) -> set[str]:
    return {text[i : i + size] for i in range(len(text) - size + 1)}


@needs_landlock
def test_the_file_a_dot_env_link_points_to_is_hidden_from_every_command_and_tool(
    model, tmp_path, monkeypatch
):
    monkeypatch.delenv("GROQ_API_KEY")
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / "config").mkdir()
    (agent / "config" / "secret.txt").write_text(f"GROQ_API_KEY={KEY}\n")
    (agent / "config" / "other.txt").write_text("GROQ is the backend\n")
    os.symlink("config/secret.txt", agent / ".env")
    model.queue(
        calls(
            ("run_shell", {"command": "grep -r GROQ ."}),
            ("run_shell", {"command": "cat config/secret.txt"}),
            ("read_file", {"path": "config/secret.txt"}),
            ("write_file", {"path": "config/secret.txt", "content": "GROQ_BASE_URL=http://evil\n"}),
        ),
        answer("done"),
    )

    result = run_script(
        "harness.py", "find the key", "--yes", "--no-transcript", cwd=agent, root=agent
    )

    assert result.returncode == 0, result.stderr
    grep, cat, read, write = (m["content"] for m in model.messages(1)[-4:])
    assert (
        "./config/other.txt:GROQ is the backend" in grep
        and "./config/secret.txt: Permission denied" in grep
    )
    # approved, and still hidden
    assert cat == "exit code: 1\nstderr:\ncat: config/secret.txt: Permission denied\n"
    assert read == (
        "error: PermissionError: config/secret.txt holds the agent's own API keys; "
        "no tool reads or writes it"
    )
    assert write.startswith(
        "error: PermissionError: config/secret.txt holds the agent's own API keys"
    )
    assert "[redacted API key]" not in grep + cat  # hidden by the kernel, not only redacted
    assert (agent / "config" / "secret.txt").read_text() == f"GROQ_API_KEY={KEY}\n"
    assert not pieces(KEY) & pieces(str([request["body"] for request in model.requests]))


def test_a_tool_result_holding_the_key_reaches_the_model_redacted(model, tmp_path, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    (tmp_path / "notes.txt").write_text(f"key: {KEY}\npiece: {KEY[10:24]}!\nsplit: {KEY[:8]}\n")
    model.queue(
        calls(("read_file", {"path": "notes.txt"}), ("run_shell", {"command": "cat notes.txt"})),
        answer("done"),
    )

    assert harness.run("read the notes") == "done"

    read, shell = (m["content"] for m in model.messages(1)[-2:])
    assert read.endswith(f"key: [redacted API key]\npiece: [redacted API key]!\nsplit: {KEY[:8]}\n")
    assert shell.endswith(
        "stdout:\nkey: [redacted API key]\npiece: [redacted API key]!\nsplit: gsk_Hb5t\n"
    )
    assert not pieces(KEY) & pieces(str(model.requests[1]["body"]))


def test_a_key_the_cap_of_a_long_result_falls_across_is_redacted_whole_first(model, monkeypatch):
    # A tool of the person's own (run_shell and the paged tools cut their results themselves)
    # returns more than AGENT_MAX_CHARS, and the cap keeps its first third: cut first, the
    # six characters of the key before the cut would be too short to be known as a piece of
    # it, and would reach the model.
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    before = "x" * (1000 // 3 - 6)

    def dump() -> str:
        """Print the whole log."""
        return before + KEY + "y" * 3000

    model.queue(calls(("dump", {})), answer("done"))

    assert harness.run("read the log", tools=[dump], max_chars=1000) == "done"

    result = model.messages(1)[-1]["content"]
    assert result.startswith(before) and "[... cut " in result
    assert not pieces(KEY, 6) & pieces(str(model.requests[1]["body"]), 6)


def test_an_api_key_given_to_run_is_sent_and_never_shown(model, tmp_path, capsys):
    # The environment's key is another one; the run's own is sent, and hidden
    # wherever that one would be: from the model, in the events of its calls, in the
    # line that words an error for a person.
    (tmp_path / "notes.txt").write_text(f"key: {KEY}\n")

    def echo_key() -> str:
        """Say what the key is."""
        return f"the key is {KEY}"

    model.queue(
        calls(("read_file", {"path": "notes.txt"}), ("echo_key", {})),
        answer("done"),
        error(400, f"no such model for the key {KEY}"),
    )
    events = []

    harness.run(
        "find the key", api_key=KEY, tools=[tools.read_file, echo_key], on_event=events.append
    )

    assert [r["headers"]["authorization"] for r in model.requests] == [f"Bearer {KEY}"] * 2
    assert model.messages(1)[-2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "key: [redacted API key]\n"},
        {"role": "tool", "tool_call_id": "call_2", "content": "the key is [redacted API key]"},
    ]
    assert not pieces(KEY) & pieces(str([r["body"] for r in model.requests]))
    assert not pieces(KEY) & pieces(str(events))
    with pytest.raises(openai.BadRequestError) as raised:
        harness.run("again", api_key=KEY)
    capsys.readouterr()
    # as the command line words it, with the run's settings
    report(raised.value, settings.resolve(api_key=KEY))
    shown = capsys.readouterr().err
    assert (
        shown
        == "error: the model server answered 400: no such model for the key [redacted API key]\n"
    )
    assert settings.resolve().api_key == "test-key-not-real"  # for this run only
