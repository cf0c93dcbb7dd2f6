"""The context budget and Groq's prompt cache: requests stay within the budget (their compact JSON / 4),
their start stays unchanged between shortenings, and --continue sends the start the run last sent."""

import json

import harness
import settings
import transcript
from fake_model import answer, completion

CALL = "read_file"


def compact(message: dict) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def read(n: int, arguments: dict) -> dict:
    """A reply asking for one read_file call, with an id no other step uses."""
    call = {"id": f"call_{n}", "type": "function", "function": {"name": CALL, "arguments": json.dumps(arguments)}}
    return {"body": completion({"content": None, "tool_calls": [call]}, finish_reason="tool_calls")}


def sent(model) -> list[list[dict]]:
    return [request["body"]["messages"] for request in model.requests]


def uncached_ratio(requests: list[list[dict]]) -> float:
    """Characters from the first message that differs from the previous request on, over the characters of
    the messages appended since the previous request; 1.0 when every request only appends.
    (For runs that only elide in place, so each request has the previous one's messages and more.)"""
    uncached = new = 0
    for before, now in zip(requests, requests[1:]):
        first = next((i for i, (a, b) in enumerate(zip(before, now)) if a != b), len(before))
        uncached += sum(len(compact(m)) for m in now[first:])
        new += sum(len(compact(m)) for m in now[len(before):])
    return uncached / new


def estimate(messages: list[dict]) -> int:
    return len(json.dumps(messages, separators=(",", ":"), ensure_ascii=False)) // 4


def assert_paired(messages: list[dict]) -> None:
    """Every tool call is answered exactly once, right after its assistant message, in order; no stray results."""
    i = 0
    while i < len(messages):
        assert messages[i]["role"] != "tool", f"a tool result with no call before it at {i}"
        ids = [call["id"] for call in messages[i].get("tool_calls") or []]
        assert [m.get("tool_call_id") for m in messages[i + 1:i + 1 + len(ids)]] == ids
        i += 1 + len(ids)


def test_thirty_reads_keep_the_cache_and_every_request_within_the_budget(model, tmp_path):
    for n in range(30):
        (tmp_path / f"f{n}.txt").write_text(f"{n:02d}" * 1500)
    model.queue(*[read(n, {"path": f"f{n}.txt"}) for n in range(30)], answer("read them all"))
    events = []

    assert harness.run("read f0.txt to f29.txt", max_steps=31, on_event=events.append) == "read them all"

    requests = sent(model)
    assert len(requests) == 31
    print(f"uncached / new characters: {uncached_ratio(requests):.2f}")
    assert uncached_ratio(requests) <= 2.0
    assert all(estimate(messages) <= settings.BY_NAME["context_budget"].default * 1.1 for messages in requests)
    assert [e["estimated_tokens"] for e in events if e["type"] == "request"] == [estimate(m) for m in requests]
    assert len({compact(m[0]) for m in requests}) == 1 and requests[0][0]["role"] == "system"
    assert len({json.dumps(r["body"]["tools"]) for r in model.requests}) == 1
    assert [e for e in events if e["type"] in ("dropped", "over_budget")] == []
    assert requests[-1][-1]["content"] == "29" * 1500  # the newest result whole
    assert any(e["type"] == "elided" for e in events)


def test_a_long_run_drops_the_oldest_turns_when_stubs_are_not_enough_and_stays_paired(model, tmp_path):
    text = "abcdefghij" * 220
    (tmp_path / "f.txt").write_text(text)
    offsets = range(0, 2200, 10)
    model.queue(*[read(n, {"path": "f.txt", "offset": offset}) for n, offset in enumerate(offsets)], answer("done"))
    events = []

    assert harness.run("read f.txt piece by piece", max_steps=221, context_budget=1500,
                       on_event=events.append) == "done"

    requests = sent(model)
    assert len(requests) == 221
    assert max(estimate(messages) for messages in requests) <= 1500 * 1.1
    assert [e["estimated_tokens"] for e in events if e["type"] == "request"] == [estimate(m) for m in requests]
    assert any(e["type"] == "dropped" for e in events)
    assert not any(e["type"] == "over_budget" for e in events)
    for messages in requests:
        assert_paired(messages)
        assert messages[0]["role"] == "system"
        assert messages[1] == {"role": "user", "content": "read f.txt piece by piece"}
        for message in messages:  # a stub still names the step its result came from, after turns were dropped
            if message["role"] == "tool" and message["content"].startswith("[elided: "):
                step = int(message["tool_call_id"].removeprefix("call_")) + 1
                assert message["content"].endswith(f" of read_file output from step {step}]")
    assert requests[-1][-1]["content"] == text[2190:]
    assert requests[-1][-2]["tool_calls"][0]["id"] == "call_219"


def test_when_nothing_older_is_left_to_shorten_it_is_said_once(model, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "300")
    for n in range(3):
        (tmp_path / f"f{n}.txt").write_text(str(n) * 3000)
    model.queue(*[read(n, {"path": f"f{n}.txt"}) for n in range(3)], answer("done"))

    result = cli("read three files", "--transcript", "t.jsonl")

    assert result.returncode == 0, result.stderr
    over = estimate(model.messages(1))  # the newest turn alone is over: nothing can go from step 2 on
    notices = [line for line in result.stderr.splitlines() if line.startswith("context still over")]
    assert notices == [f"context still over 300 tokens (about {over:,}): nothing older is left to shorten; "
                       "the system prompt, your messages and the newest turn stay whole"]
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    [notice] = [e for e in events if e["type"] == "over_budget"]
    assert {k: notice[k] for k in ("step", "estimated_tokens", "budget")} == {
        "step": 2, "estimated_tokens": over, "budget": 300}
    assert estimate(model.messages(2)) > 300 and model.messages(2)[-1]["content"] == "1" * 3000
    # Everything older went (stubbed, then dropped); the newest turn stayed whole.
    assert [m["role"] for m in model.messages(3)] == ["system", "user", "assistant", "tool"]
    assert model.messages(3)[-1]["content"] == "2" * 3000


def test_continue_sends_exactly_the_history_the_run_last_sent(model, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "700")
    text = "0123456789" * 100
    (tmp_path / "f.txt").write_text(text)
    model.queue(*[read(n, {"path": "f.txt", "offset": 20 * n}) for n in range(40)], answer("read it"),
                answer("more"))
    first = cli("read f.txt in pieces", "--max-steps", "41", "--transcript", "t.jsonl")
    kinds = [json.loads(line)["type"] for line in (tmp_path / "t.jsonl").read_text().splitlines()]

    second = cli("--continue", "and now?", "--transcript", "t.jsonl")

    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    assert "dropped" in kinds and "elided" in kinds
    last_sent = model.messages(40)
    assert model.messages(41) == last_sent + [{"role": "assistant", "content": "read it"},
                                              {"role": "user", "content": "and now?"}]
    assert transcript.restore(tmp_path / "t.jsonl")[0] == model.messages(41) + [{"role": "assistant", "content": "more"}]
