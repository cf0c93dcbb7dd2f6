"""The transcript as the person's data: exactly the messages sent, one run writes it at a time,
--continue restores only what the API takes back (and says which line is not), a full disk, odd
names and characters or a planted link do not break it, and a conversation continued in another
workspace is told where it now works."""

import codecs
import dataclasses
import json
import os
import re
import resource
import stat
import subprocess
import sys
import threading
import uuid

import pytest
from fake_model import answer, calls, completion
from helpers import (
    assert_well_formed,
    limited,
    odd_names,
    only_transcript,
    posix_only,
    run_script,
    runs_of,
    wait_for,
)

import harness
from plainagent.core import settings
from plainagent.runs import resume, transcript


def event_lines(*events: object) -> str:
    return "".join(
        (e if isinstance(e, str) else json.dumps(e, ensure_ascii=False)) + "\n" for e in events
    )


def message(role: str, content: object = "text", **fields) -> dict:
    return {"type": "message", "message": {"role": role, "content": content, **fields}}


CALL = {"id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
# A valid transcript of one turn: system, user, a call, its result, the answer (lines 1-5).
VALID = [
    message("system", "sys"),
    message("user", "hi"),
    message("assistant", None, tool_calls=[CALL]),
    message("tool", "a.txt  1 bytes", tool_call_id="call_1"),
    message("assistant", "one file"),
]


# 1. One writer per transcript.


@posix_only
def test_a_second_run_on_a_transcript_in_use_exits_2_before_any_request_the_first_stays_continuable(
    model, tmp_path, start_cli
):
    # the first run's model reply waits here until the second run has been refused
    gate = threading.Event()
    model.router = lambda body: answer("first answer") if gate.wait(60) else None
    first = start_cli(tmp_path, "first task")
    wait_for(lambda: len(model.requests) == 1)
    [path] = runs_of(tmp_path).glob("*.jsonl")

    second = run_script("harness.py", "--continue", "second task", cwd=tmp_path)
    requests_meanwhile = len(model.requests)
    gate.set()
    stdout, stderr = first.communicate(timeout=30)
    model.router = None
    model.queue(answer("third answer"))
    third = run_script("harness.py", "--continue", "third task", cwd=tmp_path)

    assert (second.returncode, second.stdout) == (2, "")
    assert second.stderr == (
        f"error: {path.as_posix()} is in use by another run; wait for that run to end, or "
        "start a new run without --continue\n"
    )
    assert requests_meanwhile == 1
    assert first.returncode == 0 and stdout == "first answer\n", stderr
    assert third.returncode == 0 and third.stdout == "third answer\n", third.stderr
    assert [m["content"] for m in model.messages(1)[1:]] == [
        "first task",
        "first answer",
        "third task",
    ]
    assert "second task" not in path.read_text()
    assert [json.loads(line)["type"] for line in path.read_text().splitlines()].count("start") == 2


@posix_only
def test_a_transcript_named_by_another_run_in_use_is_refused_with_what_to_do(
    model, tmp_path, start_cli
):
    gate = threading.Event()
    model.router = lambda body: answer("done") if gate.wait(60) else None
    first = start_cli(tmp_path, "first", "--transcript", "t.jsonl")
    wait_for(lambda: len(model.requests) == 1)

    second = run_script("harness.py", "second", "--transcript", "t.jsonl", cwd=tmp_path)
    gate.set()
    first.communicate(timeout=30)

    assert second.returncode == 2
    assert second.stderr == (
        "error: t.jsonl is in use by another run; wait for that run to end, or start a new run "
        "with another --transcript PATH\n"
    )
    assert len(model.requests) == 1
    assert resume.restore(tmp_path / "t.jsonl")[0][-1] == {"role": "assistant", "content": "done"}


# 2. --continue restores only what can be sent.


@pytest.mark.parametrize(
    "line, damage, reason",
    [
        (
            4,
            message("tool", None, tool_call_id="call_1"),
            "holds a tool message whose content is null, not text",
        ),
        (2, message("user", 42), "holds a user message whose content is 42, not text"),
        (
            2,
            message("user", [{"type": "image_url", "image_url": {"url": "x"}}]),
            "holds a user message whose content",
        ),
        (
            2,
            message("robot", "beep"),
            'holds a message of role "robot"; the roles are system, user, assistant, tool',
        ),
        (
            6,
            {"type": "elided", "index": 0, "content": "[elided]"},
            "shortens message 0, which is not a tool result",
        ),
        (
            6,
            {"type": "elided", "index": 1, "content": "[elided]"},
            "shortens message 1, which is not a tool result",
        ),
        (
            6,
            {"type": "elided", "index": 3, "content": 7},
            "shortens a tool result to 7, which is not text",
        ),
        (
            6,
            {"type": "elided", "index": True, "content": "[elided]"},
            "shortens message true, which is not a tool",
        ),
        (
            6,
            {"type": "dropped", "index": 2, "count": 10**6},
            "drops 1000000 message(s) at 2, which is not one old",
        ),
        (6, {"type": "dropped", "index": 2, "count": -3}, "drops -3 message(s) at 2"),
        (6, {"type": "dropped", "index": 2, "count": 0}, "drops 0 message(s) at 2"),
        # would leave its result alone
        (
            6,
            {"type": "dropped", "index": 2, "count": 1},
            "drops 1 message(s) at 2",
        ),
        (6, {"type": "dropped", "index": 0, "count": 1}, "drops 1 message(s) at 0"),
        (
            4,
            message("tool", "x", tool_call_id="call_9"),
            'holds a tool result for call "call_9", which answers no call',
        ),
        (
            6,
            message("tool", "again", tool_call_id="call_1"),
            'holds a tool result for call "call_1", which answers no',
        ),
        (
            2,
            {"type": "message", "message": "hello"},
            'holds a message that is not a JSON object: "hello"',
        ),
        (2, {"type": "message"}, "holds a message that is not a JSON object: null"),
        (
            5,
            message("assistant", None),
            "holds an assistant message with neither content nor tool calls",
        ),
        (
            3,
            message("assistant", None, tool_calls=[{**CALL, "id": ""}]),
            "holds a tool call the API does not take",
        ),
        (
            3,
            message("assistant", None, tool_calls=[{k: v for k, v in CALL.items() if k != "id"}]),
            "holds a tool call",
        ),
        (
            3,
            message(
                "assistant",
                None,
                tool_calls=[{**CALL, "function": {"name": "list_dir", "arguments": {}}}],
            ),
            "holds a tool call the API does not take",
        ),
        (
            3,
            message("assistant", None, tool_calls=[]),
            "holds tool_calls [], which is not a list of calls",
        ),
        (
            5,
            message("assistant", "x", reasoning="hmm"),
            "holds an assistant message with field(s) the API does not take: reasoning",
        ),
        (
            2,
            message("system", "second system prompt"),
            "holds a system message after the first message",
        ),
        (
            1,
            message("user", "no system prompt first"),
            "starts the conversation with a user message",
        ),
        (2, message("user", "hi", name=5), "holds a user message whose name is not text"),
        (2, [1, 2], 'is not an event of a transcript (a JSON object with a "type")'),
        (6, "[" * 100_000, "is nested too deeply"),  # the last line, yet not a half-written one
        (2, {"type": 3}, "is not an event of a transcript"),
        (
            2,
            {"type": "system", "message": {"role": "user", "content": "x"}},
            "replaces the system prompt, but holds no",
        ),
    ],
)
def test_continue_refuses_a_hand_edit_the_api_would_not_take_naming_its_line(
    model, cli, tmp_path, line, damage, reason
):
    events = [*VALID]
    events.insert(line - 1, damage) if line == 6 else events.__setitem__(line - 1, damage)
    (tmp_path / "t.jsonl").write_text(event_lines(*events))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 2
    [said] = result.stderr.splitlines()
    assert said.startswith(f"error: cannot continue from t.jsonl: line {line} {reason}"), said
    assert said.endswith("; start a new run without --continue")
    assert model.requests == []


def test_the_valid_transcript_those_edits_start_from_continues(model, cli, tmp_path):
    (tmp_path / "t.jsonl").write_text(
        event_lines(*VALID, {"type": "dropped", "index": 2, "count": 2})
    )
    model.queue(answer("ok"))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    assert model.messages(0) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "one file"},
        {"role": "user", "content": "more"},
    ]


