"""A conversation at the terminal, the model's reasoning on request, and how each
tool call ended, at a glance."""

import io
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from fake_model import answer, calls
from helpers import (
    CHILD,
    PROMPT,
    ROOT,
    asleep,
    only_transcript,
    posix_only,
    read_events,
    readable,
    run_script,
    runs_of,
    wait_for,
)

import harness


def with_reasoning(reply: dict, reasoning: str) -> dict:
    """A scripted reply whose message carries this reasoning, the way Groq sends gpt-oss's."""
    reply["body"]["choices"][0]["message"]["reasoning"] = reasoning
    return reply


def tool_lines(stderr: str) -> list[str]:
    """The progress lines of the tool calls: each call and, under it, how it ended."""
    return [line for line in stderr.splitlines() if line.startswith(("[", "    → "))]


@posix_only
def test_a_session_continues_the_conversation_task_after_task_in_one_transcript(
    model, terminal, tmp_path
):
    model.queue(answer("one"), answer("two"))
    shown = terminal()

    shown.type_at_prompts("first task", "second task")
    shown.read_until(PROMPT, count=3)
    os.write(shown.master, b"\x04")  # Ctrl-D

    assert shown.finish() == 0, shown.output
    assert model.messages(1)[1:] == [
        {"role": "user", "content": "first task"},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second task"},
    ]
    assert model.messages(1)[0]["role"] == "system"
    assert "\none\n" in shown.output and "\ntwo\n" in shown.output
    assert shown.output.count("done: 1 step, 0 tool calls") == 2  # a summary for each task
    path = only_transcript(tmp_path)
    assert path.name.endswith("-session.jsonl")
    events = read_events(path)
    assert [e["task"] for e in events if e["type"] == "start"] == ["first task", "second task"]
    assert [e["message"] for e in events if e["type"] == "message"] == model.messages(1) + [
        {"role": "assistant", "content": "two"}
    ]


@posix_only
def test_a_task_in_a_session_asks_for_approval_at_the_same_terminal(model, terminal, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    model.queue(calls(("run_shell", {"command": "rm a.txt"})), answer("removed"))
    shown = terminal("--no-transcript")

    shown.read_until(PROMPT)
    shown.type("remove a.txt")
    shown.read_until("[y]es / [N]o / [a]lways allow rm like this for this session: ")
    shown.type("y")
    shown.read_until(PROMPT, count=2)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert "\nremoved\n" in shown.output and not (tmp_path / "a.txt").exists()
    assert model.messages(1)[-1]["content"].startswith("exit code: 0")


@posix_only
def test_an_empty_line_prompts_again_and_exit_ends_the_session(model, terminal):
    shown = terminal("--no-transcript")

    shown.read_until(PROMPT)
    shown.type("")
    shown.read_until(PROMPT, count=2)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert model.requests == []


@posix_only
def test_ctrl_c_at_the_session_prompt_ends_it_with_130(model, terminal):
    shown = terminal("--no-transcript")

    shown.read_until(PROMPT)
    wait_for(lambda: asleep(shown.process.pid))
    # what Ctrl-C at a terminal sends to its foreground group
    os.killpg(shown.process.pid, signal.SIGINT)

    assert shown.finish() == 130, shown.output
    assert model.requests == []


@posix_only
def test_ctrl_c_during_a_task_returns_to_the_prompt_and_the_next_task_goes_on(
    model, terminal, tmp_path
):
    model.queue({**answer("too late"), "delay": 5}, answer("second answer"))
    shown = terminal()

    shown.read_until(PROMPT)
    shown.type("wait for it")
    wait_for(lambda: model.requests)
    os.killpg(shown.process.pid, signal.SIGINT)
    shown.read_until("interrupted\n")
    shown.read_until(PROMPT, count=2)
    shown.type("next")
    shown.read_until("second answer\n")
    shown.read_until(PROMPT, count=3)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert model.messages(1)[1:] == [
        {"role": "user", "content": "wait for it"},
        {"role": "user", "content": "next"},
    ]
    ends = [e.get("reason") for e in read_events(only_transcript(tmp_path)) if e["type"] == "end"]
    assert ends == ["interrupted", "answer"]


@posix_only
def test_continue_without_a_task_at_a_terminal_starts_the_session_from_the_newest_transcript(
    model, cli, terminal, tmp_path
):
    model.queue(answer("one"), answer("two"))
    assert cli("first task").returncode == 0
    shown = terminal("--continue")

    shown.read_until(PROMPT)
    # the banner says which conversation goes on, as --runs names it
    assert re.search(
        r"— continuing run 1 \(\d{4}-\d\d-\d\d \d\d:\d\d, 'first task'\); type", shown.output
    )
    shown.type("and then?")
    shown.read_until(PROMPT, count=2)  # a person types at the prompt, after the answer
    os.write(shown.master, b"\x04")

    assert shown.finish() == 0, shown.output
    assert model.messages(1) == model.messages(0) + [
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "and then?"},
    ]
    assert [e["task"] for e in read_events(only_transcript(tmp_path)) if e["type"] == "start"] == [
        "first task",
        "and then?",
    ]


