"""The transcript as the person's data: one run writes it at a time, --continue restores only what the API takes
back (and says which line is not), odd characters and an editor's BOM do not break it, and a conversation
continued in another workspace is told where it now works. Also the two reply shapes the CLI once got wrong."""

import codecs
import json
import threading

import pytest

import harness
import transcript
from conftest import run_script
from fake_model import answer, calls, completion
from test_loop import assert_well_formed
from test_runs import posix_only, wait_for


def event_lines(*events: object) -> str:
    return "".join((e if isinstance(e, str) else json.dumps(e, ensure_ascii=False)) + "\n" for e in events)


def message(role: str, content: object = "text", **fields) -> dict:
    return {"type": "message", "message": {"role": role, "content": content, **fields}}


CALL = {"id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
# A valid transcript of one turn: system, user, a call, its result, the answer (lines 1-5).
VALID = [message("system", "sys"), message("user", "hi"), message("assistant", None, tool_calls=[CALL]),
         message("tool", "a.txt  1 bytes", tool_call_id="call_1"), message("assistant", "one file")]


# 1. One writer per transcript.

@posix_only
def test_a_second_run_on_a_transcript_in_use_exits_2_before_any_request_and_the_first_stays_continuable(
        model, tmp_path, start_cli):
    gate = threading.Event()  # the first run's model reply waits here until the second run has been refused
    model.router = lambda body: answer("first answer") if gate.wait(10) else None
    first = start_cli(tmp_path, "first task")
    wait_for(lambda: len(model.requests) == 1)
    [path] = (tmp_path / "runs").glob("*.jsonl")

    second = run_script("harness.py", "--continue", "second task", cwd=tmp_path)
    requests_meanwhile = len(model.requests)
    gate.set()
    stdout, stderr = first.communicate(timeout=30)
    model.router = None
    model.queue(answer("third answer"))
    third = run_script("harness.py", "--continue", "third task", cwd=tmp_path)

    assert (second.returncode, second.stdout) == (2, "")
    assert second.stderr == (f"error: runs/{path.name} is in use by another run; wait for that run to end, or start "
                             "a new run without --continue\n")
    assert requests_meanwhile == 1
    assert first.returncode == 0 and stdout == "first answer\n", stderr
    assert third.returncode == 0 and third.stdout == "third answer\n", third.stderr
    assert [m["content"] for m in model.messages(1)[1:]] == ["first task", "first answer", "third task"]
    assert "second task" not in path.read_text()
    assert [json.loads(line)["type"] for line in path.read_text().splitlines()].count("start") == 2


@posix_only
def test_a_transcript_named_by_another_run_in_use_is_refused_with_what_to_do(model, tmp_path, start_cli):
    gate = threading.Event()
    model.router = lambda body: answer("done") if gate.wait(10) else None
    first = start_cli(tmp_path, "first", "--transcript", "t.jsonl")
    wait_for(lambda: len(model.requests) == 1)

    second = run_script("harness.py", "second", "--transcript", "t.jsonl", cwd=tmp_path)
    gate.set()
    first.communicate(timeout=30)

    assert second.returncode == 2
    assert second.stderr == ("error: t.jsonl is in use by another run; wait for that run to end, or start a new run "
                             "with another --transcript PATH\n")
    assert len(model.requests) == 1
    assert transcript.restore(tmp_path / "t.jsonl")[0][-1] == {"role": "assistant", "content": "done"}


# 2. --continue restores only what can be sent.

@pytest.mark.parametrize("line, damage, reason", [
    (4, message("tool", None, tool_call_id="call_1"), "holds a tool message whose content is null, not text"),
    (2, message("user", 42), "holds a user message whose content is 42, not text"),
    (2, message("user", [{"type": "image_url", "image_url": {"url": "x"}}]), "holds a user message whose content"),
    (2, message("robot", "beep"), 'holds a message of role "robot"; the roles are system, user, assistant, tool'),
    (6, {"type": "elided", "index": 0, "content": "[elided]"}, "shortens message 0, which is not a tool result"),
    (6, {"type": "elided", "index": 1, "content": "[elided]"}, "shortens message 1, which is not a tool result"),
    (6, {"type": "elided", "index": 3, "content": 7}, "shortens a tool result to 7, which is not text"),
    (6, {"type": "elided", "index": True, "content": "[elided]"}, "shortens message true, which is not a tool"),
    (6, {"type": "dropped", "index": 2, "count": 10 ** 6}, "drops 1000000 message(s) at 2, which is not one old"),
    (6, {"type": "dropped", "index": 2, "count": -3}, "drops -3 message(s) at 2"),
    (6, {"type": "dropped", "index": 2, "count": 0}, "drops 0 message(s) at 2"),
    (6, {"type": "dropped", "index": 2, "count": 1}, "drops 1 message(s) at 2"),  # would leave its result alone
    (6, {"type": "dropped", "index": 0, "count": 1}, "drops 1 message(s) at 0"),
    (4, message("tool", "x", tool_call_id="call_9"), 'holds a tool result for call "call_9", which answers no call'),
    (6, message("tool", "again", tool_call_id="call_1"), 'holds a tool result for call "call_1", which answers no'),
    (2, {"type": "message", "message": "hello"}, 'holds a message that is not a JSON object: "hello"'),
    (2, {"type": "message"}, "holds a message that is not a JSON object: null"),
    (5, message("assistant", None), "holds an assistant message with neither content nor tool calls"),
    (3, message("assistant", None, tool_calls=[{**CALL, "id": ""}]), "holds a tool call the API does not take"),
    (3, message("assistant", None, tool_calls=[{k: v for k, v in CALL.items() if k != "id"}]), "holds a tool call"),
    (3, message("assistant", None, tool_calls=[{**CALL, "function": {"name": "list_dir", "arguments": {}}}]),
     "holds a tool call the API does not take"),
    (3, message("assistant", None, tool_calls=[]), "holds tool_calls [], which is not a list of calls"),
    (5, message("assistant", "x", reasoning="hmm"), "holds an assistant message with field(s) the API does not take: "
                                                    "reasoning"),
    (2, message("system", "second system prompt"), "holds a system message after the first message"),
    (1, message("user", "no system prompt first"), "starts the conversation with a user message"),
    (2, message("user", "hi", name=5), "holds a user message whose name is not text"),
    (2, [1, 2], 'is not an event of a transcript (a JSON object with a "type")'),
    (6, "[" * 100_000, "is nested too deeply"),  # the last line, yet not a half-written one
    (2, {"type": 3}, 'is not an event of a transcript'),
    (2, {"type": "system", "message": {"role": "user", "content": "x"}}, "replaces the system prompt, but holds no"),
])
def test_continue_refuses_a_hand_edit_the_api_would_not_take_naming_its_line(model, cli, tmp_path, line, damage,
                                                                            reason):
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
    (tmp_path / "t.jsonl").write_text(event_lines(*VALID, {"type": "dropped", "index": 2, "count": 2}))
    model.queue(answer("ok"))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    assert model.messages(0) == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                                 {"role": "assistant", "content": "one file"}, {"role": "user", "content": "more"}]


