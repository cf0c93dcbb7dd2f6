"""A JSON value checked against a JSON Schema, and built back into the type its schema came from
(phase 5, malformed calls): the one checker, for a tool call's arguments and for run(output=T)
alike. What does not fit is one line per problem, in words the model can act on: where (an
argument, then each item, field or key inside it), what was expected, what came. It checks the
keywords hints.py writes (type, enum, properties, required, additionalProperties, items, anyOf) and
those a JSON Schema of a script's may add (const, oneOf, allOf, $ref, lengths, sizes, bounds,
pattern); others are left to the server."""

import enum
import functools
import json
import re
import typing

from plainagent.calls.hints import NONE, UNIONS, is_record, record_fields

MOST_PROBLEMS = 5  # more would only repeat themselves
SHOWN = 60  # characters of a wrong value a problem shows
# JSON's own values, kept as they come: an int where a float is hinted stays, as Python takes it
AS_THEY_ARE = (str, float, bool)
CHOICES = {"$ref", "allOf", "anyOf", "oneOf", "const", "enum"}  # what a value may be besides a type
# What a string or a number may be held to besides its type
LIMITS = {
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
}
PYTHON: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "number": (int, float),
    "object": dict,
    "array": list,
}
KINDS = {
    "string": "a JSON string",
    "integer": "a JSON integer",
    "number": "a JSON number",
    "boolean": "a JSON boolean",
    "null": "null",
    "object": "a JSON object",
    "array": "a JSON array",
}


def problems(
    value: typing.Any, schema: typing.Any, at: str = "", root: dict | None = None
) -> list[str]:
    """What is wrong with the value as the schema sees it, at most MOST_PROBLEMS; [] if nothing;
    that it is nested too deeply, where checking it would go past Python's recursion limit.
    at: what the value is (argument 'tags'); "" for a whole answer, whose fields are then named
    alone (field 'steps' item 0). root: the whole schema, where its $refs point."""
    found: list[str] = []
    try:
        check(value, schema, at, schema if root is None else root, found)
    except RecursionError:  # a schema that holds itself ($ref), and a value deeper than Python goes
        return [f"{subject(at)} is nested too deeply to check; send it less deep"]
    return found[:MOST_PROBLEMS]


def unreadable(schema: typing.Any, at: str = "") -> str | None:
    """What in a JSON Schema given as it is (an MCP server's) the checker cannot read: a keyword it
    reads whose value is not of the kind the specification says (type a name or a list of names,
    properties an object of schemas, required a list of names, a pattern that is no string...);
    None if it can read it all. at: where in the schema, for the words."""
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, dict):
        return f"has {at or 'a schema'} that is not an object"
    try:
        return shape_problem(schema, at)
    except RecursionError:
        return "is nested too deeply to read"


def shape_problem(node: dict, at: str) -> str | None:
    kinds = node.get("type", "object")
    if not isinstance(kinds, str) and not is_names(kinds):
        return f"has {spot(at, 'type')} that is neither a type's name nor a list of them"
    if not is_names(node.get("required", [])):
        return f"has {spot(at, 'required')} that is not a list of names"
    for key in ("$ref", "pattern"):
        if key in node and not isinstance(node[key], str):
            return f"has {spot(at, key)} that is not a string"
    if "enum" in node and not isinstance(node["enum"], list):
        return f"has {spot(at, 'enum')} that is not a list"
    numbers = [key for key in (*LIMITS, "minItems", "maxItems") if key in node and key != "pattern"]
    for key in numbers:
        if isinstance(node[key], bool) or not isinstance(node[key], (int, float)):
            return f"has {spot(at, key)} that is not a number"
    inside: list[tuple[str, typing.Any]] = []
    for key in ("properties", "$defs", "definitions"):
        if not isinstance(node.get(key, {}), dict):
            return f"has {spot(at, key)} that is not an object"
        inside += [(f"{key}.{name}", part) for name, part in node.get(key, {}).items()]
    for key in ("allOf", "anyOf", "oneOf"):
        if not isinstance(node.get(key, []), list):
            return f"has {spot(at, key)} that is not a list"
        inside += [(f"{key}.{i}", part) for i, part in enumerate(node.get(key, []))]
    items = node.get("items", [])  # a schema, or (before 2020-12) a list of them, one an item
    if isinstance(items, list):
        inside += [(f"items.{i}", part) for i, part in enumerate(items)]
    else:
        inside.append(("items", items))
    if "additionalProperties" in node:
        inside.append(("additionalProperties", node["additionalProperties"]))
    for key, part in inside:
        if problem := unreadable(part, spot(at, key)):
            return problem
    return None


