"""What the model is sent (context.py): the system prompt, AGENTS.md, the context
budget and the prompt cache."""

import itertools
import json
import os
import platform

import pytest
from fake_model import answer, calls, completion
from helpers import posix_only, run_script

import harness
import tools
from plainagent.approval import prompt as approval
from plainagent.approval.gate import asks
from plainagent.cli import main as cli
from plainagent.core import settings
from plainagent.model import context
from plainagent.runs import resume

BASE_PROMPT_END = "Once you have what you need, answer without calling tools."
HEADING = "\n\nProject instructions from AGENTS.md:\n"


def test_agents_md_is_in_the_system_prompt_of_every_request_of_the_run(model, cli, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Run the tests with `make test`.\nNever touch vendor/.\n")
    model.queue(
        calls(("write_file", {"path": "AGENTS.md", "content": "Changed mid-run."})), answer("done")
    )

    assert cli("--yes", "--no-transcript", "change the instructions").returncode == 0

    system = model.messages(0)[0]
    assert system["role"] == "system"
    assert system["content"].endswith(
        f"{BASE_PROMPT_END}{HEADING}Run the tests with `make test`.\nNever touch vendor/.\n"
    )
    # Read once per run: the second request carries the same system message,
    # though the file changed.
    assert (tmp_path / "AGENTS.md").read_text() == "Changed mid-run."
    assert model.messages(1)[0] == system


@pytest.mark.parametrize(
    "text, left_out",
    [
        ("".join(f"line {i:05d}: {'x' * 87}\n" for i in range(2048)), "196,800"),  # 200 KB of ASCII
        # two bytes a character: 8,000 characters are 16,000 of the 20,000 bytes
        (
            "é" * 10_000,
            "4,000",
        ),
    ],
)
def test_a_long_agents_md_is_clipped_with_a_note_saying_how_much_was_left_out(
    model, cli, tmp_path, text, left_out
):
    (tmp_path / "AGENTS.md").write_text(text, encoding="utf-8")
    model.queue(answer("ok"))

    cli("--no-transcript", "hi")

    base, heading, instructions = model.messages(0)[0]["content"].partition(HEADING)
    assert base.endswith(BASE_PROMPT_END) and heading
    note = f"\n[AGENTS.md was cut here: {left_out} more bytes were left out]"
    assert instructions == text[: context.AGENTS_MD_MAX_CHARS] + note


def test_without_agents_md_the_system_prompt_is_unchanged(model, cli):
    model.queue(answer("ok"))

    cli("--no-transcript", "hi")

    system = model.messages(0)[0]["content"]
    assert system.endswith(BASE_PROMPT_END) and "AGENTS.md" not in system


@posix_only
def test_an_agents_md_linking_out_of_the_workspace_is_not_read(model, cli, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "secret.md").write_text("SECRET")
    (workspace / "AGENTS.md").symlink_to(tmp_path / "secret.md")
    model.queue(answer("ok"))

    cli("--no-transcript", "--workspace", str(workspace), "hi")

    system = model.messages(0)[0]["content"]
    assert system.endswith(BASE_PROMPT_END) and "SECRET" not in system


@posix_only
def test_a_fifo_named_agents_md_is_skipped_without_waiting_for_a_writer(model, tmp_path):
    os.mkfifo(tmp_path / "AGENTS.md")
    model.queue(answer("ok"))

    result = run_script("harness.py", "--no-transcript", "hi", cwd=tmp_path, timeout=30)

    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr
    assert model.messages(0)[0]["content"].endswith(BASE_PROMPT_END)


CALL = "read_file"


def compact(message: dict) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def read(n: int, arguments: dict) -> dict:
    """A reply asking for one read_file call, with an id no other step uses."""
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": CALL, "arguments": json.dumps(arguments)},
    }
    return {"body": completion({"content": None, "tool_calls": [call]}, finish_reason="tool_calls")}


def sent(model) -> list[list[dict]]:
    return [request["body"]["messages"] for request in model.requests]


