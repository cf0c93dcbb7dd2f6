"""A tool's schema from its signature (phase 1): a function's name, type hints, defaults and
docstring are all the model is told. A keyword-only parameter named `settings` is not: it is the
run's settings, which the loop passes (call_tool), as swarm passes its context_variables. Each run
reads its tools once, when it starts (tool()); a hint no schema can express is a ToolError then."""

import dataclasses
import enum
import inspect
import json
import types
import typing

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
SETTINGS = "settings"  # the parameter that gets a tool its run's settings; the model never sees it
UNIONS = (typing.Union, types.UnionType)
NONE = type(None)
EXPRESSIBLE = (
    "str, int, float, bool, list[X], dict[str, X], Literal[...], an Enum, X | None, a dataclass "
    "or a TypedDict"
)


class ToolError(TypeError):
    """A function that cannot be a tool, said when the run starts: a hint no schema can express,
    a parameter with no hint, or a name another tool of the run has."""


@dataclasses.dataclass(frozen=True)
class Tool:
    """A function as a run uses it, read once when the run starts: its name, the schema the model
    reads, the hint of each parameter the model sends, and whether it takes the run's settings."""

    function: typing.Callable
    name: str
    schema: dict
    hints: dict[str, typing.Any]
    parameters: dict[str, inspect.Parameter]
    takes_settings: bool

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
    for what no schema can express."""
    name = getattr(function, "__name__", None)
    if not callable(function) or not isinstance(name, str):
        raise ToolError(f"{function!r} is not a function; a tool is a named, typed function")
    try:
        hints = typing.get_type_hints(function)
        every = inspect.signature(function).parameters
    except (NameError, TypeError, ValueError) as error:
        raise ToolError(f"tool {name}: its signature cannot be read ({error})") from None
    parameters = {key: p for key, p in every.items() if key != SETTINGS}
    doc = inspect.getdoc(function) or ""
    summary, _, args_block = doc.partition("Args:")
    described = parameter_descriptions(args_block)
    properties, required = {}, []
    for key, parameter in parameters.items():
        where = f"tool {name}: parameter {key!r}"
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise ToolError(f"{where} is {parameter.kind.description}; the model names each one")
        if key not in hints:
            raise ToolError(f"{where} has no type hint; give it one of {EXPRESSIBLE}")
        properties[key] = json_schema(hints[key], where)
        if key in described:
            properties[key]["description"] = described[key]
        if parameter.default is inspect.Parameter.empty:
            required.append(key)
    about = {"description": " ".join(summary.split())} if summary.strip() else {}
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
        takes_settings=SETTINGS in every,
    )


def schema(function: typing.Callable) -> dict:
    """The JSON schema the model reads, from a function's name, type hints, defaults and
    docstring."""
    return tool(function).schema


def toolbox(
    functions: typing.Iterable[typing.Callable], built_in: typing.Iterable[typing.Callable]
) -> dict[str, Tool]:
    """A run's tools by name, each read once. A name is one tool's: two of one name, or one of the
    built-ins' names that is not that built-in (the gate and the prompt know them by name), are a
    ToolError."""
    ours = {function.__name__: function for function in built_in}
    tools: dict[str, Tool] = {}
    for function in functions:
        made = tool(function)
        if made.name in tools:
            raise ToolError(f"two tools are named {made.name}; give each tool a name of its own")
        if made.name in ours and inspect.unwrap(function) is not ours[made.name]:
            raise ToolError(
                f"tool {made.name}: a built-in tool has this name; give yours another one"
            )
        tools[made.name] = made
    return tools


def json_schema(hint: typing.Any, where: str, within: tuple = ()) -> dict:
    """The JSON Schema of a type hint; `where` names the parameter (and field) for a ToolError;
    `within`, the classes being described around it (one that holds itself has no schema)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and hint in JSON_TYPES:
        return {"type": JSON_TYPES[hint]}
    if hint is NONE:
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
    if isinstance(hint, type) and (dataclasses.is_dataclass(hint) or typing.is_typeddict(hint)):
        if hint in within:
            raise ToolError(f"{where}: {hint.__qualname__} holds itself, which a schema cannot")
        fields, required = record_fields(hint, where)
        described = parameter_descriptions((inspect.getdoc(hint) or "").partition("Attributes:")[2])
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
    raise ToolError(
        f"{where} is typed {hint_text(hint)}, which a tool's schema cannot express; "
        f"use {EXPRESSIBLE}"
    )


def one_of(values: list, where: str, hint: typing.Any) -> dict:
    """The schema of a Literal's or an Enum's values: JSON strings, numbers, booleans or null."""
    kinds = {JSON_TYPES.get(type(value), "null" if value is None else "") for value in values}
    if "" in kinds or not values:
        raise ToolError(
            f"{where} is typed {hint_text(hint)}, whose values are not all JSON strings, numbers, "
            "booleans or null"
        )
    return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}


def record_fields(hint: type, where: str) -> tuple[dict[str, typing.Any], list[str]]:
    """A dataclass's or a TypedDict's fields and their hints, and those that must be given."""
    try:
        hints = typing.get_type_hints(hint)
    except (NameError, TypeError) as error:
        raise ToolError(
            f"{where}: the hints of {hint.__qualname__} cannot be read ({error})"
        ) from None
    if typing.is_typeddict(hint):
        return hints, [name for name in hints if name in hint.__required_keys__]  # type: ignore[attr-defined]
    fields = [field for field in dataclasses.fields(hint) if field.init]
    missing = dataclasses.MISSING
    required = [f.name for f in fields if f.default is missing and f.default_factory is missing]
    return {field.name: hints[field.name] for field in fields}, required


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
