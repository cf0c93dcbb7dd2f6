"""Groq's free plan: rate-limit waits, daily and size limits, 5xx, the context budget, the loop guard,
and the reply shapes small models send (empty, cut off)."""

import json

import openai
import pytest

import cli
import harness
from fake_model import answer, calls, error

TPM = ("Rate limit reached for model `openai/gpt-oss-120b` in organization `org_x` service tier `on_demand` "
       "on tokens per minute (TPM): Limit 8000, Used 7000, Requested 1500. Please try again in {wait}. "
       "Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing")
TPD = ("Rate limit reached for model `openai/gpt-oss-120b` in organization `org_x` service tier `on_demand` "
       "on tokens per day (TPD): Limit 200000, Used 199500, Requested 1500. Please try again in 7m12.5s.")


def rate_limited(message: str, **headers) -> dict:
    return error(429, message, code="rate_limit_exceeded", type="tokens", headers=headers)


def test_three_429s_with_retry_after_are_waited_out_visibly_and_the_run_answers(model, cli, tmp_path):
    model.queue(*[rate_limited(TPM.format(wait="0.9s"), **{"retry-after": "1"})] * 3, answer("made it"))

    result = cli("go")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "made it\n"
    assert result.stderr.splitlines()[:-1] == [
        f"rate limited (tokens per minute); waiting 1 s, retry {n} of 5" for n in (1, 2, 3)]
    assert len(model.requests) == 4
    assert model.messages(3) == model.messages(0)


def test_a_daily_limit_stops_at_once_with_one_line(model, cli, tmp_path):
    model.queue(rate_limited(TPD, **{"retry-after": "433"}))

    result = cli("go")

    assert result.returncode == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("error: rate limited: the plan's tokens per day are used up; it resets in about 7 min")
    assert line.endswith("; try again then, or use a paid tier")
    assert len(model.requests) == 1


def test_a_429_asking_for_more_than_a_minute_is_not_waited_for(model, cli, tmp_path):
    model.queue(rate_limited(TPM.format(wait="1m30s"), **{"retry-after": "90"}))

    result = cli("go")

    assert result.returncode == 1
    assert result.stderr.startswith("error: rate limited (tokens per minute) and waiting would take too long; "
                                    "it resets in about 2 min")
    assert len(model.requests) == 1


def test_the_try_again_message_sets_the_wait_when_there_is_no_header(model):
    events = []
    model.queue(rate_limited(TPM.format(wait="0.3s")), answer("ok"))

    assert harness.run("go", on_event=events.append) == "ok"

    [wait] = [e for e in events if e["type"] == "wait"]
    assert wait == {"type": "wait", "step": 1, "limit": "tokens per minute", "seconds": 0.3, "retry": 1, "of": 5}


def test_after_five_waits_in_a_row_the_run_stops(model):
    model.queue(*[rate_limited(TPM.format(wait="0.01s"))] * 6)

    with pytest.raises(openai.RateLimitError):
        harness.run("go")

    assert len(model.requests) == 6


def test_5xx_is_retried_by_the_sdk(model):
    model.queue(error(500, "Internal Server Error", type="internal_server_error"),
                error(503, "Service Unavailable", type="internal_server_error"), answer("recovered"))

    assert harness.run("go") == "recovered"
    assert len(model.requests) == 3


def test_an_html_502_page_becomes_a_readable_line(model, cli, tmp_path):
    page = "<html><head><title>502 Bad Gateway</title></head><body><center>cloudflare</center></body></html>"
    model.queue(*[{"status": 502, "body": page}] * 3)

    result = cli("go")

    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "no good answer from the model server; trying again (attempt 2 of 3)",
        "no good answer from the model server; trying again (attempt 3 of 3)",
        "error: the model server answered 502: Bad Gateway"]
    assert len(model.requests) == 3


def test_the_context_budget_elides_oldest_results_first_down_to_the_low_water_mark(model, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "2500")
    for name in "abcde":
        (tmp_path / f"{name}.txt").write_text(name * 3000)
    model.queue(*[calls(("read_file", {"path": f"{name}.txt"})) for name in "abcde"], answer("read them all"))
    events = []

    assert harness.run("read every file", on_event=events.append) == "read them all"

    for request in model.requests:  # the estimate is the messages' compact JSON / 4
        sent = request["body"]["messages"]
        assert len(json.dumps(sent, separators=(",", ":"), ensure_ascii=False)) // 4 <= 2500
    last = model.messages(5)
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert results == [f"[elided: 3,000 characters of read_file output from step {n}]" for n in (1, 2, 3, 4)] + [
        "e" * 3000]
    assert last[0]["role"] == "system" and last[1] == {"role": "user", "content": "read every file"}
    elided = [e for e in events if e["type"] == "elided"]
    assert [e["content"] for e in elided] == results[:4]
    # Once over, two results go at once (down to 60% of the budget), so the next request only appends.
    assert [e["step"] for e in elided] == [4, 4, 6, 6]
    assert model.messages(4)[:len(model.messages(3))] == model.messages(3)


def test_the_newest_turn_is_never_elided_even_over_budget(model, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "100")
    (tmp_path / "big.txt").write_text("x" * 3000)
    model.queue(calls(("read_file", {"path": "big.txt"})), answer("done"))

    harness.run("read")

    assert model.messages(1)[-1]["content"] == "x" * 3000


def test_elision_is_announced_on_stderr(model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "1000")
    for name in "ab":
        (tmp_path / f"{name}.txt").write_text(name * 3000)
    model.queue(calls(("read_file", {"path": "a.txt"})), calls(("read_file", {"path": "b.txt"})), answer("ok"))

    assert cli.main(harness.run, ["read both"]) == 0

    assert "context over 1,000 tokens: [elided: 3,000 characters of read_file output from step 1]" in \
        capsys.readouterr().err.splitlines()


def test_the_third_identical_call_is_refused_and_the_run_goes_on(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    same = ("read_file", {"path": "a.txt"})
    model.queue(calls(same), calls(("read_file", {"path": "a.txt", "offset": 0})), calls(same), calls(same),
                calls(("list_dir", {})), answer("ok"))

    assert harness.run("go") == "ok"

    results = [model.messages(i)[-1]["content"] for i in range(1, 6)]
    assert results[:3] == ["A", "A", "A"]
    assert results[3] == ("error: you already called read_file with these arguments 2 times in this run and have "
                          "the result above; use it, try something else, or answer")
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
    assert result.stderr.splitlines()[0] == "the answer was cut off: the model hit its output limit (finish_reason: length)"
    assert result.stderr.splitlines()[1].startswith("done: 1 step, 0 tool calls, ")


def test_a_daily_request_limit_says_when_it_resets_from_the_headers(model, cli):
    model.queue(rate_limited("Rate limit reached for model `openai/gpt-oss-120b` on requests per day (RPD): "
                             "Limit 1000, Used 1000, Requested 1.", **{"x-ratelimit-reset-requests": "2h10m"}))

    result = cli("go")

    assert result.returncode == 1
    assert result.stderr.startswith("error: rate limited: the plan's requests per day are used up; "
                                    "it resets in about 2.2 h (around ")
