"""--continue (beyond the tutorial): the conversation a transcript holds, read back as it was last
sent, and only what the Chat Completions API takes back: every call answered, a half-written last
line skipped, anything else refused with its line number."""

import codecs
import json
import typing
from pathlib import Path

# the result of a call that never got one (the run was killed in the middle of it)
INTERRUPTED = "interrupted"


def restore(path: Path | None) -> tuple[list[dict], list[str]]:
    """replay() without the workspace."""
    return replay(path)[:2]


def replay(path: Path | None) -> tuple[list[dict], list[str], str | None]:
    """The conversation a transcript holds, as it was last sent (elisions and dropped turns
    applied); notes on what was mended (a call left without a result is answered 'interrupted'; a
    half-written line, the last one or one marked mended when something was appended after it, is
    skipped); and the workspace its newest run worked in. Raises ValueError naming the line for
    anything the API would not take back, or that is not an event."""
    if path is None:
        raise FileNotFoundError("there is no transcript to read back")
    if path.exists() and not path.is_file():  # reading a FIFO would wait for a writer
        raise ValueError("it is not a regular file")
    messages: list[dict] = []
    notes: list[str] = []
    pending: list[str] = []  # pending: the ids of calls that have no result yet
    mended, workspace = 0, None
    # Lines end at b"\n" only: a U+2028 or a form feed inside a string is text. A BOM an editor
    # added is skipped.
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    lines = [
        (number, line.decode("utf-8", errors="replace"))
        for number, line in enumerate(data.split(b"\n"), 1)
        if line.strip()
    ]
    for at, (number, line) in enumerate(lines):
        try:
            event = json.loads(line)
        except RecursionError:
            raise ValueError(f"line {number} is nested too deeply") from None
        except json.JSONDecodeError as error:
            if at == len(lines) - 1 or ends_a_cut(lines[at + 1][1]):
                last = all(is_event(line, "mended") for _, line in lines[at + 1 :])
                where = "the last line" if last else f"line {number}"
                notes.append(f"{where} of {path.as_posix()} was half-written and is skipped")
                continue
            raise ValueError(f"line {number} is not JSON ({error})") from None
        try:
            mended += apply(event, messages, pending)
        except ValueError as error:
            raise ValueError(f"line {number} {error}") from None
        if event["type"] == "start" and isinstance(event.get("workspace"), str):
            workspace = event["workspace"]
    mended += answer_pending(messages, pending)
    if mended:
        notes.append(f"{mended} tool call(s) that never got a result are answered '{INTERRUPTED}'")
    if not messages:
        raise ValueError("it holds no messages")
    return messages, notes, workspace


def ends_a_cut(line: str) -> bool:
    """Whether the line, after a half-written one, shows that line cut short: the mark the
    transcript's opening writes after mending it, or (written before there was that mark) a run's
    start, a killed run continued."""
    return is_event(line, "mended") or is_event(line, "start")


def is_event(line: str, kind: str) -> bool:
    """Whether the line is an event of that type."""
    try:
        event = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(event, dict) and event.get("type") == kind


def apply(event: dict, messages: list[dict], pending: list[str]) -> int:
    """Change the conversation as the event changed the run's history (a message added, a tool
    result elided, an old turn dropped, the system prompt replaced); return how many pending calls a
    new message answered 'interrupted'. Raises ValueError, saying why, for an event that would make
    a conversation the API refuses."""
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise ValueError('is not an event of a transcript (a JSON object with a "type")')
    kind, mended = event["type"], 0
    if kind == "message":
        message = checked_message(event.get("message"), messages, pending)
        if message["role"] != "tool":
            mended += answer_pending(messages, pending)
        messages.append(message)
        if message["role"] == "tool":
            pending.remove(message["tool_call_id"])
        pending += [call["id"] for call in message.get("tool_calls") or []]
    elif kind == "system":
        replacement = event.get("message")
        if not messages or not isinstance(replacement, dict) or replacement.get("role") != "system":
            raise ValueError(
                "replaces the system prompt, but holds no system message or comes before the first"
            )
        messages[0] = checked_message(replacement, [], [])
    elif kind == "elided":
        index, content = event.get("index"), event.get("content")
        if not (whole(index) and 0 < index < len(messages) and messages[index]["role"] == "tool"):
            raise ValueError(
                f"shortens message {json.dumps(index)}, which is not a tool result it holds"
            )
        if not isinstance(content, str):
            raise ValueError(
                f"shortens a tool result to {json.dumps(content)[:40]}, which is not text"
            )
        messages[index] = {**messages[index], "content": content}
    elif kind == "dropped":
        index, count = event.get("index"), event.get("count")
        if not (
            whole(index)
            and whole(count)
            and 0 < index < len(messages)
            and count > 0
            and a_whole_turn(messages, index, count, pending)
        ):
            raise ValueError(
                f"drops {json.dumps(count)} message(s) at {json.dumps(index)}, which is not one "
                "old turn (a call and its results) it holds"
            )
        del messages[index : index + count]
    return mended


