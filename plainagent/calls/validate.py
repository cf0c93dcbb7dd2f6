"""A JSON value checked against a JSON Schema (a later addition, for structured output): what is
wrong with it, each problem at its path ($.items[2].price: expected a number, got "12"), in words
the model can act on. It checks the keywords the schemas built from Python types use (type, enum,
const, properties, required, additionalProperties, items, anyOf, oneOf, allOf, $ref) and the
common limits (lengths, sizes, bounds, pattern); others are left to the server."""

import json
import re
import typing

MOST_PROBLEMS = 5  # more would only repeat themselves
SHOWN_CHARS = 40  # of a wrong value, in a problem
JSON_KINDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
    "object": "an object",
    "array": "an array",
}


def problems(value: typing.Any, schema: dict, root: dict | None = None) -> list[str]:
    """What is wrong with value as the schema sees it, at most MOST_PROBLEMS; [] if nothing. root:
    the whole schema, where its $refs point, if the schema is part of one."""
    found: list[str] = []
    check(value, schema, "$", schema if root is None else root, found)
    return found[:MOST_PROBLEMS]


def check(value: typing.Any, node: typing.Any, at: str, root: dict, found: list[str]) -> None:
    if node is True or not isinstance(node, dict):
        return
    if "$ref" in node:
        check(value, resolve(root, node["$ref"]), at, root, found)
    for arm in node.get("allOf", []):
        check(value, arm, at, root, found)
    for key in ("anyOf", "oneOf"):  # oneOf is checked as anyOf: the first arm that fits is taken
        if key in node and not one_fits(value, node[key], at, root, found):
            return
    if "const" in node and not same(value, node["const"]):
        found.append(f"{at}: expected {shown(node['const'])}, got {shown(value)}")
        return
    if "enum" in node and not any(same(value, allowed) for allowed in node["enum"]):
        allowed = ", ".join(shown(choice) for choice in node["enum"])
        found.append(f"{at}: expected one of {allowed}, got {shown(value)}")
        return
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    if kinds and not any(is_kind(value, kind) for kind in kinds):
        expected = " or ".join(JSON_KINDS.get(kind, kind) for kind in kinds)
        found.append(f"{at}: expected {expected}, got {shown(value)}")
        return
    if isinstance(value, dict):
        check_object(value, node, at, root, found)
    elif isinstance(value, list):
        check_array(value, node, at, root, found)
    elif isinstance(value, str):
        check_string(value, node, at, found)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        check_number(value, node, at, found)


def one_fits(value: typing.Any, arms: list, at: str, root: dict, found: list[str]) -> bool:
    """Whether one of the arms takes the value; if none does, the problems of the closest one (of
    the value's own kind, with the fewest problems) are added."""
    closest: list[str] | None = None
    for arm in arms:
        inside: list[str] = []
        check(value, arm, at, root, inside)
        if not inside:
            return True
        of_its_kind = not inside[0].startswith(f"{at}: expected")
        if of_its_kind and (closest is None or len(inside) < len(closest)):
            closest = inside
    found.extend(closest or [f"{at}: expected {described(arms, root)}, got {shown(value)}"])
    return False


def check_object(value: dict, node: dict, at: str, root: dict, found: list[str]) -> None:
    properties = node.get("properties") or {}
    for name in node.get("required", []):
        if name not in value:
            found.append(f"{at}: missing field {json.dumps(name)}")
    extra = node.get("additionalProperties", True)
    for name, item in value.items():
        where = f"{at}.{name}" if name.isidentifier() else f"{at}[{json.dumps(name)}]"
        if name in properties:
            check(item, properties[name], where, root, found)
        elif extra is False:
            known = ", ".join(map(json.dumps, properties)) or "none"
            found.append(f"{at}: unexpected field {json.dumps(name)} (the fields: {known})")
        else:
            check(item, extra, where, root, found)


def check_array(value: list, node: dict, at: str, root: dict, found: list[str]) -> None:
    limits(len(value), node, "minItems", "maxItems", f"{at}: {len(value)} items", found)
    for i, item in enumerate(value):
        check(item, node.get("items", True), f"{at}[{i}]", root, found)


def check_string(value: str, node: dict, at: str, found: list[str]) -> None:
    limits(len(value), node, "minLength", "maxLength", f"{at}: {len(value)} characters", found)
    pattern = node.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, value) is None:
        found.append(f"{at}: {shown(value)} does not match the pattern {json.dumps(pattern)}")


def check_number(value: float, node: dict, at: str, found: list[str]) -> None:
    bounds = (
        ("minimum", lambda bound: value >= bound, "at least"),
        ("maximum", lambda bound: value <= bound, "at most"),
        ("exclusiveMinimum", lambda bound: value > bound, "more than"),
        ("exclusiveMaximum", lambda bound: value < bound, "less than"),
    )
    for key, holds, words in bounds:
        if isinstance(node.get(key), (int, float)) and not holds(node[key]):
            found.append(f"{at}: expected a number {words} {node[key]}, got {shown(value)}")


def limits(size: int, node: dict, least: str, most: str, said: str, found: list[str]) -> None:
    if isinstance(node.get(least), int) and size < node[least]:
        found.append(f"{said}, fewer than the {node[least]} needed")
    if isinstance(node.get(most), int) and size > node[most]:
        found.append(f"{said}, more than the {node[most]} allowed")


def is_kind(value: typing.Any, kind: str) -> bool:
    """Whether value is of the JSON Schema type: true is not an integer, 3.0 is one."""
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "integer":
        return isinstance(value, int) or isinstance(value, float) and value.is_integer()
    python: dict[str, type | tuple[type, ...]]
    python = {"string": str, "number": (int, float), "object": dict, "array": list}
    return value is None if kind == "null" else isinstance(value, python.get(kind, ()))


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
    """The arms of an anyOf as the kinds they take: 'a string or null'."""
    kinds: list[str] = []
    for arm in arms:
        arm = resolve(root, arm["$ref"]) if isinstance(arm, dict) and "$ref" in arm else arm
        kind = arm.get("type", "any value") if isinstance(arm, dict) else "any value"
        for each in [kind] if isinstance(kind, str) else kind:
            if JSON_KINDS.get(each, each) not in kinds:
                kinds.append(JSON_KINDS.get(each, each))
    return " or ".join(kinds)


def shown(value: typing.Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"
