"""The tools the model may call (phase 1): plain typed functions whose docstrings are written for
the model; each gets the run's settings as its keyword-only `settings`, which the model never sees.
TOOLS (the JSON schemas the model reads) and REGISTRY (name -> function) both come from the one list
at the bottom."""

import contextlib
import os
import stat
import typing
from pathlib import Path

from plainagent.calls.schema import schema
from plainagent.core.settings import Settings
from plainagent.shell.command import run_command
from plainagent.workspace import undo
from plainagent.workspace.edits import planned_edit
from plainagent.workspace.files import (
    KINDS,
    SAMPLE_BYTES,
    binary,
    decode,
    locate,
    open_regular,
    readable,
    shown_name,
    writable,
)
from plainagent.workspace.writes import (
    ASKED_ABOUT,
    Refused,
    existing,
    file_lock,
    fingerprint,
    folder_lock,
    replace_file,
)

NOTE_ROOM = 200  # characters a result may add to that limit for its own note on what was cut
MAX_ENTRIES = 200  # list_dir entries in one page


def read_file(path: str, offset: int = 0, *, settings: Settings) -> str:
    """Read a text file and return its text from a byte offset; a long file comes in parts, each
    ending with the offset to read on from.

    Args:
        path: the file to read, relative to the workspace
        offset: the byte to start at (0 is the start); to read on after a cut result, use the offset
    it names
    """
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, not {offset}")
    limit = settings.max_chars
    # UTF-8 takes at most 4 bytes a character: this always holds `limit` of them
    wanted = 4 * limit + 4
    target = locate(path, settings)
    with os.fdopen(open_regular(path, target, os.O_RDONLY, settings), "rb") as file:
        size = os.fstat(file.fileno()).st_size
        sample = file.read(SAMPLE_BYTES)
        file.seek(offset)
        data = file.read(wanted)
    if binary(sample, complete=len(sample) < SAMPLE_BYTES) or b"\0" in data:
        return f"{path} is a binary file ({size} bytes), not text; it was not read"
    if offset and not data:
        return f"{path} has {size} bytes; offset {offset} is at or past its end"
    text = decode(data, final=len(data) < wanted)[:limit]
    # Exactly the bytes shown, odd ones too
    end = offset + len(text.encode("utf-8", "surrogateescape"))
    if len(data) < wanted and end == offset + len(data):
        return readable(text)
    return (
        f"{readable(text)}\n[cut: showed bytes {offset}-{end} of {size:,}; "
        f"call read_file with offset={end} for more]"
    )


def list_dir(path: str = ".", offset: int = 0, *, settings: Settings) -> str:
    """List a folder's entries sorted by name, one a line: folders end with '/', files show their
    size in bytes; a long folder comes in pages.

    Args:
        path: the folder to list, relative to the workspace
        offset: how many entries to skip; to see the rest of a cut listing, use the offset it names
    """
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, not {offset}")
    folder = locate(path, settings)
    limit = settings.max_chars
    # Names only: only the entries shown are stat-ed
    names = sorted(os.listdir(folder), key=os.fsencode)
    if not names:
        return f"{path} is empty"
    if offset >= len(names):
        return f"{path} has {len(names)} entries; offset {offset} is past the end"
    lines: list[str] = []
    used = 0
    for name in names[offset : offset + MAX_ENTRIES]:
        line = entry(folder, name, settings)
        used += len(line) + 1
        if lines and used > limit:
            break
        lines.append(line)
    end = offset + len(lines)
    if end < len(names):
        lines.append(
            f"[cut: showed entries {offset + 1}-{end} of {len(names):,}; "
            f"call list_dir with offset={end} for more]"
        )
    return "\n".join(lines)


