"""The agent loop against the scripted server: history shape, dispatch errors, step limit, retries."""

import os
import subprocess
import sys
import threading

import openai
import pytest

import harness
from conftest import ROOT
from fake_model import answer, calls, error

ALLOWED_ASSISTANT_FIELDS = {"role", "content", "tool_calls"}


def assert_well_formed(messages: list[dict]) -> None:
    """Every assistant turn with tool calls is followed by exactly one result per call, in call order."""
    i = 0
    while i < len(messages):
        message = messages[i]
        if message["role"] == "assistant":
            assert set(message) <= ALLOWED_ASSISTANT_FIELDS, set(message)
            ids = [call["id"] for call in message.get("tool_calls") or []]
            results = messages[i + 1:i + 1 + len(ids)]
            assert [r["role"] for r in results] == ["tool"] * len(ids)
            assert [r["tool_call_id"] for r in results] == ids
            assert all(isinstance(r["content"], str) for r in results)
            i += len(ids)
        i += 1


def test_two_call_chain_sends_exact_history_and_returns_answer(model, tmp_path):
    (tmp_path / "backend.py").write_text('MODEL = "openai/gpt-oss-120b"\n')
    model.queue(calls(("list_dir", {"path": "."})),
                calls(("read_file", {"path": "backend.py"})),
                answer("It calls openai/gpt-oss-120b."))

    result = harness.run("Which model does backend.py call?")

    assert result == "It calls openai/gpt-oss-120b."
    assert len(model.requests) == 3
    system, user = model.messages(0)
    assert system["role"] == "system" and str(tmp_path) in system["content"]
    assert user == {"role": "user", "content": "Which model does backend.py call?"}
    assert model.messages(1)[2:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "list_dir", "arguments": '{"path": "."}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "backend.py  30 bytes"},
    ]
    assert model.messages(2)[:4] == model.messages(1)
    assert model.messages(2)[4:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "backend.py"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": 'MODEL = "openai/gpt-oss-120b"\n'},
    ]
    for request in model.requests:
        assert request["body"]["model"] == "openai/gpt-oss-120b"
        assert [t["function"]["name"] for t in request["body"]["tools"]] == list(harness.REGISTRY)
        assert_well_formed(request["body"]["messages"])


