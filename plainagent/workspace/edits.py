"""edit_file's plan (phase 1): where old_text occurs exactly once in a file's bytes, what takes its
place, and the lines around it that the approval prompt shows. It never decodes or copies the whole
file: a one-line edit of a 200 MB log costs about one read of it."""

import codecs
import difflib
import os
import typing
from pathlib import Path

from plainagent.core.settings import Settings
from plainagent.workspace.files import open_regular, writable
from plainagent.workspace.writes import refuse_unwritable

# The most of a line before or after an edit its preview takes (a one-line file, say)
PREVIEW_BYTES = 4096
CONTEXT_LINES = 3  # unchanged lines shown around an edit
CHECK_CHUNK = 1 << 20  # bytes decoded at a time when checking that a file is UTF-8
# Bytes: in a larger file, a missing old_text is not compared with every line
CLOSEST_LINE_MAX = 1_000_000


class Edit(typing.NamedTuple):
    """An edit as planned: the file, how it is now (stat and bytes), and `new` in place of
    data[start:end]."""

    target: Path
    info: os.stat_result
    data: bytes
    start: int
    end: int
    new: bytes


def planned_edit(path: str, old_text: str, new_text: str, settings: Settings) -> Edit:
    """The edit edit_file would make now (and the approval prompt shows); raises, saying what to do,
    unless old_text occurs exactly once."""
    if not old_text:
        raise ValueError(
            "old_text is empty; give the exact text to replace (write_file creates new files)"
        )
    target = writable(path, settings)
    with os.fdopen(open_regular(path, target, os.O_RDONLY, settings), "rb") as file:
        info, data = os.fstat(file.fileno()), file.read()
    refuse_unwritable(path, target, info)
    if not utf8(data):  # strict, and the rest stays byte for byte
        raise ValueError(f"{path} is not UTF-8 text; edit_file only changes UTF-8 text files")
    old, new = old_text.encode("utf-8", "surrogatepass"), new_text.encode("utf-8")
    # With the search for a second match below, one pass over the file, not two
    start = data.find(old)
    if start < 0 and b"\n" in old and b"\r" not in old and mostly_crlf(data):
        # A model usually writes \n; these lines mostly end in \r\n
        old = old.replace(b"\n", b"\r\n")
        start = data.find(old)
    if start < 0:
        raise ValueError(
            f"old_text was not found in {path}{closest_line(data, old_text)}; copy the text "
            "exactly as read_file shows it, indentation and line breaks included"
        )
    if data.find(old, start + len(old)) >= 0:
        raise ValueError(
            f"old_text occurs {data.count(old)} times in {path}; include more of the surrounding "
            "lines in old_text so that it matches exactly one place"
        )
    if old_text == new_text:
        raise ValueError("new_text is the same as old_text; there is nothing to change")
    if b"\n" in new and b"\r" not in new and crlf_at(data, start, old):
        new = new.replace(b"\n", b"\r\n")
    return Edit(target, info, data, start, start + len(old), new)


def crlf_at(data: bytes, start: int, old: bytes) -> bool:
    """Whether new text in place of `old` at `start` breaks its lines with \r\n: as old as matched
    does if it has line breaks (so an old_text that matched a \n line in a \r\n file keeps that
    line's ending), else as the line it is in ends, and on a last line without an ending, as most of
    the file's lines do."""
    if b"\n" in old:
        return mostly_crlf(old)
    end = data.find(b"\n", start + len(old))
    return mostly_crlf(data) if end < 0 else data.endswith(b"\r\n", 0, end + 1)


def mostly_crlf(data: bytes) -> bool:
    return data.count(b"\r\n") * 2 > data.count(b"\n")


def utf8(data: bytes) -> bool:
    """Whether data is strict UTF-8, decoded a piece at a time: no whole copy of it is made as
    text."""
    if data.isascii():
        return True
    decoder, view = codecs.getincrementaldecoder("utf-8")(), memoryview(data)
    try:
        for at in range(0, len(view), CHECK_CHUNK):
            decoder.decode(view[at : at + CHECK_CHUNK], final=at + CHECK_CHUNK >= len(view))
    except UnicodeDecodeError:
        return False
    return True


def edit_excerpt(edit: Edit) -> tuple[bytes, bytes, int]:
    """The lines an edit touches with up to CONTEXT_LINES around them, as they are and as they will
    be, and the number of the first: what the approval prompt diffs. A line longer than
    PREVIEW_BYTES is cut around the change."""
    data, start, end = edit.data, edit.start, edit.end
    first = max(data.rfind(b"\n", 0, start) + 1, start - PREVIEW_BYTES)
    last = (
        end
        if data.endswith(b"\n", 0, end)
        else min(data.find(b"\n", end) + 1 or len(data), end + PREVIEW_BYTES)
    )
    while first < start and 0x80 <= data[first] < 0xC0:  # not in the middle of a character
        first += 1
    while last < len(data) and last > end and 0x80 <= data[last] < 0xC0:
        last -= 1
    for _ in range(CONTEXT_LINES):  # whole lines only, each at most PREVIEW_BYTES
        line = data.rfind(b"\n", 0, first - 1) + 1
        if first == 0 or data[first - 1] != ord("\n") or first - line > PREVIEW_BYTES:
            break
        first = line
    for _ in range(CONTEXT_LINES):
        line = data.find(b"\n", last) + 1 or len(data)
        if last == len(data) or data[last - 1] != ord("\n") or line - last > PREVIEW_BYTES:
            break
        last = line
    return (
        data[first:last],
        data[first:start] + edit.new + data[end:last],
        data.count(b"\n", 0, first) + 1,
    )


def closest_line(data: bytes, old_text: str) -> str:
    """'; the closest line is N: ...', for a first line of old_text that was not found as it is, if
    cheap."""
    wanted = next((line for line in old_text.splitlines() if line.strip()), "")
    # Difflib compares every line
    if not wanted or len(data) > CLOSEST_LINE_MAX or data.count(b"\n") > 20_000:
        return ""
    lines = data.decode("utf-8").splitlines()
    match = difflib.get_close_matches(wanted, lines, n=1, cutoff=0.6)
    return f"; the closest line is {lines.index(match[0]) + 1}: {match[0]!r}" if match else ""