def whole(value: typing.Any) -> typing.TypeGuard[int]:
    """Whether the value is a JSON integer (true and false are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def a_whole_turn(messages: list[dict], index: int, count: int, pending: list[str]) -> bool:
    """Whether messages[index:index + count] is one turn, as the budget drops it: a call and all its
    results (none still pending: its 'interrupted' result would later answer a call no longer
    there)."""
    turn = messages[index : index + count]
    return (
        len(turn) == count
        and bool(turn[0].get("tool_calls"))
        and all(m["role"] == "tool" for m in turn[1:])
        and not any(call["id"] in pending for call in turn[0]["tool_calls"])
        and (index + count == len(messages) or messages[index + count]["role"] != "tool")
    )


ROLES = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "tool_calls", "name"},
    "tool": {"role", "content", "tool_call_id"},
}


def checked_message(message: typing.Any, messages: list[dict], pending: list[str]) -> dict:
    """The message, if the Chat Completions API takes it back at this point of the conversation; its
    content given as text parts becomes their text. Raises ValueError saying what is wrong with it
    otherwise.
    Allowed: a system prompt first (and only there), user and assistant messages, and a tool result
    that answers a call of the assistant message before it that has no result yet."""
    if not isinstance(message, dict):
        raise ValueError(f"holds a message that is not a JSON object: {json.dumps(message)[:40]}")
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise ValueError(
            f"holds a message of role {json.dumps(role)[:40]}; the roles are {', '.join(ROLES)}"
        )
    if unknown := sorted(set(message) - ROLES[role]):
        raise ValueError(
            f"holds {a_message(role)} with field(s) the API does not take: {', '.join(unknown)}"
        )
    if not (role == "system") == (not messages):
        raise ValueError(
            "holds a system message after the first message"
            if role == "system"
            else f"starts the conversation with {a_message(role)}; it starts with the system prompt"
        )
    if "name" in message and not (isinstance(message["name"], str) and message["name"]):
        raise ValueError(f"holds {a_message(role)} whose name is not text")
    raw = message.get("content")
    content = text_of(raw)
    if role == "assistant" and "tool_calls" in message:
        check_calls(message["tool_calls"])
    if content is None and (raw is not None or role != "assistant"):
        raise ValueError(
            f"holds {a_message(role)} whose content is {json.dumps(raw)[:40]}, not text (a string "
            "or a list of text parts)"
        )
    if content is None and "tool_calls" not in message:
        raise ValueError("holds an assistant message with neither content nor tool calls")
    if role == "tool" and message.get("tool_call_id") not in pending:
        raise ValueError(
            f"holds a tool result for call {json.dumps(message.get('tool_call_id'))[:60]}, which "
            "answers no call waiting for a result"
        )
    return message if content is None else {**message, "content": content}


def a_message(role: str) -> str:
    return f"{'an' if role == 'assistant' else 'a'} {role} message"


def text_of(content: typing.Any) -> str | None:
    """Content as text: a string as it is, a list of text parts joined; None for anything else."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        for part in content
    ):
        return "".join(part["text"] for part in content)
    return None


def check_calls(calls: typing.Any) -> None:
    """Raise ValueError unless calls is a non-empty list of function calls, each with an id, a name
    and arguments as a JSON string, as the API takes them back."""
    if not isinstance(calls, list) or not calls:
        raise ValueError(f"holds tool_calls {json.dumps(calls)[:40]}, which is not a list of calls")
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not (
            isinstance(call, dict)
            and set(call) <= {"id", "type", "function"}
            and call.get("type") == "function"
            and isinstance(call.get("id"), str)
            and call["id"]
            and isinstance(function, dict)
            and set(function) == {"name", "arguments"}
            and isinstance(function["name"], str)
            and function["name"]
            and isinstance(function["arguments"], str)
        ):
            raise ValueError(
                f"holds a tool call the API does not take: {json.dumps(call)[:80]} (it needs an "
                'id, type "function" and a function with a name and arguments as a JSON string)'
            )


def answer_pending(messages: list[dict], pending: list[str]) -> int:
    """Give each call still waiting its 'interrupted' result, so the history is valid for the API
    again."""
    messages += [
        {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED} for call_id in pending
    ]
    count = len(pending)
    pending.clear()
    return count
