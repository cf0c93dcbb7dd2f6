"""What a command-line run leaves behind: one JSON line per event in runs/, readable by its owner only, and the
conversation read back from it for --continue (every call answered, a half-written last line skipped)."""

import contextlib
import errno
import json
import os
import re
import stat
import time
import typing
from pathlib import Path

from settings import RUNS, Settings, redactor

INTERRUPTED = "interrupted"  # the result of a call that never got one (the run was killed in the middle of it)


class TranscriptError(Exception):
    """The transcript cannot be created or written; the message says what to do instead."""


def new_path(task: str) -> Path:
    slug = "-".join(re.findall(r"[a-z0-9]+", task.lower())[:5])[:40] or "task"
    return Path(RUNS) / f"{time.strftime('%Y-%m-%dT%H-%M-%S')}-{slug}.jsonl"


def newest() -> Path | None:
    """The newest transcript in runs/ that holds anything (a session left without a task holds nothing)."""
    return max((p for p in Path(RUNS).glob("*.jsonl") if p.stat().st_size), key=lambda p: p.stat().st_mtime,
               default=None)


def open_new(path: Path, append: bool) -> tuple[typing.TextIO, Path]:
    """Create the transcript for the owner only. A new file is created exclusively (two runs started in the
    same second get two files); --continue and --transcript PATH append, after ending a half-written last line."""
    try:
        if path.parent == Path(RUNS) and path.parent.is_symlink():  # planted to send transcripts elsewhere
            raise OSError(errno.ENOTDIR, f"{RUNS} is a link, not a folder")
        if path.parent.exists() and not path.parent.is_dir():  # else the reason would be "File exists"
            raise OSError(errno.ENOTDIR, f"{path.parent.as_posix()} is not a folder")
        if path.parent == Path(RUNS) and not path.parent.is_dir():
            path.parent.mkdir(mode=0o700)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not (path.is_file() or path.is_char_device()):  # a FIFO would wait for a reader
            raise OSError(errno.EINVAL, "it is not a regular file")
        # Non-blocking, so a FIFO put there since the check is refused at once instead of waiting forever;
        # no following a link, so one planted in runs/ cannot send the transcript elsewhere.
        flags = (os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_NOFOLLOW", 0))
        for n in range(1, 100):
            candidate = path if n == 1 or append else path.with_name(f"{path.stem}-{n}{path.suffix}")
            try:
                fd = os.open(candidate, flags | (os.O_APPEND if append else os.O_EXCL), 0o600)
            except FileExistsError:
                continue
            return opened(fd, candidate), candidate
        raise FileExistsError(f"{path} and 98 more names like it exist")
    except OSError as error:
        raise TranscriptError(f"cannot create the transcript {path.as_posix()}: {error.strerror or error}; "
                              "choose another file with --transcript PATH, or run with --no-transcript") from None


def opened(fd: int, path: Path) -> typing.TextIO:
    """The descriptor as a text file for events, once it is known to be a regular file or a device (/dev/null).
    A run killed while writing leaves its last line unfinished: end it, so the next event starts a line."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):
        os.close(fd)
        raise OSError(errno.EINVAL, "it is not a regular file")
    if hasattr(os, "O_NONBLOCK"):
        os.set_blocking(fd, True)
    try:
        if stat.S_ISREG(mode) and ends_mid_line(path):
            os.write(fd, b"\n")
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "a", encoding="utf-8", errors="replace")


def ends_mid_line(path: Path) -> bool:
    try:
        with open(path, "rb") as file:
            if file.seek(0, os.SEEK_END) == 0:
                return False
            file.seek(-1, os.SEEK_END)
            return file.read(1) != b"\n"
    except OSError:  # a file we may write but not read: nothing to mend that we could see
        return False


def writer(file: typing.TextIO, path: Path, config: Settings) -> typing.Callable[[dict], None]:
    """A listener that appends each event as one JSON line, flushed at once, so a crash loses nothing written
    so far. Keys are redacted wherever they appear (a tool may have read them); a call's arguments are
    stored once, in its message. A failed write (a full disk) stops the run once, then writes nothing more."""
    redact, failed = redactor(config.secrets), []

    def write(event: dict) -> None:
        if failed:
            return
        if event["type"] in ("call", "tool"):
            event = {k: v for k, v in event.items() if k != "arguments"}
        line = json.dumps(redacted({"time": round(time.time(), 3), **event}, redact), ensure_ascii=False)
        try:
            file.write(line + "\n")
            file.flush()
        except OSError as error:
            failed.append(error)
            with contextlib.suppress(OSError):
                file.close()  # now, so the unwritten rest is not tried again (and reported) at exit
            raise TranscriptError(f"cannot write the transcript {path.as_posix()}: {error.strerror or error}; "
                                  "free some disk space, or run with --no-transcript") from None

    return write


def redacted(value: typing.Any, redact: typing.Callable[[str], str]) -> typing.Any:
    """The value with every string in it redacted. Done before encoding, so a key is found as it was written:
    a JSON escape next to it (the \\n of a line break) neither hides it nor is cut in half by the redaction."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redacted(k, redact): redacted(v, redact) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v, redact) for v in value]
    return value


def restore(path: Path | None) -> tuple[list[dict], list[str]]:
    """The conversation a transcript holds, as it was last sent (elisions and dropped turns applied), and notes
    on what was mended: a call left without a result gets an 'interrupted' one; a half-written line (the last
    one, or one a killed run left before a --continue appended) is skipped. Raises ValueError naming the line
    for anything else this program did not write."""
    if path is None:
        raise FileNotFoundError(f"no transcript in {RUNS}/ yet")
    if path.exists() and not path.is_file():  # reading a FIFO would wait for a writer
        raise ValueError("it is not a regular file")
    messages: list[dict] = []
    notes: list[str] = []
    pending: list[str] = []  # ids of calls that have no result yet
    mended = 0
    lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            event = json.loads(line)
        except json.JSONDecodeError as error:
            if number == len(lines):
                notes.append(f"the last line of {path.as_posix()} was half-written and is skipped")
                break
            if starts_a_run(lines[number]):
                notes.append(f"line {number} of {path.as_posix()} was half-written and is skipped")
                continue
            raise ValueError(f"line {number} is not JSON ({error})") from None
        try:
            mended += apply(event, messages, pending)
        except ValueError as error:
            raise ValueError(f"line {number} {error}") from None
        except (AttributeError, KeyError, TypeError, IndexError) as error:
            raise ValueError(f"line {number} is not an event of a transcript ({type(error).__name__}: {error})"
                             ) from None
    mended += answer_pending(messages, pending)
    if mended:
        notes.append(f"{mended} tool call(s) that never got a result are answered '{INTERRUPTED}'")
    if not messages:
        raise ValueError("it holds no messages")
    return messages, notes


def starts_a_run(line: str) -> bool:
    """Whether the line is a run's start event: after a half-written line, the sign of a killed run continued."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(event, dict) and event.get("type") == "start"


def apply(event: dict, messages: list[dict], pending: list[str]) -> int:
    """Change the conversation as the event says the run changed its history: a message added (first
    answering 'interrupted' any call in `pending` that never got a result), a tool result elided, an old turn
    dropped; other events leave it as it is. Return how many calls it answered 'interrupted'."""
    mended = 0
    if event.get("type") == "message":
        message = event["message"]
        if message.get("role") != "tool":
            mended += answer_pending(messages, pending)
        messages.append(message)
        if message.get("role") == "tool" and message.get("tool_call_id") in pending:
            pending.remove(message["tool_call_id"])
        pending += [call["id"] for call in message.get("tool_calls") or []]
    elif event.get("type") in ("elided", "dropped"):
        if not 0 <= event["index"] < len(messages):
            raise ValueError(f"shortens message {event['index']}, which it does not hold")
        if event["type"] == "elided":
            messages[event["index"]] = {**messages[event["index"]], "content": event["content"]}
        else:
            del messages[event["index"]:event["index"] + event["count"]]
    return mended


def answer_pending(messages: list[dict], pending: list[str]) -> int:
    """Give each call still waiting its 'interrupted' result, so the history is valid for the API again."""
    messages += [{"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED} for call_id in pending]
    count = len(pending)
    pending.clear()
    return count
