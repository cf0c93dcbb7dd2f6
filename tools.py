"""The tools the model may call: plain typed functions whose docstrings are written for the model.
TOOLS (the JSON schemas the model reads) and REGISTRY (name -> function) are both derived from one list
at the bottom, so adding a tool means writing one function and adding it to that list."""

import codecs
import contextlib
import contextvars
import difflib
import errno
import inspect
import os
import re
import secrets
import stat
import subprocess
import tempfile
import threading
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
WRITE_CHUNK = 1 << 20  # bytes per write(): Ctrl-C and SIGTERM stop a long write between two of them
# Linux can make a file with no name (O_TMPFILE) and give it one later by linking /proc/self/fd/N.
UNNAMED_FILES = hasattr(os, "O_TMPFILE")
# Everything relative to the folder opened once (os.replace is os.rename's other name; CPython lists rename).
IN_OPEN_FOLDER = {os.open, os.link, os.rename, os.unlink, os.stat} <= os.supports_dir_fd
NO_UNNAMED_FILES = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT}  # this system or file system
SMALL_FILE = 1_000_000  # bytes: write_file's preview diffs the old and new text only when both are smaller
PREVIEW_LINES = 20  # lines of a diff, or of a new text's start, that the approval prompt shows
PREVIEW_WIDTH = 300  # characters of one line in a preview; a longer line is cut
PREVIEW_BYTES = 4096  # the most of a line before or after an edit its preview takes (a one-line file, say)
CONTEXT_LINES = 3  # unchanged lines shown around an edit
CHECK_CHUNK = 1 << 20  # bytes decoded at a time when checking that a file is UTF-8
# write_file's target as it was when the person was asked (see as_asked); None: nobody was asked.
ASKED_ABOUT: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("asked_about", default=None)
LOCKS: dict[str, threading.Lock] = {}  # one per file written in this process, by resolved path
LOCKS_LOCK = threading.Lock()


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
    with file_lock(target):
        info = existing(path, target)
        asked = ASKED_ABOUT.get()
        if asked is not None and fingerprint(target) != asked:
            raise Refused(f"{path} changed since you were asked; read it again")
        undo.remember(target, [data])  # before anything changes: the file as it was, or that it was not there
        target.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, target, [data], info)
    return f"{'overwrote' if info else 'created'} {path} ({len(data)} bytes)"


class Refused(Exception):
    """A write refused with a message already worded for the model: the harness shows it as `error: <message>`."""


def existing(path: str, target: Path) -> os.stat_result | None:
    """The file a write would replace, or None if there is none yet. A folder, a FIFO or a device is refused, and
    so is a read-only file and one this user may not write: replacing it by rename would work where writing it
    would not."""
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    refuse_unless_regular(path, info.st_mode)
    refuse_unwritable(path, target, info)
    return info