def test_without_a_terminal_a_task_is_required(tmp_path):
    result = run_script("harness.py", cwd=tmp_path)

    assert result.returncode == 2
    assert "error: the following arguments are required: task" in result.stderr.splitlines()[-1]
    assert not runs_of(tmp_path).exists()


@pytest.mark.parametrize("task", ["", "  \n"])
def test_an_empty_task_is_refused_in_one_line_and_asks_nothing(model, tmp_path, task):
    # plainagent "$TASK" with TASK unset sent the model an empty message, in a run named "session".
    result = run_script("harness.py", task, cwd=tmp_path)

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        'error: the task is empty: put what you want done in quotes ("fix the tests"), or give no '
        "task at a terminal for a session; see python harness.py --help\n"
    )
    assert model.requests == []
    assert not runs_of(tmp_path).exists()


def test_each_tool_line_is_followed_by_how_the_call_ended(model, cli, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal: what asks is denied
    (tmp_path / "a.txt").write_text("A")
    missing = "/".join(["m" * 150] * 3)
    model.queue(
        calls(
            ("read_file", {"path": "a.txt"}),
            ("run_shell", {"command": "grep nothing a.txt"}),
            ("run_shell", {"command": "rm a.txt"}),
            ("nope", {}),
            ("read_file", {"path": missing}),
        ),
        calls(("list_dir", {}), ("list_dir", {}), ("list_dir", {})),
        answer("done"),
    )

    result = cli("go", "--no-transcript")

    assert result.returncode == 0 and result.stdout == "done\n"
    lines = tool_lines(result.stderr)
    assert lines[:8] + lines[10:] == [
        '[1] read_file {"path": "a.txt"}',
        "    → ok",
        '[1] run_shell {"command": "grep nothing a.txt"}',
        "    → exit 1",
        '[1] run_shell {"command": "rm a.txt"}',
        "    → denied",
        "[1] nope {}",
        "    → error: unknown tool 'nope'; available: read_file, list_dir, write_file, edit_file, "
        "run_shell",
        "[2] list_dir {}",
        "    → ok",
        "[2] list_dir {}",
        "    → ok",
        "[2] list_dir {}",
        "    → refused: repeated call",
    ]
    # the missing file's error: its first line, cut to 400 characters
    error = model.messages(1)[-1]["content"]
    assert lines[9] == f"    → {error[:399]}…" and len(error) > 400
    assert (tmp_path / "a.txt").exists()


def test_a_command_that_times_out_says_so_under_its_line(model, cli):
    model.queue(calls(("run_shell", {"command": "sleep 5"})), answer("too slow"))

    result = cli("wait", "--yes", "--timeout", "0.5", "--no-transcript")

    assert result.returncode == 0
    assert tool_lines(result.stderr) == [
        '[1] run_shell {"command": "sleep 5"}',
        "    → timed out after 0.5 s",
    ]


@posix_only
def test_the_call_line_is_shown_while_the_command_still_runs(model, tmp_path, start_cli):
    model.queue(calls(("run_shell", {"command": "sleep 30"})))
    process = start_cli(tmp_path, "wait", "--yes", "--no-transcript")

    assert readable(process.stderr, 30), "no progress line while the command runs"
    line = process.stderr.readline()

    assert line == '[1] run_shell {"command": "sleep 30"}\n', line + process.stderr.read(2000)
    assert process.poll() is None  # the command is still running: the line came when it started
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=10)


