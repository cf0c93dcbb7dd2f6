"""Python type hints as JSON Schema (phase 1): the one converter, for a tool's parameters and for
run(output=T) alike. str, int, float, bool, None, list[X], dict[str, X], Literal[...], an Enum
(its values), X | None and other unions, a dataclass or a TypedDict (an object with its own
fields, those with a default not required). A hint no JSON Schema can express is a HintError."""

import dataclasses
import enum
import inspect
import json
import re
import types
import typing

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
UNIONS = (typing.Union, types.UnionType)
NONE = type(None)
# A docstring's sections, in Google's style: the text before the first is the description
SECTION = re.compile(
    r"(Args|Arguments|Attributes|Parameters|Keyword Args|Returns?|Yields?|Raises|Examples?"
    r"|Notes?|Warnings?|See Also|Todo):\s*$"
)
NAMED = re.compile(r"(\w+)(?:\s*\([^)]*\))?")  # a parameter, and its type in parentheses
EXPRESSIBLE = (
    "str, int, float, bool, list[X], dict[str, X], Literal[...], an Enum, X | None, a dataclass "
    "or a TypedDict"
)


# Said beside a NameError from reading hints: a local type is not found by a hint written as text
TEXT_HINTS = (
    "a hint written as text (as `from __future__ import annotations` writes each one) is looked up "
    "among its module's names: define the types it names at the module's top level"
)


class HintError(TypeError):
    """A type hint no JSON Schema can express, said with where it is: a tool's parameter (which
    the tool reading it says as a ToolError) or a field of output=T."""


def json_schema(hint: typing.Any, where: str, within: tuple = ()) -> dict:
    """The JSON Schema of a type hint; `where` names the parameter or type (and field) for a
    HintError; `within`, the classes being described around it (one that holds itself has none).
    A dataclass's or TypedDict's object allows no other fields; its `Attributes:` block describes
    them. X | None is an anyOf with null, its arms in the order written."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and hint in JSON_TYPES:
        return {"type": JSON_TYPES[hint]}
    if hint is NONE or hint is None:
        return {"type": "null"}
    if origin is typing.Literal:
        return one_of(list(args), where, hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return one_of([member.value for member in hint], where, hint)
    if origin in UNIONS:
        return {"anyOf": [json_schema(arg, where, within) for arg in args]}
    if hint is list or origin is list and len(args) == 1:
        return {"type": "array", **({"items": json_schema(args[0], where, within)} if args else {})}
    if hint is dict or origin is dict and args[:1] == (str,):
        values = {"additionalProperties": json_schema(args[1], where, within)} if args else {}
        return {"type": "object", **values}
    if is_record(hint):
        if hint in within:
            raise HintError(
                f"{where}: {hint.__qualname__} holds itself, which a schema made from type hints "
                "cannot express (output= takes a JSON Schema dict too, which may, with a $ref)"
            )
        fields, required = record_fields(hint, where)
        _, described = documented(inspect.getdoc(hint) or "", "Attributes")
        properties = {}
        for field, field_hint in fields.items():
            inner = f"{where}, field {field!r} of {hint.__qualname__}"
            properties[field] = json_schema(field_hint, inner, (*within, hint))
            if field in described:
                properties[field]["description"] = described[field]
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
    raise HintError(
        f"{where} is typed {hint_text(hint)}, which a JSON schema cannot express; use {EXPRESSIBLE}"
    )


def is_record(hint: typing.Any) -> bool:
    """Whether the hint is a dataclass or a TypedDict: an object with fields of its own."""
    return isinstance(hint, type) and (dataclasses.is_dataclass(hint) or typing.is_typeddict(hint))


def one_of(values: list, where: str, hint: typing.Any) -> dict:
    """The schema of a Literal's or an Enum's values: JSON strings, numbers, booleans or null."""
    kinds = {JSON_TYPES.get(type(value), "null" if value is None else "") for value in values}
    if "" in kinds or not values:
        raise HintError(
            f"{where} is typed {hint_text(hint)}, whose values are not all JSON strings, numbers, "
            "booleans or null"
        )
    return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}


def record_fields(hint: type, where: str) -> tuple[dict[str, typing.Any], list[str]]:
    """A dataclass's or a TypedDict's fields and their hints, and those that must be given."""
    try:
        hints = typing.get_type_hints(hint)
    except (NameError, TypeError) as error:
        why = f"; {TEXT_HINTS}" if isinstance(error, NameError) else ""
        raise HintError(
            f"{where}: the hints of {hint.__qualname__} cannot be read ({error}){why}"
        ) from None
    if typing.is_typeddict(hint):
        return hints, [name for name in hints if name in hint.__required_keys__]  # type: ignore[attr-defined]
    fields = [field for field in dataclasses.fields(hint) if field.init]
    missing = dataclasses.MISSING
    required = [f.name for f in fields if f.default is missing and f.default_factory is missing]
    return {field.name: hints[field.name] for field in fields}, required


def documented(doc: str, block: str) -> tuple[str, dict[str, str]]:
    """A docstring's text before its first section, and what its `block` section (Args:,
    Attributes:) says of each name, in Google's style: `name: text` or `name (type): text`, indented
    lines continuing it, up to the next section."""
    lines = doc.splitlines()
    first = next((i for i, line in enumerate(lines) if SECTION.match(line)), len(lines))
    summary = " ".join(" ".join(lines[:first]).split())
    if f"{block}:" not in lines:
        return summary, {}
    start = lines.index(f"{block}:") + 1
    end = next((i for i in range(start, len(lines)) if lines[i][:1].strip()), len(lines))
    return summary, parameter_descriptions("\n".join(lines[start:end]))


def parameter_descriptions(args_block: str) -> dict[str, str]:
    """Parse a Google-style `Args:` (or `Attributes:`) block: `name: text` or `name (type): text`,
    with indented lines continuing the text."""
    described, name = {}, None
    for line in args_block.splitlines():
        head, sep, text = line.strip().partition(":")
        named = NAMED.fullmatch(head)
        if sep and named and line.startswith(" " * 4) and not line.startswith(" " * 8):
            name, described[named[1]] = named[1], text.strip()
        elif name and line.strip():
            described[name] += " " + line.strip()
    return {key: text for key, text in described.items() if text}


def hint_text(hint: typing.Any) -> str:
    """A hint as a person writes it: list[str], Literal["a", "b"], Color, int | None."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return f"Literal[{', '.join(value_text(arg) for arg in args)}]"
    if origin in UNIONS:
        return " | ".join(map(hint_text, args))
    if hint is NONE:
        return "None"
    if args:
        return f"{hint_text(origin)}[{', '.join(map(hint_text, args))}]"
    return hint.__qualname__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def value_text(value: typing.Any) -> str:
    """A default or a choice as the model sends it: JSON where it is JSON, else Python's repr."""
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
