"""One model request (retries.py): retries, rate-limit waits, daily and size limits,
tool_use_failed, timeouts."""

import time

import openai
import pytest
from fake_model import answer, completion, error

import harness
from plainagent.core import stop

TPM = (
    "Rate limit reached for model `openai/gpt-oss-120b` in organization `org_x` service tier "
    "`on_demand` on tokens per minute (TPM): Limit 8000, Used 7000, Requested 1500. Please try "
    "again in {wait}. Need more tokens? Upgrade to Dev Tier today at "
    "https://console.groq.com/settings/billing"
)
TPD = (
    "Rate limit reached for model `openai/gpt-oss-120b` in organization `org_x` service tier "
    "`on_demand` on tokens per day (TPD): Limit 200000, Used 199500, Requested 1500. Please try "
    "again in 7m12.5s."
)


def rate_limited(message: str, **headers) -> dict:
    return error(429, message, code="rate_limit_exceeded", type="tokens", headers=headers)


def test_three_429s_with_retry_after_are_waited_out_visibly_and_the_run_answers(
    model, cli, tmp_path
):
    model.queue(
        *[rate_limited(TPM.format(wait="0.9s"), **{"retry-after": "1"})] * 3, answer("made it")
    )

    result = cli("go")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "made it\n"
    assert result.stderr.splitlines()[:-1] == [
        f"rate limited (tokens per minute); waiting 1 s, retry {n} of 5" for n in (1, 2, 3)
    ]
    assert len(model.requests) == 4
    assert model.messages(3) == model.messages(0)


def test_a_daily_limit_stops_at_once_with_one_line(model, cli, tmp_path):
    model.queue(rate_limited(TPD, **{"retry-after": "433"}))

    result = cli("go")

    assert result.returncode == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(
        "error: rate limited: the plan's tokens per day are used up; it resets in about 7 min"
    )
    assert line.endswith("; try again then, or use a paid tier")
    assert len(model.requests) == 1


def test_a_429_asking_for_more_than_a_minute_is_not_waited_for(model, cli, tmp_path):
    model.queue(rate_limited(TPM.format(wait="1m30s"), **{"retry-after": "90"}))

    result = cli("go")

    assert result.returncode == 1
    assert result.stderr.startswith(
        "error: rate limited (tokens per minute) and waiting would take too long; "
        "it resets in about 2 min"
    )
    assert len(model.requests) == 1