def uncached_ratio(requests: list[list[dict]]) -> float:
    """Characters from the first message that differs from the previous request on, over
    the characters of the messages appended since the previous request; 1.0 when every
    request only appends. (For runs that only elide in place, so each request has the
    previous one's messages and more.)"""
    uncached = new = 0
    for before, now in itertools.pairwise(requests):
        first = next(
            (i for i, (a, b) in enumerate(zip(before, now, strict=False)) if a != b), len(before)
        )
        uncached += sum(len(compact(m)) for m in now[first:])
        new += sum(len(compact(m)) for m in now[len(before) :])
    return uncached / new


def estimate(messages: list[dict]) -> int:
    return len(json.dumps(messages, separators=(",", ":"), ensure_ascii=False)) // 4


def assert_paired(messages: list[dict]) -> None:
    """Every tool call is answered exactly once, right after its assistant message, in
    order; no stray results."""
    i = 0
    while i < len(messages):
        assert messages[i]["role"] != "tool", f"a tool result with no call before it at {i}"
        ids = [call["id"] for call in messages[i].get("tool_calls") or []]
        assert [m.get("tool_call_id") for m in messages[i + 1 : i + 1 + len(ids)]] == ids
        i += 1 + len(ids)


def test_thirty_reads_keep_the_cache_and_every_request_within_the_budget(model, tmp_path):
    for n in range(30):
        (tmp_path / f"f{n}.txt").write_text(f"{n:02d}" * 1500)
    model.queue(*[read(n, {"path": f"f{n}.txt"}) for n in range(30)], answer("read them all"))
    events = []

    assert (
        harness.run("read f0.txt to f29.txt", max_steps=31, on_event=events.append)
        == "read them all"
    )

    requests = sent(model)
    assert len(requests) == 31
    print(f"uncached / new characters: {uncached_ratio(requests):.2f}")
    assert uncached_ratio(requests) <= 2.0
    assert all(
        estimate(messages) <= settings.BY_NAME["context_budget"].default * 1.1
        for messages in requests
    )
    assert [e["estimated_tokens"] for e in events if e["type"] == "request"] == [
        estimate(m) for m in requests
    ]
    assert len({compact(m[0]) for m in requests}) == 1 and requests[0][0]["role"] == "system"
    assert len({json.dumps(r["body"]["tools"]) for r in model.requests}) == 1
    assert [e for e in events if e["type"] in ("dropped", "over_budget")] == []
    assert requests[-1][-1]["content"] == "29" * 1500  # the newest result whole
    assert any(e["type"] == "elided" for e in events)


def test_a_long_run_drops_the_oldest_turns_when_stubs_are_not_enough_and_stays_paired(
    model, tmp_path
):
    text = "abcdefghij" * 220
    (tmp_path / "f.txt").write_text(text)
    offsets = range(0, 2200, 10)
    model.queue(
        *[read(n, {"path": "f.txt", "offset": offset}) for n, offset in enumerate(offsets)],
        answer("done"),
    )
    events = []

    assert (
        harness.run(
            "read f.txt piece by piece", max_steps=221, context_budget=1500, on_event=events.append
        )
        == "done"
    )

    requests = sent(model)
    assert len(requests) == 221
    assert max(estimate(messages) for messages in requests) <= 1500 * 1.1
    assert [e["estimated_tokens"] for e in events if e["type"] == "request"] == [
        estimate(m) for m in requests
    ]
    assert any(e["type"] == "dropped" for e in events)
    assert not any(e["type"] == "over_budget" for e in events)
    for messages in requests:
        assert_paired(messages)
        assert messages[0]["role"] == "system"
        assert messages[1] == {"role": "user", "content": "read f.txt piece by piece"}
        # a stub still names the step its result came from, after turns were dropped
        for message in messages:
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
    # the newest turn alone is over: nothing can go from step 2 on
    over = estimate(model.messages(1))
    notices = [line for line in result.stderr.splitlines() if line.startswith("context still over")]
    assert notices == [
        f"context still over 300 tokens (about {over:,}): nothing older is left to shorten; "
        "the system prompt, your messages and the newest turn stay whole"
    ]
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    [notice] = [e for e in events if e["type"] == "over_budget"]
    assert {k: notice[k] for k in ("step", "estimated_tokens", "budget")} == {
        "step": 2,
        "estimated_tokens": over,
        "budget": 300,
    }
    assert estimate(model.messages(2)) > 300 and model.messages(2)[-1]["content"] == "1" * 3000
    # Everything older went (stubbed, then dropped); the newest turn stayed whole.
    assert [m["role"] for m in model.messages(3)] == ["system", "user", "assistant", "tool"]
    assert model.messages(3)[-1]["content"] == "2" * 3000


