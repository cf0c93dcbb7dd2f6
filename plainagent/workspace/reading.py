"""Reading the workspace for the model (phase 1's read-only tools): a text file from a byte offset,
in parts that fit the model's limit, and a folder's entries, in pages; names and bytes that are not
UTF-8 are shown as escapes."""

import os
import stat
from pathlib import Path

from plainagent.core.ownfiles import real
from plainagent.core.settings import Settings
from plainagent.workspace.files import (
    KINDS,
    SAMPLE_BYTES,
    binary,
    decode,
    locate,
    open_regular,
    readable,
    shown_name,
)

MAX_ENTRIES = 200  # list_dir entries in one page


def read_text(path: str, offset: int, settings: Settings) -> str:
    """read_file's result: the file's text from the byte offset, within settings.max_chars, ending
    with the offset to read on from where it is cut; a binary file is said to be one, not read."""

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


def list_entries(path: str, offset: int, settings: Settings) -> str:
    """list_dir's result: the folder's entries from the offset, sorted by name, one a line, within
    settings.max_chars and MAX_ENTRIES, ending with the offset to list on from where it is cut."""

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


def entry(folder: Path, name: str, settings: Settings) -> str:
    """One list_dir line: `name/` for a folder, `name  N bytes` for a file, the kind of anything
    else."""
    shown, path = shown_name(name), folder / name
    if os.path.islink(path):
        root, where = settings.workspace, real(path)
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
