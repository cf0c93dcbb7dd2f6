"""A call's arguments checked against its tool (phase 5, malformed calls): each name one the tool
takes, none it needs left out, each value checked against its parameter's schema and built into
what the hint names (validate.py, the checker run(output=T) uses too). What does not fit is one
precise line for the model: which argument, which item or field, what was expected and what came."""

import json
import typing

from plainagent.calls.schema import Tool
from plainagent.calls.validate import MOST_PROBLEMS, built, problems


class ArgumentProblem(ValueError):
    """What is wrong with a call's arguments, worded for the model."""


def parsed(raw: str) -> dict:
    """A call's arguments, sent as a JSON string, as a dict; ArgumentProblem, saying what to send
    instead, if they are not one JSON object."""
    try:
        arguments = json.loads(raw or "{}")
    except json.JSONDecodeError as error:
        raise ArgumentProblem(
            f"the arguments are not valid JSON ({error}); send one JSON object, e.g. "
            '{"path": "x"}'
        ) from None
    except RecursionError:
        raise ArgumentProblem(
            'the arguments are nested too deeply; send one flat JSON object, e.g. {"path": "x"}'
        ) from None
    if not isinstance(arguments, dict):
        kind = type(arguments).__name__
        raise ArgumentProblem(f"the arguments must be a JSON object, not {kind}")
    return arguments


def checked(tool: Tool, arguments: dict) -> dict:
    """The arguments as the tool takes them (an Enum's member, a dataclass's instance);
    ArgumentProblem if one is missing, unexpected, or not what its hint says. A tool whose schema
    was given (an MCP server's) has them checked against that schema whole, and as they came."""
    if tool.as_given:
        if found := problems(arguments, tool.schema["function"]["parameters"]):
            raise ArgumentProblem("; ".join(found))
        return arguments
    if missing := [
        name
        for name, parameter in tool.parameters.items()
        if parameter.default is parameter.empty and name not in arguments
    ]:
        raise ArgumentProblem(f"missing argument {', '.join(map(repr, missing))}")
    if unexpected := [name for name in arguments if name not in tool.parameters]:
        raise ArgumentProblem(f"unexpected argument {', '.join(map(repr, unexpected))}")
    schemas = tool.schema["function"]["parameters"]["properties"]
    found = [
        problem
        for name, value in arguments.items()
        for problem in problems(value, schemas[name], f"argument {name!r}")
    ]
    if found:
        raise ArgumentProblem("; ".join(found[:MOST_PROBLEMS]))
    return {
        name: fitted(name, value, tool.hints[name], schemas[name])
        for name, value in arguments.items()
    }


def fitted(name: str, value: typing.Any, hint: typing.Any, schema: dict) -> typing.Any:
    """A checked argument as its hint's type; ArgumentProblem if a dataclass's own checks
    (__post_init__) refuse it."""
    try:
        return built(value, hint, schema)
    except (TypeError, ValueError) as error:
        raise ArgumentProblem(f"argument {name!r}: {error}") from None