def test_continue_sends_exactly_the_history_the_run_last_sent(model, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "700")
    text = "0123456789" * 100
    (tmp_path / "f.txt").write_text(text)
    model.queue(
        *[read(n, {"path": "f.txt", "offset": 20 * n}) for n in range(40)],
        answer("read it"),
        answer("more"),
    )
    first = cli("read f.txt in pieces", "--max-steps", "41", "--transcript", "t.jsonl")
    kinds = [json.loads(line)["type"] for line in (tmp_path / "t.jsonl").read_text().splitlines()]

    second = cli("--continue", "and now?", "--transcript", "t.jsonl")

    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    assert "dropped" in kinds and "elided" in kinds
    last_sent = model.messages(40)
    assert model.messages(41) == last_sent + [
        {"role": "assistant", "content": "read it"},
        {"role": "user", "content": "and now?"},
    ]
    assert resume.restore(tmp_path / "t.jsonl")[0] == model.messages(41) + [
        {"role": "assistant", "content": "more"}
    ]


def test_the_context_budget_elides_oldest_results_first_down_to_the_low_water_mark(
    model, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "2500")
    for name in "abcde":
        (tmp_path / f"{name}.txt").write_text(name * 3000)
    model.queue(
        *[calls(("read_file", {"path": f"{name}.txt"})) for name in "abcde"],
        answer("read them all"),
    )
    events = []

    assert harness.run("read every file", on_event=events.append) == "read them all"

    for request in model.requests:  # the estimate is the messages' compact JSON / 4
        sent = request["body"]["messages"]
        assert len(json.dumps(sent, separators=(",", ":"), ensure_ascii=False)) // 4 <= 2500
    last = model.messages(5)
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert results == [
        f"[elided: 3,000 characters of read_file output from step {n}]" for n in (1, 2, 3, 4)
    ] + ["e" * 3000]
    assert last[0]["role"] == "system" and last[1] == {"role": "user", "content": "read every file"}
    elided = [e for e in events if e["type"] == "elided"]
    assert [e["content"] for e in elided] == results[:4]
    # Once over, two results go at once (down to 60% of the budget), so the
    # next request only appends.
    assert [e["step"] for e in elided] == [4, 4, 6, 6]
    assert model.messages(4)[: len(model.messages(3))] == model.messages(3)


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
    model.queue(
        calls(("read_file", {"path": "a.txt"})),
        calls(("read_file", {"path": "b.txt"})),
        answer("ok"),
    )

    assert cli.main(harness.run, ["read both"]) == 0

    assert (
        "context over 1,000 tokens: [elided: 3,000 characters of read_file output from step 1]"
        in capsys.readouterr().err.splitlines()
    )


def test_dropping_several_old_turns_at_once_keeps_the_newest_turn(model):
    def turn(n: int) -> list[dict]:
        # shorter than a stub
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "list_dir", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": "a.txt  3 bytes"},
        ]

    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    for n in range(1, 6):
        messages += turn(n)
    events = []

    context.fit_to_budget(messages, 60, 6, events.append)

    assert messages == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        *turn(5),
    ]
    assert [e["type"] for e in events] == ["dropped"] * 4 + ["over_budget"]


def test_tool_call_arguments_count_toward_the_budget(model, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "1500")  # 6,000 characters
    (tmp_path / "a.txt").write_text("a" * 2000)
    model.queue(
        calls(("read_file", {"path": "a.txt"})),
        calls(("write_file", {"path": "w.txt", "content": "w" * 6000})),
        answer("ok"),
    )

    harness.run("read then write", approve=approval.approve_all)

    # Without the 6,000 characters of arguments the request would fit, and
    # the file's text would stay.
    assert [m["content"] for m in model.messages(2) if m["role"] == "tool"][
        -1
    ] == "created w.txt (6000 bytes)"
    assert all(m.get("content") != "a" * 2000 for m in model.messages(2))