# str.splitlines() breaks a line at each of these
ODD = "a\u2028b\u2029c\u0085d\x1ce\x1df\x1eg\x0bh\x0ci\r\nj"


def test_blank_lines_a_bom_and_line_separators_inside_strings_continue(model, cli, tmp_path):
    text = event_lines(
        VALID[0],
        "",
        message("user", ODD),
        "   ",
        VALID[2],
        VALID[3],
        "\r",
        message("assistant", [{"type": "text", "text": "one "}, {"type": "text", "text": "file"}]),
    )
    (tmp_path / "t.jsonl").write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    model.queue(answer("ok"))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    assert model.messages(0) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": ODD},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt  1 bytes"},
        {"role": "assistant", "content": "one file"},  # text parts, as their text
        {"role": "user", "content": "more"},
    ]


def test_a_run_whose_answer_holds_line_separators_is_written_raw_and_continues(model, tmp_path):
    model.queue(calls(("read_file", {"path": ODD})), answer(ODD), answer("again"))

    first = run_script("harness.py", "say it", "--transcript", "t.jsonl", cwd=tmp_path)
    second = run_script("harness.py", "--continue", "more", "--transcript", "t.jsonl", cwd=tmp_path)

    assert first.returncode == 0 and second.returncode == 0, second.stderr
    # the transcript holds it as it is
    assert "\u2028" in (tmp_path / "t.jsonl").read_text(encoding="utf-8")
    assert model.messages(2) == model.messages(1) + [
        {"role": "assistant", "content": ODD},
        {"role": "user", "content": "more"},
    ]
    assert_well_formed(model.messages(2))


