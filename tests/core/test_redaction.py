"""The API key: redacted wherever it would be written or printed, and kept from every command."""

import json
import os
import subprocess

import pytest
from fake_model import answer, calls, error
from helpers import (
    KEY,
    copy_of_the_agent,
    needs_landlock,
    only_transcript,
    posix_only,
    read_events,
    run_script,
    windows,
)

import harness
import tools
from plainagent.core import settings
from plainagent.runs import resume
from plainagent.sandbox import process as sandbox
from plainagent.shell import allowlist


@needs_landlock
def test_in_the_agents_own_folder_a_recursive_grep_cannot_read_its_dot_env(
    model, tmp_path, monkeypatch
):
    monkeypatch.delenv("GROQ_API_KEY")
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text(f"GROQ_API_KEY={KEY}\n")
    (agent / "notes.txt").write_text("GROQ_API_KEY is set in .env\n")
    model.queue(
        calls(("run_shell", {"command": "grep -r GROQ_API_KEY ."})),
        calls(("run_shell", {"command": "grep -r -o -h '.........' ."})),
        answer(f"the key is {KEY}"),
    )

    result = run_script(
        "harness.py", "find the key", "--transcript", "t.jsonl", cwd=agent, root=agent
    )

    assert result.returncode == 0, result.stderr
    first, second = (model.messages(i)[-1]["content"] for i in (1, 2))
    assert (
        "./notes.txt:GROQ_API_KEY is set in .env" in first and "./.env: Permission denied" in first
    )
    assert KEY[4:13] not in second  # not even in nine-character pieces
    shown = result.stdout + result.stderr + (agent / "t.jsonl").read_text()
    assert not windows(KEY) & windows(shown)  # the answer on stdout is redacted too
    assert result.stdout == "the key is [redacted API key]\n"