def refuse_unwritable(path: str, target: Path, info: os.stat_result) -> None:
    """Refuse a read-only file, and one this user may not write (a rename could replace it all the same)."""
    refuse_read_only(path, info)
    if not os.access(target, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        raise PermissionError(f"{path} may not be written by this user; it was not changed")


def refuse_read_only(path: str, info: os.stat_result) -> None:
    """Refuse a file with no write bit for anyone, even where we could write it anyway (as root, by rename)."""
    if stat.S_ISREG(info.st_mode) and not info.st_mode & 0o222:
        raise Refused(f"{path} is read-only (mode {stat.S_IMODE(info.st_mode):04o}), so it was not changed; if it "
                      f"should change, ask the user to make it writable (chmod u+w {path}); else write another file")


def fingerprint(target: Path) -> tuple:
    """What changes when anyone writes the file: (device, inode, size, modification time); () if there is none."""
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def before_asking(name: str, arguments: dict) -> tuple | None:
    """What the harness checks before anyone is asked to approve a file tool: a read-only file is refused now.
    For write_file, returns the target's fingerprint, which it compares again after approval (as_asked)."""
    if name not in ("write_file", "edit_file"):
        return None
    target = writable(arguments["path"])
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        refuse_read_only(arguments["path"], os.stat(target))
    return fingerprint(target) if name == "write_file" else None


@contextlib.contextmanager
def as_asked(seen: tuple | None) -> typing.Iterator[None]:
    """While a tool call runs: write_file refuses a file whose fingerprint is no longer `seen`, how it was when
    the person was asked (what they approved may no longer be what would be overwritten)."""
    token = ASKED_ABOUT.set(seen)
    try:
        yield
    finally:
        ASKED_ABOUT.reset(token)


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
    with file_lock(writable(path)):  # planned again here, on the file as it is now: it may have changed
        edit = planned_edit(path, old_text, new_text)
        before = memoryview(edit.data)
        chunks = (before[:edit.start], edit.new, before[edit.end:])
        undo.remember(edit.target, chunks)  # before anything changes: the file as it was
        size = replace_file(path, edit.target, chunks, edit.info)
    return f"edited {path}: replaced 1 occurrence of old_text ({len(edit.data)} -> {size} bytes)"


class Edit(typing.NamedTuple):
    """An edit as planned: the file, how it is now (stat and bytes), and `new` in place of data[start:end]."""
    target: Path
    info: os.stat_result
    data: bytes
    start: int
    end: int
    new: bytes


def planned_edit(path: str, old_text: str, new_text: str) -> Edit:
    """The edit edit_file would make now; raises, saying what to do, unless old_text occurs exactly once. The
    approval prompt shows the same edit the tool then makes. Works on the file's bytes: a 200 MB file is read
    once, never decoded whole."""
    if not old_text:
        raise ValueError("old_text is empty; give the exact text to replace (write_file creates new files)")
    target = writable(path)
    with os.fdopen(open_regular(str(target), target, os.O_RDONLY), "rb") as file:
        info, data = os.fstat(file.fileno()), file.read()
    refuse_unwritable(path, target, info)
    if not utf8(data):  # strict, and the rest stays byte for byte
        raise ValueError(f"{path} is not UTF-8 text; edit_file only changes UTF-8 text files")
    old, new = old_text.encode("utf-8", "surrogatepass"), new_text.encode("utf-8")
    start = data.find(old)  # with the search for a second match below, one pass over the file, not two
    if start < 0 and b"\n" in old and b"\r" not in old and mostly_crlf(data):
        old = old.replace(b"\n", b"\r\n")  # a model usually writes \n; these lines mostly end in \r\n
        start = data.find(old)
    if start < 0:
        raise ValueError(f"old_text was not found in {path}{closest_line(data, old_text)}; copy the text "
                         "exactly as read_file shows it, indentation and line breaks included")
    if data.find(old, start + len(old)) >= 0:
        raise ValueError(f"old_text occurs {data.count(old)} times in {path}; include more of the surrounding "
                         "lines in old_text so that it matches exactly one place")
    if old_text == new_text:
        raise ValueError("new_text is the same as old_text; there is nothing to change")
    if b"\r" not in new and crlf_at(data, start, old):
        new = new.replace(b"\n", b"\r\n")
    return Edit(target, info, data, start, start + len(old), new)


def crlf_at(data: bytes, start: int, old: bytes) -> bool:
    """Whether new_text's line breaks become \\r\\n: they follow the text replaced. If old_text has line breaks,
    whether they are mostly \\r\\n as matched (sent so, or converted to match); if not, whether the line it is
    in ends in \\r\\n. So an old_text that matched a \\n line in a \\r\\n file leaves that line's ending as it was."""
    if b"\n" in old:
        return mostly_crlf(old)
    end = data.find(b"\n", start + len(old))
    return end > 0 and data[end - 1] == ord("\r")


def mostly_crlf(data: bytes) -> bool:
    return data.count(b"\r\n") * 2 > data.count(b"\n")


def utf8(data: bytes) -> bool:
    """Whether data is strict UTF-8, decoded a piece at a time so that no whole copy of it is ever made as text."""
    if data.isascii():
        return True
    decoder, view = codecs.getincrementaldecoder("utf-8")(), memoryview(data)
    try:
        for at in range(0, len(view), CHECK_CHUNK):
            decoder.decode(view[at:at + CHECK_CHUNK], final=at + CHECK_CHUNK >= len(view))
    except UnicodeDecodeError:
        return False
    return True


def edit_excerpt(edit: Edit) -> tuple[bytes, bytes, int]:
    """The lines an edit touches with up to CONTEXT_LINES around them, as they are and as they will be, and the
    number of the first: what the approval prompt diffs instead of the whole file. A line longer than
    PREVIEW_BYTES is cut around the change."""
    data, start, end = edit.data, edit.start, edit.end
    first = max(data.rfind(b"\n", 0, start) + 1, start - PREVIEW_BYTES)
    last = end if data.endswith(b"\n", 0, end) else min(data.find(b"\n", end) + 1 or len(data), end + PREVIEW_BYTES)
    while first < start and 0x80 <= data[first] < 0xC0:  # not in the middle of a character
        first += 1
    while last < len(data) and last > end and 0x80 <= data[last] < 0xC0:
        last -= 1
    for _ in range(CONTEXT_LINES):
        if first == 0 or data[first - 1] != ord("\n"):
            break
        line = data.rfind(b"\n", 0, first - 1) + 1
        if first - line > PREVIEW_BYTES:
            break
        first = line
    for _ in range(CONTEXT_LINES):
        if last == len(data) or data[last - 1] != ord("\n"):
            break
        line = data.find(b"\n", last) + 1 or len(data)
        if line - last > PREVIEW_BYTES:
            break
        last = line
    return data[first:last], data[first:start] + edit.new + data[end:last], data.count(b"\n", 0, first) + 1


def links_note(info: os.stat_result) -> str:
    """'; it has N other hard links, which keep the old text', for a file with more than one name."""
    others = info.st_nlink - 1
    if others < 1:
        return ""
    links = "1 other hard link, which keeps" if others == 1 else f"{others} other hard links, which keep"
    return f"; it has {links} the old text"


def closest_line(data: bytes, old_text: str) -> str:
    """'; the closest line is N: ...', for a first line of old_text that was not found as it is, if cheap."""
    wanted = next((line for line in old_text.splitlines() if line.strip()), "")
    if not wanted or len(data) > SMALL_FILE or data.count(b"\n") > 20_000:  # difflib compares every line
        return ""
    lines = data.decode("utf-8").splitlines()
    match = difflib.get_close_matches(wanted, lines, n=1, cutoff=0.6)
    return f"; the closest line is {lines.index(match[0]) + 1}: {match[0]!r}" if match else ""


def read_regular(target: Path, limit: int = -1) -> tuple[bytes, int]:
    """Up to limit bytes of a regular file in the workspace (all of it by default), and its size in bytes;
    a folder, FIFO or device raises instead (open_regular)."""
    with os.fdopen(open_regular(str(target), target, os.O_RDONLY), "rb") as file:
        return file.read(limit), os.fstat(file.fileno()).st_size


@contextlib.contextmanager
def file_lock(target: Path) -> typing.Iterator[None]:
    """Hold the file's lock: two runs in this process never interleave their read, check and replace of one file.
    Keyed by resolved path, not inode: a replace gives the file a new inode."""
    with LOCKS_LOCK:
        lock = LOCKS.setdefault(str(target), threading.Lock())
    with lock:
        yield


def replace_file(path: str, target: Path, chunks: typing.Iterable[bytes | memoryview],
                 like: os.stat_result | None = None) -> int:
    """Give target exactly these bytes, all at once; return how many. They go to a new file in the same folder,
    which is flushed to disk and then renamed over target, so after any failure, signal or kill the file holds
    its whole old or its whole new content. like: the file replaced, whose mode and owner the new one keeps.
    Where the system allows (Linux), the new file has no name until it is complete, so even kill -9 leaves
    nothing behind; elsewhere a named temporary file is removed on any failure (only kill -9 can leave it).
    Only this name gets the new content: other hard links to the old file keep the old text."""
    folder = open_folder(target)
    name = f".{secrets.token_hex(8)}.agent-write"  # random: if it exists, it is ours
    here = name if folder is not None else str(target.parent / name)
    fd = unnamed = None
    try:
        fd = unnamed = unnamed_file(folder)
        if fd is None:
            fd = os.open(here, os.O_WRONLY | os.O_CREAT | os.O_EXCL | OPEN_FLAGS, 0o666, dir_fd=folder)
        size = fill(fd, chunks, like)
        if unnamed is not None:  # named only now, complete, and renamed over target right away
            os.link(f"/proc/self/fd/{fd}", here, dst_dir_fd=folder, follow_symlinks=True)
        if folder is not None:
            os.replace(name, target.name, src_dir_fd=folder, dst_dir_fd=folder)
            with contextlib.suppress(OSError):  # the rename too, on disk
                os.fsync(folder)
        else:
            os.replace(here, target)
    except BaseException as error:  # Ctrl-C and SIGTERM too
        with contextlib.suppress(OSError):
            os.unlink(here, dir_fd=folder)
        if isinstance(error, OSError) and error.strerror:
            outcome = "it was left as it was" if like else "it was not created"
            raise OSError(f"cannot write {path}: {error.strerror}; {outcome}") from error
        raise
    finally:
        for descriptor in (fd, folder):
            if descriptor is not None:
                os.close(descriptor)
    return size


def open_folder(target: Path) -> int | None:
    """target's folder, opened, and checked to be inside the workspace: the new file is made and renamed in this
    very folder, even if a link is swapped in on the way. None where the system cannot work in an open folder
    (Windows): there it goes by path."""
    if not IN_OPEN_FOLDER:
        return None
    folder = os.open(target.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | OPEN_FLAGS)
    try:
        refuse_if_escaped(folder, str(target), target.parent)
    except BaseException:
        os.close(folder)
        raise
    return folder


def unnamed_file(folder: int | None) -> int | None:
    """A new file with no name in the open folder, to write and name once complete; None where the system or
    the file system cannot make one (or cannot name it later, without /proc)."""
    if not UNNAMED_FILES or folder is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=folder)
    except OSError as error:
        if error.errno in NO_UNNAMED_FILES:
            return None
        raise


def fill(fd: int, chunks: typing.Iterable[bytes | memoryview], like: os.stat_result | None) -> int:
    """Write the chunks to a new file, with the owner and mode of `like`, and flush it to disk; return its size."""
    if like is not None:
        if hasattr(os, "fchown"):
            with contextlib.suppress(PermissionError):  # only root may give a file away
                os.fchown(fd, like.st_uid, like.st_gid)
        if hasattr(os, "fchmod"):  # after fchown, which may clear the set-id bits
            os.fchmod(fd, stat.S_IMODE(like.st_mode))
    size = 0
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            written = os.write(fd, view[:WRITE_CHUNK])
            view, size = view[written:], size + written
    os.fsync(fd)
    return size


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