def test_the_time_a_person_takes_to_approve_is_not_tool_time(model, tmp_path):
    model.queue(calls(("write_file", {"path": "x.txt", "content": "x"})), answer("ok"))
    events = []

    def slow_person(name: str, arguments: dict) -> bool:
        time.sleep(0.5)
        return True

    harness.run("write", approve=slow_person, on_event=events.append)

    [tool] = [e for e in events if e["type"] == "tool"]
    assert tool["outcome"] == "ok" and (tmp_path / "x.txt").read_text() == "x"
    assert tool["seconds"] < 0.5  # writing one byte; the half second was the person's


def test_show_reasoning_prints_each_steps_reasoning_marked_before_its_tool_lines(model, cli):
    model.queue(
        with_reasoning(calls(("list_dir", {})), "I should look.\nThe folder first."),
        with_reasoning(answer("empty"), "Nothing there."),
    )

    result = cli("look", "--show-reasoning", "--no-transcript")

    assert result.returncode == 0 and result.stdout == "empty\n"
    assert result.stderr.splitlines()[:-1] == [
        "  thinking: I should look.",
        "  thinking: The folder first.",
        "[1] list_dir {}",
        "    → ok",
        "  thinking: Nothing there.",
    ]
    assert "look." not in json.dumps(model.requests) and "Nothing there" not in json.dumps(
        model.requests
    )


def test_show_reasoning_shows_the_models_text_escaped_and_its_key_redacted(model, cli, monkeypatch):
    from helpers import KEY

    monkeypatch.setenv("GROQ_API_KEY", KEY)
    model.queue(with_reasoning(answer("done"), f"the key is {KEY}\x1b[2J\u202eevil"))

    result = cli("look", "--show-reasoning", "--no-transcript")

    assert result.returncode == 0 and KEY not in result.stderr and "\x1b" not in result.stderr
    assert (
        result.stderr.splitlines()[0]
        == "  thinking: the key is [redacted API key]\\x1b[2J\\u202eevil"
    )


@pytest.mark.parametrize("reasoning", [["a", "list"], {"a": "dict"}, 5])
def test_reasoning_that_is_not_text_is_not_shown_and_breaks_nothing(model, cli, reasoning):
    # The server decides what the field holds: only text is shown.
    model.queue(with_reasoning(answer("done"), reasoning))

    result = cli("look", "--show-reasoning", "--no-transcript")

    assert (result.returncode, result.stdout) == (0, "done\n"), result.stderr
    assert "thinking" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_calls_outcome_is_shown_escaped(model, cli):
    # The first line of a result can quote the model's own text (a path in an error):
    # escaped on the terminal too.
    model.queue(calls(("read_file", {"path": "../\x1b[2J"})), answer("gone"))

    result = cli("look", "--no-transcript")

    assert result.returncode == 0 and "\x1b" not in result.stderr
    assert "\\x1b[2J" in result.stderr.splitlines()[1], result.stderr


def test_without_the_flag_reasoning_is_not_shown(model, cli):
    model.queue(with_reasoning(calls(("list_dir", {})), "I should look."), answer("empty"))

    result = cli("look", "--no-transcript")

    assert "I should look" not in result.stderr + result.stdout
    assert tool_lines(result.stderr) == ["[1] list_dir {}", "    → ok"]


def test_the_reply_event_carries_the_reasoning(model):
    model.queue(with_reasoning(answer("hi"), "Say hi."))
    events = []

    harness.run("greet", on_event=events.append)

    assert [e["reasoning"] for e in events if e["type"] == "reply"] == ["Say hi."]