def test_a_half_written_line_before_blank_lines_is_still_the_last_line(model, cli, tmp_path):
    (tmp_path / "t.jsonl").write_text(event_lines(*VALID) + '{"type": "mess\n\n  \n')
    model.queue(answer("ok"))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(
        "note: the last line of t.jsonl was half-written and is skipped\n"
    )


def test_a_half_written_line_followed_by_a_run_start_is_skipped_as_cut_short(model, cli, tmp_path):
    # Written before there was a mended mark: a killed run's half line, then the start
    # of the run that continued it.
    start = {"type": "start", "task": "again", "workspace": str(tmp_path.resolve())}
    (tmp_path / "t.jsonl").write_text(
        event_lines(
            *VALID, '{"type": "mess', start, message("user", "again"), message("assistant", "two")
        )
    )
    model.queue(answer("ok"))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("note: line 6 of t.jsonl was half-written and is skipped\n")
    assert [m["content"] for m in model.messages(0)][-3:] == ["again", "two", "more"]


# 3. --continue in another workspace.


def test_continuing_in_another_workspace_gives_the_model_the_new_folder_once_and_for_good(
    model, tmp_path
):
    (tmp_path / "old").mkdir(), (tmp_path / "new").mkdir()
    model.queue(answer("one"), answer("two"), answer("three"), answer("four"))
    old, new = str((tmp_path / "old").resolve()), str((tmp_path / "new").resolve())

    first = run_script("harness.py", "first", "--workspace", "old", cwd=tmp_path)
    # Another workspace's run is named: each workspace's --continue takes its own runs.
    named = ("--transcript", str(only_transcript(tmp_path / "old")))
    moved = run_script(
        "harness.py", "--continue", "second", "--workspace", "new", *named, cwd=tmp_path
    )
    stayed = run_script(
        "harness.py", "--continue", "third", "--workspace", "new", *named, cwd=tmp_path
    )
    back = run_script(
        "harness.py", "--continue", "fourth", "--workspace", "new", *named, cwd=tmp_path
    )

    assert [r.returncode for r in (first, moved, stayed, back)] == [0, 0, 0, 0], moved.stderr
    system = [model.messages(i)[0]["content"] for i in range(4)]
    assert f"working in the folder {old} " in system[0]
    assert f"working in the folder {new} " in system[1] and old not in system[1]
    assert system[2] == system[3] == system[1]  # recorded in the transcript: said once, kept after
    assert model.messages(1)[1:] == model.messages(0)[1:] + [
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second"},
    ]
    assert (
        f"note: this conversation worked in {old}; its system prompt now names {new}"
        in moved.stderr
    )
    assert "note:" not in stayed.stderr + back.stderr


def test_an_event_is_redacted_string_by_string_only_when_its_line_may_hold_a_key(
    tmp_path, monkeypatch
):
    key, short = "gsk_" + "0123456789abcdefghijABCDEFGHIJklmnopqrst", 'sh"rt\\k\ney'
    real, walks = transcript.redacted, []
    monkeypatch.setattr(
        transcript, "redacted", lambda value, redact: walks.append(value) or real(value, redact)
    )
    config = dataclasses.replace(settings.resolve(require_key=False), secrets=(key, short))
    path = tmp_path / "t.jsonl"
    with open(path, "a", encoding="utf-8") as file:
        write = transcript.writer(file, path, config)
        write(
            {
                "type": "reply",
                "step": 1,
                "reasoning": "nothing secret here",
                "usage": {"prompt_tokens": 1},
            }
        )
        assert walks == []  # no key in it: written as it is, without redacting each string
        for text in (f"line\n{key}", f"a{key[7:19]}b", f"\t{short}\n", f"{{{short}}}"):
            write({"type": "message", "message": {"role": "user", "content": text}})
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["message"]["content"] for line in lines[1:]] == [
        "line\n[redacted API key]",
        "a[redacted API key]b",
        "\t[redacted API key]\n",
        "{[redacted API key]}",
    ]
    assert walks


