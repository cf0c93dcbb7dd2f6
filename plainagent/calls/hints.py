"""Python types as JSON Schema, and JSON values built back into them (a later addition, for
structured output): str, int, float, bool, None, list[X], dict[str, X], Literal[...], an Enum (its
values), X | None and other unions, a dataclass or a TypedDict (an object with its own fields,
those with a default not required). A hint no JSON Schema can say is a TypeError naming where."""

import dataclasses
import enum
import types
import typing

from plainagent.calls.validate import problems

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
UNIONS = (typing.Union, types.UnionType)
WHAT_WORKS = (
    "use str, int, float, bool, list[X], dict[str, X], Literal[...], an Enum, X | None, a "
    "dataclass or a TypedDict"
)


def is_record(hint: typing.Any) -> bool:
    """Whether the hint is a dataclass or a TypedDict: an object with fields of its own."""
    return isinstance(hint, type) and (dataclasses.is_dataclass(hint) or typing.is_typeddict(hint))


def type_schema(hint: typing.Any, where: str, inside: tuple = ()) -> dict:
    """The JSON Schema of values of the hint; `where` names it in an error (Review.tags)."""
    hint = plain(hint)
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if hint in JSON_TYPES:
        return {"type": JSON_TYPES[hint]}
    if hint is None or hint is type(None):
        return {"type": "null"}
    if origin is typing.Literal:
        return choices(list(arguments), where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return choices([member.value for member in hint], where)
    if origin is list and len(arguments) == 1:
        return {"type": "array", "items": type_schema(arguments[0], f"{where}[]", inside)}
    if origin is dict and len(arguments) == 2 and plain(arguments[0]) is str:
        return {"type": "object", "additionalProperties": type_schema(arguments[1], where, inside)}
    if origin in UNIONS:
        arms = [type_schema(arm, where, inside) for arm in arguments if arm is not type(None)]
        if type(None) in arguments:
            arms.append({"type": "null"})
        simple = all(set(arm) == {"type"} and isinstance(arm["type"], str) for arm in arms)
        return {"type": [arm["type"] for arm in arms]} if simple else {"anyOf": arms}
    if is_record(hint):
        if hint in inside:
            raise TypeError(f"{where} holds itself ({hint.__name__}); JSON Schema here cannot")
        fields, required = record_fields(hint)
        properties = {
            name: type_schema(field, f"{hint.__name__}.{name}", (*inside, hint))
            for name, field in fields.items()
        }
        return {"type": "object", "properties": properties, "required": required}
    raise TypeError(f"{where} is {hint!r}, which JSON Schema cannot say; {WHAT_WORKS}")


def record_fields(record: type) -> tuple[dict[str, typing.Any], list[str]]:
    """A dataclass's or TypedDict's fields and their hints, and those that must be given."""
    hints = typing.get_type_hints(record)
    if typing.is_typeddict(record):
        return hints, [name for name in hints if name in record.__required_keys__]  # type: ignore[attr-defined]
    fields = [field for field in dataclasses.fields(record) if field.init]
    required = [
        field.name
        for field in fields
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    ]
    return {field.name: hints[field.name] for field in fields}, required


def choices(values: list, where: str) -> dict:
    """An enum, with its type when its values share one."""
    kinds = {JSON_TYPES.get(type(value), "null" if value is None else "?") for value in values}
    if "?" in kinds:
        raise TypeError(f"{where}: the choices {values!r} are not all strings, numbers or bools")
    return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}


def plain(hint: typing.Any) -> typing.Any:
    """The hint without Annotated's extras (and NotRequired, Required)."""
    while typing.get_origin(hint) in (typing.Annotated, *extras()):
        hint = typing.get_args(hint)[0]
    return hint


def extras() -> tuple:
    return tuple(
        getattr(typing, name) for name in ("Required", "NotRequired") if hasattr(typing, name)
    )


def built(value: typing.Any, hint: typing.Any) -> typing.Any:
    """The value (JSON, checked against type_schema(hint)) as the hint's type: a dataclass's
    instance, an Enum's member, a float for a float; a TypedDict stays a dict."""
    hint = plain(hint)
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if value is None:
        return None
    if is_record(hint):
        fields, _ = record_fields(hint)
        made = {name: built(item, fields[name]) for name, item in value.items()}
        return made if typing.is_typeddict(hint) else hint(**made)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hint is float:
        return float(value)
    if hint is int:
        return int(value)  # 3.0 is an integer in JSON
    if origin is list:
        return [built(item, arguments[0]) for item in value]
    if origin is dict:
        return {key: built(item, arguments[1]) for key, item in value.items()}
    if origin in UNIONS:
        for arm in arguments:
            if arm is not type(None) and not problems(value, type_schema(arm, "")):
                return built(value, arm)
    return value