def spot(at: str, key: str) -> str:
    """Where a keyword is in a schema: properties.path.pattern."""
    return f"{at}.{key}" if at else key


def is_names(value: typing.Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def check(value: typing.Any, node: typing.Any, at: str, root: dict, found: list[str]) -> None:
    if not isinstance(node, dict):
        return  # true: anything
    if not CHOICES.isdisjoint(node) and not chosen(value, node, at, root, found):
        return
    kinds = node.get("type")
    if kinds is not None and not is_kind(value, kinds):
        kinds = [kinds] if isinstance(kinds, str) else kinds
        expected = " or ".join(KINDS.get(kind, kind) for kind in kinds)
        found.append(f"{subject(at)} must be {expected}, not {shown(value)}")
        return
    if isinstance(value, dict):
        check_object(value, node, at, root, found)
    elif isinstance(value, list):
        check_array(value, node, at, root, found)
    elif LIMITS.isdisjoint(node):  # the schemas hints.py writes have none: checked at each call
        return
    elif isinstance(value, str):
        check_string(value, node, at, found)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        check_number(value, node, at, found)


def chosen(value: typing.Any, node: dict, at: str, root: dict, found: list[str]) -> bool:
    """Whether the value is one the node's $ref, allOf, anyOf, oneOf, const and enum allow, so its
    type and what is inside it are worth checking."""
    if "$ref" in node:
        check(value, resolve(root, node["$ref"]), at, root, found)
    for arm in node.get("allOf", []):
        check(value, arm, at, root, found)
    for key in ("anyOf", "oneOf"):  # oneOf is checked as anyOf: the first arm that fits is taken
        if key in node and not one_fits(value, node[key], at, root, found):
            return False
    if "const" in node and not same(value, node["const"]):
        found.append(f"{subject(at)} must be {shown(node['const'])}, not {shown(value)}")
        return False
    if "enum" in node and not any(same(value, allowed) for allowed in node["enum"]):
        allowed = ", ".join(shown(choice) for choice in node["enum"])
        found.append(f"{subject(at)} must be one of {allowed}, not {shown(value)}")
        return False
    return True


def one_fits(value: typing.Any, arms: list, at: str, root: dict, found: list[str]) -> bool:
    """Whether one of the arms takes the value; if none does, the problems of the closest one (of
    the value's own kind, with the fewest problems) are added. A value that is not null is checked
    against X of X | None alone, so the problem says exactly what is wrong with it."""
    if value is not None:
        arms = [arm for arm in arms if arm != {"type": "null"}] or arms
    closest: list[str] | None = None
    for arm in arms:
        inside: list[str] = []
        check(value, arm, at, root, inside)
        if not inside:
            return True
        of_its_kind = len(arms) == 1 or not inside[0].startswith(f"{subject(at)} must be ")
        if of_its_kind and (closest is None or len(inside) < len(closest)):
            closest = inside
    fallback = f"{subject(at)} must be {described(arms, root)}, not {shown(value)}"
    found.extend(closest or [fallback])
    return False


def check_object(value: dict, node: dict, at: str, root: dict, found: list[str]) -> None:
    properties = node.get("properties") or {}
    if missing := [name for name in node.get("required", []) if name not in value]:
        said = f"field {names(missing)}"
        found.append(f"{at} is missing {said}" if at else f"missing {said}")
    extra, unexpected = node.get("additionalProperties", True), []
    for name, item in value.items():
        if name in properties:
            check(item, properties[name], inside(at, f"field {name!r}"), root, found)
        elif extra is False:
            unexpected.append(name)
        else:
            check(item, extra, inside(at, f"key {shown(name)}"), root, found)
    if unexpected:
        said = f"field {names(unexpected)}"
        found.append(f"{at} has unexpected {said}" if at else f"unexpected {said}")


def check_array(value: list, node: dict, at: str, root: dict, found: list[str]) -> None:
    if "minItems" in node or "maxItems" in node:
        said = f"{subject(at)} has {len(value)} items"
        limits(len(value), node, "minItems", "maxItems", said, found)
    for i, item in enumerate(value):
        check(item, node.get("items", True), inside(at, f"item {i}"), root, found)


def check_string(value: str, node: dict, at: str, found: list[str]) -> None:
    said = f"{subject(at)} has {len(value)} characters"
    limits(len(value), node, "minLength", "maxLength", said, found)
    pattern = node.get("pattern")
    try:  # one Python's re cannot read (ECMA-262's \p{L}) is left to the server
        unmatched = isinstance(pattern, str) and re.search(pattern, value) is None
    except re.error:
        unmatched = False
    if unmatched:
        expected = f"must match the pattern {json.dumps(pattern)}"
        found.append(f"{subject(at)} {expected}, not {shown(value)}")


def check_number(value: float, node: dict, at: str, found: list[str]) -> None:
    bounds = (
        ("minimum", lambda bound: value >= bound, "at least"),
        ("maximum", lambda bound: value <= bound, "at most"),
        ("exclusiveMinimum", lambda bound: value > bound, "more than"),
        ("exclusiveMaximum", lambda bound: value < bound, "less than"),
    )
    for key, holds, words in bounds:
        if isinstance(node.get(key), (int, float)) and not holds(node[key]):
            found.append(f"{subject(at)} must be a number {words} {node[key]}, not {shown(value)}")


def limits(size: int, node: dict, least: str, most: str, said: str, found: list[str]) -> None:
    if isinstance(node.get(least), int) and size < node[least]:
        found.append(f"{said}, fewer than the {node[least]} needed")
    if isinstance(node.get(most), int) and size > node[most]:
        found.append(f"{said}, more than the {node[most]} allowed")


def built(value: typing.Any, hint: typing.Any, node: dict) -> typing.Any:
    """The value, which fits node (hints.json_schema(hint)), as the hint's type: an Enum's member, a
    dataclass's instance, an int for an integral 3.0; a TypedDict stays a dict, an int where a float
    is hinted stays an int (Python takes it there). A dataclass's own checks may raise."""
    if value is None or hint in AS_THEY_ARE:
        return value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in UNIONS:
        arms = [pair for pair in zip(args, node["anyOf"], strict=True) if pair[0] is not NONE]
        for arm, arm_node in arms:  # X | None: X, with no need to look
            if len(arms) == 1 or not problems(value, arm_node):
                return built(value, arm, arm_node)
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hint is int:
        return int(value)  # 3.0 is an integer in JSON
    if origin is list and args:
        return [built(item, args[0], node["items"]) for item in value]
    if origin is dict and args:
        inner = node["additionalProperties"]
        return {key: built(item, args[1], inner) for key, item in value.items()}
    if is_record(hint):
        fields, properties = field_hints(hint), node["properties"]
        made = {name: built(item, fields[name], properties[name]) for name, item in value.items()}
        return made if typing.is_typeddict(hint) else hint(**made)
    return value


@functools.lru_cache(maxsize=256)
def field_hints(record: type) -> dict[str, typing.Any]:
    """A dataclass's or TypedDict's fields and their hints, read once (they were readable when its
    schema was made)."""
    return record_fields(record, record.__qualname__)[0]


def is_kind(value: typing.Any, kinds: str | list) -> bool:
    """Whether value is of the JSON Schema type, or one of the types: true is not an integer, 3.0
    is one."""
    if not isinstance(kinds, str):
        return any(is_kind(value, kind) for kind in kinds)
    if isinstance(value, bool):
        return kinds == "boolean"
    if kinds == "integer":
        return isinstance(value, int) or isinstance(value, float) and value.is_integer()
    return value is None if kinds == "null" else isinstance(value, PYTHON.get(kinds, ()))


def same(value: typing.Any, other: typing.Any) -> bool:
    """Equal as JSON values: true is not 1."""
    return bool(value == other) and isinstance(value, bool) == isinstance(other, bool)


def resolve(root: dict, reference: str) -> typing.Any:
    """The schema a local $ref (#/$defs/Item) points at; True (anything) for one it cannot find."""
    node: typing.Any = root
    for part in reference.removeprefix("#").strip("/").split("/") if reference != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return True
        node = node[part]
    return node


def described(arms: list, root: dict) -> str:
    """The arms of an anyOf as the kinds they take: 'a JSON string or null'."""
    kinds: list[str] = []
    for arm in arms:
        arm = resolve(root, arm["$ref"]) if isinstance(arm, dict) and "$ref" in arm else arm
        kind = arm.get("type", "any value") if isinstance(arm, dict) else "any value"
        for each in [kind] if isinstance(kind, str) else kind:
            if KINDS.get(each, each) not in kinds:
                kinds.append(KINDS.get(each, each))
    return " or ".join(kinds)


def subject(at: str) -> str:
    return at or "the value"


def inside(at: str, part: str) -> str:
    """Where a part of the value is: argument 'at' field 'x'; field 'x' of a whole answer."""
    return f"{at} {part}" if at else part


def names(fields: list[str]) -> str:
    return ", ".join(map(repr, fields))


def shown(value: typing.Any) -> str:
    """A value as the model sent it, in JSON, cut to SHOWN characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
