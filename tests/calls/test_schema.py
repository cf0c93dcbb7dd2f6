"""A call checked against its tool (phases 1 and 5): the schema a typed, documented function
becomes, and its arguments checked against the type hints, JSON's kinds kept apart (true is no
integer)."""

import dataclasses
import datetime
import enum
import functools
import typing

import pytest
from fake_model import answer, calls
from helpers import results

import harness
import tools
from plainagent.approval.gate import asks
from plainagent.calls import hints, schema
from plainagent.core.settings import Settings


def test_true_is_not_an_integer_argument(model, tmp_path):
    (tmp_path / "a.txt").write_text("ABC")
    model.queue(calls(("read_file", '{"path": "a.txt", "offset": true}')), answer("ok"))

    harness.run("read")

    assert results(model, 1) == [
        "error: argument 'offset' must be a JSON integer, not true; "
        "expected read_file(path: str, offset: int = 0) -> str"
    ]


def test_an_integer_is_a_number_where_a_float_is_expected(model):
    def scale(factor: float) -> str:
        """Scale by a factor."""
        return f"scaled by {factor}"

    model.queue(
        calls(
            ("scale", '{"factor": 2}'), ("scale", '{"factor": 0.5}'), ("scale", '{"factor": true}')
        ),
        answer("ok"),
    )

    harness.run("scale", tools=[scale])  # no built-in tool takes a float

    assert results(model, 1, 3) == [
        "scaled by 2",
        "scaled by 0.5",
        "error: argument 'factor' must be a JSON "
        "number, not true; expected scale(factor: float) -> str",
    ]


def test_a_tool_that_declares_settings_gets_the_runs_own_and_the_model_never_sees_them(
    model, tmp_path
):
    given = []

    def where(label: str, *, settings: Settings) -> str:
        """Say where the run works."""
        given.append(settings)
        return f"{label} {settings.workspace}"

    model.queue(calls(("where", {"label": "in"})), answer("ok"))

    assert harness.run("go", tools=[where], max_steps=3) == "ok"

    assert schema.schema(where)["function"]["parameters"] == {
        "type": "object",
        "properties": {"label": {"type": "string"}},
        "required": ["label"],
    }
    assert model.messages(1)[-1]["content"] == f"in {tmp_path.resolve()}"
    assert [(config.workspace, config.max_steps) for config in given] == [(tmp_path.resolve(), 3)]


def test_a_parameter_merely_named_settings_or_decided_is_the_models_to_fill(model):
    def configure(settings: dict[str, str], decided: bool = False) -> str:
        """Save the application's settings.

        Args:
            settings: each setting's new value
            decided: apply them at once
        """
        return f"saved {settings} at once: {decided}"

    model.queue(
        calls(("configure", {"settings": {"theme": "dark"}, "decided": True})), answer("ok")
    )

    assert harness.run("go", tools=[configure]) == "ok"

    sent = model.requests[0]["body"]["tools"][0]["function"]["parameters"]
    assert sent["properties"]["settings"] == {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "each setting's new value",
    }
    assert sent["required"] == ["settings"] and "decided" in sent["properties"]
    assert model.messages(1)[-1]["content"] == "saved {'theme': 'dark'} at once: True"


def test_a_continuation_line_that_looks_like_a_parameter_stays_in_the_description():
    # An indented line under a parameter is its text, even when it reads `word: more`.
    block = (
        "    path: the file to read.\n        note: a path inside the workspace.\n"
        "    offset: where to start."
    )

    assert hints.parameter_descriptions(block) == {
        "path": "the file to read. note: a path inside the workspace.",
        "offset": "where to start.",
    }


def test_read_file_schema_is_exactly_this():
    assert tools.schema(tools.read_file) == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file and return its text from a byte offset; a long file "
            "comes in parts, "
            "each ending with the offset to read on from.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "the file to read, relative to the workspace",
                    },
                    "offset": {
                        "type": "integer",
                        "description": "the byte to start at (0 is the start); to read on after a "
                        "cut "
                        "result, use the offset it names",
                    },
                },
                "required": ["path"],
            },
        },
    }


