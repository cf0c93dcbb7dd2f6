"""Structured output (beyond the tutorial): run(output=T). T (a dataclass, a TypedDict, a JSON
Schema dict, a pydantic model, or another type a parameter may have, as a field) becomes, once,
a JSON Schema (calls/hints.py, as a tool's parameters do) made strict as Groq's structured
outputs take it (every field required, no other fields, a field that may be left out as "X or
null"); after the loop has answered, one request without tools asks for the answer in it, a
reply that does not fit (calls/validate.py, the checker a tool call's arguments pass) is sent
back once with what is wrong, and T is built from the reply."""

import copy
import dataclasses
import json
import re
import typing

from plainagent.calls.hints import hint_text, is_record, json_schema
from plainagent.calls.validate import built, problems
from plainagent.core.settings import BACKENDS, Settings

ASK = (
    "Now give your final answer as one JSON object that fits the JSON Schema {name} below: only "
    "the JSON, nothing before or after it. Use null for what you do not know.\n{schema}"
)
FIX = (
    "That reply does not fit the schema: {problems}. Send the whole answer again as one JSON "
    "object that fits it, and nothing else."
)
STOPS = {
    "step_limit": "the run hit the step limit",
    "length": "the model's answer was cut off at its length limit",
    "empty": "the model gave an empty answer twice",
}
ANSWER = "answer"  # the field that holds an answer of a type not an object (list[X], a Literal)
Path = tuple[str, ...]  # where a node is in a schema: ("properties", "items", "items")


class OutputError(ValueError):
    """output= could not be given: the model's answer did not parse or fit the schema when asked
    twice. .raw is the text of its last reply."""

    def __init__(self, message: str, raw: str | None) -> None:
        super().__init__(message)
        self.raw = raw

    def __reduce__(self) -> tuple:
        # Made again with its reply too: a process pool sends it back pickled
        return OutputError, (str(self), self.raw)


@dataclasses.dataclass(frozen=True)
class Output:
    """What output= asks for, decided once when the run starts: the schema's name, the schema sent
    (strict, unless it has an object with open keys, which strict mode cannot say), the fields
    only the strict schema lets be null (null there means left out), and how the value is built."""

    name: str
    schema: dict
    strict: bool
    nullable: frozenset[Path]
    build: typing.Callable[[typing.Any], typing.Any]

    def response_format(self, mode: str) -> dict:
        if mode == "json_object":
            return {"type": "json_object"}
        about = {"name": self.name, "strict": self.strict, "schema": self.schema}
        return {"type": "json_schema", "json_schema": about}

    def read(self, text: str) -> tuple[typing.Any, str | None]:
        """The value a reply gives, or what is wrong with it, for the model."""
        try:
            value = json.loads(text, parse_constant=refuse)
        except (json.JSONDecodeError, ValueError, RecursionError) as error:
            return None, f"it is not valid JSON ({error})" if text.strip() else "it is empty"
        if found := problems(value, self.schema):
            return None, "; ".join(found)
        try:
            return self.build(left_out(value, self.schema, (), self)), None
        except (TypeError, ValueError) as error:  # a pydantic model's own checks, say
            return None, " ".join(str(error).split())
        except RecursionError:  # a schema that holds itself, and a value that just passed it
            return None, "it is nested too deeply to build; send it less deep"


def output_type(wanted: typing.Any) -> Output:
    """The Output for output=wanted; TypeError or ValueError, saying what to change, for a type or
    schema no JSON answer can be built for."""
    if isinstance(wanted, dict):
        if wanted.get("type") != "object":
            raise ValueError(
                'the schema must be one of an object ("type": "object" at its top); put a list '
                "or a single value in a field of one"
            )
        title = wanted.get("title")
        name = title if isinstance(title, str) and title else "answer"
        return made_strict(name, wanted, lambda value: value)
    if isinstance(wanted, type) and callable(getattr(wanted, "model_json_schema", None)):
        model: typing.Any = wanted  # a pydantic model (pydantic 2), known by its methods
        return made_strict(model.__name__, model.model_json_schema(), model.model_validate)
    if is_record(wanted):
        schema = json_schema(wanted, f"output={wanted.__qualname__}")
        return made_strict(wanted.__name__, schema, lambda value: built(value, wanted, schema))
    # Any other type a tool's parameter may have (list[X], Literal[...], str): the one field of an
    # object, as strict mode's top must be one; HintError (a TypeError) for what no JSON can fill
    schema = json_schema(wanted, f"output={hint_text(wanted)}")
    around = {
        "type": "object",
        "properties": {ANSWER: schema},
        "required": [ANSWER],
        "additionalProperties": False,
    }
    return made_strict(ANSWER, around, lambda value: built(value[ANSWER], wanted, schema))


