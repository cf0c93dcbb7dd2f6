"""A tool's schema from its signature (phase 1), and the check of a call's arguments against it
(phase 5, malformed calls): a function's name, type hints, defaults and docstring are all the model
is told. A keyword-only parameter named `settings` is not: it is the run's settings, which the loop
passes (call_tool), as swarm passes its context_variables."""

import functools
import inspect
import json
import typing

from plainagent.core.settings import Settings

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
SETTINGS = "settings"  # the parameter that gets a tool its run's settings; the model never sees it


def schema(function: typing.Callable) -> dict:
    """The JSON schema the model reads, from a function's name, type hints, defaults and
    docstring."""
    doc = inspect.getdoc(function)
    assert doc is not None, f"{function.__name__} has no docstring"  # every tool has one
    summary, _, args_block = doc.partition("Args:")
    described = parameter_descriptions(args_block)
    hints, parameters = typed_parameters(function)
    properties, required = {}, []
    for name, parameter in parameters.items():
        properties[name] = {"type": JSON_TYPES[hints[name]]}
        if name in described:
            properties[name]["description"] = described[name]
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    return {
        "type": "function",
        "function": {
            "name": function.__name__,
            "description": " ".join(summary.split()),
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def parameter_descriptions(args_block: str) -> dict[str, str]:
    """Parse a Google-style `Args:` block: `name: text`, with indented lines continuing the text."""
    described, name = {}, None
    for line in args_block.splitlines():
        head, sep, text = line.strip().partition(":")
        if (
            sep
            and head.isidentifier()
            and line.startswith(" " * 4)
            and not line.startswith(" " * 8)
        ):
            name, described[head] = head, text.strip()
        elif name and line.strip():
            described[name] += " " + line.strip()
    return described


def argument_problem(function: typing.Callable, arguments: dict) -> str | None:
    """What is wrong with the arguments: missing, unexpected, or not of the JSON type the schema
    names."""
    hints, parameters = typed_parameters(function)
    if missing := [
        name for name, p in parameters.items() if p.default is p.empty and name not in arguments
    ]:
        return f"missing argument {', '.join(map(repr, missing))}"
    if unexpected := [name for name in arguments if name not in parameters]:
        return f"unexpected argument {', '.join(map(repr, unexpected))}"
    for name, value in arguments.items():
        expected = hints[name]
        # JSON has no int/bool distinction the way Python does: true is not an integer, 3 is a
        # number.
        fits = isinstance(value, expected) and (expected is bool or not isinstance(value, bool))
        if not fits and not (expected is float and type(value) is int):
            return (
                f"argument {name!r} must be a JSON {JSON_TYPES[expected]}, not {json.dumps(value)}"
            )
    return None


@functools.cache
def typed_parameters(
    function: typing.Callable,
) -> tuple[dict, typing.Mapping[str, inspect.Parameter]]:
    """A tool's type hints and the parameters the model sends (all but `settings`), read once:
    reading them takes longer than checking a call's arguments."""
    parameters = inspect.signature(function).parameters
    return typing.get_type_hints(function), {
        name: parameter for name, parameter in parameters.items() if name != SETTINGS
    }


def signature(function: typing.Callable) -> str:
    """The parameters the model sends, as Python shows a signature: (path: str, offset: int = 0)."""
    _, parameters = typed_parameters(function)
    shown = inspect.signature(function).replace(parameters=list(parameters.values()))
    return str(shown).replace("'", "")


def call_tool(function: typing.Callable[..., str], arguments: dict, settings: Settings) -> str:
    """Call a tool with the model's (checked) arguments, and with the run's settings if it declares
    a `settings` parameter (read once, as typed_parameters is)."""
    if takes_settings(function):
        return function(**arguments, settings=settings)
    return function(**arguments)


@functools.cache
def takes_settings(function: typing.Callable) -> bool:
    return SETTINGS in inspect.signature(function).parameters
