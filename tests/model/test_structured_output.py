"""run(output=T): the loop answers, then one request without tools asks for the answer in
T's strict JSON schema; a reply that does not fit is sent back once with what is wrong, a
second one raises OutputError; a dataclass comes back as an instance, a TypedDict or a JSON
Schema as a dict; a stop raises."""

import dataclasses
import enum
import json
import typing

import pytest
from fake_model import answer, calls, error
from helpers import results

import harness
from plainagent.model.output import OutputError, output_type
from plainagent.runs.answer import Stopped


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclasses.dataclass
class Step:
    text: str
    done: bool


@dataclasses.dataclass
class Ticket:
    title: str
    priority: Priority
    labels: list[str]
    kind: typing.Literal["bug", "feature"]
    steps: list[Step]
    owner: str | None
    estimate_hours: float = 1.0


TICKET_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "priority": {"type": "string", "enum": ["low", "high"]},
        "labels": {"type": "array", "items": {"type": "string"}},
        "kind": {"type": "string", "enum": ["bug", "feature"]},
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "done": {"type": "boolean"}},
                "required": ["text", "done"],
                "additionalProperties": False,
            },
        },
        "owner": {"type": ["string", "null"]},
        "estimate_hours": {"type": ["number", "null"]},
    },
    "required": ["title", "priority", "labels", "kind", "steps", "owner", "estimate_hours"],
    "additionalProperties": False,
}
GOOD = {
    "title": "Crash on save",
    "priority": "high",
    "labels": ["editor"],
    "kind": "bug",
    "steps": [{"text": "open a file", "done": True}],
    "owner": None,
    "estimate_hours": None,
}
AS_TICKET = Ticket(
    "Crash on save", Priority.HIGH, ["editor"], "bug", [Step("open a file", True)], None, 1.0
)


def test_a_dataclass_becomes_the_strict_schema_groq_takes():
    # The wire format: every field required, no others, the one with a default
    # nullable (null: the default)
    assert output_type(Ticket).schema == TICKET_SCHEMA
    assert output_type(Ticket).strict is True


def test_output_with_a_dataclass_returns_an_instance_asked_without_tools(model, tmp_path):
    (tmp_path / "bug.txt").write_text("saving crashes the editor")
    model.queue(
        calls(("read_file", {"path": "bug.txt"})),
        answer("It is a high-priority bug: Crash on save."),
        answer(json.dumps(GOOD)),
    )

    ticket = harness.run("File a ticket for bug.txt", output=Ticket)

    assert (
        ticket == AS_TICKET
        and isinstance(ticket.priority, Priority)
        and isinstance(ticket.estimate_hours, float)
    )
    loop, asked = model.requests[1]["body"], model.requests[2]["body"]
    assert "tools" in loop and "response_format" not in loop
    assert "tools" not in asked and "tool_choice" not in asked
    assert asked["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Ticket", "strict": True, "schema": TICKET_SCHEMA},
    }
    assert asked["messages"][-2] == {
        "role": "assistant",
        "content": "It is a high-priority bug: Crash on save.",
    }
    assert asked["messages"][-1]["role"] == "user"
    assert json.dumps(TICKET_SCHEMA, separators=(",", ":")) in asked["messages"][-1]["content"]


def test_one_bad_reply_is_sent_back_with_what_is_wrong_then_a_good_one_succeeds(model):
    bad = {**GOOD, "priority": "urgent", "steps": [{"text": "open a file", "done": "yes"}]}
    del bad["owner"]
    model.queue(answer("a ticket"), answer(json.dumps(bad)), answer(json.dumps(GOOD)))

    assert harness.run("File a ticket", output=Ticket) == AS_TICKET

    sent_back = model.messages(2)[-2:]
    assert sent_back[0] == {"role": "assistant", "content": json.dumps(bad)}
    assert sent_back[1]["role"] == "user"
    assert (
        'missing field \'owner\'; field \'priority\' must be one of "low", "high", not "urgent"; '
        "field 'steps' item 0 field 'done' must be a JSON boolean, not \"yes\""
    ) in sent_back[1]["content"]
    assert model.requests[2]["body"]["response_format"]["type"] == "json_schema"
    assert "tools" not in model.requests[2]["body"]


def test_two_bad_replies_raise_output_error_holding_the_raw_text(model):
    model.queue(answer("a ticket"), answer("Sure! Here it is: {"), answer('{"title": "Crash"}'))

    with pytest.raises(OutputError) as raised:
        harness.run("File a ticket", output=Ticket)

    assert raised.value.raw == '{"title": "Crash"}'
    assert str(raised.value).startswith(
        "the model's answer does not fit the schema (Ticket), asked twice: missing field 'priority'"
    )
    assert "not valid JSON" in model.messages(2)[-1]["content"]
    assert isinstance(raised.value, ValueError)