@posix_only
def test_a_key_under_another_variable_name_does_not_reach_commands(model, tmp_path, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    monkeypatch.setenv("MY_COPY_OF_THE_KEY", KEY)
    monkeypatch.setenv("HARMLESS", "kept")
    model.queue(calls(("run_shell", {"command": "env"})), answer("ok"))

    import harness

    harness.run("env", approve_all=True)

    told = model.messages(1)[-1]["content"]
    assert "HARMLESS=kept" in told and "MY_COPY_OF_THE_KEY" not in told and KEY not in told


@needs_landlock
def test_a_link_or_a_hard_link_in_the_agents_folder_opens_nothing_to_read_only_commands(
    tmp_path, monkeypatch
):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text(f"GROQ_API_KEY={KEY}\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP SECRET")
    os.symlink(tmp_path / "outside", agent / "data")
    os.link(agent / ".env", agent / "cfg.txt")
    # as if this copy were the agent that runs
    monkeypatch.setattr(settings, "DOTENV", agent / ".env")
    monkeypatch.setenv("AGENT_WORKSPACE", str(agent))
    # The kernel's layer alone, as if the allowlist had let this command
    # through: read-only, .env hidden.
    private = sandbox.make_tmp()
    try:
        process = sandbox.popen(
            "cat data/secret.txt cfg.txt harness.py",
            sandbox.Policy(agent, private, sandbox.READ_ONLY, hidden=(agent / ".env",)),
            cwd=agent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        result = process.communicate()[0]
        sandbox.finish(process)
    finally:
        sandbox.remove_tmp(private)

    assert "TOP SECRET" not in result and KEY not in result
    assert "data/secret.txt: Permission denied" in result and "cfg.txt: Permission denied" in result
    assert "Phase 1, the loop" in result  # the rest of the workspace is still readable
    config = settings.resolve(require_key=False)  # and the allowlist and the file tools refuse both
    assert allowlist.reason_to_ask("cat cfg.txt", config) and allowlist.reason_to_ask(
        "cat data/secret.txt", config
    )
    with pytest.raises(PermissionError, match="holds the agent's own API keys"):
        tools.read_file("cfg.txt", settings=config)


OTHER_KEY = "sk-openai-0123456789abcdefghijklmnop"


def test_another_backends_key_in_the_environment_is_redacted_and_kept_from_commands(
    model, cli, tmp_path, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_KEY)
    (tmp_path / "notes.txt").write_text(f"openai key {OTHER_KEY}\n")
    model.queue(
        calls(("read_file", {"path": "notes.txt"})),
        calls(("run_shell", {"command": "env"})),
        answer(f"it is {OTHER_KEY}"),
    )

    result = cli("find it", "--transcript", "t.jsonl", "--yes")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "it is [redacted API key]\n"
    assert OTHER_KEY not in (tmp_path / "t.jsonl").read_text()
    assert OTHER_KEY not in model.messages(2)[-1]["content"]  # env printed no key


def test_a_whole_key_becomes_one_marker_with_nothing_of_it_left(model, cli, tmp_path, monkeypatch):
    key = "gsk_" + "abcdefghij" * 4 + "XYZ"  # 47 characters: not a multiple of any piece length
    monkeypatch.setenv("GROQ_API_KEY", key)
    (tmp_path / "notes.txt").write_text(f"key: {key}.\n")
    model.queue(calls(("read_file", {"path": "notes.txt"})), answer(f"the key is {key}."))

    result = cli("read it", "--transcript", "t.jsonl")

    assert result.stdout == "the key is [redacted API key].\n"
    [read] = [
        e["message"]["content"]
        for e in read_events(tmp_path / "t.jsonl")
        if e["type"] == "message" and e["message"]["role"] == "tool"
    ]
    assert read == "key: [redacted API key].\n"


def test_a_key_under_another_variable_name_reaches_no_command(model, tmp_path, monkeypatch):
    key = "gsk_copied0123456789abcdefghij"
    monkeypatch.setenv("GROQ_API_KEY", key)
    monkeypatch.setenv("MY_COPY_OF_IT", key)
    model.queue(calls(("run_shell", {"command": "env"})), answer("done"))

    harness.run("show the environment", approve_all=True)

    shown = model.messages(1)[-1]["content"]
    assert shown.startswith("exit code: 0") and key not in shown and "MY_COPY_OF_IT" not in shown


def leaks(text: str, secret: str = KEY) -> list[str]:
    """The lines of text that hold the secret or any WINDOW characters of it in a row."""
    return [line for line in text.splitlines() if any(w in line for w in windows(secret))]


def test_the_key_reaches_no_command_no_line_written_and_no_line_printed(
    model, tmp_path, monkeypatch
):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text(f"GROQ_API_KEY={KEY}\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    notes = f"my groq key {KEY}\n"
    (workspace / "notes.txt").write_text(notes)
    # The key's 'n' stands right after a line break here: its JSON escape \n
    # must not be redacted in half.
    (workspace / "lines.txt").write_text(f"first line\n{KEY[23:]}\n")
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    size = len(notes)
    pieces = [
        ("run_shell", {"command": f"cut -c {13 + i}-{13 + i + n - 1} notes.txt"})
        for i, n in ((0, 12), (12, 15), (27, 20), (35, 16))
    ]
    model.queue(
        calls(("read_file", {"path": "notes.txt"})),
        calls(("read_file", {"path": "notes.txt", "offset": 20})),
        calls(
            ("read_file", {"path": "notes.txt", "offset": size - 13}),
            ("read_file", {"path": "notes.txt", "offset": size - 21}),
            ("read_file", {"path": "lines.txt"}),
        ),
        calls(*pieces),
        calls(
            ("run_shell", {"command": "env"}),
            ("run_shell", {"command": "printenv GROQ_API_KEY"}),
            ("run_shell", {"command": f"echo {KEY[:20]} {KEY[20:]}"}),
        ),
        answer(f"the key is {KEY}, or in parts {KEY[:25]} and {KEY[25:]}"),
        error(400, f"Invalid API Key: {KEY} is not valid for {KEY[5:30]}"),
    )

    first = run_script(
        "harness.py", "find the key", "--yes", "--transcript", "t.jsonl", cwd=workspace, root=agent
    )
    second = run_script(
        "harness.py",
        "--continue",
        "again",
        "--yes",
        "--transcript",
        "t.jsonl",
        cwd=workspace,
        root=agent,
    )

    assert first.returncode == 0 and second.returncode == 1, (first.stderr, second.stderr)
    env, printenv = [m["content"] for m in model.messages(5)[-3:-1]]
    assert "GROQ_API_KEY" not in env and leaks(env) == []
    assert printenv.startswith("exit code: 1")
    # what the model is sent too
    assert model.messages(1)[-1]["content"] == "my groq key [redacted API key]\n"
    assert second.stderr.startswith(
        "error: the model server answered 400: Invalid API Key: [redacted API key]"
    )
    text = (tmp_path / "ws" / "t.jsonl").read_text()
    assert [json.loads(line) for line in text.splitlines()]  # every line still parses
    for output in (text, first.stdout, first.stderr, second.stdout, second.stderr):
        assert leaks(output) == []
    assert resume.restore(workspace / "t.jsonl")[0][-1] == {"role": "user", "content": "again"}


def test_a_short_key_is_redacted_where_it_stands_alone_and_every_line_still_parses(
    model, cli, tmp_path, monkeypatch
):
    key = "short-key1"
    monkeypatch.setenv("GROQ_API_KEY", key)
    (tmp_path / "notes.txt").write_text(
        f'key={key}\n{key}\t{key}\\{key}"{key}\nnot-short-key1 or short-key10\n'
    )
    model.queue(calls(("read_file", {"path": "notes.txt"})), answer(f"it is {key}"))

    result = cli("read it", "--transcript", "t.jsonl")

    assert result.returncode == 0 and result.stdout == "it is [redacted API key]\n"
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    [read] = [
        e["message"]["content"]
        for e in events
        if e["type"] == "message" and e["message"]["role"] == "tool"
    ]
    assert read == (
        "key=[redacted API key]\n[redacted API key]\t[redacted API key]\\[redacted API key]"
        '"[redacted API key]\nnot-short-key1 or short-key10\n'
    )


def test_the_api_key_never_appears_in_a_transcript(model, cli, tmp_path):
    (tmp_path / ".env").write_text("GROQ_API_KEY=test-key-not-real\n")
    model.queue(calls(("read_file", {"path": ".env"})), answer("the key is test-key-not-real"))

    result = cli("show me .env")

    assert result.returncode == 0
    text = only_transcript(tmp_path).read_text()
    assert "test-key-not-real" not in text
    assert "[redacted API key]" in text