def test_a_new_function_becomes_a_tool_from_its_signature_and_docstring():
    def count_words(text: str, minimum: int = 1, ratio: float = 0.5, loud: bool = False) -> str:
        """Count the words in a text.

        Args:
            text: the text to count in,
                which may be long
            minimum: only words at least this long
        """
        return ""

    parameters = tools.schema(count_words)["function"]["parameters"]
    assert parameters["properties"] == {
        "text": {"type": "string", "description": "the text to count in, which may be long"},
        "minimum": {"type": "integer", "description": "only words at least this long"},
        "ratio": {"type": "number"},
        "loud": {"type": "boolean"},
    }
    assert parameters["required"] == ["text"]


def test_a_runs_tools_are_read_once_when_it_starts_not_at_every_call(model, monkeypatch):
    read = []
    real = schema.typing.get_type_hints
    monkeypatch.setattr(
        schema.typing, "get_type_hints", lambda function: read.append(function) or real(function)
    )

    def count_lines(path: str, offset: int = 0) -> str:
        """Count lines."""
        return "3"

    model.queue(
        calls(
            ("count_lines", {"path": "a"}),
            ("count_lines", {"offset": 1}),
            ("count_lines", {"path": 1}),
            ("count_lines", {"path": "a", "x": 1}),
            ("count_lines", {"path": "b", "offset": 2}),
        ),
        answer("ok"),
    )

    harness.run("count", tools=[count_lines])

    assert results(model, 1, 5) == [
        "3",
        *(
            f"error: {problem}; expected count_lines(path: str, offset: int = 0) -> str"
            for problem in (
                "missing argument 'path'",
                "argument 'path' must be a JSON string, not 1",
                "unexpected argument 'x'",
            )
        ),
        "3",
    ]
    assert read == [count_lines]  # once, when the run starts (30 microseconds a step otherwise)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    """A place on the map.

    Attributes:
        x: across, from the left
    """

    x: int
    y: int = 0


class Window(typing.TypedDict):
    start: str
    days: int


def plan(
    tags: list[str],
    mode: typing.Literal["fast", "slow"],
    color: Color,
    note: str | None,
    at: Point,
    limits: dict[str, float],
    window: Window,
    size: int | None = None,
) -> str:
    """Plan a trip.

    Args:
        tags: labels for the trip
    """
    received.append((tags, mode, color, note, at, limits, window, size))
    return "planned"


received: list[tuple] = []
RIGHT = {
    "tags": ["a", "b"],
    "mode": "slow",
    "color": "green",
    "note": None,
    "at": {"x": 1},
    "limits": {"km": 2},
    "window": {"start": "mon", "days": 3},
}


def test_rich_hints_become_their_json_schema_in_the_request(model):
    model.queue(answer("ok"))

    harness.run("plan", tools=[plan])

    [sent] = model.requests[0]["body"]["tools"]
    assert sent["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "description": "labels for the trip",
            },
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "color": {"type": "string", "enum": ["red", "green"]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "at": {
                "type": "object",
                "properties": {
                    "x": {"type": "integer", "description": "across, from the left"},
                    "y": {"type": "integer"},
                },
                "required": ["x"],
                "additionalProperties": False,
            },
            "limits": {"type": "object", "additionalProperties": {"type": "number"}},
            "window": {
                "type": "object",
                "properties": {"start": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["start", "days"],
                "additionalProperties": False,
            },
            "size": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["tags", "mode", "color", "note", "at", "limits", "window"],
    }


def test_the_tool_gets_its_arguments_as_its_hints_name_them(model):
    received.clear()
    model.queue(
        calls(("plan", RIGHT), ("plan", {**RIGHT, "note": "n", "size": 4, "at": {"x": 2, "y": 5}})),
        answer("ok"),
    )

    harness.run("plan", tools=[plan])

    assert results(model, 1, 2) == ["planned", "planned"]
    assert received == [
        (
            ["a", "b"],
            "slow",
            Color.GREEN,
            None,
            Point(1, 0),
            {"km": 2},
            {"start": "mon", "days": 3},
            None,
        ),
        (
            ["a", "b"],
            "slow",
            Color.GREEN,
            "n",
            Point(2, 5),
            {"km": 2},
            {"start": "mon", "days": 3},
            4,
        ),
    ]


@pytest.mark.parametrize(
    "wrong, problem",
    [
        ({"tags": ["a", 3]}, "argument 'tags' item 1 must be a JSON string, not 3"),
        ({"tags": "a"}, "argument 'tags' must be a JSON array, not \"a\""),
        ({"mode": "medium"}, 'argument \'mode\' must be one of "fast", "slow", not "medium"'),
        ({"color": "blue"}, 'argument \'color\' must be one of "red", "green", not "blue"'),
        ({"color": 1}, 'argument \'color\' must be one of "red", "green", not 1'),
        ({"note": 5}, "argument 'note' must be a JSON string, not 5"),
        ({"size": "4"}, "argument 'size' must be a JSON integer, not \"4\""),
        ({"at": {"y": 1}}, "argument 'at' is missing field 'x'"),
        ({"at": {"x": 1, "z": 2}}, "argument 'at' has unexpected field 'z'"),
        ({"at": {"x": True}}, "argument 'at' field 'x' must be a JSON integer, not true"),
        ({"at": [1, 2]}, "argument 'at' must be a JSON object, not [1, 2]"),
        (
            {"limits": {"km": "far"}},
            'argument \'limits\' key "km" must be a JSON number, not "far"',
        ),
        ({"window": {"start": "mon"}}, "argument 'window' is missing field 'days'"),
    ],
)
def test_a_wrong_argument_is_one_precise_error_for_the_model(model, wrong, problem):
    received.clear()
    model.queue(calls(("plan", {**RIGHT, **wrong})), answer("ok"))

    harness.run("plan", tools=[plan])

    [result] = results(model, 1)
    assert result == f"error: {problem}; expected plan{schema.tool(plan).signature}"
    assert received == []


def test_the_signature_the_model_is_shown_names_each_hint_as_it_is_written():
    assert schema.tool(plan).signature == (
        '(tags: list[str], mode: Literal["fast", "slow"], color: Color, note: str | None, '
        "at: Point, "
        "limits: dict[str, float], window: Window, size: int | None = null) -> str"
    )


def odd(when: datetime.datetime) -> str:
    """A hint no schema can express."""
    return ""


def bare(value) -> str:
    """A parameter with no hint."""
    return ""


def keys(mapping: dict[int, str]) -> str:
    """A JSON object's keys are strings."""
    return ""


