"""The tools the model may call: plain typed functions whose docstrings are written for the model.
TOOLS (the JSON schemas the model reads) and REGISTRY (name -> function) are both derived from one list
at the bottom, so adding a tool means writing one function and adding it to that list."""

import difflib
import inspect
import os
import signal
import stat
import subprocess
import sys
import tempfile
import typing
from pathlib import Path

from safety import confine
from settings import BACKENDS, current

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
    target = confine(path)
    existed = target.exists()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return f"{'overwrote' if existed else 'created'} {path} ({len(content.encode('utf-8'))} bytes)"


def edit_file(path: str, old_text: str, new_text: str) -> str:
    """Replace one exact piece of text in an existing file and say what changed. Prefer this to write_file
    for changing a file: write_file sends the whole file again, which costs far more tokens. old_text must
    occur exactly once in the file; include neighbouring lines to make it unique. The user approves each
    edit first.

    Args:
        path: the file to change, relative to the workspace
        old_text: the exact text to replace, as read_file shows it, indentation included
        new_text: the text that takes its place (empty to delete old_text)
    """
    target, before, after = planned_edit(path, old_text, new_text)
    data = after.encode("utf-8")
    # O_NONBLOCK: should a FIFO have been swapped in since the read, opening it cannot make us wait.
    with open(os.open(target, os.O_WRONLY | os.O_TRUNC | NONBLOCK | BINARY), "wb") as file:
        file.write(data)
    return f"edited {path}: replaced 1 occurrence of old_text ({len(before)} -> {len(data)} bytes)"


def planned_edit(path: str, old_text: str, new_text: str) -> tuple[Path, bytes, str]:
    """The file, its bytes now and its text after the edit; raises, saying what to do, unless old_text
    occurs exactly once. The approval prompt shows the same edit the tool then makes."""
    if not old_text:
        raise ValueError("old_text is empty; give the exact text to replace (write_file creates new files)")
    target = confine(path)
    before, _ = read_regular(target)
    try:
        text = before.decode("utf-8")  # strict and untranslated, so the rest stays byte for byte
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text; edit_file only changes UTF-8 text files") from None
    if text.count("\r\n") * 2 > text.count("\n"):
        # A model usually writes \n; in a file whose lines mostly end in \r\n, match and keep those.
        if "\r" not in old_text and old_text not in text:
            old_text = old_text.replace("\n", "\r\n")
        if "\r" not in new_text:
            new_text = new_text.replace("\n", "\r\n")
    count = text.count(old_text)
    if count == 0:
        raise ValueError(f"old_text was not found in {path}{closest_line(text, old_text)}; copy the text "
                         "exactly as read_file shows it, indentation and line breaks included")
    if count > 1:
        raise ValueError(f"old_text occurs {count} times in {path}; include more of the surrounding lines "
                         "in old_text so that it matches exactly one place")
    if old_text == new_text:
        raise ValueError("new_text is the same as old_text; there is nothing to change")
    return target, before, text.replace(old_text, new_text, 1)


def closest_line(text: str, old_text: str) -> str:
    """'; the closest line is N: ...', for a first line of old_text that was not found as it is, if cheap."""
    wanted = next((line for line in old_text.splitlines() if line.strip()), "")
    lines = text.splitlines()
    if not wanted or len(lines) > 20_000:  # difflib compares every line; not worth it on huge files
        return ""
    match = difflib.get_close_matches(wanted, lines, n=1, cutoff=0.6)
    return f"; the closest line is {lines.index(match[0]) + 1}: {match[0]!r}" if match else ""


NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX only
BINARY = getattr(os, "O_BINARY", 0)  # Windows only: no newline translation at the descriptor


def read_regular(target: Path, limit: int = -1) -> tuple[bytes, int]:
    """Up to limit bytes of a regular file (all of it by default), and the file's size in bytes.
    A folder, FIFO or device raises instead: reading one could block the agent, or do something."""
    problem = ValueError(f"{target} is not a regular file (a folder, FIFO or device); it was not opened")
    if not stat.S_ISREG(os.stat(target).st_mode):
        raise problem
    # O_NONBLOCK: if a FIFO was swapped in since the check, its open returns at once instead of waiting.
    with open(os.open(target, os.O_RDONLY | NONBLOCK | BINARY), "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise problem
        return file.read(limit), status.st_size


def run_shell(command: str) -> str:
    """Run a shell command in the workspace and return its exit code, stdout and stderr.

    Args:
        command: the command line, run non-interactively by /bin/sh (cmd.exe on Windows)
    """
    config = current()
    timeout = config.shell_timeout
    # Files, not pipes: a background child that keeps a pipe open cannot make us wait for it.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, shell=True, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   cwd=config.workspace, env=shell_environment(), **NEW_PROCESS_GROUP)
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
    """The environment for commands: no API keys, and nothing may stop to wait for a person who is not there."""
    keys = {preset["key"] for preset in BACKENDS.values()}
    return {**{k: v for k, v in os.environ.items() if k not in keys}, "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0",
            "GIT_EDITOR": "true", "GCM_INTERACTIVE": "never"}


def read_back(file: typing.BinaryIO) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def cap(text: str, tool: str, arguments: dict) -> str:
    """Cut a result to the run's max_chars (AGENT_MAX_CHARS), saying how much there was and, for a tool that
    takes an offset, how to read on."""
    limit = current().max_chars
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


TOOL_FUNCTIONS = [read_file, list_dir, write_file, edit_file, run_shell]
REGISTRY = {function.__name__: function for function in TOOL_FUNCTIONS}
TOOLS = [schema(function) for function in TOOL_FUNCTIONS]
