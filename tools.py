"""The tools the model may call (phase 1): plain typed functions whose docstrings are written for
the model; each gets the run's settings as its keyword-only `settings`, which the model never sees.
A tool marked @asks is approved by a person before each call (phase 2); what the gate decided about
the call, it gets as its keyword-only `decided` (None when called without the gate). TOOLS (the
JSON schemas the model reads) and REGISTRY (name -> function) both come from the one list at the
bottom, the tools a run has unless it is given its own (run(task, tools=[...]))."""

import typing

from plainagent.approval.gate import asks
from plainagent.calls.schema import schema
from plainagent.core.settings import Settings
from plainagent.shell.command import run_command
from plainagent.shell.decision import Decision, command_decision, decide
from plainagent.workspace.changes import (
    Seen,
    edit_text,
    seen_before_edit,
    seen_before_write,
    write_text,
)
from plainagent.workspace.reading import list_entries, read_text


def read_file(path: str, offset: int = 0, *, settings: Settings) -> str:
    """Read a text file and return its text from a byte offset; a long file comes in parts, each
    ending with the offset to read on from.

    Args:
        path: the file to read, relative to the workspace
        offset: the byte to start at (0 is the start); to read on after a cut result, use the
            offset it names
    """
    return read_text(path, offset, settings)


def list_dir(path: str = ".", offset: int = 0, *, settings: Settings) -> str:
    """List a folder's entries sorted by name, one a line: folders end with '/', files show their
    size in bytes; a long folder comes in pages.

    Args:
        path: the folder to list, relative to the workspace
        offset: how many entries to skip; to see the rest of a cut listing, use the offset it names
    """
    return list_entries(path, offset, settings)


@asks(deciding=seen_before_write)
def write_file(path: str, content: str, *, settings: Settings, decided: Seen | None = None) -> str:
    """Create or overwrite a UTF-8 text file in the workspace (the user approves each write first).

    Args:
        path: the file to write, relative to the workspace; missing folders are created
        content: the whole new text of the file
    """
    return write_text(path, content, settings, decided)


@asks(deciding=seen_before_edit)
def edit_file(
    path: str, old_text: str, new_text: str, *, settings: Settings, decided: Seen | None = None
) -> str:
    """Replace one exact piece of text in an existing file and say what changed. Prefer this to
    write_file for changing a file: write_file sends the whole file again, which costs far more
    tokens. old_text must occur exactly once in the file; include neighbouring lines to make it
    unique. The user approves each edit first.

    Args:
        path: the file to change, relative to the workspace
        old_text: the exact text to replace, as read_file shows it, indentation included
        new_text: the text that takes its place (empty to delete old_text)
    """
    return edit_text(path, old_text, new_text, settings, decided)


@asks(deciding=command_decision)
def run_shell(command: str, *, settings: Settings, decided: Decision | None = None) -> str:
    """Run a shell command in the workspace and return its exit code, stdout and stderr; long output
    shows its start and its end.

    Args:
        command: the command line, run non-interactively by /bin/sh (cmd.exe on Windows)
    """
    return run_command(decided or decide(command, settings), settings)


TOOL_FUNCTIONS: list[typing.Callable[..., str]] = [
    read_file,
    list_dir,
    write_file,
    edit_file,
    run_shell,
]
REGISTRY = {function.__name__: function for function in TOOL_FUNCTIONS}
TOOLS = [schema(function) for function in TOOL_FUNCTIONS]