def test_continuing_in_the_same_workspace_keeps_the_system_prompt_as_it_was_sent(model, tmp_path):
    model.queue(answer("one"), answer("two"))

    run_script("harness.py", "first", cwd=tmp_path)
    (tmp_path / "AGENTS.md").write_text("New instructions.")  # a prompt built now would differ
    second = run_script("harness.py", "--continue", "second", cwd=tmp_path)

    assert second.returncode == 0 and "note:" not in second.stderr
    assert model.messages(1)[0] == model.messages(0)[0]


# 5. Two reply shapes.


def test_an_answer_given_as_text_parts_is_printed_as_its_text(model, cli):
    parts = [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}]
    model.queue(
        {"body": completion({"content": parts})}, {"body": completion({"content": [{"type": "x"}]})}
    )

    result = cli("greet", "--no-transcript")
    other = cli("greet", "--no-transcript")

    assert (result.returncode, result.stdout) == (0, "hello there\n")
    assert other.stdout == '[{"type": "x"}]\n'  # not text parts: still shown, as JSON


@pytest.mark.parametrize("given", [{}, {"id": ""}, {"id": None}])
def test_a_tool_call_without_an_id_gets_one_that_its_result_answers(model, tmp_path, given):
    call = {**given, "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
    model.queue(
        {"body": completion({"content": None, "tool_calls": [call, {**call}]}, "tool_calls")},
        answer("listed"),
    )

    result = run_script("harness.py", "list", "--transcript", "t.jsonl", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    sent = model.messages(1)
    ids = [c["id"] for c in sent[2]["tool_calls"]]
    assert all(i.startswith("call_") and len(i) > 5 for i in ids) and len(set(ids)) == 2
    assert [m["tool_call_id"] for m in sent[3:5]] == ids
    assert resume.restore(tmp_path / "t.jsonl")[0][:5] == sent[:5]


def test_the_live_history_of_a_run_is_what_restore_reads_back(model, tmp_path):
    model.queue(calls(("list_dir", {})), answer("done"))
    events = []
    harness.run("look", on_event=events.append)
    conversation, pending = [], []

    for event in events:
        resume.apply(event, conversation, pending)

    assert conversation == model.messages(1) + [{"role": "assistant", "content": "done"}]


# 6. Writing it: a transcript that cannot be created or written, two runs in one second, damage, big
# arguments, odd bytes.


@posix_only
@pytest.mark.parametrize(
    "setup, args, reason",
    [
        ("the runs folder is a file", (), " is not a folder; "),
        ("a folder", ("--transcript", "."), ".: it is not a regular file; "),
        (
            "a file the kernel will not let us write",
            ("--transcript", "/proc/version"),
            "/proc/version: ",
        ),
        (
            "a path under a file",
            ("--transcript", "a.txt/t.jsonl"),
            "a.txt/t.jsonl: a.txt is not a folder; ",
        ),
        ("a FIFO nobody reads", ("--transcript", "fifo"), "fifo: it is not a regular file; "),
    ],
)
def test_a_transcript_that_cannot_be_created_is_one_line_and_exit_2_before_any_request(
    model, tmp_path, setup, args, reason
):
    if setup == "the runs folder is a file":
        runs_of(tmp_path).parent.mkdir(parents=True)
    (runs_of(tmp_path) if setup == "the runs folder is a file" else tmp_path / "a.txt").write_text(
        "x"
    )
    os.mkfifo(tmp_path / "fifo")

    result = run_script("harness.py", "hello", *args, cwd=tmp_path, timeout=30)

    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: cannot create the transcript ") and reason in line
    assert line.endswith("choose another file with --transcript PATH, or run with --no-transcript")
    assert model.requests == []


@posix_only
def test_continue_from_a_fifo_is_refused_instead_of_waiting_forever(model, tmp_path):
    os.mkfifo(tmp_path / "fifo")

    result = run_script(
        "harness.py", "--continue", "more", "--transcript", "fifo", cwd=tmp_path, timeout=30
    )

    assert result.returncode == 2
    assert result.stderr.startswith("error: cannot continue from fifo: ")
    assert len(result.stderr.splitlines()) == 1


def on_a_full_disk(size: int, *args: str, cwd) -> subprocess.CompletedProcess:
    """Run the agent as a child that may write files of at most `size` bytes: a write
    crossing the limit is cut short, and the next fails with EFBIG (Python ignores SIGXFSZ),
    as on a disk that fills up."""
    return run_script("harness.py", *args, cwd=cwd, **limited(resource.RLIMIT_FSIZE, size))


@posix_only
def test_a_disk_full_in_the_middle_of_a_run_is_one_line_and_leaves_no_line_cut(model, tmp_path):
    (tmp_path / "big.txt").write_text("b" * 3000)
    model.queue(calls(("read_file", {"path": "big.txt"})), answer("read it"), answer("and more"))

    full = on_a_full_disk(3000, "read big.txt", "--transcript", "t.jsonl", cwd=tmp_path)
    lines, requests = (tmp_path / "t.jsonl").read_bytes().split(b"\n"), len(model.requests)
    first = run_script("harness.py", "--continue", "go on", "--transcript", "t.jsonl", cwd=tmp_path)
    second = run_script("harness.py", "--continue", "more", "--transcript", "t.jsonl", cwd=tmp_path)

    assert (
        full.returncode == 1 and "Traceback" not in full.stderr and "Exception" not in full.stderr
    )
    assert [line for line in full.stderr.splitlines() if not line.startswith("[1] read_file")] == [
        "error: cannot write the transcript t.jsonl: File too large; free some disk space, "
        "or run with --no-transcript"
    ]
    assert requests == 1  # the run stopped when it could not keep its record
    assert lines[-1] == b""  # the line that did not fit was taken back whole, not left cut
    assert all(json.loads(line) for line in lines[:-1])
    # the result's event, 3000 bytes, did not fit, and is not there
    assert json.loads(lines[-2])["type"] == "call"
    assert first.returncode == 0 and first.stdout == "read it\n", first.stderr
    assert "half-written" not in first.stderr
    assert second.returncode == 0 and second.stdout == "and more\n", second.stderr
    assert_well_formed(model.messages(2))
    assert model.messages(2)[: len(model.messages(1))] == model.messages(1)


@posix_only
@pytest.mark.parametrize("room", [0, 1, 40])
def test_a_half_line_unmendable_on_a_full_disk_is_left_as_it_was_and_continues_once_there_is_room(
    model, tmp_path, room
):
    # The mend (a line end, then the mended mark) did not fit: cut after `room` bytes,
    # it left the half line followed by half a mark, and every --continue after that
    # stopped at "line 6 is not JSON".
    before = (event_lines(*VALID) + '{"type": "message", "message": {"role": "us').encode()
    (tmp_path / "t.jsonl").write_bytes(before)

    full = on_a_full_disk(
        len(before) + room, "--continue", "more", "--transcript", "t.jsonl", cwd=tmp_path
    )
    after = (tmp_path / "t.jsonl").read_bytes()
    model.queue(answer("first"), answer("second"))
    first = run_script("harness.py", "--continue", "more", "--transcript", "t.jsonl", cwd=tmp_path)
    second = run_script(
        "harness.py", "--continue", "again", "--transcript", "t.jsonl", cwd=tmp_path
    )

    assert (full.returncode, full.stdout) == (2, "")
    assert full.stderr == (
        "error: cannot mend the half-written last line of t.jsonl: File too large; it is left "
        "as it was: free some disk space, or run with --no-transcript\n"
    )
    assert after == before
    assert (first.returncode, first.stdout) == (0, "first\n"), first.stderr
    assert first.stderr.startswith(
        "note: the last line of t.jsonl was half-written and is skipped\n"
    )
    assert (second.returncode, second.stdout) == (0, "second\n"), second.stderr
    assert [m["content"] for m in model.messages(1)[-4:]] == ["one file", "more", "first", "again"]


@pytest.mark.skipif(
    not os.path.exists("/dev/full") or not stat.S_ISCHR(os.stat("/dev/full").st_mode),
    reason="no /dev/full device here",
)
def test_a_transcript_on_a_device_that_is_always_full_is_one_line_and_exit_1(model, tmp_path):
    result = run_script("harness.py", "hello", "--transcript", "/dev/full", cwd=tmp_path)

    assert result.returncode == 1
    assert result.stderr == (
        "error: cannot write the transcript /dev/full: No space left on device; "
        "free some disk space, or run with --no-transcript\n"
    )
    assert model.requests == []
    # the run never removes or replaces what it was given
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@posix_only
def test_runs_started_in_the_same_second_get_two_files_readable_by_the_owner_only(tmp_path):
    runs = tmp_path / "state" / "plainagent" / "project-0123456789"
    path = transcript.new_path("the same task", runs)

    first, first_path, _ = transcript.open_new(path, append=False, runs=runs)
    second, second_path, _ = transcript.open_new(path, append=False, runs=runs)
    first.close(), second.close()

    assert first_path != second_path and first_path.exists() and second_path.exists()
    assert {stat.S_IMODE(p.stat().st_mode) for p in (runs, runs.parent, runs.parent.parent)} == {
        0o700
    }
    assert {stat.S_IMODE(p.stat().st_mode) for p in (first_path, second_path)} == {0o600}


SYSTEM = {"type": "message", "message": {"role": "system", "content": "sys"}}
USER = {"type": "message", "message": {"role": "user", "content": "hi"}}


@pytest.mark.parametrize(
    "damage",
    [
        {"type": "elided", "index": 7, "content": "[elided]"},
        {"type": "elided", "index": -1, "content": "[elided]"},
        {"type": "dropped", "index": 5, "count": 1},
        {"type": "elided", "index": "1", "content": "[elided]"},
        {"type": "message", "message": "not a message"},
        {
            "type": "message",
            "message": {"role": "assistant", "content": None, "tool_calls": "not a list"},
        },
        [1, 2],
    ],
)
def test_continue_from_a_damaged_transcript_is_exit_2_cannot_continue(model, cli, tmp_path, damage):
    (tmp_path / "t.jsonl").write_text(event_lines(SYSTEM, USER, damage, USER))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: cannot continue from t.jsonl: line 3 ")
    assert model.requests == []


def test_a_5_mb_write_shows_a_short_progress_line_and_stores_its_arguments_once(model, tmp_path):
    marker = f"marker-{uuid.uuid4().hex}"
    content = marker + "x" * 5_000_000
    model.queue(calls(("write_file", {"path": "big.txt", "content": content})), answer("written"))

    result = run_script("harness.py", "write it", "--yes", "--transcript", "t.jsonl", cwd=tmp_path)

    assert result.returncode == 0, result.stderr[:1000]
    [shown] = [line for line in result.stderr.splitlines() if "write_file" in line]
    assert shown.startswith("[1] write_file ") and len(shown) <= 300
    assert (tmp_path / "big.txt").read_text() == content
    assert (tmp_path / "t.jsonl").read_text().count(marker) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="file names that are not UTF-8")
def test_a_run_meeting_a_non_utf8_name_writes_a_transcript_of_strict_utf8_json(model, tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"d\xe9j\xe0 vu\n")
    model.queue(
        calls(("list_dir", {})), calls(("read_file", {"path": "caf\\xe9.txt"})), answer("deja vu")
    )

    result = run_script(
        "harness.py", "read it", "--transcript", str(tmp_path / "t.jsonl"), cwd=tmp_path / "ws"
    )

    assert result.returncode == 0, result.stderr
    # strict: no undecodable byte
    lines = (tmp_path / "t.jsonl").read_bytes().decode("utf-8").splitlines()
    tools = [json.loads(line)["message"]["content"] for line in lines if '"role": "tool"' in line]
    assert tools == ["caf\\xe9.txt  8 bytes", "d\ufffdj\ufffd vu\n"]


# 7. What it holds and what --continue sends back; links planted in the runs folder.


def test_the_transcript_holds_the_exact_messages_sent(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls(("read_file", {"path": "a.txt"})), answer("A it is"))

    result = run_script("harness.py", "Read a.txt please", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    path = only_transcript(tmp_path)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-read-a-txt-please\.jsonl", path.name)
    assert resume.restore(path)[0] == model.messages(1) + [
        {"role": "assistant", "content": "A it is"}
    ]
    assert result.stderr.splitlines()[-1].endswith(f"transcript {path.as_posix()}")


def test_continue_sends_the_earlier_messages_then_the_follow_up(model, tmp_path):
    model.queue(calls(("list_dir", {})), answer("one file"), answer("and that is all"))
    first = run_script("harness.py", "what is here?", cwd=tmp_path)
    path = only_transcript(tmp_path)

    second = run_script("harness.py", "--continue", "and now?", cwd=tmp_path)

    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert second.stdout == "and that is all\n"
    assert model.messages(2) == model.messages(1) + [
        {"role": "assistant", "content": "one file"},
        {"role": "user", "content": "and now?"},
    ]
    assert only_transcript(tmp_path) == path  # appended to the same file
    assert resume.restore(path)[0] == model.messages(2) + [
        {"role": "assistant", "content": "and that is all"}
    ]


def test_continue_takes_the_transcript_named_by_the_flag(model, cli, tmp_path):
    model.queue(answer("about cats"), answer("about dogs"), answer("more about cats"))
    cli("tell me about cats", "--transcript", "cats.jsonl")
    cli("tell me about dogs")  # the newest run of the workspace now

    result = cli("--continue", "more", "--transcript", "cats.jsonl")

    assert result.stdout == "more about cats\n"
    assert [m["content"] for m in model.messages(2)[1:]] == [
        "tell me about cats",
        "about cats",
        "more",
    ]


def test_continue_from_a_script_with_messages(model):
    model.queue(answer("first"), answer("second"))
    events = []
    harness.run("one", on_event=events.append)
    earlier = [e["message"] for e in events if e["type"] == "message"]

    sent = list(earlier)

    assert harness.run("two", messages=earlier) == "second"

    assert model.messages(1) == sent + [{"role": "user", "content": "two"}]


# an empty one is none
@pytest.mark.parametrize(
    "content, said",
    [("{not json\n", "continue from {runs}/broken.jsonl: "), ("", "continue: no run of ")],
)
def test_continue_on_a_broken_transcript_is_one_line_and_exit_2(
    model, cli, tmp_path, content, said
):
    runs_of(tmp_path).mkdir(parents=True)
    (runs_of(tmp_path) / "broken.jsonl").write_text(content)

    result = cli("--continue", "and now?")

    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"error: cannot {said.format(runs=runs_of(tmp_path))}")
    assert model.requests == []


def test_continue_with_no_transcript_yet_is_exit_2(model, cli, tmp_path):
    result = cli("--continue", "and now?")

    assert result.returncode == 2
    assert result.stderr == (
        f"error: cannot continue: no run of {tmp_path.resolve()} yet (its runs are kept in "
        f"{runs_of(tmp_path)}); start a new run without --continue\n"
    )


def test_a_link_planted_as_the_workspaces_runs_folder_stops_the_transcript(model, cli, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    runs_of(tmp_path).parent.mkdir(parents=True)
    os.symlink(elsewhere, runs_of(tmp_path))

    result = cli("x")

    assert result.returncode == 2
    assert result.stderr.startswith(f"error: cannot create the transcript {runs_of(tmp_path)}/")
    assert (
        f"{runs_of(tmp_path)} is a link, not a folder" in result.stderr
        and list(elsewhere.iterdir()) == []
    )
    assert model.requests == []


@pytest.mark.parametrize("args", [("x",), ("--undo",)])
def test_a_runs_link_to_itself_is_one_line_not_a_traceback(model, cli, tmp_path, args):
    # A runs/ an older version kept, left a loop of links; Python 3.11's resolve() raised
    # RuntimeError on it when the settings were read, at every start in that folder. And the
    # workspace's runs folder a loop too.
    os.symlink("runs", tmp_path / "runs")
    runs_of(tmp_path).parent.mkdir(parents=True)
    os.symlink(runs_of(tmp_path), runs_of(tmp_path))

    result = cli(*args)

    assert (
        result.returncode == 2
        and result.stderr.count("\n") == 1
        and result.stderr.startswith("error: ")
    )
    assert model.requests == []


def test_continue_from_a_runs_folder_with_a_dangling_link_or_deep_json_is_one_line(
    model, cli, tmp_path
):
    runs_of(tmp_path).mkdir(parents=True)
    (runs_of(tmp_path) / "deep.jsonl").write_text("[" * 100_000 + "\n")
    assert cli("--continue", "x").returncode == 2
    os.symlink(tmp_path / "nowhere", runs_of(tmp_path) / "zz.jsonl")

    result = cli("--continue", "x")

    assert result.returncode == 2 and result.stderr.startswith("error: cannot continue from ")
    assert len(result.stderr.splitlines()) == 1 and model.requests == []


@pytest.mark.parametrize(
    "damage, says",
    [
        (
            {"type": "dropped", "index": 2, "count": 1},
            "line 3 drops 1 message(s) at 2, which is not one old turn",
        ),
        # half-written, but no run started after it
        (
            '{"type": "message", "mess',
            "line 3 is not JSON",
        ),
    ],
)
def test_continue_refuses_a_transcript_damaged_just_past_its_end_or_in_its_middle(
    model, cli, tmp_path, damage, says
):
    (tmp_path / "t.jsonl").write_text(event_lines(SYSTEM, USER, damage, USER))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: cannot continue from t.jsonl: {says}")
    assert model.requests == []


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_continue_from_a_link_in_runs_appends_nothing_to_the_file_it_points_to(
    model, cli, tmp_path
):
    model.queue(answer("first"))
    outside = tmp_path / "elsewhere" / "t.jsonl"
    outside.parent.mkdir()
    assert cli("first", "--transcript", str(outside)).returncode == 0
    before = outside.read_bytes()
    runs_of(tmp_path).mkdir(parents=True, mode=0o700)
    os.symlink(outside, runs_of(tmp_path) / "9999-planted.jsonl")

    result = cli("--continue", "more")

    assert result.returncode == 2 and "cannot create the transcript" in result.stderr
    assert outside.read_bytes() == before
    assert len(model.requests) == 1  # the follow-up was never sent


@odd_names
def test_a_run_meeting_odd_names_completes_and_can_be_continued(model, tmp_path):
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"d\xe9j\xe0 vu\n")
    # JSON can carry a lone surrogate; the error naming that path must still be valid UTF-8
    model.queue(
        calls(("list_dir", {})),
        calls(("read_file", {"path": "caf\\xe9.txt"}), ("read_file", '{"path": "../\\udce9"}')),
        answer("it says deja vu"),
        answer("still deja vu"),
    )

    first = run_script("harness.py", "what is in the file?", cwd=tmp_path)
    second = run_script("harness.py", "--continue", "and now?", cwd=tmp_path)

    assert (first.returncode, first.stdout) == (0, "it says deja vu\n"), first.stderr
    assert (second.returncode, second.stdout) == (0, "still deja vu\n"), second.stderr
    assert model.messages(1)[-1]["content"] == "caf\\xe9.txt  8 bytes"
    read, refused = [m["content"] for m in model.messages(2)[-2:]]
    assert read == "d\ufffdj\ufffd vu\n"
    assert refused.startswith("error: PermissionError: ../\\udce9 is outside the workspace ")
    assert model.messages(3)[:-2] == model.messages(2)


def test_continue_sends_the_elided_stub_not_the_full_result(model, cli, tmp_path, monkeypatch):
    for name in "ab":
        (tmp_path / f"{name}.txt").write_text(name * 3000)
    model.queue(
        calls(("read_file", {"path": "a.txt"})),
        calls(("read_file", {"path": "b.txt"})),
        answer("read"),
        answer("more"),
    )
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "1000")
    assert cli("read both").returncode == 0
    monkeypatch.delenv("AGENT_CONTEXT_BUDGET")  # the full text would fit the default budget

    assert cli("--continue", "and now?").returncode == 0

    # the shortening is re-applied
    assert all(m.get("content") != "a" * 3000 for m in model.messages(3))
    assert model.messages(3) == model.messages(2) + [
        {"role": "assistant", "content": "read"},
        {"role": "user", "content": "and now?"},
    ]


