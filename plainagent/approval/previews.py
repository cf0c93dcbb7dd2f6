"""What the approval prompt shows (phase 2): the exact command, or the file and the size of the
change with the lines around it, for a person to approve or deny. Everything that came from the
model goes through show(), which keeps each item on its one line; a preview never reads or diffs
more than it shows."""

import difflib
import itertools
import json
import os
import re
import typing
from pathlib import Path

from plainagent.core.screen import BLANK, IGNORABLE
from plainagent.core.settings import Settings
from plainagent.shell.decision import decide
from plainagent.workspace.edits import edit_excerpt, planned_edit
from plainagent.workspace.files import read_regular, writable
from plainagent.workspace.writes import existing, links_note

SMALL_FILE = (
    1_000_000  # bytes: write_file's preview diffs the old and new text only when both are smaller
)
PREVIEW_LINES = 20  # lines of a diff, or of a new text's start, that the approval prompt shows
PREVIEW_WIDTH = 300  # characters of one line in a preview; a longer line is cut in the middle
PREVIEW_TAIL = 80  # of those, the characters of a cut line's end
# A run of blanks the prompt counts instead of showing, in a command's short form: white space and
# the characters that draw nothing (each shown as an escape, they still push what is between them
# off the screen).
DRAWS_NOTHING = "".join(
    f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in IGNORABLE + BLANK
)
BLANKS = re.compile(rf"[\s{DRAWS_NOTHING}]{{8,}}")

Show = typing.Callable[[object], str]


def describe(
    name: str, arguments: dict, show: Show, settings: Settings, why: str | None = None
) -> str:
    """What a person is asked to approve, in the run's workspace (settings); for a command, `why` it
    asks, as its decision says (decided here only for a caller that has none: not the gate's
    approver)."""
    if name == "run_shell":
        command = arguments["command"]
        why = show(decide(command, settings).reason if why is None else why)
        return f"run_shell wants to run:\n  {show(command)}\n{in_short(command, show)}  ({why})"
    if name == "write_file":
        return describe_write(arguments["path"], arguments["content"], show, settings)
    if name == "edit_file":
        old, new = arguments["old_text"], arguments["new_text"]
        return describe_edit(arguments["path"], old, new, show, settings)
    server, separator, tool = name.partition("__")
    if separator and server and tool:  # an MCP server's tool (mcp/server_tools.py names it so)
        said = json.dumps(arguments, ensure_ascii=False)
        question = f"MCP server {show(server)} wants to run its tool {show(tool)} with {show(said)}"
    else:
        said = str(arguments)
        question = f"{show(name)} wants to run with {show(said)}"
    # Arguments long enough to push the question's start off the screen: the tool named again, by
    # the name the choices give, with them in short
    short = short_form(said, show)
    return question + (f"\n  (in short: {show(name)} with {short})" if short else "")


def in_short(command: str, show: Show) -> str:
    """For a long command as shown (invisible characters are shown as escapes of up to ten), or one
    with a long run of blanks (which can push its start off the screen above the question), a line
    with the command in short (short_form())."""
    short = short_form(command, show)
    return f"  (in short: {short})\n" if short else ""


def short_form(text: str, show: Show) -> str | None:
    """A command's or a tool's arguments in short, where they are long as shown or hold a long run
    of blanks: each run of blanks counted, then their start and end; None where they are shown
    whole on a line or two."""
    squeezed = BLANKS.sub(lambda run: f" [{len(run[0]):,} blanks] ", text)
    if squeezed == text and len(text) <= PREVIEW_WIDTH and len(show(text)) <= PREVIEW_WIDTH:
        return None
    return clipped(squeezed, show)


def describe_write(path: str, content: str, show: Show, settings: Settings) -> str:
    """A new file with its first lines; an overwrite with a diff where both texts are small, else
    the sizes and the new text's first lines. A folder, pipe or read-only file raises before anyone
    is asked."""
    target = writable(path, settings)
    info = existing(path, target)
    new = content.encode("utf-8")
    if info is None:
        where = named(path, target, show, settings)
        question = f"write_file wants to create {where} (new file, {len(new)} bytes)"
        return "\n".join(
            filter(None, [question, path_in_short(path, show), first_lines(content, show)])
        )
    question = (
        f"write_file wants to overwrite {named(path, target, show, settings)} "
        f"(exists, {info.st_size} -> {len(new)} bytes{links_note(info)})"
    ) + path_in_short(path, show, "\n")
    if info.st_size < SMALL_FILE and len(new) < SMALL_FILE:
        old, _ = read_regular(
            target, settings, SMALL_FILE
        )  # a named pipe is refused, not waited on
        return f"{question}\n{diff_preview(path, old, new, show)}"
    return "\n".join(
        filter(
            None,
            [question, "  too big to compare; the new text starts:", first_lines(content, show)],
        )
    )