ODD = "a\u2028b\u2029c\u0085d\x1ce\x1df\x1eg\x0bh\x0ci\r\nj"  # str.splitlines() breaks a line at each of these


def test_blank_lines_a_bom_and_line_separators_inside_strings_continue(model, cli, tmp_path):
    text = event_lines(VALID[0], "", message("user", ODD), "   ", VALID[2], VALID[3], "\r",
                       message("assistant", [{"type": "text", "text": "one "}, {"type": "text", "text": "file"}]))
    (tmp_path / "t.jsonl").write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    model.queue(answer("ok"))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    assert model.messages(0) == [{"role": "system", "content": "sys"}, {"role": "user", "content": ODD},
                                 {"role": "assistant", "content": None, "tool_calls": [CALL]},
                                 {"role": "tool", "tool_call_id": "call_1", "content": "a.txt  1 bytes"},
                                 {"role": "assistant", "content": "one file"},  # text parts, as their text
                                 {"role": "user", "content": "more"}]


def test_a_run_whose_answer_holds_line_separators_is_written_raw_and_continues(model, tmp_path):
    model.queue(calls(("read_file", {"path": ODD})), answer(ODD), answer("again"))

    first = run_script("harness.py", "say it", "--transcript", "t.jsonl", cwd=tmp_path)
    second = run_script("harness.py", "--continue", "more", "--transcript", "t.jsonl", cwd=tmp_path)

    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert "\u2028" in (tmp_path / "t.jsonl").read_text(encoding="utf-8")  # the transcript holds it as it is
    assert model.messages(2) == model.messages(1) + [{"role": "assistant", "content": ODD},
                                                     {"role": "user", "content": "more"}]
    assert_well_formed(model.messages(2))


