"""A tool's schema from its signature (phase 1): a function's name, type hints, defaults and
docstring are all the model is told. A keyword-only parameter named `settings` is not: it is the
run's settings, which the loop passes (call_tool), as swarm passes its context_variables; nor is a
keyword-only one named `decided`, what the gate decided about the call. Each run reads its tools
once, when it starts (tool()); a hint no schema can express (hints.py, the one converter) is a
ToolError then."""

import dataclasses
import functools
import inspect
import re
import typing

from plainagent.calls.hints import (
    EXPRESSIBLE,
    TEXT_HINTS,
    HintError,
    documented,
    hint_text,
    json_schema,
    value_text,
)

SETTINGS = "settings"  # the parameter that gets a tool its run's settings; the model never sees it
DECIDED = "decided"  # and the one that gets it what the gate decided about the call (approval/)
KEYWORD = inspect.Parameter.KEYWORD_ONLY  # the kind those two must be
# The names OpenAI's Chat Completions takes for a function
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ToolError(TypeError):
    """A function that cannot be a tool, said when the run starts: a hint no schema can express,
    a parameter with no hint, or a name another tool of the run has."""


@dataclasses.dataclass(frozen=True)
class Tool:
    """A function as a run uses it, read once when the run starts: its name, the schema the model
    reads, the hint of each parameter the model sends, and whether it takes the run's settings and
    the gate's decision."""

    function: typing.Callable
    name: str
    schema: dict
    hints: dict[str, typing.Any]
    parameters: dict[str, inspect.Parameter]
    takes_settings: bool
    takes_decided: bool
    # A schema given as it is (an MCP server's, mcp/): the arguments are checked against it whole
    # and passed on as they came
    as_given: bool = False

    @property
    def signature(self) -> str:
        """The parameters the model sends, as a person writes them: (path: str, offset: int = 0)."""
        shown = []
        for name, parameter in self.parameters.items():
            default = parameter.default
            given = "" if default is parameter.empty else f" = {value_text(default)}"
            shown.append(f"{name}: {hint_text(self.hints[name])}{given}")
        returned = self.hints.get("return", inspect.Signature.empty)
        after = "" if returned is inspect.Signature.empty else f" -> {hint_text(returned)}"
        return f"({', '.join(shown)}){after}"


def tool(function: typing.Callable) -> Tool:
    """The function as a tool: its schema, from its name, type hints, defaults and docstring (an
    `Args:` block describes the parameters). Raises ToolError, naming the tool and the parameter,
    for what no schema can express, or a name the API does not take (a lambda's). A
    functools.partial is its function, less the parameters it fills."""
    if isinstance(function, functools.partial):
        function = bound(function)
    name = getattr(function, "__name__", None)
    if not callable(function) or not isinstance(name, str):
        raise ToolError(f"{function!r} is not a function; a tool is a named, typed function")
    if not TOOL_NAME.fullmatch(name):
        raise ToolError(
            f"tool {name!r}: the API takes only names of 1 to 64 letters, digits, _ and -; "
            "define it with def and such a name"
        )
    try:
        hints = typing.get_type_hints(function)
        every = inspect.signature(function).parameters
    except (NameError, TypeError, ValueError) as error:
        why = f"; {TEXT_HINTS}" if isinstance(error, NameError) else ""
        raise ToolError(f"tool {name}: its signature cannot be read ({error}){why}") from None
    # Only a keyword-only one: one merely named so is the model's to fill, as any other
    given = [key for key in (SETTINGS, DECIDED) if key in every and every[key].kind == KEYWORD]
    parameters = {key: p for key, p in every.items() if key not in given}
    summary, described = documented(inspect.getdoc(function) or "", "Args")
    properties, required = {}, []
    for key, parameter in parameters.items():
        where = f"tool {name}: parameter {key!r}"
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise ToolError(f"{where} is {parameter.kind.description}; the model names each one")
        if key not in hints:
            raise ToolError(f"{where} has no type hint; give it one of {EXPRESSIBLE}")
        try:
            properties[key] = json_schema(hints[key], where)
        except HintError as error:
            raise ToolError(str(error)) from None
        if key in described:
            properties[key]["description"] = described[key]
        if parameter.default is inspect.Parameter.empty:
            required.append(key)
    about = {"description": summary} if summary else {}
    return Tool(
        function=function,
        name=name,
        schema={
            "type": "function",
            "function": {
                "name": name,
                **about,
                "parameters": {"type": "object", "properties": properties, "required": required},
            },
        },
        hints={key: hints[key] for key in [*parameters, "return"] if key in hints},
        parameters=parameters,
        takes_settings=SETTINGS in given,
        takes_decided=DECIDED in given,
    )


def bound(partial: functools.partial) -> typing.Callable:
    """A partial as a tool's function: named, documented, typed and marked (@asks) as its function
    is, and taking only the parameters the partial leaves open, as keywords (the model names each
    one); what it fills, the model never sees."""

    def called(**arguments: typing.Any) -> typing.Any:
        return partial(**arguments)

    functools.update_wrapper(called, partial.func)
    given = inspect.signature(partial)
    # A keyword the partial fills is fixed, as a positional one is: the model cannot send another
    left = [p for key, p in given.parameters.items() if key not in partial.keywords]
    called.__signature__ = given.replace(parameters=left)  # type: ignore[attr-defined]
    return called


def schema(function: typing.Callable) -> dict:
    """The JSON schema the model reads, from a function's name, type hints, defaults and
    docstring."""
    return tool(function).schema


def toolbox(
    functions: typing.Iterable[typing.Callable | Tool], built_in: typing.Iterable[typing.Callable]
) -> dict[str, Tool]:
    """A run's tools by name, each read once (a Tool made already, an MCP server's, as it is). A
    name is one tool's: two of one name, or one of the built-ins' names that is not that built-in
    (the gate and the prompt know them by name), are a ToolError."""
    ours = {function.__name__: function for function in built_in}
    tools: dict[str, Tool] = {}
    for function in functions:
        made = function if isinstance(function, Tool) else tool(function)
        if made.name in tools:
            raise ToolError(f"two tools are named {made.name}; give each tool a name of its own")
        if made.name in ours and inspect.unwrap(made.function) is not ours[made.name]:
            raise ToolError(
                f"tool {made.name}: a built-in tool has this name; give yours another one"
            )
        tools[made.name] = made
    return tools
