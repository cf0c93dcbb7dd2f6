"""The tools the model may call: plain typed functions whose docstrings are written for the model.
TOOLS (the JSON schemas the model reads) and REGISTRY (name -> function) are both derived from one list
at the bottom, so adding a tool means writing one function and adding it to that list."""

import codecs
import difflib
import inspect
import os
import re
import stat
import subprocess
import tempfile
import time
import typing
from pathlib import Path

import sandbox
import undo
from safety import confine, git_environment, prepare, shell_programs, shell_verdict, writable
from settings import BACKENDS, DOTENV, current

NOTE_ROOM = 200  # characters a result may add to that limit for its own note on what was cut
MAX_OUTPUT_BYTES = 10_000_000  # stdout + stderr a command may write before it is killed
WATCH_INTERVAL = 0.02  # seconds between looks at a running command's output size
MAX_ENTRIES = 200  # list_dir entries in one page
SAMPLE_BYTES = 8192  # the start of a file that decides whether it is text
UNDECODABLE_SHARE = 0.3  # more undecodable bytes than this in the sample, and the file is binary
JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
KINDS = {stat.S_IFDIR: "folder", stat.S_IFIFO: "named pipe", stat.S_IFSOCK: "socket",
         stat.S_IFCHR: "character device", stat.S_IFBLK: "block device"}
ESCAPED = re.compile(r"\\x([0-9a-fA-F]{2})")  # how list_dir shows a byte that is not text: \xe9
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SHOWN_AS_REPLACEMENT = {code: "\ufffd" for code in range(0xDC80, 0xDD00)}  # surrogate-escaped bytes
# O_NONBLOCK: a FIFO put in place after the check cannot block the open; O_NOFOLLOW: confine() resolved every
# link, so a link there at open time was swapped in. (Windows has neither; O_BINARY keeps its bytes as they are.)
OPEN_FLAGS = sum(getattr(os, flag, 0) for flag in ("O_NONBLOCK", "O_NOFOLLOW", "O_NOCTTY", "O_CLOEXEC", "O_BINARY"))


def read_file(path: str, offset: int = 0) -> str:
    """Read a text file and return its text from a byte offset; a long file comes in parts, each ending with
    the offset to read on from.

    Args:
        path: the file to read, relative to the workspace
        offset: the byte to start at (0 is the start); to read on after a cut result, use the offset it names
    """
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, not {offset}")
    limit = current().max_chars
    wanted = 4 * limit + 4  # UTF-8 takes at most 4 bytes a character: this always holds `limit` of them
    with os.fdopen(open_regular(path, locate(path), os.O_RDONLY), "rb") as file:
        size = os.fstat(file.fileno()).st_size
        sample = file.read(SAMPLE_BYTES)
        file.seek(offset)
        data = file.read(wanted)
    if binary(sample, complete=len(sample) < SAMPLE_BYTES) or b"\0" in data:
        return f"{path} is a binary file ({size} bytes), not text; it was not read"
    if offset and not data:
        return f"{path} has {size} bytes; offset {offset} is at or past its end"
    text = decode(data, final=len(data) < wanted)[:limit]
    end = offset + len(text.encode("utf-8", "surrogateescape"))  # exactly the bytes shown, odd ones too
    if len(data) < wanted and end == offset + len(data):
        return readable(text)
    return (f"{readable(text)}\n[cut: showed bytes {offset}-{end} of {size:,}; "
            f"call read_file with offset={end} for more]")


def list_dir(path: str = ".", offset: int = 0) -> str:
    """List a folder's entries sorted by name, one a line: folders end with '/', files show their size in
    bytes; a long folder comes in pages.

    Args:
        path: the folder to list, relative to the workspace
        offset: how many entries to skip; to see the rest of a cut listing, use the offset it names
    """
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, not {offset}")
    folder = locate(path)
    limit = current().max_chars
    names = sorted(os.listdir(folder), key=os.fsencode)  # names only: only the entries shown are stat-ed
    if not names:
        return f"{path} is empty"
    if offset >= len(names):
        return f"{path} has {len(names)} entries; offset {offset} is past the end"
    lines: list[str] = []
    used = 0
    for name in names[offset:offset + MAX_ENTRIES]:
        line = entry(folder, name)
        if lines and used + len(line) + 1 > limit:
            break
        lines.append(line)
        used += len(line) + 1
    end = offset + len(lines)
    if end < len(names):
        lines.append(f"[cut: showed entries {offset + 1}-{end} of {len(names):,}; "
                     f"call list_dir with offset={end} for more]")
    return "\n".join(lines)