def test_continue_refuses_dropping_a_turn_whose_calls_are_not_all_answered(model, cli, tmp_path):
    # The second call's 'interrupted' result was added after its call was dropped: a tool result
    # answering nothing before it, which the API refuses.
    second = {**CALL, "id": "call_2"}
    (tmp_path / "t.jsonl").write_text(
        event_lines(
            *VALID[:2],
            message("assistant", None, tool_calls=[CALL, second]),
            VALID[3],
            {"type": "dropped", "index": 2, "count": 2},
        )
    )

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 2, (
        model.requests[-1]["messages"] if model.requests else result.stderr
    )
    assert result.stderr.startswith(
        "error: cannot continue from t.jsonl: line 5 drops 2 message(s) at 2, which "
        "is not one old turn"
    )
    assert model.requests == []


@posix_only
def test_a_fifo_swapped_in_for_the_transcript_while_it_is_taken_does_not_block_the_line_end_check(
    tmp_path,
):
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "start"}')  # ends mid-line: a run killed while writing
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    assert transcript.ends_mid_line(fd, path)
    path.rename(tmp_path / "old.jsonl")
    os.mkfifo(path)  # what a command could put under the name between the open and the check
    answers = []
    checking = threading.Thread(
        target=lambda: answers.append(transcript.ends_mid_line(fd, path)), daemon=True
    )

    checking.start()
    checking.join(30)  # a guard against hanging on the FIFO, not a speed check

    os.close(fd)
    assert answers == [False]  # not the file taken: nothing to mend there


