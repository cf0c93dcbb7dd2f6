"""A run's events and its summary line: what each tool call did and how it ended."""

import io
import re
import sys

import pytest
from fake_model import answer, calls
from helpers import read_events, runs_of

import harness


def test_a_command_that_exits_0_ends_ok_and_is_no_error(model):
    model.queue(calls(("run_shell", {"command": "echo hi"})), answer("said hi"))
    events = []

    harness.run("say hi", on_event=events.append)

    [tool] = [e for e in events if e["type"] == "tool"]
    assert tool["result"].startswith("exit code: 0")
    assert (tool["outcome"], tool["error"]) == ("ok", False)


def test_a_call_refused_as_repeated_is_flagged_an_error(model, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    model.queue(*[calls(("read_file", {"path": "a.txt"})) for _ in range(3)], answer("read"))
    events = []

    harness.run("read it", on_event=events.append)

    tools = [(e["outcome"], e["error"]) for e in events if e["type"] == "tool"]
    assert tools == [("ok", False), ("ok", False), ("refused: repeated call", True)]


@pytest.mark.parametrize(
    "first_line", ["exit code: 3; from the last build", "denied by the user, said the log"]
)
def test_a_file_whose_first_line_reads_like_a_status_is_an_ok_read(model, tmp_path, first_line):
    (tmp_path / "log.txt").write_text(first_line + "\n")
    model.queue(calls(("read_file", {"path": "log.txt"})), answer("read"))
    events = []

    harness.run("read the log", on_event=events.append)

    [tool] = [e for e in events if e["type"] == "tool"]
    assert (tool["outcome"], tool["error"]) == ("ok", False)


def test_events_of_a_run_in_order(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue(
        {
            **calls(
                ("read_file", {"path": "a.txt"}),
                usage={"prompt_tokens": 100, "completion_tokens": 20},
            ),
            "delay": 0.3,
        },
        answer("A it is"),
    )
    events = []

    harness.run("read a.txt", on_event=events.append)

    assert [(e["type"], e.get("message", {}).get("role")) for e in events] == [
        ("start", None),
        ("message", "system"),
        ("message", "user"),
        ("request", None),
        ("reply", None),
        ("message", "assistant"),
        ("call", None),
        ("tool", None),
        ("message", "tool"),
        ("request", None),
        ("reply", None),
        ("message", "assistant"),
        ("end", None),
    ]
    reply, tool, end = events[4], events[7], events[-1]
    assert reply["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cached_tokens": None,
        "reasoning_tokens": None,  # this server says nothing of them
    }
    assert reply["step"] == 1 and reply["tool_calls"] == 1
    assert reply["seconds"] >= 0.3  # the reply's time covers the server's delay
    assert {k: tool[k] for k in ("step", "name", "arguments", "result", "error")} == {
        "step": 1,
        "name": "read_file",
        "arguments": '{"path": "a.txt"}',
        "result": "A",
        "error": False,
    }
    assert end == {
        "type": "end",
        "reason": "answer",
        "answer": "A it is",
        "steps": 2,
        "tool_calls": 1,
        "tokens_in": 110,
        "tokens_out": 25,
        "tokens_cached": None,
        "tokens_reasoning": None,
        "seconds": end["seconds"],
    }
    assert 0.3 <= end["seconds"] < 10


def test_each_call_and_tool_event_names_the_call_its_result_answers(model):
    model.queue(calls(("list_dir", {}), ("list_dir", {})), answer("twice"))
    events, history = [], []

    harness.run("look twice", on_event=events.append, messages=history)

    ids = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert ids == ["call_1", "call_2"]
    assert [(e["type"], e["id"]) for e in events if e["type"] in ("call", "tool")] == [
        ("call", "call_1"),
        ("tool", "call_1"),
        ("call", "call_2"),
        ("tool", "call_2"),
    ]


def test_the_summary_line_adds_up_the_scripted_usage(model, cli, tmp_path):
    model.queue(
        calls(("list_dir", {}), usage={"prompt_tokens": 300, "completion_tokens": 50}),
        calls(("list_dir", {"path": "."}), usage={"prompt_tokens": 150, "completion_tokens": 20}),
        answer("two files", usage={"prompt_tokens": 67, "completion_tokens": 13}),
    )

    result = cli("list files", "--transcript", "mine.jsonl")

    assert re.fullmatch(
        r"done: 3 steps, 2 tool calls, 517 tokens in, 83 out, model \d+\.\d s, tools \d+\.\d s, "
        r"transcript mine\.jsonl",
        result.stderr.splitlines()[-1],
    )
    assert (tmp_path / "mine.jsonl").exists() and not runs_of(tmp_path).exists()


def test_quiet_prints_only_the_answer_and_no_transcript_writes_none(model, cli, tmp_path):
    model.queue(calls(("list_dir", {})), answer("quiet answer"))

    result = cli("x", "--quiet", "--no-transcript")

    assert (result.returncode, result.stdout, result.stderr) == (0, "quiet answer\n", "")
    assert not runs_of(tmp_path).exists()


def test_usage_with_null_token_counts_still_gives_a_summary(model, cli):
    reply = answer("fine")
    reply["body"]["usage"] = {
        "prompt_tokens": None,
        "completion_tokens": None,
        "total_tokens": None,
    }
    model.queue(reply)

    result = cli("x", "--no-transcript")

    assert result.returncode == 0 and result.stderr.startswith(
        "done: 1 step, 0 tool calls, 0 tokens in, 0 out"
    )


def test_tool_events_flag_errors_and_denials(model, cli, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal: what asks is denied
    (tmp_path / "a.txt").write_text("A")
    model.queue(
        calls(
            ("read_file", {"path": "a.txt"}),
            ("read_file", {"path": "missing.txt"}),
            ("run_shell", {"command": "rm a.txt"}),
        ),
        answer("ok"),
    )

    assert cli("go", "--transcript", "t.jsonl").returncode == 0

    tool_events = [e for e in read_events(tmp_path / "t.jsonl") if e["type"] == "tool"]
    assert [(e["result"][:7], e["error"]) for e in tool_events] == [
        ("A", False),
        ("error: ", True),
        ("denied:", True),
    ]