@dataclasses.dataclass
class Node:
    child: "Node | None"


def tree(root: Node) -> str:
    """A dataclass that holds itself."""
    return ""


def read_file(path: str) -> str:
    """Not the built-in read_file."""
    return ""


@pytest.mark.parametrize(
    "given, message",
    [
        (
            [odd],
            "tool odd: parameter 'when' is typed datetime, which a JSON schema cannot express; use "
            "str, int, float, bool, list[X], dict[str, X], Literal[...], an Enum, X | None, a "
            "dataclass or a TypedDict",
        ),
        ([bare], "tool bare: parameter 'value' has no type hint; give it one of str, int"),
        (
            [keys],
            "tool keys: parameter 'mapping' is typed dict[int, str], which a JSON schema cannot "
            "express",
        ),
        (
            [tree],
            "tool tree: parameter 'root', field 'child' of Node: Node holds itself, which a schema "
            "made from type hints cannot express (output= takes a JSON Schema dict too, which may, "
            "with a $ref)",
        ),
        ([odd.__doc__], "'A hint no schema can express.' is not a function"),
        ([plan, plan], "two tools are named plan; give each tool a name of its own"),
        ([read_file], "tool read_file: a built-in tool has this name; give yours another one"),
        (
            [lambda: "now"],
            "tool '<lambda>': the API takes only names of 1 to 64 letters, digits, _ and -",
        ),
    ],
)
def test_a_tool_no_schema_can_express_is_one_clear_error_when_the_run_starts(model, given, message):
    with pytest.raises(schema.ToolError) as raised:
        harness.run("x", tools=given)

    assert str(raised.value).startswith(message)
    assert isinstance(raised.value, TypeError) and "\n" not in str(raised.value)
    assert model.requests == []


