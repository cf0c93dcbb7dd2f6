"""backend.py in-process: presets, options passed through, the environment, one client reused."""

import subprocess
import threading
import time

import openai
import pytest
from fake_model import FakeModel, answer, calls, completion, error
from helpers import CHILD, ROOT

import backend
from plainagent.core import settings


def test_chat_passes_options_and_leaves_out_empty_tools(model):
    model.queue(answer("hi"))

    reply = backend.chat(
        [{"role": "user", "content": "hi"}], [], temperature=0.2, max_completion_tokens=50
    )

    assert reply.content == "hi"
    body = model.requests[0]["body"]
    assert body["temperature"] == 0.2 and body["max_completion_tokens"] == 50
    assert "tools" not in body


def test_agent_model_and_backend_presets_come_from_the_environment(model, monkeypatch):
    monkeypatch.setenv("AGENT_MODEL", "llama-3.1-8b-instant")
    monkeypatch.setenv("AGENT_BACKEND", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", model.url)
    model.queue(answer("from openai preset"))

    assert backend.complete("hi") == "from openai preset"

    assert model.requests[0]["body"]["model"] == "llama-3.1-8b-instant"
    assert model.requests[0]["headers"]["authorization"] == "Bearer sk-test"


def test_complete_gives_text_even_when_the_model_sends_none(model):
    # complete() -> str, as the tutorial's phase 0 prints it: a reply with no
    # content is "", never None.
    model.queue(answer(None))

    assert backend.complete("hi") == ""


def test_ollama_needs_no_key(model, monkeypatch):
    monkeypatch.setenv("OLLAMA_BASE_URL", model.url)
    model.queue(answer("local"))

    assert backend.complete("hi", settings.resolve(backend="ollama")) == "local"
    assert model.requests[0]["body"]["model"] == "gpt-oss:20b"


def test_unknown_backend_is_a_value_error_listing_the_known_ones(model):
    with pytest.raises(ValueError, match="known backends: groq, openai, ollama"):
        backend.chat([], settings=settings.resolve(backend="nope"))


def test_missing_key_names_the_variable_and_the_example_file(model, monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY")
    with pytest.raises(
        backend.ConfigError, match="GROQ_API_KEY is not set: copy .env.example to .env"
    ):
        backend.complete("hi")


def test_one_client_is_built_per_backend_setting_and_reused(model, monkeypatch):
    other = FakeModel()
    model.queue(answer("1"), answer("3"))
    other.queue(answer("2"))
    try:
        backend.complete("a")
        monkeypatch.setenv("GROQ_BASE_URL", other.url)
        backend.complete("b")
        monkeypatch.setenv("GROQ_BASE_URL", model.url)
        backend.complete("c")
    finally:
        other.close()

    assert (len(model.requests), len(other.requests)) == (2, 1)
    # going back to the first URL reuses its client
    assert (model.connections, other.connections) == (
        1,
        1,
    )


def test_runs_starting_together_share_one_client(model):
    # Each would make its own otherwise: twenty runs at once spent a second on
    # it, taking turns on the GIL
    start, made = threading.Barrier(8), []

    def ask_for_one() -> None:
        start.wait()
        made.append(backend.client(model.url + "/together", "key", 5.0))

    threads = [threading.Thread(target=ask_for_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(made) == 8 and all(each is made[0] for each in made)


def test_request_options_travel_as_headers_and_extra_body_and_the_completion_comes_back_typed(
    model,
):
    model.queue(answer("hi"))

    completion = backend.chat_completion(
        [{"role": "user", "content": "hi"}],
        extra_headers={"X-Trace": "abc"},
        extra_body={"reasoning_effort": "low"},
        timeout=5,
    )

    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert completion.choices[0].message.content == "hi" and completion.usage.prompt_tokens == 10
    request = model.requests[0]
    assert request["body"] == {
        "model": "openai/gpt-oss-120b",
        "messages": [{"role": "user", "content": "hi"}],
        "reasoning_effort": "low",
    }
    assert request["headers"]["x-trace"] == "abc"
    assert request["headers"]["authorization"] == "Bearer test-key-not-real"


def test_openai_below_3_with_httpx2_installed_still_reaches_the_model(
    model, oldest_packages, tmp_path
):
    (tmp_path / "notes.txt").write_text("x")
    model.queue(calls(("list_dir", {})), answer("one file"))

    result = oldest_packages("harness.py", "what is here?", "--no-transcript", cwd=tmp_path)

    assert (result.returncode, result.stdout) == (0, "one file\n"), result.stderr
    assert "notes.txt" in model.messages(1)[-1]["content"]
    versions = subprocess.run(
        [str(oldest_packages.python), "-c", "import httpx2, openai; print(openai.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert int(versions.split(".")[0]) < 3  # the SDK on httpx, with httpx2 importable beside it


def test_a_tool_call_that_is_not_a_function_call_never_runs_on_the_oldest_sdk_either(
    model, oldest_packages, tmp_path
):
    call = {"id": "call_1", "type": "custom", "function": {"name": "list_dir", "arguments": "{}"}}
    model.queue(
        {"body": completion({"content": None, "tool_calls": [call]}, finish_reason="tool_calls")}
    )

    result = oldest_packages("harness.py", "what is here?", "--no-transcript", cwd=tmp_path)

    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert result.stderr.splitlines() == [
        f"error: the model server at {model.url} sent a reply with a tool call of type 'custom', "
        "which is not a function call; try again, or choose another model with --model or "
        "AGENT_MODEL"
    ]
    assert len(model.requests) == 1  # no result of list_dir went back


def test_a_server_that_never_answers_is_given_up_at_agent_timeout_not_after_a_retry_pause(
    model, monkeypatch
):
    monkeypatch.setenv("AGENT_TIMEOUT", "2")
    model.queue(answer("the client is built"), {"silent": 30, "body": {}})
    backend.complete("hi")
    started = time.perf_counter()

    with pytest.raises(openai.APITimeoutError):
        backend.complete("hi")

    # The SDK pauses 0.375 s or more before a retry, and none can start once the time is spent.
    assert time.perf_counter() - started < 2 + 0.35
    assert len(model.requests) == 2


def test_a_server_that_never_answers_is_given_up_at_agent_timeout_on_the_oldest_sdk_too(
    model, oldest_packages, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENT_TIMEOUT", "2")
    model.queue({"silent": 30, "body": {}})
    process = subprocess.Popen(
        [str(oldest_packages.python), str(ROOT / "harness.py"), "x", "--no-transcript"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        **CHILD,
    )
    try:
        # the error line, before Python's own slow exit with the SDK loaded
        line = process.stderr.readline()
        ended = time.perf_counter()
    finally:
        process.communicate(timeout=60)

    assert line == "error: the model did not answer within 2 s: try again, or raise AGENT_TIMEOUT\n"
    # openai 1.x retries even an error of its own, pausing 0.375 s or more, then 0.75 s or more
    assert ended - model.timeline[0][1] < 2 + 0.75
    assert len(model.requests) == 1


def test_an_error_the_sdk_would_retry_only_after_agent_timeout_is_the_answer_at_once(
    model, monkeypatch
):
    monkeypatch.setenv("AGENT_TIMEOUT", "2")
    model.queue(error(503, "over capacity", type="server_error", headers={"retry-after": "20"}))
    started = time.perf_counter()

    # not a timeout after 20 s of waiting
    with pytest.raises(openai.InternalServerError, match="over capacity"):
        backend.complete("hi")

    assert time.perf_counter() - started < 2
    assert len(model.requests) == 1


def test_a_retry_after_a_server_error_gets_only_the_time_left_before_agent_timeout(
    model, monkeypatch
):
    # The first try ends in a 500 after a second; the SDK tries again, and that try
    # may wait only what is left.
    monkeypatch.setenv("AGENT_TIMEOUT", "3")
    model.queue(
        answer("the client is built"),
        {**error(500, "busy", type="server_error"), "delay": 1},
        {"silent": 30, "body": {}},
    )
    backend.complete("hi")
    started = time.perf_counter()

    with pytest.raises(openai.APITimeoutError):
        backend.complete("hi")

    assert time.perf_counter() - started < 3 + 0.35
    assert len(model.requests) == 3