def test_continue_never_sends_the_key_a_command_wrote_into_the_transcript(model, cli, tmp_path):
    # The writer redacts every event; a line written since by something else (a
    # command given runs/) is not it.
    (tmp_path / "t.jsonl").write_text(
        event_lines(
            message("system", "sys"),
            message("user", "key: test-key-not-real"),
            message("assistant", "noted test-key-not-real"),
        )
    )
    model.queue(answer("fine"))

    assert cli("--continue", "more", "--transcript", "t.jsonl").stdout == "fine\n"

    assert "test-key-not-real" not in json.dumps(model.requests[0]["body"])
    assert model.messages(0)[1] == {"role": "user", "content": "key: [redacted API key]"}


def test_continue_from_a_transcript_too_large_to_read_is_one_line_and_exit_2(model, cli, tmp_path):
    (tmp_path / "t.jsonl").write_text(event_lines(*VALID))
    os.truncate(tmp_path / "t.jsonl", 1 << 40)  # a sparse terabyte: read whole, a MemoryError

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "error: cannot continue from t.jsonl: it is too large to read into memory; start a new "
        "run without --continue\n"
    )
    assert model.requests == []


@pytest.mark.parametrize("after", [message("assistant", "one file"), message("user", "go on")])
def test_calls_left_unanswered_are_answered_interrupted_where_the_next_message_comes(
    model, cli, tmp_path, after
):
    # Whatever message follows a call with no result (a run killed in its tool, then another
    # message), the call is answered right after it, before that message, as the API needs.
    (tmp_path / "t.jsonl").write_text(event_lines(*VALID[:3], after))
    model.queue(answer("ok"))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    assert model.messages(0)[2:] == [
        VALID[2]["message"],
        {"role": "tool", "tool_call_id": "call_1", "content": "interrupted"},
        after["message"],
        {"role": "user", "content": "more"},
    ]