def test_reasoning_effort_is_sent_only_when_set(model, cli, monkeypatch):
    model.queue(*[answer("ok")] * 4)

    cli("x", "--no-transcript")
    cli("x", "--no-transcript", "--reasoning-effort", "high")
    monkeypatch.setenv("AGENT_REASONING_EFFORT", "low")
    cli("x", "--no-transcript")
    harness.run("x", reasoning_effort="medium")

    assert [r["body"].get("reasoning_effort", "unset") for r in model.requests] == [
        "unset",
        "high",
        "low",
        "medium",
    ]


def test_a_bad_reasoning_effort_flag_is_a_usage_error(model, tmp_path):
    result = run_script("harness.py", "x", "--reasoning-effort", "max", cwd=tmp_path)

    assert result.returncode == 2
    line = result.stderr.splitlines()[-1]
    assert "error: argument --reasoning-effort: invalid choice: 'max'" in line
    assert all(effort in line for effort in ("low", "medium", "high"))
    assert model.requests == []


@posix_only
def test_a_session_ended_before_its_first_task_leaves_no_transcript_for_continue_to_pick(
    model, terminal, tmp_path, cli
):
    model.queue(answer("first"), answer("again"))
    assert cli("earlier task").returncode == 0
    earlier = only_transcript(tmp_path)
    shown = terminal()

    shown.read_until(PROMPT)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert only_transcript(tmp_path) == earlier
    assert cli("--continue", "and now?").returncode == 0
    assert model.messages(1)[1:3] == [
        {"role": "user", "content": "earlier task"},
        {"role": "assistant", "content": "first"},
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_a_session_ended_before_a_task_leaves_the_empty_transcript_it_was_given(
    model, terminal, tmp_path
):
    (tmp_path / "given.jsonl").write_text("")
    shown = terminal("--transcript", "given.jsonl")

    shown.read_until("> ")
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert (tmp_path / "given.jsonl").is_file()  # not made by this session, so not its to remove


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_a_session_with_stdout_not_a_terminal_keeps_the_prompt_off_stdout(model, tmp_path):
    model.queue(answer("one"))
    master, slave = os.openpty()
    with open(tmp_path / "out.txt", "w") as out:
        try:
            process = subprocess.Popen(
                [sys.executable, str(ROOT / "harness.py"), "--no-transcript"],
                cwd=tmp_path,
                stdin=slave,
                stdout=out,
                stderr=slave,
                start_new_session=True,
                **CHILD,
            )
        finally:
            os.close(slave)
    shown = b""
    try:
        for line, prompts in (("hello", 1), ("/exit", 2)):
            while shown.count(b"> ") < prompts:
                assert readable(master, 30), shown
                shown += os.read(master, 65536)
            os.write(master, line.encode() + b"\n")
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)

    # the answer alone: the prompts went to the terminal
    assert (tmp_path / "out.txt").read_text() == "one\n"


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_without_a_task_and_stderr_not_a_terminal_a_task_is_required(model, tmp_path):
    master, slave = os.openpty()
    try:
        result = subprocess.run(
            [sys.executable, str(ROOT / "harness.py"), "--no-transcript"],
            cwd=tmp_path,
            stdin=slave,
            capture_output=True,
            text=True,
            timeout=30,
            **CHILD,
        )
    finally:
        os.close(slave)
        os.close(master)

    # no session: its prompts and progress would go where nobody sees them
    assert result.returncode == 2
    assert "the following arguments are required: task" in result.stderr
    assert model.requests == []


def test_a_calls_long_arguments_are_cut_at_200_characters_in_its_progress_line(model, cli):
    arguments = json.dumps({"path": "x" * 300})
    model.queue(calls(("read_file", arguments)), answer("done"))

    result = cli("read", "--no-transcript")

    assert (
        tool_lines(result.stderr)[0]
        == f"[1] read_file {arguments[:200]}… ({len(arguments)} characters)"
    )
