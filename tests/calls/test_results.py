"""A tool called and its result as the model gets it (phases 1 and 5): an async tool awaited,
whatever thread and loop run() is called from; a result that is not a str sent as JSON; valid UTF-8,
and cut to AGENT_MAX_CHARS keeping its start and its end, the paged tools' own notes given room."""

import asyncio
import dataclasses
import enum
import functools
import threading
import warnings

import pytest
from fake_model import answer, calls
from helpers import results as sent_results

import harness
from plainagent.calls import results
from plainagent.calls.schema import schema


async def lookup(word: str) -> str:
    """Look a word up (async, as a tool that calls a web service is)."""
    await asyncio.sleep(0.01)
    return f"{word}: found on {threading.current_thread().name}"


def test_an_async_tools_result_reaches_the_model(model):
    model.queue(calls(("lookup", {"word": "cat"})), answer("ok"))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" fails the test
        assert harness.run("look up cat", tools=[lookup]) == "ok"

    assert sent_results(model, 1) == [f"cat: found on {threading.current_thread().name}"]


def test_run_called_inside_a_running_event_loop_still_awaits_an_async_tool(model):
    # A notebook's cell, or a coroutine that calls run() without arun(): this
    # thread's loop is busy running the caller, so the tool is awaited on a loop of
    # its own in a helper thread, not refused.
    model.queue(calls(("lookup", {"word": "dog"})), answer("ok"))

    async def caller() -> str:
        return harness.run("look up dog", tools=[lookup])

    assert asyncio.run(caller()) == "ok"

    [result] = sent_results(model, 1)
    assert (
        result.startswith("dog: found on ")
        and result != f"dog: found on {threading.current_thread().name}"
    )


def test_a_sync_wrapper_of_an_async_tool_keeps_its_schema_and_its_result_reaches_the_model(model):
    # As a caller on an event loop of its own wraps each async tool
    # (functools.wraps) to await it there.
    @functools.wraps(lookup)
    def on_the_callers_loop(*args, **kwargs):
        return asyncio.run(lookup(*args, **kwargs))

    model.queue(calls(("lookup", {"word": "owl"})), answer("ok"))

    assert harness.run("look up owl", tools=[on_the_callers_loop]) == "ok"

    assert model.requests[0]["body"]["tools"] == [schema(lookup)]
    assert sent_results(model, 1) == [f"owl: found on {threading.current_thread().name}"]


async def broken(word: str) -> str:
    """An async tool that fails."""
    raise LookupError(f"no {word}")


class Size(enum.Enum):
    SMALL = "s"


@dataclasses.dataclass
class Found:
    word: str
    size: Size
    tags: set


def found(word: str) -> Found:
    """Find a word and say what it is."""
    return Found(word, Size.SMALL, {"x"})


def count(word: str) -> int:
    """Count a word's letters."""
    return len(word)


def nothing(word: str) -> None:
    """Do nothing with a word."""


def odd(word: str) -> object:
    """Return what JSON cannot hold."""
    return range(2)


def test_a_result_that_is_not_a_str_is_sent_as_json_and_a_failure_as_an_error(model):
    model.queue(
        calls(
            ("found", {"word": "cat"}),
            ("count", {"word": "cat"}),
            ("nothing", {"word": "cat"}),
            ("odd", {"word": "cat"}),
            ("broken", {"word": "cat"}),
        ),
        answer("ok"),
    )

    harness.run("find", tools=[found, count, nothing, odd, broken])

    assert sent_results(model, 1, 5) == [
        '{"word": "cat", "size": "s", "tags": ["x"]}',
        "3",
        "null",
        '"range(0, 2)"',
        "error: LookupError: no cat",
    ]


def test_a_pydantic_model_a_tool_returns_is_sent_as_its_json(model):
    pydantic = pytest.importorskip("pydantic", minversion="2")  # model_dump is pydantic 2's

    class Hit(pydantic.BaseModel):
        page: str
        visits: int

    def hits(page: str) -> list:
        """Count a page's visits."""
        return [Hit(page=page, visits=3)]

    model.queue(calls(("hits", {"page": "home"})), answer("ok"))

    harness.run("count", tools=[hits])

    assert sent_results(model, 1) == ['[{"page": "home", "visits": 3}]']


def test_a_long_result_of_another_tool_keeps_start_and_end_with_a_marker(in_a_run):
    text = "a" * 9000 + "the end"

    assert (
        results.cap(text, in_a_run)
        == "a" * 1333 + "\n[... cut 5,007 characters of 9,007 ...]\n" + "a" * 2660 + "the end"
    )


def test_results_with_lone_surrogates_become_valid_utf8(in_a_run):
    assert results.cap("caf\udce9", in_a_run) == "caf\\udce9"


def test_a_result_up_to_the_limit_and_the_notes_room_is_kept_whole_and_one_character_more_is_cut(
    in_a_run,
):
    limit = in_a_run.max_chars
    whole = "x" * (limit + results.NOTE_ROOM)
    assert results.cap(whole, in_a_run) == whole

    cut = results.cap(whole + "y", in_a_run)
    marker = f"\n[... cut {len(whole) + 1 - limit:,} characters of {len(whole) + 1:,} ...]\n"
    assert cut == "x" * (limit // 3) + marker + "x" * (limit - limit // 3 - 1) + "y"


def test_bytes_a_tool_returns_reach_the_model_as_their_text(model):
    def output(name: str) -> bytes:
        """A command's output."""
        return f"{name}: ok\nnext line ü\n".encode() + b"\xff"

    def both() -> dict:
        """Both."""
        return {"out": b"yes\n"}

    model.queue(calls(("output", {"name": "build"}), ("both", {})), answer("ok"))

    harness.run("go", tools=[output, both])

    assert sent_results(model, 1, 2) == ["build: ok\nnext line ü\n\\xff", '{"out": "yes\\n"}']