def test_a_typeddict_returns_a_dict_and_a_field_it_may_leave_out_is_left_out(model):
    class Summary(typing.TypedDict, total=False):
        files: list[str]
        note: str

    model.queue(answer("two files"), answer('{"files": ["a.py", "b.py"], "note": null}'))

    summary = harness.run("Summarise", output=Summary)

    assert summary == {"files": ["a.py", "b.py"]} and type(summary) is dict
    schema = model.requests[1]["body"]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["files", "note"] and schema["properties"]["note"] == {
        "type": ["string", "null"]
    }


def test_a_json_schema_dict_returns_a_dict_sent_strict(model):
    schema = {
        "title": "verdict",
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["ok"],
    }
    model.queue(answer("fine"), answer('{"ok": true, "reason": null}'))

    assert harness.run("Is it fine?", output=schema) == {"ok": True}

    sent = model.requests[1]["body"]["response_format"]["json_schema"]
    assert sent == {
        "name": "verdict",
        "strict": True,
        "schema": {
            "title": "verdict",
            "type": "object",
            "additionalProperties": False,
            "required": ["ok", "reason"],
            "properties": {"ok": {"type": "boolean"}, "reason": {"type": ["string", "null"]}},
        },
    }
    assert "additionalProperties" not in schema  # the caller's schema is left as it was


def test_a_dict_of_values_is_sent_not_strict_and_still_checked(model):
    @dataclasses.dataclass
    class Counts:
        by_language: dict[str, int]

    model.queue(
        answer("counted"),
        answer('{"by_language": {"py": "3"}}'),
        answer('{"by_language": {"py": 3}}'),
    )

    assert harness.run("Count", output=Counts) == Counts({"py": 3})

    assert model.requests[1]["body"]["response_format"]["json_schema"]["strict"] is False
    assert (
        'field \'by_language\' key "py" must be a JSON integer, not "3"'
        in model.messages(2)[-1]["content"]
    )


@dataclasses.dataclass
class Place:
    """Where to meet.

    Attributes:
        city: the city's name in English
    """

    city: str
    floor: int | None = None


