"""The agent loop against the scripted server: history shape, dispatch errors, argument checks, the
loop guard, the step limit."""

import json
import os
import subprocess
import sys
import threading

import pytest
from fake_model import answer, calls
from helpers import ALLOWED_ASSISTANT_FIELDS, ROOT, assert_well_formed, results

import harness


def test_two_call_chain_sends_exact_history_and_returns_answer(model, tmp_path):
    (tmp_path / "backend.py").write_text('MODEL = "openai/gpt-oss-120b"\n')
    model.queue(
        calls(("list_dir", {"path": "."})),
        calls(("read_file", {"path": "backend.py"})),
        answer("It calls openai/gpt-oss-120b."),
    )

    result = harness.run("Which model does backend.py call?")

    assert result == "It calls openai/gpt-oss-120b."
    assert len(model.requests) == 3
    system, user = model.messages(0)
    assert system["role"] == "system" and str(tmp_path) in system["content"]
    assert user == {"role": "user", "content": "Which model does backend.py call?"}
    assert model.messages(1)[2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": '{"path": "."}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "backend.py  30 bytes"},
    ]
    assert model.messages(2)[:4] == model.messages(1)
    assert model.messages(2)[4:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "backend.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": 'MODEL = "openai/gpt-oss-120b"\n'},
    ]
    for request in model.requests:
        assert request["body"]["model"] == "openai/gpt-oss-120b"
        assert [t["function"]["name"] for t in request["body"]["tools"]] == list(
            harness.tools.REGISTRY
        )
        assert_well_formed(request["body"]["messages"])