def test_a_hint_naming_a_local_type_says_to_define_it_at_the_top_of_the_module(model):
    # as `from __future__ import annotations` writes every hint: text, read later
    @dataclasses.dataclass
    class Local:
        size: int

    def measure(thing: "Local") -> str:
        """Measure a thing."""
        return ""

    @dataclasses.dataclass
    class Holder:
        inside: "Local"

    said = (
        "(name 'Local' is not defined); a hint written as text (as `from __future__ import "
        "annotations` writes each one) is looked up among its module's names: define the types it "
        "names at the module's top level"
    )
    with pytest.raises(schema.ToolError) as raised:
        harness.run("x", tools=[measure])
    assert str(raised.value) == f"tool measure: its signature cannot be read {said}"
    with pytest.raises(TypeError) as raised:
        harness.run("x", output=Holder)
    assert str(raised.value).endswith(f"the hints of {Holder.__qualname__} cannot be read {said}")
    assert model.requests == []


def test_a_built_in_wrapped_by_functools_wraps_is_still_the_built_in(model):
    @functools.wraps(tools.read_file)
    def logged(*args, **kwargs):
        return tools.read_file(*args, **kwargs)

    model.queue(answer("ok"))

    harness.run("x", tools=[logged])

    assert model.requests[0]["body"]["tools"] == [tools.schema(tools.read_file)]


def test_an_args_block_ends_at_the_next_section_and_may_give_each_type():
    def fetch(url: str, retries: int = 2, verbose: bool = False) -> str:
        """Fetch a page and return its text.

        Returns:
            the page's text
        Args:
            url (str): the page's address,
                with its scheme
            retries (int, optional): how many times to try again
        Raises:
            OSError: when it cannot connect
        """
        return ""

    expected = {
        "url": {"type": "string", "description": "the page's address, with its scheme"},
        "retries": {"type": "integer", "description": "how many times to try again"},
    }
    for function in (fetch,):
        described = schema.schema(function)["function"]
        assert described["description"] == "Fetch a page and return its text."
        assert {
            key: value
            for key, value in described["parameters"]["properties"].items()
            if key != "verbose"
        } == expected


def test_a_partial_is_a_tool_without_the_parameters_it_fills(model):
    asked = []

    @asks
    def grant(user: str, role: str, days: int = 7) -> str:
        """Give a user a role for some days.

        Args:
            user: who
            role: the role to give
        """
        return f"{user} is {role} for {days} days"

    model.queue(
        calls(("grant", {"role": "admin"}), ("grant", {"role": "admin", "user": "mallory"})),
        answer("ok"),
    )

    harness.run(
        "grant",
        tools=[functools.partial(grant, user="ada")],
        approve=lambda name, arguments: asked.append((name, arguments)) or True,
    )

    assert model.requests[0]["body"]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "grant",
                "description": "Give a user a role for some days.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "role": {"type": "string", "description": "the role to give"},
                        "days": {"type": "integer"},
                    },
                    "required": ["role"],
                },
            },
        }
    ]
    assert results(model, 1, 2) == [
        "ada is admin for 7 days",
        "error: unexpected argument 'user'; expected grant(role: str, days: int = 7) -> str",
    ]
    assert asked == [("grant", {"role": "admin"})]
