"""A call checked against its tool (phases 1 and 5): the schema a typed, documented function becomes, and its
arguments checked against the type hints, JSON's kinds kept apart (true is no integer)."""

import harness
import tools
from plainagent.calls import schema
from plainagent.core.settings import Settings
from fake_model import answer, calls
from helpers import results


def test_true_is_not_an_integer_argument(model, tmp_path):
    (tmp_path / "a.txt").write_text("ABC")
    model.queue(calls(("read_file", '{"path": "a.txt", "offset": true}')), answer("ok"))

    harness.run("read")

    assert results(model, 1) == ["error: argument 'offset' must be a JSON integer, not true; "
                                 "expected read_file(path: str, offset: int = 0) -> str"]


def test_an_integer_is_a_number_where_a_float_is_expected(model, monkeypatch):
    def scale(factor: float) -> str:
        """Scale by a factor."""
        return f"scaled by {factor}"
    monkeypatch.setitem(harness.tools.REGISTRY, "scale", scale)  # no tool takes a float today
    model.queue(calls(("scale", '{"factor": 2}'), ("scale", '{"factor": 0.5}'), ("scale", '{"factor": true}')),
                answer("ok"))

    harness.run("scale")

    assert results(model, 1, 3) == ["scaled by 2", "scaled by 0.5", "error: argument 'factor' must be a JSON "
                                     "number, not true; expected scale(factor: float) -> str"]


def test_a_tool_that_declares_settings_gets_the_runs_own_and_the_model_never_sees_them(model, tmp_path, monkeypatch):
    given = []

    def where(label: str, *, settings: Settings) -> str:
        """Say where the run works."""
        given.append(settings)
        return f"{label} {settings.workspace}"
    monkeypatch.setitem(harness.tools.REGISTRY, "where", where)
    model.queue(calls(("where", {"label": "in"})), answer("ok"))

    assert harness.run("go", max_steps=3) == "ok"

    assert schema.schema(where)["function"]["parameters"] == {
        "type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
    assert model.messages(1)[-1]["content"] == f"in {tmp_path.resolve()}"
    assert [(config.workspace, config.max_steps) for config in given] == [(tmp_path.resolve(), 3)]


def test_a_continuation_line_that_looks_like_a_parameter_stays_in_the_description():
    # An indented line under a parameter is its text, even when it reads `word: more`.
    block = "    path: the file to read.\n        note: a path inside the workspace.\n    offset: where to start."

    assert schema.parameter_descriptions(block) == {
        "path": "the file to read. note: a path inside the workspace.", "offset": "where to start."}


def test_read_file_schema_is_exactly_this():
    assert tools.schema(tools.read_file) == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file and return its text from a byte offset; a long file comes in parts, "
                           "each ending with the offset to read on from.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "the file to read, relative to the workspace"},
                    "offset": {"type": "integer",
                               "description": "the byte to start at (0 is the start); to read on after a cut "
                                              "result, use the offset it names"},
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


def test_the_arguments_of_every_call_are_checked_against_type_hints_read_once(monkeypatch):
    read = []
    real = schema.typing.get_type_hints
    monkeypatch.setattr(schema.typing, "get_type_hints", lambda function: read.append(function) or real(function))

    def count_lines(path: str, offset: int = 0) -> str:
        return ""

    problems = [schema.argument_problem(count_lines, arguments) for arguments in ({"path": "a"}, {"offset": 1},
                                                                                 {"path": 1}, {"path": "a", "x": 1})]
    assert problems == [None, "missing argument 'path'", "argument 'path' must be a JSON string, not 1",
                        "unexpected argument 'x'"]
    assert read == [count_lines]  # once, not at every call (30 microseconds a step)