def write_file(path: str, content: str) -> str:
    """Create or overwrite a UTF-8 text file in the workspace (the user approves each write first).

    Args:
        path: the file to write, relative to the workspace; missing folders are created
        content: the whole new text of the file
    """
    target = writable(path)  # the name as written: the approval prompt showed this very file
    data = content.encode("utf-8")
    existed = target.exists()
    undo.remember(target, data)  # before anything changes: the file as it was, or that it was not there
    target.parent.mkdir(parents=True, exist_ok=True)
    with os.fdopen(open_regular(path, target, os.O_WRONLY | os.O_CREAT), "wb") as file:
        file.truncate(0)  # only now: the file opened is known to be a regular file in the workspace
        file.write(data)
    return f"{'overwrote' if existed else 'created'} {path} ({len(data)} bytes)"


def locate(path: str) -> Path:
    """confine(path), where a name list_dir showed with \\xNN escapes (bytes that are not UTF-8, control
    characters) also finds the file by those bytes, if no file has the name exactly as written."""
    target = confine(path)
    if not os.path.lexists(target) and ESCAPED.search(path):
        target = confine(ESCAPED.sub(lambda m: escaped_byte(int(m[1], 16)), path))
    return target


def escaped_byte(byte: int) -> str:
    # Bytes 0x80-0xff that are not UTF-8 live in a str as surrogates, the way os.fsdecode keeps them.
    return chr(0xDC00 + byte) if byte >= 0x80 else chr(byte)


def shown_name(name: str) -> str:
    """A file name as the model sees it: undecodable bytes and control characters as \\xNN escapes."""
    text = os.fsencode(name).decode("utf-8", "backslashreplace")
    return CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


def entry(folder: Path, name: str) -> str:
    """One list_dir line: `name/` for a folder, `name  N bytes` for a file, the kind of anything else."""
    shown = shown_name(name)
    if os.path.islink(folder / name):
        root, where = current().workspace, (folder / name).resolve()
        if where != root and root not in where.parents:
            return f"{shown}  (link to outside the workspace)"  # not even its size
    try:
        info = os.stat(folder / name)
    except OSError as error:
        return f"{shown}  (broken link)" if os.path.islink(folder / name) else f"{shown}  ({error.strerror})"
    if stat.S_ISDIR(info.st_mode):
        return f"{shown}/"
    if stat.S_ISREG(info.st_mode):
        return f"{shown}  {info.st_size} bytes"
    return f"{shown}  ({KINDS.get(stat.S_IFMT(info.st_mode), 'special file')})"


def open_regular(path: str, target: Path, flags: int) -> int:
    """Open a regular file in the workspace and return its descriptor. Anything else (a FIFO, a device, a
    socket) is refused before it can block or act, and so is a file that a link swapped in after confine()
    led outside the workspace."""
    try:
        refuse_unless_regular(path, os.stat(target).st_mode)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    fd = os.open(target, flags | OPEN_FLAGS, 0o666)
    try:
        refuse_unless_regular(path, os.fstat(fd).st_mode)
        refuse_if_escaped(fd, path, target)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_unless_regular(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"{path} is a folder, not a file; use list_dir to see what is in it")
    if not stat.S_ISREG(mode):
        kind = KINDS.get(stat.S_IFMT(mode), "special file")
        raise OSError(f"{path} is a {kind}, not a regular file; only regular files can be read or written")


