"""A tool called and its result as the model gets it (phases 1 and 5): an async tool awaited, the
result as text (a str as it is, anything else as JSON), valid UTF-8, and no longer than the run
allows, keeping its start and its end; how a call ended, in a few words (outcome()), and its
arguments as the loop guard counts them (canonical())."""

import dataclasses
import enum
import inspect
import json
import typing

from plainagent.calls.schema import Tool
from plainagent.core.awaiting import awaited
from plainagent.core.settings import Settings

NOTE_ROOM = 200  # characters a result may add to that limit for its own note on what was cut
OUTCOME_CHARS = 100  # the most of an error's first line a tool event's outcome carries


def call_tool(
    tool: Tool, arguments: dict, settings: Settings, decided: typing.Any = None
) -> typing.Any:
    """Call a tool with the model's checked arguments, with the run's settings if it declares a
    `settings` parameter, what the gate decided if it declares `decided` (an MCP server's tool: the
    arguments as one dict, and the settings); an async tool's result is awaited (awaiting.py)."""
    if tool.as_given:  # an MCP server's: its arguments as one dict, whatever their names
        return tool.function(arguments, settings)
    if tool.takes_settings:
        arguments = {**arguments, "settings": settings}
    if tool.takes_decided:
        arguments = {**arguments, "decided": decided}
    result = tool.function(**arguments)
    return awaited(result) if inspect.isawaitable(result) else result


def as_text(result: typing.Any) -> str:
    """A result as the model reads it: a str as it is, bytes as the text they hold (UTF-8, any
    other byte as its escape), anything else as JSON (a dataclass or a pydantic model as its
    fields, an Enum as its value, a set as a list, bytes as their text; what JSON cannot hold, as
    str() writes it)."""
    if isinstance(result, str):
        return result
    if isinstance(result, (bytes, bytearray)):  # a command's output, say
        return plain(result)
    return json.dumps(result, ensure_ascii=False, default=plain)


def plain(value: typing.Any) -> typing.Any:
    """What json.dumps writes for a value it does not know."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        return list(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if not isinstance(value, type) and callable(getattr(value, "model_dump", None)):
        return value.model_dump(mode="json")  # a pydantic model (2), known by its method
    return str(value)


def cap(text: str, settings: Settings) -> str:
    """Fit a result for the model and the transcript: valid UTF-8 (a lone surrogate becomes an
    escape), and at most AGENT_MAX_CHARS, keeping its start and its end (where errors usually are)
    with a marker between. The paged tools cut their own results and may add a note of up to
    NOTE_ROOM characters."""
    limit = settings.max_chars
    if len(text) > limit + NOTE_ROOM:
        head = limit // 3
        text = (
            f"{text[:head]}\n[... cut {len(text) - limit:,} characters of {len(text):,} "
            f"...]\n{text[head - limit :]}"
        )
    return sendable(text)


def sendable(text: str) -> str:
    """Text the API can take, valid UTF-8: a lone surrogate (a path's undecodable byte, as
    os.fsdecode keeps it, or the model's own) becomes its escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def outcome(name: str, result: str) -> str:
    """How a call that ran ended, in a few words: ok, exit N, timed out after N s, stopped after N
    MB, or the first line of its error, shortened."""
    first = result.split("\n", 1)[0]
    # run_shell's result opens with it: exit code: N, timed out after..., ...
    status = first.split(";", 1)[0]
    if first.startswith("error:"):
        return first if len(first) <= OUTCOME_CHARS else first[: OUTCOME_CHARS - 1] + "…"
    if name != "run_shell" or status == "exit code: 0":
        return "ok"
    if status.startswith("exit code: "):
        return f"exit {status.removeprefix('exit code: ')}"
    return status if status.startswith(("timed out after ", "stopped after ")) else "ok"


def canonical(arguments: str) -> str:
    """A call's arguments as the loop guard counts them: the same JSON in any key order is the
    same call."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (json.JSONDecodeError, RecursionError):
        return arguments