def test_two_tool_calls_in_one_reply_get_two_results_in_order(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    (tmp_path / "b.txt").write_text("B")
    model.queue(
        calls(("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})), answer("AB")
    )

    assert harness.run("read both") == "AB"

    sent = model.messages(1)
    assert_well_formed(sent)
    assert [m["role"] for m in sent[2:]] == ["assistant", "tool", "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in sent[3:]] == [
        ("call_1", "A"),
        ("call_2", "B"),
    ]


@pytest.mark.parametrize(
    "name, arguments, expected",
    [
        (
            "delete_everything",
            "{}",
            "error: unknown tool 'delete_everything'; available: read_file, list_dir, write_file, "
            "edit_file, run_shell",
        ),
        (
            "read_file",
            '{"path": "a.txt"',
            "error: the arguments are not valid JSON (Expecting ',' delimiter: line 1 column 17 "
            '(char 16)); send one JSON object, e.g. {"path": "x"}',
        ),
        ("read_file", '["a.txt"]', "error: the arguments must be a JSON object, not list"),
        (
            "read_file",
            "{}",
            "error: missing argument 'path'; expected read_file(path: str, offset: int = 0) -> str",
        ),
        (
            "read_file",
            '{"path": "a.txt", "mode": "r"}',
            "error: unexpected argument 'mode'; expected read_file(path: str, offset: int = 0) -> "
            "str",
        ),
        (
            "read_file",
            # the run's settings are not the model's
            '{"path": "a.txt", "settings": {"workspace": "/"}}',
            "error: unexpected argument 'settings'; expected read_file(path: str, offset: int = 0) "
            "-> str",
        ),
        (
            "read_file",
            '{"path": "a.txt", "offset": "3"}',
            "error: argument 'offset' must be a JSON integer, not \"3\"; expected read_file(path: "
            "str, offset: int = 0) -> str",
        ),
        (
            "read_file",
            '{"path": 7}',
            "error: argument 'path' must be a JSON string, not 7; "
            "expected read_file(path: str, offset: int = 0) -> str",
        ),
        (
            "read_file",
            '{"path": "missing.txt"}',
            "error: FileNotFoundError: [Errno 2] No such file or directory: "
            "'{workspace}/missing.txt'",
        ),
    ],
)
def test_dispatch_errors_go_back_to_the_model_and_the_run_goes_on(
    model, tmp_path, name, arguments, expected
):
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls((name, arguments)), answer("recovered"))

    assert harness.run("try") == "recovered"

    expected = expected.replace("{workspace}", str(tmp_path.resolve()))
    assert model.messages(1)[-1] == {"role": "tool", "tool_call_id": "call_1", "content": expected}


def test_a_tool_that_raises_becomes_an_error_result(model):
    def explode(what: str) -> str:
        """Always fails."""
        raise RuntimeError(f"broke on {what}")

    model.queue(calls(("explode", {"what": "purpose"})), answer("ok"))

    assert harness.run("go", tools=[explode]) == "ok"

    assert model.messages(1)[-1]["content"] == "error: RuntimeError: broke on purpose"


class Halt(Exception):
    """What a script's on_event raises to stop a run."""


@pytest.mark.parametrize(
    "stop_at, ran",
    [
        (lambda event: event["type"] == "message" and event["message"].get("tool_calls"), 0),
        (lambda event: event["type"] == "message" and event["message"]["role"] == "tool", 1),
    ],
    ids=["at-the-turn", "after-the-first-result"],
)
def test_an_on_event_that_raises_leaves_every_call_answered_so_the_list_continues(
    model, stop_at, ran
):
    def note(text: str) -> str:
        """Note something down."""
        return f"noted {text}"

    def listener(event: dict) -> None:
        if stop_at(event):
            raise Halt("enough")

    history: list[dict] = []
    model.queue(calls(("note", {"text": "a"}), ("note", {"text": "b"})))

    with pytest.raises(Halt):
        harness.run("go", tools=[note], messages=history, on_event=listener)

    assert_well_formed(history)
    assert [m["content"] for m in history[3:]] == ["noted a"] * ran + ["interrupted"] * (2 - ran)
    model.queue(answer("carried on"))
    assert harness.run("go on", tools=[note], messages=history) == "carried on"
    assert_well_formed(model.messages(1))


def test_a_tool_that_exits_leaves_every_call_answered(model):
    def leave() -> str:
        """Stop the program."""
        raise SystemExit(3)

    history: list[dict] = []
    model.queue(calls(("leave", {}), ("leave", {})))

    with pytest.raises(SystemExit):
        harness.run("go", tools=[leave], messages=history)

    assert_well_formed(history)
    assert [m["content"] for m in history[3:]] == ["interrupted", "interrupted"]


def test_step_limit_stops_after_exactly_max_steps_requests(model):
    model.queue(*[calls(("list_dir", {}))] * 3)

    assert harness.run("loop forever", max_steps=3) == harness.STEP_LIMIT

    assert len(model.requests) == 3
    assert_well_formed(model.messages(2))


def test_a_whole_run_uses_one_tcp_connection(model):
    model.queue(calls(("list_dir", {})), calls(("list_dir", {})), answer("done"))

    harness.run("go")

    assert len(model.requests) == 3
    assert model.connections == 1


def test_import_does_nothing_and_runs_share_no_state(model, tmp_path):
    imported = subprocess.run(
        [sys.executable, "-c", "import harness"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert (imported.returncode, imported.stdout, imported.stderr) == (0, "", "")
    assert model.requests == [] and list(tmp_path.iterdir()) == []

    model.queue(
        calls(("list_dir", {})),
        calls(("list_dir", {})),
        answer("first"),
        calls(("list_dir", {})),
        answer("second"),
    )
    assert harness.run("one") == "first"
    assert harness.run("two") == "second"

    assert [m["role"] for m in model.messages(3)] == [
        "system",
        "user",  # no history from the first run
    ]
    # the loop guard starts again: not a third repeat
    assert model.messages(4)[-1]["content"] == ". is empty"


def test_history_strips_reasoning_and_other_reply_fields(model):
    model.queue(calls(("list_dir", {})), answer("done"))

    harness.run("go")

    assistant = model.messages(1)[2]
    assert set(assistant) == ALLOWED_ASSISTANT_FIELDS
    assert all("reasoning" not in message for message in model.messages(1))


def test_several_threads_can_run_at_once_without_sharing_history(model):
    model.queue(*[answer("ok")] * 4)
    answers = []
    threads = [
        threading.Thread(target=lambda n=n: answers.append(harness.run(f"task {n}")))
        for n in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers == ["ok"] * 4
    sent = sorted(request["body"]["messages"][1]["content"] for request in model.requests)
    assert sent == ["task 0", "task 1", "task 2", "task 3"]
    assert all(len(request["body"]["messages"]) == 2 for request in model.requests)


def test_the_third_identical_call_is_refused_and_the_run_goes_on(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    same = ("read_file", {"path": "a.txt"})
    model.queue(
        calls(same),
        calls(("read_file", {"path": "a.txt", "offset": 0})),
        calls(same),
        calls(same),
        calls(("list_dir", {})),
        answer("ok"),
    )

    assert harness.run("go") == "ok"

    results = [model.messages(i)[-1]["content"] for i in range(1, 6)]
    assert results[:3] == ["A", "A", "A"]
    assert results[3] == (
        "error: you already called read_file with these arguments 2 times in this run and have "
        "the result above; use it, try something else, or answer"
    )
    assert results[4] == "a.txt  1 bytes"


def test_a_different_argument_is_not_a_repeat(model, tmp_path):
    for name in "abc":
        (tmp_path / f"{name}.txt").write_text(name)
    model.queue(*[calls(("read_file", {"path": f"{name}.txt"})) for name in "abc"], answer("ok"))

    harness.run("go")

    assert [model.messages(i)[-1]["content"] for i in (1, 2, 3)] == ["a", "b", "c"]


def test_an_empty_reply_is_asked_once_more(model):
    model.queue(answer(None), answer("now in words"))

    assert harness.run("go") == "now in words"

    assert model.messages(1)[-1] == {"role": "user", "content": harness.ANSWER_NEEDED}


def test_two_empty_replies_stop_with_a_clear_message(model, cli, tmp_path):
    model.queue(answer(None), answer(""))

    result = cli("go", "--quiet")

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == "stopped: the model gave an empty answer twice\n"


def test_a_cut_off_answer_is_printed_with_a_note(model, cli, tmp_path):
    model.queue(answer("The files are: a, b, and", finish_reason="length"))

    result = cli("go")

    assert result.returncode == 0
    assert result.stdout == "The files are: a, b, and\n"
    assert (
        result.stderr.splitlines()[0]
        == "the answer was cut off: the model hit its output limit (finish_reason: length)"
    )
    assert result.stderr.splitlines()[1].startswith("done: 1 step, 0 tool calls, ")


def test_the_loop_guard_sees_reordered_and_respaced_arguments_as_the_same_call(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue(
        calls(("read_file", '{"path": "a.txt", "offset": 0}')),
        calls(("read_file", '{"offset":0,"path":"a.txt"}')),
        calls(("read_file", '{ "offset" : 0 ,\n "path" : "a.txt" }')),
        answer("ok"),
    )

    harness.run("read")

    assert [results(model, i)[0] for i in (1, 2)] == ["A", "A"]
    assert results(model, 3)[0].startswith(
        "error: you already called read_file with these arguments 2 times"
    )


def answer_of(content) -> dict:
    """A reply whose content is any JSON value, as a server may send (the SDK does not check it)."""
    choice = {"index": 0, "message": {"role": "assistant", "content": content}}
    return {"body": {**answer("x")["body"], "choices": [{**choice, "finish_reason": "stop"}]}}


@pytest.mark.parametrize("content", [["a", "list"], {"a": "dict"}, 5, "lone \ud800 surrogate"])
def test_an_answer_that_is_not_plain_text_is_printed_as_text(model, cli, content):
    model.queue(answer_of(content))

    result = cli("x", "--no-transcript")

    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert result.stdout.strip() in (
        '["a", "list"]',
        '{"a": "dict"}',
        "5",
        "lone \\ud800 surrogate",
    )


TEXT_PARTS = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "world"}]
MIXED_PARTS = [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}]


@pytest.mark.parametrize(
    "content, printed", [(TEXT_PARTS, "Hello world"), (MIXED_PARTS, json.dumps(MIXED_PARTS))]
)
def test_an_answer_of_text_parts_is_their_text_and_of_other_parts_its_json(
    model, cli, content, printed
):
    model.queue(answer_of(content))

    result = cli("x", "--no-transcript")

    assert (result.returncode, result.stdout) == (0, printed + "\n"), result.stderr


def test_a_reply_whose_text_holds_a_lone_surrogate_beside_a_tool_call_still_sends_the_next_request(
    model, tmp_path
):
    (tmp_path / "a.txt").write_text("A")
    reply = calls(("read_file", {"path": "a.txt"}))
    reply["body"]["choices"][0]["message"]["content"] = "reading \ud800 it"
    model.queue(reply, answer("done"))

    assert harness.run("read") == "done"

    assert len(model.requests) == 2
    assistant = model.messages(1)[-2]
    assert assistant["role"] == "assistant" and assistant["content"] == "reading \\ud800 it"
    assert model.messages(1)[-1]["content"] == "A"


def test_arguments_nested_too_deeply_are_an_error_for_the_model(model):
    import harness

    model.queue(calls(("read_file", "[" * 50_000 + "]" * 50_000)), answer("ok"))

    assert harness.run("x") == "ok"

    assert model.messages(1)[-1]["content"].startswith("error: the arguments are nested too deeply")


def test_tool_call_arguments_sent_as_a_json_object_still_run(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    reply = calls(("read_file", {"path": "a.txt"}))
    reply["body"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {
        "path": "a.txt"
    }
    model.queue(reply, answer("ok"))

    assert harness.run("read") == "ok"

    assert model.messages(1)[-2]["tool_calls"][0]["function"]["arguments"] == '{"path": "a.txt"}'
    assert model.messages(1)[-1]["content"] == "A"


def test_call_ids_the_api_would_refuse_back_are_replaced_and_each_answered(model, tmp_path):
    ids = ["call_1", "call_1", "x" * 41, "a\x1b[2J\n", "", None, 5, "call_7"]
    reply = calls(*[("list_dir", {"path": ".", "offset": n}) for n in range(len(ids))])
    for call, given in zip(reply["body"]["choices"][0]["message"]["tool_calls"], ids, strict=True):
        call["id"] = given
    model.queue(reply, answer("ok"))

    assert harness.run("look") == "ok"

    sent = [call["id"] for call in model.messages(1)[-len(ids) - 1]["tool_calls"]]
    assert sent[0] == "call_1" and sent[-1] == "call_7"  # OpenAI's limit: 40 characters
    assert len(set(sent)) == len(ids) and all(
        i.isprintable() and i.isascii() and len(i) <= 40 for i in sent
    )
    assert [m["tool_call_id"] for m in model.messages(1)[-len(ids) :]] == sent


def test_a_folder_and_a_task_holding_bytes_that_are_not_utf8_reach_the_model_escaped(
    model, tmp_path, monkeypatch
):
    # A folder's name is bytes: os.fsdecode keeps an undecodable one as a lone surrogate, which
    # no JSON body can carry; the system prompt names the folder, the task may hold one too
    folder = os.fsdecode(bytes(tmp_path) + b"/odd\xff")
    os.mkdir(folder)
    monkeypatch.chdir(folder)
    model.queue(calls(("list_dir", {"path": "."})), answer("seen"))

    result = harness.run(os.fsdecode(b"look in \xfe"))

    assert result == "seen" and not result.stopped
    system, user = model.messages(0)
    assert "odd\\udcff" in system["content"]
    assert user["content"] == "look in \\udcfe"


def test_a_lone_surrogate_in_the_models_tool_call_is_an_error_for_it_and_the_run_goes_on(model):
    # JSON may escape one (\ud800), the SDK decodes it, and no request body can send it back
    model.queue(
        calls(("list_dir\ud800", '{"path": "."}'), ("read_file", '{"path": "a\ud801"}')),
        answer("done"),
    )

    result = harness.run("look")

    assert result == "done" and not result.stopped
    assistant, unknown, unreadable = model.messages(1)[2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "list_dir\\ud800"
    assert assistant["tool_calls"][1]["function"]["arguments"] == '{"path": "a\\ud801"}'
    assert unknown["content"].startswith("error: unknown tool")
    assert unreadable["content"].startswith("error:")
