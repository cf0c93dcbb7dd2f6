"""The tools the model may call: plain typed functions whose docstrings are written for the model.
TOOLS (the JSON schemas the model reads) and REGISTRY (name -> function) are both derived from one list
at the bottom, so adding a tool means writing one function and adding it to that list."""

import inspect
import os
import signal
import subprocess
import sys
import tempfile
import typing

from backend import number
from safety import confine, workspace, writable

MAX_CHARS = 4000  # longest tool result the model sees (AGENT_MAX_CHARS)
SHELL_TIMEOUT = 30.0  # seconds before run_shell kills the whole command (AGENT_SHELL_TIMEOUT)
JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def read_file(path: str, offset: int = 0) -> str:
    """Read a UTF-8 text file and return its text, starting at a character offset.

    Args:
        path: the file to read, relative to the workspace
        offset: the character to start at; use it to read on after a cut result
    """
    data = confine(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\0" in text:
        return f"{path} is a binary file ({len(data)} bytes), not text; it was not read"
    return text[offset:]


def list_dir(path: str = ".") -> str:
    """List a folder's entries, one a line: folders end with '/', files show their size in bytes.

    Args:
        path: the folder to list, relative to the workspace
    """
    entries = sorted(confine(path).iterdir(), key=lambda p: p.name)
    lines = [f"{p.name}/" if p.is_dir() else f"{p.name}  {p.stat().st_size} bytes" for p in entries]
    return "\n".join(lines) or f"{path} is empty"


def write_file(path: str, content: str) -> str:
    """Create or overwrite a UTF-8 text file in the workspace (the user approves each write first).

    Args:
        path: the file to write, relative to the workspace; missing folders are created
        content: the whole new text of the file
    """
    target = writable(path)
    existed = target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return f"{'overwrote' if existed else 'created'} {path} ({len(content.encode('utf-8'))} bytes)"


def run_shell(command: str) -> str:
    """Run a shell command in the workspace and return its exit code, stdout and stderr.

    Args:
        command: the command line, run non-interactively by /bin/sh (cmd.exe on Windows)
    """
    timeout = number("AGENT_SHELL_TIMEOUT", SHELL_TIMEOUT)
    # Files, not pipes: a background child that keeps a pipe open cannot make us wait for it.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, shell=True, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   cwd=workspace(), env=shell_environment(), **NEW_PROCESS_GROUP)
        try:
            status = f"exit code: {process.wait(timeout=timeout)}"
        except subprocess.TimeoutExpired:
            status = f"timed out after {timeout:g} s; the command and its children were killed"
        finally:  # also on Ctrl-C, which never reaches a command in its own process group
            kill_process_group(process)
            process.wait()
        stdout, stderr = (read_back(f) for f in (out, err))
    parts = [status] + [f"{name}:\n{text}" for name, text in (("stdout", stdout), ("stderr", stderr)) if text]
    return "\n".join(parts)


# POSIX: a new session makes the command a process-group leader; Windows: its own process group.
NEW_PROCESS_GROUP = ({"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if sys.platform == "win32"
                     else {"start_new_session": True})


def kill_process_group(process: subprocess.Popen) -> None:
    """Kill the command and everything it started, so nothing it left behind runs on unseen."""
    if sys.platform == "win32":
        subprocess.run(["taskkill", "/F", "/T", "/PID", str(process.pid)], capture_output=True)
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def shell_environment() -> dict:
    """The environment for commands: nothing may stop to wait for a person who is not there."""
    return {**os.environ, "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0",
            "GIT_EDITOR": "true", "GCM_INTERACTIVE": "never"}


def read_back(file: typing.BinaryIO) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def cap(text: str, tool: str, arguments: dict) -> str:
    """Cut a result to AGENT_MAX_CHARS (default MAX_CHARS), saying how much there was and, for a tool that
    takes an offset, how to read on."""
    limit = number("AGENT_MAX_CHARS", MAX_CHARS)
    if len(text) <= limit:
        return text
    more = ""
    if "offset" in inspect.signature(REGISTRY[tool]).parameters:
        more = f"; call {tool} with offset={arguments.get('offset', 0) + limit} for more"
    return f"{text[:limit]}\n[cut: showed {limit} of {len(text)} characters{more}]"


def schema(function: typing.Callable) -> dict:
    """The JSON schema the model reads, from a function's name, type hints, defaults and docstring."""
    summary, _, args_block = inspect.getdoc(function).partition("Args:")
    described = parameter_descriptions(args_block)
    hints = typing.get_type_hints(function)
    properties, required = {}, []
    for name, parameter in inspect.signature(function).parameters.items():
        properties[name] = {"type": JSON_TYPES[hints[name]]}
        if name in described:
            properties[name]["description"] = described[name]
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
    return {"type": "function", "function": {
        "name": function.__name__,
        "description": " ".join(summary.split()),
        "parameters": {"type": "object", "properties": properties, "required": required},
    }}


def parameter_descriptions(args_block: str) -> dict[str, str]:
    """Parse a Google-style `Args:` block: `name: text`, with indented lines continuing the text."""
    described, name = {}, None
    for line in args_block.splitlines():
        head, sep, text = line.strip().partition(":")
        if sep and head.isidentifier() and line.startswith(" " * 4) and not line.startswith(" " * 8):
            name, described[head] = head, text.strip()
        elif name and line.strip():
            described[name] += " " + line.strip()
    return described


TOOL_FUNCTIONS = [read_file, list_dir, write_file, run_shell]
REGISTRY = {function.__name__: function for function in TOOL_FUNCTIONS}
TOOLS = [schema(function) for function in TOOL_FUNCTIONS]