def test_a_type_is_one_schema_and_one_check_as_a_tools_parameter_and_as_output(model):
    # One converter and one checker: output= sends the tool's schema of the type made strict, and a
    # wrong value is said in the same words to a tool call and to an answer.
    def meet(at: Place) -> str:
        """Arrange a meeting."""
        return "arranged"

    model.queue(
        calls(("meet", {"at": {"city": 3}})),
        answer("In Paris."),
        answer('{"city": 3, "floor": null}'),
        answer('{"city": "Paris", "floor": null}'),
    )

    assert harness.run("Meet", tools=[meet], output=Place) == Place("Paris")

    [tool] = model.requests[0]["body"]["tools"]
    as_parameter = tool["function"]["parameters"]["properties"]["at"]
    city = {"type": "string", "description": "the city's name in English"}
    assert as_parameter == {
        "type": "object",
        "properties": {"city": city, "floor": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert model.requests[2]["body"]["response_format"]["json_schema"]["schema"] == {
        "type": "object",
        "properties": {"city": city, "floor": {"type": ["integer", "null"]}},
        "required": ["city", "floor"],
        "additionalProperties": False,
    }
    assert results(model, 1) == [
        "error: argument 'at' field 'city' must be a JSON string, not 3; expected meet(at: Place) "
        "-> str"
    ]
    assert (
        "the schema: field 'city' must be a JSON string, not 3." in model.messages(3)[-1]["content"]
    )


def test_the_step_limit_with_output_raises_stopped_not_a_string(model, tmp_path):
    events = []
    model.queue(calls(("list_dir", {})))

    with pytest.raises(Stopped) as raised:
        harness.run("Go on and on", output=Ticket, max_steps=1, on_event=events.append)

    assert raised.value.reason == "step_limit" and raised.value.answer == harness.STEP_LIMIT
    assert (
        str(raised.value) == f"the run stopped without an answer (step_limit): {harness.STEP_LIMIT}"
    )
    assert events[-1]["type"] == "end" and events[-1]["reason"] == "step_limit"


def test_an_answer_cut_off_at_the_length_limit_raises_stopped(model):
    model.queue(answer("The ticket is", finish_reason="length"))

    with pytest.raises(Stopped) as raised:
        harness.run("File a ticket", output=Ticket)

    assert raised.value.reason == "length" and raised.value.answer == "The ticket is"


def test_a_backend_without_json_schema_is_asked_in_json_mode_and_checked_the_same(
    model, monkeypatch
):
    monkeypatch.setenv("OLLAMA_BASE_URL", model.url)
    model.queue(answer("a ticket"), answer('{"title": 3}'), answer(json.dumps(GOOD)))

    assert harness.run("File a ticket", output=Ticket, backend="ollama") == AS_TICKET

    for request in model.requests[1:]:
        assert request["body"]["response_format"] == {"type": "json_object"}
    assert json.dumps(TICKET_SCHEMA, separators=(",", ":")) in model.messages(1)[-1]["content"]


def test_a_model_that_refuses_a_schema_is_asked_again_in_json_mode(model):
    model.queue(
        answer("a ticket"),
        error(400, "response_format `json_schema` is not supported with this model"),
        answer(json.dumps(GOOD)),
    )

    assert harness.run("File a ticket", output=Ticket) == AS_TICKET

    assert model.requests[1]["body"]["response_format"]["type"] == "json_schema"
    assert model.requests[2]["body"]["response_format"] == {"type": "json_object"}


@pytest.mark.parametrize(
    "wanted, words",
    [
        (
            Priority | set,
            "output=Priority | set is typed set, which a JSON schema cannot express",
        ),
        (
            {"type": "array", "items": {"type": "string"}},
            'the schema must be one of an object ("type": "object"',
        ),
        (
            dataclasses.make_dataclass("Odd", [("when", set)]),
            "output=Odd, field 'when' of Odd is typed set, which a JSON schema cannot express",
        ),
    ],
)
def test_an_output_type_no_json_can_fill_is_refused_before_any_request(model, wanted, words):
    with pytest.raises((TypeError, ValueError), match=None) as raised:
        harness.run("x", output=wanted)

    assert str(raised.value).startswith(words)
    assert model.requests == []


def test_a_pydantic_model_returns_its_instance_with_its_defaults(model):
    # pydantic 1 has no model_json_schema
    pydantic = pytest.importorskip("pydantic", minversion="2")

    class Review(pydantic.BaseModel):
        verdict: typing.Literal["approve", "reject"]
        comments: list[str]
        score: int = 5

    model.queue(
        answer("approve"), answer('{"verdict": "approve", "comments": ["fine"], "score": null}')
    )

    review = harness.run("Review", output=Review)

    assert review == Review(verdict="approve", comments=["fine"], score=5)
    schema = model.requests[1]["body"]["response_format"]["json_schema"]["schema"]
    assert (
        schema["required"] == ["verdict", "comments", "score"]
        and schema["additionalProperties"] is False
    )
    assert (
        schema["properties"]["score"]["type"] == ["integer", "null"]
        and "default" not in schema["properties"]["score"]
    )


def test_a_list_of_records_or_a_literal_is_the_one_field_of_the_answers_object(model):
    # Strict mode's top must be an object: the answer is its one field, and what comes back is
    # the list or the value itself
    model.queue(
        answer("two steps"),
        answer('{"answer": [{"text": "open", "done": true}, {"text": "save", "done": 1}]}'),
        answer('{"answer": [{"text": "open", "done": true}, {"text": "save", "done": false}]}'),
        answer("yes"),
        answer('{"answer": "yes"}'),
    )

    assert harness.run("Steps?", output=list[Step]) == [Step("open", True), Step("save", False)]
    assert harness.run("Done?", output=typing.Literal["yes", "no"]) == "yes"

    assert model.requests[1]["body"]["response_format"]["json_schema"] == {
        "name": "answer",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "answer": {"type": "array", "items": TICKET_SCHEMA["properties"]["steps"]["items"]}
            },
            "required": ["answer"],
            "additionalProperties": False,
        },
    }
    assert model.messages(2)[-1]["content"].startswith(
        "That reply does not fit the schema: field 'answer' item 1 field 'done' must be"
    )
    assert model.requests[4]["body"]["response_format"]["json_schema"]["schema"]["properties"] == {
        "answer": {"type": "string", "enum": ["yes", "no"]}
    }


# A tree: a script's schema may hold itself through a $ref
TREE = {
    "type": "object",
    "properties": {"child": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
    "required": ["child"],
    "additionalProperties": False,
}


def test_an_answer_nested_deeper_than_python_checks_is_asked_again_not_a_traceback(model):
    # Valid JSON a few hundred levels deep parses, but checking it against a schema that holds
    # itself went past Python's recursion limit: a RecursionError out of run(), caused by the model
    deep = '{"child": ' * 400 + "null" + "}" * 400
    model.queue(answer("a tree"), answer(deep), answer(deep))

    with pytest.raises(OutputError) as raised:
        harness.run("Draw a tree", output=TREE)

    assert "nested too deeply" in str(raised.value)
    assert "nested too deeply" in model.messages(2)[-1]["content"]