def test_shortening_that_stops_above_the_low_water_mark_but_within_the_budget_says_nothing(model):
    # The newest turn alone is past 60% of the budget, so shortening cannot reach the low-water
    # mark; the request still fits, and "context still over" would be false.
    def turn(n: int, result: str) -> list[dict]:
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": result},
        ]

    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        *turn(1, "a" * 400),
        *turn(2, "b" * 600),
    ]
    events = []

    tokens = context.fit_to_budget(messages, 220, 3, events.append)

    assert int(220 * context.LOW_WATER) < tokens <= 220 and estimate(messages) == tokens
    assert messages[-1]["content"] == "b" * 600
    assert [e["type"] for e in events if e["type"] not in ("elided", "dropped")] == []
    assert events  # it was over, and shortened what it could


def test_instructions_join_the_system_prompt_and_agents_md_still_applies(model, tmp_path):
    (tmp_path / "AGENTS.md").write_text("Never touch vendor/.\n")
    model.queue(answer("ok"), answer("ok"), answer("ok"))
    history: list[dict] = []

    harness.run("x", instructions="Answer in French.", messages=history)
    harness.run("y", instructions="Answer in French.", messages=history)
    events = []
    harness.run("z", instructions="Answer in German.", messages=history, on_event=events.append)

    first = model.messages(0)[0]["content"]
    assert first.endswith(f"{BASE_PROMPT_END}\n\nAnswer in French.{HEADING}Never touch vendor/.\n")
    # the same instructions: the same prompt, its cache kept
    assert model.messages(1)[0]["content"] == first
    # the script's instructions now
    assert model.messages(2)[0]["content"] == first.replace("French", "German")
    assert [m["role"] for m in model.messages(2)].count("system") == 1
    assert [e["type"] for e in events[:2]] == ["start", "system"]


def lookup(word: str) -> str:
    """Look a word up in the glossary."""
    return word


@asks
def file_ticket(title: str) -> str:
    """File a ticket."""
    return "filed"


def test_the_system_prompt_describes_the_tools_the_run_has(model, tmp_path):
    model.queue(answer("a"), answer("b"), answer("c"), answer("d"))

    harness.run("x", tools=[])
    harness.run("x", tools=[lookup])
    harness.run("x", tools=[lookup, file_ticket])
    harness.run("x")

    start = (
        f"You are a helpful agent working in the folder {tmp_path.resolve()} on "
        f"{platform.system()}. "
    )
    prompts = [model.messages(n)[0]["content"] for n in range(4)]
    assert prompts[:3] == [
        start + "You have no tools here: answer from what you know and what the user tells you.",
        start + f"Use your tools (lookup) where they help. {BASE_PROMPT_END}",
        start + "Use your tools (lookup, file_ticket) where they help. Some calls need the user's "
        f"approval and may be denied. {BASE_PROMPT_END}",
    ]
    assert "tools" not in model.requests[0]["body"]
    # The built-ins are described as ever: the shell, the approvals, the sandbox where there is one
    assert prompts[3].startswith(
        start + "Use the tools to look at files and run commands there (run_shell uses "
    )
    assert "Some calls need the user's approval" in prompts[3] and prompts[3].endswith(
        BASE_PROMPT_END
    )
    built_in = [function.__name__ for function in tools.TOOL_FUNCTIONS]
    assert sorted(context.BUILT_IN_NAMES) == sorted(built_in)


def test_a_conversation_continued_with_other_tools_is_told_about_them(model):
    history: list[dict] = []
    own = [{"role": "system", "content": "You are a pirate."}]
    model.queue(answer("a"), answer("b"), answer("c"), answer("d"))

    harness.run("x", tools=[], messages=history)
    harness.run("y", tools=[lookup], messages=history)
    harness.run("z", messages=history)  # the built-ins again
    harness.run("w", tools=[lookup], messages=own)

    systems = [
        [message["content"] for message in model.messages(n) if message["role"] == "system"]
        for n in range(4)
    ]
    assert [len(prompts) for prompts in systems] == [1, 1, 1, 1]
    assert "You have no tools here" in systems[0][0]
    assert "Use your tools (lookup) where they help." in systems[1][0]
    assert "run_shell uses " in systems[2][0] and history[0]["content"] == systems[2][0]
    assert systems[3] == ["You are a pirate."]  # a script's own system message stays its own