def made_strict(name: str, schema: dict, build: typing.Callable) -> Output:
    """The Output with the schema as strict mode needs it, on a copy: every object's fields all
    required, no others allowed, and each field that was optional made nullable; no defaults; a
    union of plain types (X | None) one list of types, as strict mode's examples write it."""
    root = copy.deepcopy(schema)
    nullable: set[Path] = set()
    open_objects: list[Path] = []

    def walk(node: typing.Any, at: Path) -> None:
        if not isinstance(node, dict):
            return
        node.pop("default", None)  # every field is sent: a default means null, or nothing
        one_type(node)
        for key in ("$defs", "definitions"):
            for each, inside in (node.get(key) or {}).items():
                walk(inside, (*at, key, each))
        properties = node.get("properties")
        if isinstance(properties, dict) or node.get("type") == "object":
            if node.get("additionalProperties", False) is not False or properties is None:
                open_objects.append(at)
            else:
                optional = set(properties) - set(node.get("required", []))
                node["required"], node["additionalProperties"] = list(properties), False
                for field in optional:
                    one_type(properties[field])
                    if not takes_null(properties[field]):
                        properties[field] = with_null(properties[field])
                        nullable.add((*at, "properties", field))
        for field, inside in (properties or {}).items():
            walk(inside, (*at, "properties", field))
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], (*at, "additionalProperties"))
        walk(node.get("items"), (*at, "items"))
        for key in ("anyOf", "oneOf", "allOf"):
            for i, arm in enumerate(node.get(key) or []):
                walk(arm, (*at, key, str(i)))

    walk(root, ())
    word = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]  # the names the API takes
    return Output(word, root, not open_objects, frozenset(nullable), build)


def one_type(node: typing.Any) -> None:
    """An anyOf of plain types ({"type": "string"}, {"type": "null"}) made one "type": a list."""
    arms = node.get("anyOf") if isinstance(node, dict) else None
    if not isinstance(arms, list) or not arms or "type" in node:
        return
    if all(isinstance(arm, dict) and arm.keys() == {"type"} for arm in arms):
        if all(isinstance(arm["type"], str) for arm in arms):
            node["type"] = [arm["type"] for arm in node.pop("anyOf")]


def takes_null(node: typing.Any) -> bool:
    if not isinstance(node, dict):
        return True  # true: anything
    kinds = node.get("type")
    arms = node.get("anyOf") or node.get("oneOf") or []
    return (
        kinds == "null"
        or isinstance(kinds, list)
        and "null" in kinds
        or None in node.get("enum", [0])
        or any(takes_null(arm) for arm in arms)
    )


def with_null(node: dict) -> dict:
    """The schema, taking null too: "type": ["string", "null"] where it names a type, else an
    anyOf with null."""
    kinds = node.get("type")
    if isinstance(kinds, (str, list)) and not {"$ref", "anyOf", "oneOf", "allOf"} & set(node):
        taking = {**node, "type": [*([kinds] if isinstance(kinds, str) else kinds), "null"]}
        if "enum" in node:
            taking["enum"] = [*node["enum"], None]
        return taking
    return {"anyOf": [node, {"type": "null"}]}


def left_out(value: typing.Any, node: typing.Any, at: Path, output: Output) -> typing.Any:
    """The value with each null that only the strict schema allowed (a field that may be left out)
    left out, so the type's own default, or its absence, applies."""
    if not isinstance(node, dict):
        return value
    if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        at = tuple(p.replace("~1", "/").replace("~0", "~") for p in node["$ref"][2:].split("/"))
        node = output.schema
        for part in at:
            node = node.get(part, {}) if isinstance(node, dict) else {}
    for key in ("anyOf", "oneOf"):
        for i, arm in enumerate(node.get(key) or []):
            if not problems(value, arm, root=output.schema):
                return left_out(value, arm, (*at, key, str(i)), output)
    if isinstance(value, dict) and isinstance(node.get("properties"), dict):
        properties = node["properties"]
        return {
            field: left_out(item, properties.get(field), (*at, "properties", field), output)
            for field, item in value.items()
            if item is not None or (*at, "properties", field) not in output.nullable
        }
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return [left_out(item, node["items"], (*at, "items"), output) for item in value]
    return value


def refuse(constant: str) -> typing.NoReturn:
    raise ValueError(f"{constant} is not a JSON number")


def structured_answer(
    output: Output,
    settings: Settings,
    ask: typing.Callable[[dict], str | None],
    add: typing.Callable[[dict], None],
) -> tuple[typing.Any, str]:
    """Ask for the answer in the output's JSON (ask(response_format) returns the reply's text; add
    puts a message in the history); return the value and its text, or raise OutputError after a
    second reply that does not fit. The backend's preset says whether it takes a JSON Schema or
    only JSON mode; a server that refuses a schema (400) is asked again in JSON mode."""
    mode = BACKENDS[settings.backend]["output"]
    schema = json.dumps(output.schema, separators=(",", ":"), ensure_ascii=False)
    add({"role": "user", "content": ASK.format(name=output.name, schema=schema)})
    text, problem = "", None
    import openai  # loaded already: the run has asked the model

    for attempt in range(2):
        try:
            text = ask(output.response_format(mode)) or ""
        except openai.BadRequestError:
            if mode != "json_schema":
                raise
            mode = "json_object"  # a model without structured outputs (on Groq, most)
            text = ask(output.response_format(mode)) or ""
        add({"role": "assistant", "content": text})
        value, problem = output.read(text)
        if problem is None:
            return value, text
        if attempt == 0:
            add({"role": "user", "content": FIX.format(problems=problem)})
    raise OutputError(
        f"the model's answer does not fit the schema ({output.name}), asked twice: {problem}", text
    )
