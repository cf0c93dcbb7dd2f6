"""await arun(task, ...): the same loop in a thread of its own. The caller's event loop keeps
running during a run, many runs go at once, async approvals and listeners are awaited on the
caller's loop, and cancelling the task stops the run as Ctrl-C does: every call answered, the events
ended with reason interrupted."""

import asyncio
import functools
import inspect
import itertools
import os
import threading
import time

import pytest
from fake_model import answer, calls
from helpers import alive, assert_well_formed, linux_only, posix_only, under

import harness
from plainagent.calls.schema import schema
from plainagent.core.awaiting import Bridge
from plainagent.core.settings import ConfigError

DELAY = 0.2  # seconds the stand-in server takes for each reply
MOST_GAP = 0.05  # the longest a ticker on the caller's loop may wait


def ticking(ticks: list[float]) -> asyncio.Task:
    async def tick() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    return asyncio.get_running_loop().create_task(tick())


def longest_gap(ticks: list[float]) -> float:
    return max(later - earlier for earlier, later in itertools.pairwise(ticks))


def history(events: list[dict]) -> list[dict]:
    return [event["message"] for event in events if event["type"] == "message"]


async def until(condition, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


def test_a_ticker_on_the_callers_loop_keeps_ticking_during_a_run(model, tmp_path):
    (tmp_path / "a.txt").write_text("a")

    def reply(body: dict) -> dict:
        turns = sum(message["role"] == "tool" for message in body["messages"])
        return {
            **[calls(("list_dir", {})), calls(("read_file", {"path": "a.txt"})), answer("a.txt")][
                turns
            ],
            "delay": DELAY,
        }

    model.router = reply

    async def main() -> tuple[str, list[float]]:
        ticks: list[float] = []
        ticker = ticking(ticks)
        result = await harness.arun("What is here?")
        ticker.cancel()
        return result, ticks

    # A run that blocked the loop would stop the ticker for a whole reply, 200 ms,
    # every time; a busy machine can keep any process waiting for a CPU now and then,
    # so the best of three runs is taken.
    gaps = []
    for _ in range(3):
        result, ticks = asyncio.run(main())
        assert result == "a.txt" and ticks[-1] - ticks[0] >= 3 * DELAY
        gaps.append(longest_gap(ticks))
        if gaps[-1] < MOST_GAP:
            break
    assert min(gaps) < MOST_GAP, (
        f"the loop waited {', '.join(f'{gap * 1000:.0f}' for gap in gaps)} ms"
    )


def test_twenty_runs_at_once_take_about_as_long_as_one(model):
    def reply(body: dict) -> dict:
        done = any(message["role"] == "tool" for message in body["messages"])
        return {
            **(answer(body["messages"][1]["content"]) if done else calls(("list_dir", {}))),
            "delay": DELAY,
        }

    model.router = reply

    async def timed(runs: int) -> tuple[list[str], float]:
        started = time.perf_counter()
        answers = await asyncio.gather(*(harness.arun(f"task {n}") for n in range(runs)))
        return answers, time.perf_counter() - started

    _, one = asyncio.run(timed(1))
    answers, twenty = asyncio.run(timed(20))

    assert answers == [f"task {n}" for n in range(20)]
    assert len(model.requests) == 2 + 40
    # one by one: 20 times
    assert twenty < 3 * one, f"20 runs at once took {twenty:.2f} s, one {one:.2f} s"


def test_an_async_approver_and_listener_are_awaited_on_the_callers_loop(model, tmp_path):
    model.queue(calls(("write_file", {"path": "a.txt", "content": "hi"})), answer("wrote it"))
    seen: list[tuple[str, threading.Thread]] = []

    async def approve(name: str, arguments: dict) -> bool:
        await asyncio.sleep(0.01)
        seen.append((f"approve {name}", threading.current_thread()))
        return True

    async def on_event(event: dict) -> None:
        seen.append((event["type"], threading.current_thread()))

    assert asyncio.run(harness.arun("write", approve=approve, on_event=on_event)) == "wrote it"

    assert (tmp_path / "a.txt").read_text() == "hi"
    assert ("approve write_file", threading.main_thread()) in seen
    assert {thread for _, thread in seen} == {threading.main_thread()}
    assert [kind for kind, _ in seen][-1] == "end"


def test_arun_takes_run_s_keywords_and_raises_its_errors(model):
    model.queue(answer("checked"), answer('{"ok": true}'))
    verdict = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

    assert asyncio.run(harness.arun("Is it ok?", output=verdict, max_steps=3)) == {"ok": True}
    with pytest.raises(ConfigError, match="AGENT_MAX_STEPS must be a positive whole number"):
        asyncio.run(harness.arun("x", max_steps=0))


@posix_only
@linux_only
def test_cancelling_the_task_stops_a_command_and_answers_every_call(model, tmp_path):
    model.queue(calls(("run_shell", {"command": "sleep 301"}), ("list_dir", {})))
    events: list[dict] = []

    async def main() -> float:
        task = asyncio.create_task(
            harness.arun(
                "wait",
                approve=lambda name, arguments: True,
                on_event=events.append,
                shell_timeout=600,
            )
        )
        await until(lambda: under(os.getpid(), "sleep 301"))
        sleeper = under(os.getpid(), "sleep 301")
        cancelled = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not alive(sleeper)
        return time.perf_counter() - cancelled

    seconds = asyncio.run(main())

    assert seconds < 2
    messages = history(events)
    assert_well_formed(messages)
    assert [(m["role"], m["content"]) for m in messages[-2:]] == [
        ("tool", "interrupted"),
        ("tool", "interrupted"),
    ]
    assert {key: events[-1][key] for key in ("type", "reason", "answer")} == {
        "type": "end",
        "reason": "interrupted",
        "answer": None,
    }


def test_cancelling_while_an_async_approval_waits_stops_the_run_at_once(model, tmp_path):
    model.queue(calls(("write_file", {"path": "a.txt", "content": "hi"})))
    events: list[dict] = []
    asked = asyncio.Event()

    async def approve(name: str, arguments: dict) -> bool:
        asked.set()
        await asyncio.Event().wait()  # nobody answers
        return True

    async def main() -> None:
        task = asyncio.create_task(harness.arun("write", approve=approve, on_event=events.append))
        await asyncio.wait_for(asked.wait(), 20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    assert not (tmp_path / "a.txt").exists()
    assert history(events)[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "interrupted",
    }
    assert {key: events[-1][key] for key in ("type", "reason", "answer")} == {
        "type": "end",
        "reason": "interrupted",
        "answer": None,
    }


def test_a_call_approved_after_the_task_was_cancelled_does_not_run(model, tmp_path):
    model.queue(
        calls(
            ("write_file", {"path": "a.txt", "content": "a"}),
            ("write_file", {"path": "b.txt", "content": "b"}),
        )
    )
    events: list[dict] = []
    asked = threading.Event()

    # a slow approver of the script's, in the run's thread
    def approve(name: str, arguments: dict) -> bool:
        asked.set()
        time.sleep(0.3)
        return True

    async def main() -> None:
        task = asyncio.create_task(harness.arun("write", approve=approve, on_event=events.append))
        await until(asked.is_set)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    assert sorted(path.name for path in tmp_path.iterdir()) == []
    assert [m["content"] for m in history(events) if m["role"] == "tool"] == [
        "interrupted",
        "interrupted",
    ]
    assert {key: events[-1][key] for key in ("type", "reason", "answer")} == {
        "type": "end",
        "reason": "interrupted",
        "answer": None,
    }


def test_cancelling_during_a_model_request_sends_no_more_and_ends_the_events(model):
    model.queue({**calls(("list_dir", {})), "delay": 1.0})
    events: list[dict] = []

    async def main() -> None:
        task = asyncio.create_task(harness.arun("look", on_event=events.append))
        await until(lambda: model.requests)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    assert len(model.requests) == 1  # the reply that came after the stop was not acted on
    assert [event["type"] for event in events if event["type"] in ("call", "tool")] == []
    assert {key: events[-1][key] for key in ("type", "reason", "answer")} == {
        "type": "end",
        "reason": "interrupted",
        "answer": None,
    }


def test_an_async_tools_result_reaches_the_model_from_the_callers_own_loop(model):
    model.queue(calls(("lookup", {"word": "cache"})), answer("a cache keeps things near"))
    loops: list[asyncio.AbstractEventLoop] = []

    async def lookup(word: str) -> dict:
        """Look a word up in the glossary."""
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0.01)
        return {"word": word, "meaning": "kept near"}

    async def main() -> tuple[str, asyncio.AbstractEventLoop]:
        return await harness.arun("What is a cache?", tools=[lookup]), asyncio.get_running_loop()

    result, callers = asyncio.run(main())

    assert result == "a cache keeps things near"
    assert loops == [
        callers
    ]  # the script's loop, where its clients and locks live, not a fresh one
    assert model.messages(1)[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"word": "cache", "meaning": "kept near"}',
    }