def refuse_if_escaped(fd: int, path: str, target: Path) -> None:
    """Refuse an open file that is not inside the workspace: by the kernel's record of where it is (Linux),
    else by whether it is still the file at the confined path."""
    root, record = current().workspace, f"/proc/self/fd/{fd}"
    if os.path.islink(record):
        where = Path(os.readlink(record))
        inside = where == root or root in where.parents
    else:
        inside = os.path.samestat(os.fstat(fd), os.stat(target))
    if not inside:
        raise PermissionError(f"{path} led outside the workspace {root} when it was opened (a link changed); "
                              "use a path inside it")


def binary(sample: bytes, complete: bool) -> bool:
    """Binary: a NUL byte, or mostly bytes that are not UTF-8. Latin-1 text, say, is text with odd bytes."""
    if b"\0" in sample:
        return True
    undecodable = sum(1 for char in decode(sample, final=complete) if "\udc80" <= char <= "\udcff")
    return undecodable > UNDECODABLE_SHARE * len(sample)


def decode(data: bytes, final: bool) -> str:
    """UTF-8 with each undecodable byte kept as one surrogate, so the text re-encodes to exactly these bytes;
    unless final, a character cut at the end is left out."""
    return codecs.getincrementaldecoder("utf-8")("surrogateescape").decode(data, final)


def readable(text: str) -> str:
    """Decoded text as the model sees it: each undecodable byte a replacement character."""
    return text.translate(SHOWN_AS_REPLACEMENT)


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
    undo.remember(target, data)  # before anything changes: the file as it was
    with os.fdopen(open_regular(path, target, os.O_WRONLY), "wb") as file:
        file.truncate(0)  # only now: the file opened is known to be a regular file in the workspace
        file.write(data)
    return f"edited {path}: replaced 1 occurrence of old_text ({len(before)} -> {len(data)} bytes)"


def planned_edit(path: str, old_text: str, new_text: str) -> tuple[Path, bytes, str]:
    """The file, its bytes now and its text after the edit; raises, saying what to do, unless old_text
    occurs exactly once. The approval prompt shows the same edit the tool then makes."""
    if not old_text:
        raise ValueError("old_text is empty; give the exact text to replace (write_file creates new files)")
    target = writable(path)
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


def read_regular(target: Path, limit: int = -1) -> tuple[bytes, int]:
    """Up to limit bytes of a regular file in the workspace (all of it by default), and its size in bytes;
    a folder, FIFO or device raises instead (open_regular)."""
    with os.fdopen(open_regular(str(target), target, os.O_RDONLY), "rb") as file:
        return file.read(limit), os.fstat(file.fileno()).st_size


def run_shell(command: str) -> str:
    """Run a shell command in the workspace and return its exit code, stdout and stderr; long output shows its
    start and its end.

    Args:
        command: the command line, run non-interactively by /bin/sh (cmd.exe on Windows)
    """
    config = current()
    # A command that needed no approval runs read-only and offline; one a person approved may write here.
    read_only = shell_verdict(command) is None
    mode = sandbox_mode(config.sandbox, read_only)
    tmp = sandbox.make_tmp()
    env = shell_environment(tmp)
    if read_only and "git" in shell_programs(command):
        command, env = prepare(command), git_environment(config.workspace, env)
    # Files, not pipes: a background child that keeps a pipe open cannot make us wait for it.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            process = sandbox.popen(command, mode=mode, workspace=config.workspace, tmp=tmp, hidden=(DOTENV,),
                                    cwd=config.workspace, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
            try:
                status = f"exit code: {wait_watching_output(process, config.shell_timeout, (out, err))}"
            except subprocess.TimeoutExpired:
                status = f"timed out after {config.shell_timeout:g} s; the command and its children were killed"
            except TooMuchOutput:
                status = (f"stopped after {MAX_OUTPUT_BYTES // 1_000_000} MB of output; "
                          "the command and its children were killed")
            finally:  # also on Ctrl-C, which never reaches a command in its own process group
                sandbox.finish(process)
        finally:
            sandbox.remove_tmp(tmp)
        result = shell_result(status, out, err)
        if mode == sandbox.READ_ONLY and process.returncode and sandbox.blocked(process.returncode, result):
            result += "\n" + sandbox.BLOCKED_NOTE
        return result