def write_file(path: str, content: str, *, settings: Settings) -> str:
    """Create or overwrite a UTF-8 text file in the workspace (the user approves each write first).

    Args:
        path: the file to write, relative to the workspace; missing folders are created
        content: the whole new text of the file
    """
    # The name as written: the approval prompt showed this very file
    target = writable(path, settings)
    data = content.encode("utf-8")
    with file_lock(path, target) as locked:
        info = existing(path, target)
        refuse_if_changed(path, target)
        # Before anything changes: the file as it was, or that it was not there
        with undo.remembered(target, [data], settings):
            target.parent.mkdir(parents=True, exist_ok=True)
            # A folder made just now was not the one locked: another process may have written the
            # file in it already.
            with (
                folder_lock(path, target.parent)
                if locked != target.parent
                else contextlib.nullcontext()
            ):
                refuse_if_changed(path, target)
                replace_file(path, target, [data], settings, info)
    return f"{'overwrote' if info else 'created'} {path} ({len(data)} bytes)"


def refuse_if_changed(path: str, target: Path) -> None:
    """Refuse to write a file that changed since the person was asked (if anyone was)."""
    asked = ASKED_ABOUT.get()
    if asked is not None and fingerprint(target) != asked:
        raise Refused(f"{path} changed since you were asked; read it again")


def edit_file(path: str, old_text: str, new_text: str, *, settings: Settings) -> str:
    """Replace one exact piece of text in an existing file and say what changed. Prefer this to
    write_file for changing a file: write_file sends the whole file again, which costs far more
    tokens. old_text must occur exactly once in the file; include neighbouring lines to make it
    unique. The user approves each edit first.

    Args:
        path: the file to change, relative to the workspace
        old_text: the exact text to replace, as read_file shows it, indentation included
        new_text: the text that takes its place (empty to delete old_text)
    """
    # Planned again here, on the file as it is now: it may have changed
    with file_lock(path, writable(path, settings)):
        edit = planned_edit(path, old_text, new_text, settings)
        asked = ASKED_ABOUT.get()
        if asked is not None and (str(edit.target),) != asked:
            raise Refused(
                f"{path} leads to another file than when you were asked (a link on the way to it "
                "changed); read it again"
            )
        before = memoryview(edit.data)
        chunks = (before[: edit.start], edit.new, before[edit.end :])
        # before anything changes: the file as it was
        with undo.remembered(edit.target, chunks, settings):
            size = replace_file(path, edit.target, chunks, settings, edit.info)
    return f"edited {path}: replaced 1 occurrence of old_text ({len(edit.data)} -> {size} bytes)"


def run_shell(command: str, *, settings: Settings) -> str:
    """Run a shell command in the workspace and return its exit code, stdout and stderr; long output
    shows its start and its end.

    Args:
        command: the command line, run non-interactively by /bin/sh (cmd.exe on Windows)
    """
    return run_command(command, settings)


def entry(folder: Path, name: str, config: Settings) -> str:
    """One list_dir line: `name/` for a folder, `name  N bytes` for a file, the kind of anything
    else."""
    shown, path = shown_name(name), folder / name
    if os.path.islink(path):
        root, where = config.workspace, path.resolve()
        if where != root and root not in where.parents:
            return f"{shown}  (link to outside the workspace)"  # not even its size
    try:
        info = os.stat(path)
    except OSError as error:
        return f"{shown}  (broken link)" if os.path.islink(path) else f"{shown}  ({error.strerror})"
    if stat.S_ISDIR(info.st_mode):
        return f"{shown}/"
    if stat.S_ISREG(info.st_mode):
        return f"{shown}  {info.st_size} bytes"
    return f"{shown}  ({KINDS.get(stat.S_IFMT(info.st_mode), 'special file')})"


def cap(text: str, config: Settings) -> str:
    """Fit a result for the model and the transcript: valid UTF-8 (a lone surrogate becomes an
    escape), and at most AGENT_MAX_CHARS, keeping its start and its end (where errors usually are)
    with a marker between. The paged tools cut their own results and may add a note of up to
    NOTE_ROOM characters."""
    limit = config.max_chars
    if len(text) > limit + NOTE_ROOM:
        head = limit // 3
        text = (
            f"{text[:head]}\n[... cut {len(text) - limit:,} characters of {len(text):,} "
            f"...]\n{text[head - limit :]}"
        )
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


TOOL_FUNCTIONS: list[typing.Callable[..., str]] = [
    read_file,
    list_dir,
    write_file,
    edit_file,
    run_shell,
]
REGISTRY = {function.__name__: function for function in TOOL_FUNCTIONS}
TOOLS = [schema(function) for function in TOOL_FUNCTIONS]
