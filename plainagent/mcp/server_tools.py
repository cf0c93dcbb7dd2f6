"""An MCP server's tools as the run's own (beyond the tutorial): each named <server>__<tool>, its
inputSchema given to the model as the server wrote it (an object schema whose keywords are of the
kinds JSON Schema says, else the tool is left out with a note), its arguments checked against it
(calls/validate.py) and its calls approved at the gate like any tool marked @asks, unless the
server is trusted; what a call of a server with writes changes kept for undo; its result as text:
the content's text parts, structuredContent as JSON, isError as `error: …`."""

import json
import typing

from plainagent.approval.gate import asks
from plainagent.calls.schema import TOOL_NAME, Tool
from plainagent.calls.validate import unreadable
from plainagent.core.settings import Settings
from plainagent.mcp.client import Connection, ServerFailed
from plainagent.mcp.config import ServerConfig
from plainagent.mcp.launch import Started
from plainagent.sandbox import process as sandbox
from plainagent.sandbox.readable import dotenv_files
from plainagent.shell.command import watched

SEPARATOR = "__"  # between a server's name and its tool's


def mcp_tool(
    server: ServerConfig, described: typing.Any, started: Started, settings: Settings
) -> Tool | str:
    """A listed tool as the run's Tool; or, where it cannot be one, the note that says why."""
    connection = started.connection
    named = described.get("name") if isinstance(described, dict) else None
    if not isinstance(named, str):
        return f"MCP server {server.name} listed a tool without a name; it is left out"
    name = f"{server.name}{SEPARATOR}{named}"
    schema = described.get("inputSchema")
    if not TOOL_NAME.fullmatch(name):
        return f"MCP tool {name[:80]!r}: not a name the model's API takes; it is left out"
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return f"MCP tool {name}: its inputSchema is not an object schema; it is left out"
    if problem := unreadable(schema):
        return f"MCP tool {name}: its inputSchema {problem}; it is left out"
    about = described.get("description")
    timeout, trusted = settings.mcp_timeout, server.trust

    def function(arguments: dict, settings: Settings) -> str:
        unhidden(started, settings)
        if not server.writes:
            return call_tool(connection, named, arguments, timeout)
        # A server that may write the workspace: what a call changes is kept for undo, and a
        # launcher it puts on PATH in the workspace removed, as an approved command's are (not
        # what it may write between calls); an error result, a timeout or Ctrl-C too
        step = f"MCP tool {name}"
        return watched(
            step, settings, lambda: call_tool(connection, named, arguments, timeout), step
        )

    function.__name__ = function.__qualname__ = name
    function.__doc__ = about if isinstance(about, str) else None

    def unless_trusted(arguments: dict, settings: Settings) -> bool:
        return not (trusted or server.name in settings.allow)

    return Tool(
        function=asks(when=unless_trusted)(function),
        name=name,
        schema={
            "type": "function",
            "function": {
                "name": name,
                **({"description": about} if isinstance(about, str) and about else {}),
                "parameters": schema,
            },
        },
        hints={},
        parameters={},
        takes_settings=False,
        takes_decided=False,
        as_given=True,
    )


def unhidden(started: Started, settings: Settings) -> None:
    """ServerFailed where a .env was made in the workspace after the server started: the kernel's
    rules, set then, may not hide it from the server (a session's servers run for hours)."""
    if not sandbox.confines(settings):  # nothing is hidden from it anyway (a note said so)
        return
    if new := sorted(set(dotenv_files(settings.workspace)) - set(started.dotenv)):
        raise ServerFailed(
            f"MCP server {started.connection.name}: {new[0]} was made after the server started, "
            "and the sandbox it started in may not hide it (a .env holds secrets); its tools "
            "cannot be called until the user starts the agent again"
        )


def call_tool(connection: Connection, name: str, arguments: dict, timeout: float) -> str:
    """The tool's result as text for the model; ServerFailed (error: …) for an error result."""
    result = connection.request("tools/call", {"name": name, "arguments": arguments}, timeout)
    text = result_text(result)
    if result.get("isError") is True:
        raise ServerFailed(f"MCP server {connection.name}: {name}: {text or 'failed'}")
    return text


def result_text(result: dict) -> str:
    """A tools/call result as text: each content part (text as it is, anything else named), and
    structuredContent as JSON where no text part holds it already."""
    content = result.get("content")
    parts = (
        [part_text(p) for p in content if isinstance(p, dict)] if isinstance(content, list) else []
    )
    structured = result.get("structuredContent")
    if structured is not None and not any(same_json(part, structured) for part in parts):
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def part_text(part: dict) -> str:
    """One content part: a text part's text; an image, audio, a link or an embedded resource named
    by what it is (the model reads text only)."""
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {part.get('mimeType', 'unknown type')}, not shown]"
    if kind == "resource_link":
        return f"[resource link: {part.get('uri', '')}]"
    if kind == "resource" and isinstance(resource := part.get("resource"), dict):
        return str(resource.get("text", f"[resource: {resource.get('uri', '')}, not text]"))
    return f"[{kind} content, not shown]"


def same_json(text: str, value: typing.Any) -> bool:
    try:
        return json.loads(text) == value
    except (ValueError, RecursionError):
        return False