def sandbox_mode(setting: str, read_only: bool) -> str | None:
    """The kernel sandbox a command runs in: None where it is off or the system has none."""
    if setting == "off" or sandbox.available():
        return None
    return sandbox.READ_ONLY if read_only else sandbox.WORKSPACE_WRITE


def shell_environment(tmp: Path) -> dict:
    """The environment for commands: no API keys, a private TMPDIR, and nothing may stop to wait for a person
    who is not there."""
    keys, secrets = {preset["key"] for preset in BACKENDS.values()}, set(current().secrets)
    return {**{k: v for k, v in os.environ.items() if k not in keys and v not in secrets}, "TMPDIR": str(tmp),
            "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true",
            "GCM_INTERACTIVE": "never"}


class TooMuchOutput(Exception):
    """A command wrote more than MAX_OUTPUT_BYTES."""


def wait_watching_output(process: subprocess.Popen, timeout: float, files: tuple[typing.BinaryIO, ...]) -> int:
    """process.wait(timeout), that also raises TooMuchOutput once the command's output files hold more than
    MAX_OUTPUT_BYTES: a command that prints without end would otherwise fill the disk until the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return process.wait(timeout=max(0.0, min(WATCH_INTERVAL, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if sum(os.fstat(f.fileno()).st_size for f in files) > MAX_OUTPUT_BYTES:
                raise TooMuchOutput() from None
            if time.monotonic() >= deadline:
                raise


def shell_result(status: str, out: typing.BinaryIO, err: typing.BinaryIO) -> str:
    """The status line, then the start and end of stdout and of stderr, within AGENT_MAX_CHARS in all.
    Only the slices shown are read back: the files may hold MAX_OUTPUT_BYTES and more."""
    sizes = [os.fstat(f.fileno()).st_size for f in (out, err)]
    budget = max(0, current().max_chars - len(status) - len("\nstdout:\n\nstderr:\n"))
    if sum(sizes) <= budget:  # a byte is at most one character
        shares = sizes
    else:  # the smaller stream keeps up to half, the larger gets the rest
        small = min(min(sizes), budget // 2)
        shares = [budget - small, small] if sizes[0] >= sizes[1] else [small, budget - small]
    parts = [status] + [f"{name}:\n{excerpt(file, size, share)}" for name, file, size, share
                        in zip(("stdout", "stderr"), (out, err), sizes, shares) if size]
    return "\n".join(parts)


def excerpt(file: typing.BinaryIO, size: int, chars: int) -> str:
    """At most `chars` characters of an output file: all of it, or its first third and last two thirds
    (errors are usually at the end) with a marker between saying how many bytes were left out."""
    file.seek(0)
    if size <= 4 * chars:
        text = decode(file.read(size), final=True)
        if len(text) <= chars:
            return readable(text)
    head_chars = chars // 3
    tail_chars = chars - head_chars
    file.seek(0)
    head = decode(file.read(4 * head_chars), final=False)[:head_chars]
    head_bytes = len(head.encode("utf-8", "surrogateescape"))
    start = max(head_bytes, size - 4 * tail_chars)
    file.seek(start)
    tail = decode(file.read(size - start), final=True)[-tail_chars:] if tail_chars else ""
    cut = size - head_bytes - len(tail.encode("utf-8", "surrogateescape"))
    return f"{readable(head)}\n[... cut {cut:,} bytes of {size:,} ...]\n{readable(tail)}"


def cap(text: str, tool: str, arguments: dict) -> str:
    """Fit a result for the model and the transcript: valid UTF-8 (a lone surrogate, say from a name that is
    not UTF-8, becomes an escape), and at most AGENT_MAX_CHARS, keeping its start and its end (where errors
    usually are) with a marker between. read_file, list_dir and run_shell cut their own results, reading only
    what they show, and may add a note of up to NOTE_ROOM characters saying what was cut."""
    limit = current().max_chars
    if len(text) > limit + NOTE_ROOM:
        head = limit // 3
        text = f"{text[:head]}\n[... cut {len(text) - limit:,} characters of {len(text):,} ...]\n{text[head - limit:]}"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


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
