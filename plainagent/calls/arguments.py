"""The model's arguments checked against a tool's hints (phase 5, malformed calls), and turned into
what the hints name: an Enum's member, a dataclass's instance. What does not fit is one precise
line for the model: which argument, which item or field, what was expected and what came."""

import dataclasses
import enum
import json
import typing

from plainagent.calls.schema import JSON_TYPES, NONE, UNIONS, Tool, record_fields

SHOWN = 60  # characters of a wrong value an error shows


class ArgumentProblem(ValueError):
    """What is wrong with a call's arguments, worded for the model."""


def checked(tool: Tool, arguments: dict) -> dict:
    """The arguments as the tool takes them; ArgumentProblem if one is missing, unexpected, or not
    what its hint says."""
    if missing := [
        name
        for name, parameter in tool.parameters.items()
        if parameter.default is parameter.empty and name not in arguments
    ]:
        raise ArgumentProblem(f"missing argument {', '.join(map(repr, missing))}")
    if unexpected := [name for name in arguments if name not in tool.parameters]:
        raise ArgumentProblem(f"unexpected argument {', '.join(map(repr, unexpected))}")
    return {
        name: fitted(tool.hints[name], value, f"argument {name!r}")
        for name, value in arguments.items()
    }


def fitted(hint: typing.Any, value: typing.Any, where: str) -> typing.Any:
    """The value as the hint's type (JSON's kinds kept apart: true is no integer, 3 is a number);
    ArgumentProblem, naming `where`, if it does not fit."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and hint in JSON_TYPES:
        fits = isinstance(value, hint) and (hint is bool or not isinstance(value, bool))
        if fits or hint is float and type(value) is int:
            return value
    elif hint is NONE:
        if value is None:
            return None
    elif origin is typing.Literal or isinstance(hint, type) and issubclass(hint, enum.Enum):
        for choice in choices(hint):
            if choice == value and type(choice) is type(value):
                return choice if origin is typing.Literal else hint(choice)
    elif origin in UNIONS:
        return either(args, value, where)
    elif hint is list or origin is list:
        if isinstance(value, list):
            if not args:
                return value
            return [fitted(args[0], item, f"{where} item {i}") for i, item in enumerate(value)]
    elif hint is dict or origin is dict:
        if isinstance(value, dict):
            if not args:
                return value
            return {
                key: fitted(args[1], item, f"{where} key {shown(key)}")
                for key, item in value.items()
            }
    elif isinstance(value, dict):  # a dataclass or a TypedDict: the only hints left
        return record(hint, value, where)
    raise ArgumentProblem(f"{where} must be {kind(hint)}, not {shown(value)}")


def either(args: tuple, value: typing.Any, where: str) -> typing.Any:
    """The value as the first of a union's hints it fits. For X | None, a value that is not null is
    checked against X alone, so the error says exactly what is wrong with it."""
    others = [arg for arg in args if arg is not NONE]
    if value is None and NONE in args:
        return None
    if len(others) == 1:
        return fitted(others[0], value, where)
    for arg in others:
        try:
            return fitted(arg, value, where)
        except ArgumentProblem:
            continue
    raise ArgumentProblem(f"{where} must be {' or '.join(map(kind, args))}, not {shown(value)}")


def record(hint: type, value: dict, where: str) -> typing.Any:
    """A JSON object as a dataclass's instance, or a TypedDict's dict, each field checked."""
    fields, required = record_fields(hint, where)
    if missing := [name for name in required if name not in value]:
        raise ArgumentProblem(f"{where} is missing field {', '.join(map(repr, missing))}")
    if unexpected := [name for name in value if name not in fields]:
        raise ArgumentProblem(f"{where} has unexpected field {', '.join(map(repr, unexpected))}")
    values = {
        name: fitted(fields[name], item, f"{where} field {name!r}") for name, item in value.items()
    }
    if not dataclasses.is_dataclass(hint):
        return values
    try:
        return hint(**values)
    except (TypeError, ValueError) as error:  # its own checks (__post_init__) refused it
        raise ArgumentProblem(f"{where}: {error}") from None


def choices(hint: typing.Any) -> list:
    """A Literal's values, or an Enum's."""
    if typing.get_origin(hint) is typing.Literal:
        return list(typing.get_args(hint))
    return [member.value for member in hint]


def kind(hint: typing.Any) -> str:
    """What a hint takes, in JSON's words: a JSON string, a JSON array, one of "a", "b", null."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal or isinstance(hint, type) and issubclass(hint, enum.Enum):
        return f"one of {', '.join(json.dumps(choice) for choice in choices(hint))}"
    if isinstance(hint, type) and hint in JSON_TYPES:
        return f"a JSON {JSON_TYPES[hint]}"
    if hint is NONE:
        return "null"
    if hint is list or origin is list:
        return "a JSON array"
    return "a JSON object"


def shown(value: typing.Any) -> str:
    """A value as the model sent it, in JSON, cut to SHOWN characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