def test_two_tool_calls_in_one_reply_get_two_results_in_order(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    (tmp_path / "b.txt").write_text("B")
    model.queue(calls(("read_file", {"path": "a.txt"}), ("read_file", {"path": "b.txt"})), answer("AB"))

    assert harness.run("read both") == "AB"

    sent = model.messages(1)
    assert_well_formed(sent)
    assert [m["role"] for m in sent[2:]] == ["assistant", "tool", "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in sent[3:]] == [("call_1", "A"), ("call_2", "B")]


@pytest.mark.parametrize("name, arguments, expected", [
    ("delete_everything", "{}",
     "error: unknown tool 'delete_everything'; available: read_file, list_dir, write_file, edit_file, run_shell"),
    ("read_file", '{"path": "a.txt"',
     "error: the arguments are not valid JSON (Expecting ',' delimiter: line 1 column 17 (char 16)); "
     'send one JSON object, e.g. {"path": "x"}'),
    ("read_file", '["a.txt"]', "error: the arguments must be a JSON object, not list"),
    ("read_file", "{}", "error: missing argument 'path'; expected read_file(path: str, offset: int = 0) -> str"),
    ("read_file", '{"path": "a.txt", "mode": "r"}',
     "error: unexpected argument 'mode'; expected read_file(path: str, offset: int = 0) -> str"),
    ("read_file", '{"path": "a.txt", "offset": "3"}',
     "error: argument 'offset' must be a JSON integer, not \"3\"; expected read_file(path: str, offset: int = 0) -> str"),
    ("read_file", '{"path": 7}', "error: argument 'path' must be a JSON string, not 7; "
     "expected read_file(path: str, offset: int = 0) -> str"),
    ("read_file", '{"path": "missing.txt"}',
     "error: FileNotFoundError: [Errno 2] No such file or directory: '{workspace}/missing.txt'"),
])
def test_dispatch_errors_go_back_to_the_model_and_the_run_goes_on(model, tmp_path, name, arguments, expected):
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls((name, arguments)), answer("recovered"))

    assert harness.run("try") == "recovered"

    expected = expected.replace("{workspace}", str(tmp_path.resolve()))
    assert model.messages(1)[-1] == {"role": "tool", "tool_call_id": "call_1", "content": expected}


def test_a_tool_that_raises_becomes_an_error_result(model, monkeypatch):
    def explode(what: str) -> str:
        """Always fails."""
        raise RuntimeError(f"broke on {what}")
    monkeypatch.setitem(harness.REGISTRY, "explode", explode)
    model.queue(calls(("explode", {"what": "purpose"})), answer("ok"))

    assert harness.run("go") == "ok"

    assert model.messages(1)[-1]["content"] == "error: RuntimeError: broke on purpose"


def test_step_limit_stops_after_exactly_max_steps_requests(model):
    model.queue(*[calls(("list_dir", {}))] * 3)

    assert harness.run("loop forever", max_steps=3) == harness.STEP_LIMIT

    assert len(model.requests) == 3
    assert_well_formed(model.messages(2))


def test_tool_use_failed_is_asked_again_then_succeeds(model):
    failed = error(400, "Failed to call a function. Please adjust your prompt.", code="tool_use_failed",
                   failed_generation='<function=list_dir{"path": "."}</function>')
    model.queue(failed, failed, answer("done"))

    assert harness.run("go") == "done"

    assert len(model.requests) == 3
    assert model.messages(2) == model.messages(0)


def test_tool_use_failed_three_times_raises_the_real_error(model):
    failed = error(400, "Failed to call a function.", code="tool_use_failed", failed_generation="<bad>")
    model.queue(failed, failed, failed)

    with pytest.raises(openai.BadRequestError) as raised:
        harness.run("go")

    assert raised.value.code == "tool_use_failed"
    assert len(model.requests) == 3


def test_other_400s_are_not_retried(model):
    model.queue(error(400, "'messages.2' : property 'reasoning' is unsupported"))

    with pytest.raises(openai.BadRequestError):
        harness.run("go")

    assert len(model.requests) == 1


def test_429_with_retry_after_is_retried(model):
    model.queue(error(429, "Rate limit reached. Please try again in 0.1s.", code="rate_limit_exceeded",
                      type="tokens", headers={"retry-after": "0.1"}),
                answer("after the wait"))

    assert harness.run("go") == "after the wait"

    assert len(model.requests) == 2


def test_a_whole_run_uses_one_tcp_connection(model):
    model.queue(calls(("list_dir", {})), calls(("list_dir", {})), answer("done"))

    harness.run("go")

    assert len(model.requests) == 3
    assert model.connections == 1


def test_import_does_nothing_and_runs_share_no_state(model, tmp_path):
    imported = subprocess.run([sys.executable, "-c", "import harness"], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (imported.returncode, imported.stdout, imported.stderr) == (0, "", "")
    assert model.requests == [] and list(tmp_path.iterdir()) == []

    model.queue(calls(("list_dir", {})), calls(("list_dir", {})), answer("first"),
                calls(("list_dir", {})), answer("second"))
    assert harness.run("one") == "first"
    assert harness.run("two") == "second"

    assert [m["role"] for m in model.messages(3)] == ["system", "user"]  # no history from the first run
    assert model.messages(4)[-1]["content"] == ". is empty"  # the loop guard starts again: not a third repeat


def test_history_strips_reasoning_and_other_reply_fields(model):
    model.queue(calls(("list_dir", {})), answer("done"))

    harness.run("go")

    assistant = model.messages(1)[2]
    assert set(assistant) == ALLOWED_ASSISTANT_FIELDS
    assert all("reasoning" not in message for message in model.messages(1))


def test_several_threads_can_run_at_once_without_sharing_history(model):
    model.queue(*[answer("ok")] * 4)
    answers = []
    threads = [threading.Thread(target=lambda n=n: answers.append(harness.run(f"task {n}"))) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers == ["ok"] * 4
    sent = sorted(request["body"]["messages"][1]["content"] for request in model.requests)
    assert sent == ["task 0", "task 1", "task 2", "task 3"]
    assert all(len(request["body"]["messages"]) == 2 for request in model.requests)
