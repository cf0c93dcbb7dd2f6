"""What a command-line run leaves behind: one JSON line per event in runs/, readable by its owner only, and the
conversation read back from it for --continue (every call answered, a half-written last line skipped)."""

import json
import os
import re
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
    return max(Path(RUNS).glob("*.jsonl"), key=lambda p: p.stat().st_mtime, default=None)


def open_new(path: Path, append: bool) -> tuple[typing.TextIO, Path]:
    """Create the transcript for the owner only. A new file is created exclusively (two runs started in the
    same second get two files); --continue and --transcript PATH append."""
    try:
        if path.parent == Path(RUNS) and path.parent.is_symlink():  # planted to send transcripts elsewhere
            raise OSError(f"{RUNS} is a link, not a folder")
        if path.parent == Path(RUNS) and not path.parent.is_dir():
            path.parent.mkdir(mode=0o700)
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0)
        for n in range(1, 100):
            candidate = path if n == 1 or append else path.with_name(f"{path.stem}-{n}{path.suffix}")
            try:
                fd = os.open(candidate, flags | (os.O_APPEND if append else os.O_EXCL), 0o600)
                return os.fdopen(fd, "a", encoding="utf-8", errors="replace"), candidate
            except FileExistsError:
                continue
        raise FileExistsError(f"{path} and 98 more names like it exist")
    except OSError as error:
        raise TranscriptError(f"cannot create the transcript {path.as_posix()}: {error.strerror or error}; "
                              "choose another file with --transcript PATH, or run with --no-transcript") from None


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
        line = redact(json.dumps({"time": round(time.time(), 3), **event}, ensure_ascii=False))
        try:
            file.write(line + "\n")
            file.flush()
        except OSError as error:
            failed.append(error)
            raise TranscriptError(f"cannot write the transcript {path.as_posix()}: {error.strerror or error}; "
                                  "free some disk space, or run with --no-transcript") from None

    return write


def restore(path: Path | None) -> tuple[list[dict], list[str]]:
    """The conversation a transcript holds, as it was last sent (elisions and dropped turns applied), and notes
    on what was mended:
    a call left without a result gets an 'interrupted' one; a half-written last line is skipped."""
    if path is None:
        raise FileNotFoundError(f"no transcript in {RUNS}/ yet")
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
            raise ValueError(f"line {number} is not JSON ({error})") from None
        if event.get("type") == "message":
            message = event["message"]
            if message.get("role") != "tool":
                mended += answer_pending(messages, pending)
            if message.get("role") == "tool" and message.get("tool_call_id") in pending:
                pending.remove(message["tool_call_id"])
            pending += [call["id"] for call in message.get("tool_calls") or []]
        try:
            apply(messages, event)
        except ValueError as error:
            raise ValueError(f"line {number} {error}") from None
    mended += answer_pending(messages, pending)
    if mended:
        notes.append(f"{mended} tool call(s) that never got a result are answered '{INTERRUPTED}'")
    if not messages:
        raise ValueError("it holds no messages")
    return messages, notes


def apply(messages: list[dict], event: dict) -> None:
    """Change the conversation as the event says the run changed its history: a message added, a tool result
    elided, an old turn dropped. Other events leave it as it is."""
    kind = event.get("type")
    if kind == "message":
        messages.append(event["message"])
    elif kind in ("elided", "dropped"):
        if not 0 <= event["index"] < len(messages):
            raise ValueError(f"shortens message {event['index']}, which it does not hold")
        if kind == "elided":
            messages[event["index"]] = {**messages[event["index"]], "content": event["content"]}
        else:
            del messages[event["index"]:event["index"] + event["count"]]


def answer_pending(messages: list[dict], pending: list[str]) -> int:
    """Give each call still waiting its 'interrupted' result, so the history is valid for the API again."""
    messages += [{"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED} for call_id in pending]
    count = len(pending)
    pending.clear()
    return count