def test_a_half_written_line_before_blank_lines_is_still_the_last_line(model, cli, tmp_path):
    (tmp_path / "t.jsonl").write_text(event_lines(*VALID) + '{"type": "mess\n\n  \n')
    model.queue(answer("ok"))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("note: the last line of t.jsonl was half-written and is skipped\n")


# 3. --continue in another workspace.

def test_continuing_in_another_workspace_gives_the_model_the_new_folder_once_and_for_good(model, tmp_path):
    (tmp_path / "old").mkdir(), (tmp_path / "new").mkdir()
    model.queue(answer("one"), answer("two"), answer("three"), answer("four"))
    old, new = str((tmp_path / "old").resolve()), str((tmp_path / "new").resolve())

    first = run_script("harness.py", "first", "--workspace", "old", cwd=tmp_path)
    moved = run_script("harness.py", "--continue", "second", "--workspace", "new", cwd=tmp_path)
    stayed = run_script("harness.py", "--continue", "third", "--workspace", "new", cwd=tmp_path)
    back = run_script("harness.py", "--continue", "fourth", "--workspace", "new", cwd=tmp_path)

    assert [r.returncode for r in (first, moved, stayed, back)] == [0, 0, 0, 0], moved.stderr
    system = [model.messages(i)[0]["content"] for i in range(4)]
    assert f"working in the folder {old} " in system[0]
    assert f"working in the folder {new} " in system[1] and old not in system[1]
    assert system[2] == system[3] == system[1]  # recorded in the transcript: said once, kept after
    assert model.messages(1)[1:] == model.messages(0)[1:] + [{"role": "assistant", "content": "one"},
                                                             {"role": "user", "content": "second"}]
    assert f"note: this conversation worked in {old}; its system prompt now names {new}" in moved.stderr
    assert "note:" not in stayed.stderr + back.stderr


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
    model.queue({"body": completion({"content": parts})}, {"body": completion({"content": [{"type": "x"}]})})

    result = cli("greet", "--no-transcript")
    other = cli("greet", "--no-transcript")

    assert (result.returncode, result.stdout) == (0, "hello there\n")
    assert other.stdout == '[{"type": "x"}]\n'  # not text parts: still shown, as JSON


@pytest.mark.parametrize("given", [{}, {"id": ""}, {"id": None}])
def test_a_tool_call_without_an_id_gets_one_that_its_result_answers(model, tmp_path, given):
    call = {**given, "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
    model.queue({"body": completion({"content": None, "tool_calls": [call, {**call}]}, "tool_calls")},
                answer("listed"))

    result = run_script("harness.py", "list", "--transcript", "t.jsonl", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    sent = model.messages(1)
    ids = [c["id"] for c in sent[2]["tool_calls"]]
    assert all(i.startswith("call_") and len(i) > 5 for i in ids) and len(set(ids)) == 2
    assert [m["tool_call_id"] for m in sent[3:5]] == ids
    assert transcript.restore(tmp_path / "t.jsonl")[0][:5] == sent[:5]


def test_the_live_history_of_a_run_is_what_restore_reads_back(model, tmp_path):
    model.queue(calls(("list_dir", {})), answer("done"))
    events = []
    harness.run("look", on_event=events.append)
    conversation, pending = [], []

    for event in events:
        transcript.apply(event, conversation, pending)

    assert conversation == model.messages(1) + [{"role": "assistant", "content": "done"}]