def test_cancelling_while_an_async_tool_awaits_stops_the_run_with_every_call_answered(model):
    model.queue(calls(("fetch", {"url": "a"}), ("fetch", {"url": "b"})))
    events: list[dict] = []
    cancelled: list[str] = []

    async def fetch(url: str) -> str:
        """Fetch a page."""
        started.set()
        try:
            await asyncio.Event().wait()  # a server that never answers
        except asyncio.CancelledError:
            cancelled.append(url)
            raise
        return "never"

    async def main() -> None:
        nonlocal started
        started = asyncio.Event()
        task = asyncio.create_task(harness.arun("fetch", tools=[fetch], on_event=events.append))
        await asyncio.wait_for(started.wait(), 20)
        await asyncio.sleep(0.2)  # the run's thread is waiting for the tool by now
        task.cancel()
        finished, _ = await asyncio.wait({task}, timeout=20)
        assert finished, "the run went on waiting for the tool"
        with pytest.raises(asyncio.CancelledError):
            await task

    started = asyncio.Event()
    asyncio.run(main())

    assert cancelled == ["a"]  # the tool being awaited is cancelled; the second call never starts
    messages = history(events)
    assert_well_formed(messages)
    assert [(m["role"], m["content"]) for m in messages[-2:]] == [
        ("tool", "interrupted"),
        ("tool", "interrupted"),
    ]
    assert [event["type"] for event in events if event["type"] == "tool"] == []
    assert {key: events[-1][key] for key in ("type", "reason", "answer")} == {
        "type": "end",
        "reason": "interrupted",
        "answer": None,
    }


