"""Whatever the server does, a run ends within its bounds with one line and the documented exit code."""

import time

import pytest

import harness
from fake_model import answer, calls, completion, error
from test_free_plan import TPM, rate_limited


def test_a_server_that_never_answers_is_given_up_within_agent_timeout_retries_included(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_TIMEOUT", "2")
    model.queue({"silent": 30, "body": {}})
    started = time.monotonic()

    result = cli("x", "--no-transcript")

    assert time.monotonic() - started < 4  # the bound: AGENT_TIMEOUT plus about a second
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == \
        "error: the model did not answer within 2 s: try again, or raise AGENT_TIMEOUT"
    assert len(model.requests) == 1  # no try starts once the time is spent


def test_a_server_that_trickles_its_reply_is_given_up_at_agent_timeout(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_TIMEOUT", "1")
    model.queue({**answer("slowly " * 20), "trickle": 0.1})
    started = time.monotonic()

    result = cli("x", "--no-transcript")

    assert time.monotonic() - started < 3
    assert (result.returncode, result.stdout) == (1, "")
    assert "did not answer within 1 s" in result.stderr


def test_the_sdks_own_retries_are_visible(model, cli):
    model.queue(error(503, "over capacity", type="server_error"), answer("fine"))

    result = cli("x", "--no-transcript")

    assert result.returncode == 0 and result.stdout == "fine\n"
    assert result.stderr.splitlines()[0] == "no good answer from the model server; trying again (attempt 2 of 3)"


def test_tool_call_arguments_sent_as_a_json_object_still_run(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    reply = calls(("read_file", {"path": "a.txt"}))
    reply["body"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {"path": "a.txt"}
    model.queue(reply, answer("ok"))

    assert harness.run("read") == "ok"

    assert model.messages(1)[-2]["tool_calls"][0]["function"]["arguments"] == '{"path": "a.txt"}'
    assert model.messages(1)[-1]["content"] == "A"


@pytest.mark.parametrize("body", ['{"id": "x", "choices": [', "<html><body>502 Bad Gateway</body></html>",
                                  {**completion({"content": "x"}), "choices": []}])
def test_a_200_reply_that_is_not_a_chat_completion_is_one_line(model, cli, body):
    model.queue({"body": body})

    result = cli("x", "--no-transcript")

    assert (result.returncode, result.stdout) == (1, "")
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: the model server at {model.url} sent a reply that is not a chat completion")
    assert line.endswith("; check GROQ_BASE_URL")


@pytest.mark.parametrize("retry_after", ["99999999999999999999", "1e400", "inf"])
def test_a_429_with_a_huge_retry_after_stops_in_one_line(model, cli, retry_after):
    model.queue(rate_limited("Rate limit reached on requests per minute (RPM)", **{"retry-after": retry_after}))

    result = cli("x", "--no-transcript")

    assert result.returncode == 1 or "waiting" in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.startswith(("error: rate limited", "rate limited"))


def test_a_malformed_retry_after_falls_back_to_the_message(model):
    events = []
    model.queue(rate_limited(TPM.format(wait="0.05s"), **{"retry-after": "soon"}), answer("ok"))

    assert harness.run("x", on_event=events.append) == "ok"

    assert [e["seconds"] for e in events if e["type"] == "wait"] == [0.05]


def test_retry_after_zero_retries_at_once(model):
    events = []
    model.queue(rate_limited(TPM.format(wait="5s"), **{"retry-after": "0"}), answer("ok"))

    assert harness.run("x", on_event=events.append) == "ok"

    assert [e["seconds"] for e in events if e["type"] == "wait"] == [0]