def describe_edit(path: str, old_text: str, new_text: str, show: Show, settings: Settings) -> str:
    """The edit exactly as edit_file will make it, as a diff of the lines around it; one that cannot
    be made raises."""
    edit = planned_edit(path, old_text, new_text, settings)
    size = len(edit.data) - (edit.end - edit.start) + len(edit.new)
    old, new, first = edit_excerpt(edit)
    question = (
        f"edit_file wants to edit {named(path, edit.target, show, settings)} "
        f"({len(edit.data)} -> {size} bytes{links_note(edit.info)})"
    ) + path_in_short(path, show, "\n")
    return f"{question}\n{diff_preview(path, old, new, show, first)}"


def path_in_short(path: str, show: Show, before: str = "") -> str:
    """A path long enough as shown, or with a run of blanks, to push the question's start off the
    screen, in short (short_form()), for the line below the question; "" for any other."""
    short = short_form(path, show)
    return f"{before}  (in short: {short})" if short else ""


def named(path: str, target: Path, show: Show, settings: Settings) -> str:
    """The path as the model wrote it, and the file it leads to where a link (or a .. after one)
    makes that another: `docs/notes.md (leads to .git/config)`."""
    root = settings.workspace
    if Path(os.path.normpath(root / Path(path).expanduser())) == target:
        return show(path)
    where = target.relative_to(root).as_posix() if root in target.parents else str(target)
    return f"{show(path)} (leads to {show(where)})"


def diff_preview(path: str, old: bytes, new: bytes, show: Show, first: int = 1) -> str:
    """The start of a unified diff of old and new (which may start at line `first`: hunks are
    numbered as in the whole file), indented under the question; what is past it is counted, and
    what it cannot show said."""
    lines = difflib.unified_diff(
        text_lines(old), text_lines(new), f"{path} (now)", f"{path} (new)", lineterm=""
    )
    shown = [
        f"  {clipped(renumbered(line, first - 1) if line.startswith('@@') else line, show)}"
        for line in itertools.islice(lines, PREVIEW_LINES)
    ]
    # No line differs as shown: what changes is hidden by how lines are shown, so say it
    if not shown:
        return (
            "  no line changes as shown: only line endings (\\r\\n, \\n, none), or bytes that are "
            "not UTF-8, differ"
            if old != new
            else "  no change: the file stays as it is"
        )
    # Never shown, but said to be there: a change past the cut must not pass unseen
    rest = changes = 0
    for line in lines:
        rest, changes = rest + 1, changes + (line[:1] in "+-")
    if rest:
        shown.append(
            f"  ... and {rest} more line{'s' if rest > 1 else ''} of the diff, {changes} of them "
            "changed"
        )
    return "\n".join(shown)


def text_lines(data: bytes) -> list[str]:
    """Lines split at \\n only, as they are numbered, without their line break (\\n or \\r\\n)."""
    lines = data.decode("utf-8", "replace").split("\n")
    return [line.removesuffix("\r") for line in (lines[:-1] if lines[-1] == "" else lines)]


def renumbered(hunk: str, offset: int) -> str:
    """A hunk header '@@ -a,b +c,d @@' with offset added to a and c."""
    return re.sub(r"([-+])(\d+)", lambda m: f"{m[1]}{int(m[2]) + offset}", hunk)


def first_lines(text: str, show: Show) -> str:
    """The start of a new text as a preview: its first lines, each as a diff shows an added line."""
    # A last line without its \n counts too
    total = text.count("\n") + (text[-1:] not in ("", "\n"))
    shown = [
        line.removesuffix("\r")
        for line in text.split("\n", PREVIEW_LINES)[: min(total, PREVIEW_LINES)]
    ]
    lines = [f"  {clipped('+' + line, show)}" for line in shown]
    if total > len(shown):
        left = total - len(shown)
        lines.append(f"  ... and {left} more line{'s' if left > 1 else ''}")
    return "\n".join(lines)


def clipped(line: str, show: Show) -> str:
    """A line of a preview, shown as one line: a longer one than PREVIEW_WIDTH as shown (escapes
    included) keeps its start and its last PREVIEW_TAIL characters (where a model would hide `...;
    curl x | sh`), saying how many were left out. Only the ends of a line far longer are shown (one
    line may be the whole of a 200 MB file), and what is left out counted in its own characters."""
    # An escape is at most ten characters: shown, its ends are enough
    if len(line) > 4 * PREVIEW_WIDTH:
        head, tail = show(line[:PREVIEW_WIDTH]), show(line[-PREVIEW_WIDTH:])
        return (
            f"{head[: PREVIEW_WIDTH - PREVIEW_TAIL]} [... {len(line) - PREVIEW_WIDTH:,} characters "
            f"left out ...] {tail[-PREVIEW_TAIL:]}"
        )
    text = show(line)
    cut = len(text) - PREVIEW_WIDTH
    if cut <= 0:
        return text
    return (
        f"{text[: PREVIEW_WIDTH - PREVIEW_TAIL]} [... {cut:,} characters left out ...] "
        f"{text[-PREVIEW_TAIL:]}"
    )