def test_an_async_tool_keeps_its_schema_and_is_awaited_on_the_callers_loop():
    async def lookup(word: str, *, limit: int = 3) -> str:
        """Look a word up in the glossary.

        Args:
            word: the word to look up
        """
        await asyncio.sleep(0)
        return f"{word}:{limit}:{threading.current_thread() is threading.main_thread()}"

    async def main() -> tuple[dict, str, bool]:
        tool = Bridge(asyncio.get_running_loop()).callable(lookup)
        answered = await asyncio.to_thread(tool, "cache", limit=2)  # as the run's thread calls it
        return schema(tool), answered, inspect.iscoroutinefunction(tool)

    described, answered, still_async = asyncio.run(main())

    assert described == schema(lookup)
    assert answered == "cache:2:True" and still_async is False


def test_a_run_whose_event_loop_stops_under_it_is_not_left_waiting_for_good(model, tmp_path):
    model.queue(
        calls(("write_file", {"path": "a.txt", "content": "hi"})), answer("could not write")
    )
    asked = threading.Event()

    async def approve(name: str, arguments: dict) -> bool:
        asked.set()
        await asyncio.Event().wait()  # the loop stops before anyone answers
        return True

    loop = asyncio.new_event_loop()
    task = loop.create_task(harness.arun("write", approve=approve))
    loop.run_until_complete(until(asked.is_set))  # then the loop stops, the task left behind
    deadline = time.monotonic() + 20
    while any(thread.name == "arun" for thread in threading.enumerate()):
        assert time.monotonic() < deadline, "the run's thread still waits"
        time.sleep(0.05)

    assert model.messages(1)[-1]["content"] == (
        "error: RuntimeError: the event loop awaiting this run stopped; await arun() to its end"
    )
    assert loop.run_until_complete(task) == "could not write"
    loop.close()
    assert not (tmp_path / "a.txt").exists()


def test_an_async_approver_and_listener_are_awaited_under_run_too(model, tmp_path):
    model.queue(
        calls(
            ("write_file", {"path": "a.txt", "content": "hi"}),
            ("write_file", {"path": "b.txt", "content": "no"}),
        ),
        answer("wrote one"),
    )
    seen: list[str] = []

    async def approve(name: str, arguments: dict) -> bool | str:
        await asyncio.sleep(0.01)
        return True if arguments["path"] == "a.txt" else "not b.txt, please"

    async def on_event(event: dict) -> None:
        await asyncio.sleep(0)
        seen.append(event["type"])

    assert harness.run("write", approve=approve, on_event=on_event) == "wrote one"

    assert (tmp_path / "a.txt").read_text() == "hi" and not (tmp_path / "b.txt").exists()
    assert model.messages(1)[-1]["content"] == "not b.txt, please"
    assert (seen[0], seen[-1]) == ("start", "end")


def test_a_partial_of_an_async_tool_is_awaited_on_the_callers_loop(model):
    loops = []

    async def greet(greeting: str, name: str) -> str:
        """Greet someone."""
        loops.append(asyncio.get_running_loop())
        return f"{greeting}, {name}"

    model.queue(calls(("greet", {"name": "Ada"})), answer("ok"))

    async def main() -> str:
        answer = await harness.arun("greet", tools=[functools.partial(greet, "Hello")])
        return f"{answer} {loops == [asyncio.get_running_loop()]}"

    assert asyncio.run(main()) == "ok True"
    assert model.messages(1)[-1]["content"] == "Hello, Ada"