class Clock:
    """The time module for stop.py, which waits out a rate limit (cut short by a stop): sleep only
    notes how long it was asked to wait."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    def __getattr__(self, name: str):
        return getattr(time, name)


def test_a_429_asking_for_exactly_a_minute_is_waited_for_not_a_stop(model, monkeypatch):
    clock, events = Clock(), []
    # the stdlib's sleep, not ours: no test waits a real minute
    monkeypatch.setattr(stop, "time", clock)
    model.queue(rate_limited(TPM.format(wait="1m0s"), **{"retry-after": "60"}), answer("made it"))

    assert harness.run("go", on_event=events.append) == "made it"

    assert [(e["seconds"], e["retry"]) for e in events if e["type"] == "wait"] == [(60, 1)]
    assert clock.slept == [60] and len(model.requests) == 2


def test_a_429_asking_for_61_s_stops_without_waiting(model, cli, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(stop, "time", clock)
    model.queue(rate_limited(TPM.format(wait="1m1s"), **{"retry-after": "61"}))

    result = cli("go", "--no-transcript")

    assert (result.returncode, clock.slept, len(model.requests)) == (1, [], 1)
    [line] = result.stderr.splitlines()
    assert line.startswith(
        "error: rate limited (tokens per minute) and waiting would take too long"
    )


def test_the_try_again_message_sets_the_wait_when_there_is_no_header(model):
    events = []
    model.queue(rate_limited(TPM.format(wait="0.3s")), answer("ok"))

    assert harness.run("go", on_event=events.append) == "ok"

    [wait] = [e for e in events if e["type"] == "wait"]
    assert wait == {
        "type": "wait",
        "step": 1,
        "limit": "tokens per minute",
        "seconds": 0.3,
        "retry": 1,
        "of": 5,
    }


def test_after_five_waits_in_a_row_the_run_stops(model):
    model.queue(*[rate_limited(TPM.format(wait="0.01s"))] * 6)

    with pytest.raises(openai.RateLimitError):
        harness.run("go")

    assert len(model.requests) == 6


def test_5xx_is_retried_by_the_sdk(model):
    model.queue(
        error(500, "Internal Server Error", type="internal_server_error"),
        error(503, "Service Unavailable", type="internal_server_error"),
        answer("recovered"),
    )

    assert harness.run("go") == "recovered"
    assert len(model.requests) == 3


def test_an_html_502_page_becomes_a_readable_line(model, cli, tmp_path):
    page = (
        "<html><head><title>502 Bad "
        "Gateway</title></head><body><center>cloudflare</center></body></html>"
    )
    model.queue(*[{"status": 502, "body": page}] * 3)

    result = cli("go")

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "no good answer from the model server; trying again (attempt 2 of 3)",
        "no good answer from the model server; trying again (attempt 3 of 3)",
        "error: the model server answered 502: Bad Gateway",
    ]
    assert len(model.requests) == 3


def test_a_daily_request_limit_says_when_it_resets_from_the_headers(model, cli):
    model.queue(
        rate_limited(
            "Rate limit reached for model `openai/gpt-oss-120b` on requests per day (RPD): "
            "Limit 1000, Used 1000, Requested 1.",
            **{"x-ratelimit-reset-requests": "2h10m"},
        )
    )

    result = cli("go")

    assert result.returncode == 1
    assert result.stderr.startswith(
        "error: rate limited: the plan's requests per day are used up; "
        "it resets in about 2.2 h (around "
    )


def test_a_server_that_never_answers_is_given_up_within_agent_timeout_retries_included(
    model, cli, monkeypatch
):
    monkeypatch.setenv("AGENT_TIMEOUT", "2")
    model.queue({"silent": 30, "body": {}})

    result = cli("x", "--no-transcript")

    # Counted from the request's arrival, so a slow start of Python on a
    # busy machine is not counted.
    # AGENT_TIMEOUT plus slack, not the 30 s silence
    assert time.perf_counter() - model.timeline[0][1] < 2 + 3
    assert result.returncode == 1
    assert (
        result.stderr.splitlines()[-1]
        == "error: the model did not answer within 2 s: try again, or raise AGENT_TIMEOUT"
    )
    assert len(model.requests) == 1  # no try starts once the time is spent


def test_a_server_that_trickles_its_reply_is_given_up_at_agent_timeout(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_TIMEOUT", "1")
    model.queue({**answer("slowly " * 20), "trickle": 0.1})  # about 30 s for the whole body

    result = cli("x", "--no-transcript")

    assert time.perf_counter() - model.timeline[0][1] < 1 + 3  # AGENT_TIMEOUT plus slack
    assert (result.returncode, result.stdout) == (1, "")
    assert "did not answer within 1 s" in result.stderr


def test_the_sdks_own_retries_are_visible(model, cli):
    model.queue(error(503, "over capacity", type="server_error"), answer("fine"))

    result = cli("x", "--no-transcript")

    assert result.returncode == 0 and result.stdout == "fine\n"
    assert (
        result.stderr.splitlines()[0]
        == "no good answer from the model server; trying again (attempt 2 of 3)"
    )


@pytest.mark.parametrize(
    "body",
    [
        '{"id": "x", "choices": [',
        "<html><body>502 Bad Gateway</body></html>",
        {**completion({"content": "x"}), "choices": []},
        {**completion({"content": "x"}), "choices": {"0": {}}},
        b"",
        b'{"id": "x", "choices": [',
        b'{"id": "x\xff\xfe", "choices": []}',
    ],
)
def test_a_200_reply_that_is_not_a_chat_completion_is_one_line(model, cli, body):
    model.queue({"body": body})  # bytes: sent as JSON, even when they are not JSON, or not UTF-8

    result = cli("x", "--no-transcript")

    assert (result.returncode, result.stdout) == (1, "")
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"error: the model server at {model.url} sent a reply that is not a chat completion"
    )
    assert line.endswith("; check GROQ_BASE_URL")


def with_call(**changes) -> dict:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": "list_dir", "arguments": "{}"},
        **changes,
    }


NO_MESSAGE = [
    [None],
    ["text"],
    [{"index": 0, "finish_reason": "stop"}],
    [{"index": 0, "message": None, "finish_reason": "stop"}],
    [{"index": 0, "message": "hello", "finish_reason": "stop"}],
]
NO_FUNCTION_NAME = [
    "list_dir",
    {"0": with_call()},
    ["list_dir"],
    [with_call(function=None)],
    [with_call(function={"arguments": "{}"})],
    [with_call(function={"name": None, "arguments": "{}"})],
    [with_call(function={"name": "", "arguments": "{}"})],
    [with_call(function={"name": 7, "arguments": "{}"})],
]
# Whatever the SDK makes of them (openai before 1.99.2 reads every call as a
# function call), these never run.
NOT_A_FUNCTION_CALL = [
    ([with_call(type="custom")], "a tool call of type 'custom', which is not a function call"),
    (
        [
            with_call(),
            with_call(id="call_2", type="custom", custom={"name": "list_dir", "input": ""}),
        ],
        "a tool call of type 'custom', which is not a function call",
    ),
    ([with_call(type=7)], "a tool call of type '7', which is not a function call"),
    ([with_call(type=None)], "a tool call that has no type"),
    (
        [{"id": "call_1", "function": {"name": "list_dir", "arguments": "{}"}}],
        "a tool call that has no type",
    ),
]


@pytest.mark.parametrize(
    "body, what",
    [
        *[
            ({**completion({"content": "x"}), "choices": choices}, "no message")
            for choices in NO_MESSAGE
        ],
        *[
            (
                completion({"content": None, "tool_calls": tool_calls}, finish_reason="tool_calls"),
                "a tool call that has no function name",
            )
            for tool_calls in NO_FUNCTION_NAME
        ],
        *[
            (
                completion({"content": None, "tool_calls": tool_calls}, finish_reason="tool_calls"),
                what,
            )
            for tool_calls, what in NOT_A_FUNCTION_CALL
        ],
    ],
)
def test_a_reply_with_no_message_or_no_function_name_is_one_line_and_the_transcript_still_continues(
    model, cli, body, what
):
    model.queue({"body": body}, answer("fine"))

    result = cli("x")

    assert (result.returncode, result.stdout) == (1, "")
    [line] = result.stderr.splitlines()
    assert line == (
        f"error: the model server at {model.url} sent a reply with {what}; try again, or choose "
        "another model with --model or AGENT_MODEL"
    )
    assert cli("--continue", "again").stdout == "fine\n"


@pytest.mark.parametrize(
    "usage",
    [
        [1],
        "many",
        {"prompt_tokens": "\x1b[2J", "completion_tokens": None},
        {"prompt_tokens": -5, "completion_tokens": 1e300},
        {"prompt_tokens": 10**400, "completion_tokens": True},
    ],
)
def test_usage_that_is_not_a_count_counts_as_none(model, cli, usage):
    model.queue({"body": {**completion({"content": "fine"}), "usage": usage}})

    result = cli("x", "--no-transcript")

    assert (result.returncode, result.stdout) == (0, "fine\n")
    assert result.stderr.startswith("done: 1 step, 0 tool calls, 0 tokens in, 0 out, ")


@pytest.mark.parametrize("retry_after", ["99999999999999999999", "1e400", "inf"])
def test_a_429_with_a_huge_retry_after_stops_in_one_line(model, cli, retry_after):
    model.queue(
        rate_limited(
            "Rate limit reached on requests per minute (RPM)", **{"retry-after": retry_after}
        )
    )

    result = cli("x", "--no-transcript")

    assert (result.returncode, result.stdout) == (1, "")
    # docs/free-plan.md: a wait over 60 s stops the run with one line
    [line] = result.stderr.splitlines()
    assert line.startswith(
        "error: rate limited (requests per minute) and waiting would take too long"
    )
    assert len(model.requests) == 1


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


def test_tool_use_failed_is_asked_again_then_succeeds(model):
    failed = error(
        400,
        "Failed to call a function. Please adjust your prompt.",
        code="tool_use_failed",
        failed_generation='<function=list_dir{"path": "."}</function>',
    )
    model.queue(failed, failed, answer("done"))

    assert harness.run("go") == "done"

    assert len(model.requests) == 3
    assert model.messages(2) == model.messages(0)


def test_tool_use_failed_three_times_raises_the_real_error(model):
    failed = error(
        400, "Failed to call a function.", code="tool_use_failed", failed_generation="<bad>"
    )
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
    model.queue(
        error(
            429,
            "Rate limit reached. Please try again in 0.1s.",
            code="rate_limit_exceeded",
            type="tokens",
            headers={"retry-after": "0.1"},
        ),
        answer("after the wait"),
    )

    assert harness.run("go") == "after the wait"

    assert len(model.requests) == 2


RPM = (
    "Rate limit reached for model `openai/gpt-oss-120b` in organization `org_x` service tier "
    "`on_demand` on requests per minute (RPM): Limit 30, Used 30, Requested 1."
)


def test_the_retry_after_header_sets_the_wait(model):
    model.queue(
        error(429, RPM, code="rate_limit_exceeded", type="requests", headers={"retry-after": "1"}),
        answer("ok"),
    )
    events = []

    assert harness.run("go", on_event=events.append) == "ok"

    assert [e["seconds"] for e in events if e["type"] == "wait"] == [1]


def test_millisecond_reset_headers_give_the_daily_reset_time(model, cli):
    model.queue(
        error(
            429,
            "Rate limit reached for model `openai/gpt-oss-120b` on tokens per day (TPD): "
            "Limit 200000, Used 200000, Requested 1500.",
            code="rate_limit_exceeded",
            type="tokens",
            headers={"x-ratelimit-reset-requests": "250ms", "x-ratelimit-reset-tokens": "180000ms"},
        )
    )

    result = cli("go")

    assert result.returncode == 1
    assert result.stderr.startswith(
        "error: rate limited: the plan's tokens per day are used up; "
        "it resets in about 3 min (around "
    )


def test_cli_tool_use_failed_every_time_stops_clearly(model, cli, tmp_path):
    failed = error(
        400, "Failed to call a function.", code="tool_use_failed", failed_generation="<bad>"
    )
    model.queue(failed, failed, failed)

    result = cli("x")

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "the model wrote a malformed tool call; asking again (attempt 2 of 3)",
        "the model wrote a malformed tool call; asking again (attempt 3 of 3)",
        "error: the model kept writing malformed tool calls (Groq's tool_use_failed): try again, "
        "rephrase the task, or choose another model with --model or AGENT_MODEL",
    ]
