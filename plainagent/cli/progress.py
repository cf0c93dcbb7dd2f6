"""What the command line shows on stderr while a run goes on (beyond the tutorial): a line for each
tool call and, under it, how it ended; waits, retries and elisions; the model's reasoning on
request; and the summary line. Everything the model or a server wrote is shown through
screen.shown(), each thing on its one line."""

import functools
import math
import sys
import time
import typing
from pathlib import Path

from plainagent.core.screen import shown

ANSWERED = ("answer", "length")  # end reasons whose text goes to stdout; the others stop (exit 1)
ARGUMENTS_SHOWN = 200  # characters of a call's arguments in its progress line
# Why a stream was asked for again from the start (a retry event's reason), in words
BROKE_OFF = {
    "cut": "the connection broke off",
    "error": "the server sent an error",
    "malformed": "the server sent a broken piece",
}
ERROR_SHOWN = 400  # characters of a failed call's error in its progress line
# Marks each line of the model's reasoning, so it is not taken for the answer
THINKING = "  thinking: "

Event = dict


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def summary(
    events: list[Event], path: Path | None, clock: "CallClock | None" = None, named: bool = True
) -> str:
    """One line: how the run ended (the step limit named), steps, tool calls (each one started: one
    stopped by Ctrl-C too), tokens in and out, seconds on the model and on tools (with the seconds
    of a wait or a call the run stopped in, as the `clock` timed them), and the transcript, unless
    it was `named` before."""
    clock = clock or CallClock()
    replies = [e for e in events if e["type"] == "reply"]
    calls = [e for e in events if e["type"] == "call"]
    tools = [e for e in events if e["type"] == "tool"]
    reason, steps = events[-1].get("reason"), plural(len(replies), "step")
    if reason == "step_limit":
        ended = f"stopped: hit the step limit ({steps})"
    else:
        ended = f"{'done' if reason in ANSWERED else 'stopped'}: {steps}"
    return (
        f"{ended}, {plural(len(calls), 'tool call')}, "
        f"{sum(e['usage']['prompt_tokens'] for e in replies)} tokens in, "
        f"{sum(e['usage']['completion_tokens'] for e in replies)} out, "
        f"model {sum(e['seconds'] for e in replies) + clock.model_cut_short:.1f} s, tools "
        f"{sum(e['seconds'] for e in tools) + clock.cut_short:.1f} s"
        + (f", transcript {shown(path.as_posix()) if path else 'none'}" if named else "")
    )


def ended(event: Event) -> str:
    """How a call ended, as its progress line says: its outcome; for an error, the whole first line
    of it, up to ERROR_SHOWN characters (the outcome keeps 100: an edit's would lose the closest
    line it names)."""
    first = event.get("result", "").split("\n", 1)[0]
    if not event["outcome"].startswith("error:") or not first.startswith("error:"):
        return event["outcome"]
    return first if len(first) <= ERROR_SHOWN else f"{first[: ERROR_SHOWN - 1]}…"


class CallClock:
    """The seconds of a call that Ctrl-C stopped, which has no tool event to say them: from its call
    event to the run's end, less the seconds a person took to approve it (`waited`, added by the
    approver); and of a wait on the model that the run stopped in (Ctrl-C, an error), which has no
    reply event: from the step's first request to the end."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.asked: float | None = None  # the model, this step
        self.waited = self.cut_short = self.model_cut_short = 0.0

    def see(self, event: Event) -> None:
        kind, now = event["type"], time.perf_counter()
        if kind == "call":
            self.started, self.waited = now, 0.0
        elif kind == "tool":
            self.started = None
        elif kind == "request" and self.asked is None:
            self.asked = now
        elif kind == "reply":
            self.asked = None
        elif kind == "end":
            if self.started is not None:
                self.cut_short = now - self.started - self.waited
            if self.asked is not None:
                self.model_cut_short = now - self.asked
            self.started = self.asked = None


def progress(
    event: Event, redact: typing.Callable[[str], str] = str, show_reasoning: bool = False
) -> None:
    """The event's progress line on stderr, if it has one (the reasoning's lines only with
    show_reasoning)."""
    kind, one = event["type"], functools.partial(shown, redact=redact)
    if kind == "call":
        arguments = (
            event["arguments"]
            if len(event["arguments"]) <= ARGUMENTS_SHOWN
            else f"{event['arguments'][:ARGUMENTS_SHOWN]}… ({len(event['arguments']):,} characters)"
        )
        line = f"[{event['step']}] {one(event['name'])} {one(arguments)}"
    elif kind == "tool":
        line = f"    → {one(ended(event))}"
    elif kind == "reply" and show_reasoning and event.get("reasoning"):
        line = "\n".join(f"{THINKING}{one(text)}" for text in event["reasoning"].split("\n"))
    elif kind == "start" and event.get("notes"):
        line = "\n".join(f"note: {one(note)}" for note in event["notes"])
    elif kind == "wait":
        line = (
            f"rate limited ({one(event['limit'])}); waiting {math.ceil(event['seconds'])} s, "
            f"retry {event['retry']} of {event['of']}"
        )
    elif kind == "retry" and event["reason"] == "tool_use_failed":
        line = (
            f"the model wrote a malformed tool call; asking again (attempt {event['attempt']} "
            f"of {event['of']})"
        )
    elif kind == "retry" and event["reason"] in BROKE_OFF:
        broke = BROKE_OFF[event["reason"]]
        line = (
            f"{broke} in the middle of the reply; asking again from the start (attempt "
            f"{event['attempt']} of {event['of']})"
        )
    elif kind == "retry":
        line = (
            f"no good answer from the model server; trying again (attempt {event['attempt']} of "
            f"{event['of']})"
        )
    elif kind == "elided":
        line = f"context over {event['budget']:,} tokens: {one(event['content'])}"
    elif kind == "dropped":
        line = (
            f"context over {event['budget']:,} tokens: dropped the oldest turn "
            f"({plural(event['count'], 'message')})"
        )
    elif kind == "over_budget":
        line = (
            f"context still over {event['budget']:,} tokens (about {event['estimated_tokens']:,}): "
            "nothing older is left to shorten; the system prompt, your messages and the newest "
            "turn stay whole"
        )
    elif kind == "end" and event["reason"] == "length":
        line = "the answer was cut off: the model hit its output limit (finish_reason: length)"
    else:
        return
    print(line, file=sys.stderr)
