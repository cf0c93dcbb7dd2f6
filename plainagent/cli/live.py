"""What the command line shows as it happens (beyond the tutorial): a streamed reply's answer on
stdout and its reasoning on stderr, piece by piece, through the same escaper and redaction as whole
text (screen.InPieces); and at a terminal, never silence: a `thinking… N s` line while the model
works, and a call's elapsed seconds under its progress line while it runs, each drawn again in
place and cleared when what it waited for comes. Nothing of the lines that count goes to a pipe or
a file."""

import contextlib
import dataclasses
import sys
import threading
import time
import typing

from plainagent.core.redaction import piecewise
from plainagent.core.screen import InPieces
from plainagent.core.settings import Settings

Event = dict
THINKING_AFTER = 1.0  # seconds of waiting on the model before the thinking line shows
RUNNING_AFTER = 3.0  # seconds a call runs before its elapsed time shows
THINKING = "  thinking: "  # as progress.THINKING: marks each line of the reasoning
CLEAR = "\r\x1b[K"  # back to the start of the line, and clear it
WITHDRAWN = "[withdrawn: the model server broke off this reply; it is asked for again]"
# A reply shown in part when the run fails (a stall past AGENT_TIMEOUT): the history never had it
NOT_KEPT = "[not kept: the run ended in the middle of this reply; --continue does not have it]"


def streaming(settings: Settings, output: dict | None) -> Settings:
    """The command line's settings with `stream` decided: as given (--stream, --no-stream,
    AGENT_STREAM), else when stdout is a terminal; never for --output-schema, whose stdout is one
    line of JSON."""
    wanted = settings.stream
    if wanted is None:
        wanted = sys.stdout.isatty()
    return dataclasses.replace(settings, stream=wanted and output is None)


class Counter:
    """One line on stderr, at a terminal, that counts seconds: `text N s`, drawn again in place
    every second once `after` seconds have passed, until stopped (its line then cleared)."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.stopped = threading.Event()
        self.drawn = False

    def start(self, text: str, after: float) -> None:
        self.stopped = threading.Event()
        started = time.monotonic()
        thread = threading.Thread(target=self.count, args=(text, started, after, self.stopped))
        thread.daemon = True
        thread.start()

    def count(self, text: str, started: float, after: float, stopped: threading.Event) -> None:
        wait = after
        while not stopped.wait(wait):
            with self.lock:
                if stopped.is_set():
                    return
                seconds = int(time.monotonic() - started)
                sys.stderr.write(f"{CLEAR}{text} {seconds} s")
                sys.stderr.flush()
                self.drawn = True
            wait = 1.0

    def stop(self) -> None:
        with self.lock:
            self.stopped.set()
            if self.drawn:
                sys.stderr.write(CLEAR)
                sys.stderr.flush()
                self.drawn = False


class Live:
    """The pieces of the reply being streamed, shown as they come, and the lines that count seconds
    (at a terminal on stderr, not with --quiet)."""

    def __init__(self, settings: Settings, show_reasoning: bool, quiet: bool) -> None:
        self.secrets, self.show_reasoning = settings.secrets, show_reasoning and not quiet
        self.lock = threading.Lock()
        self.counter = Counter(self.lock)
        self.counting = not quiet and sys.stderr.isatty()
        self.answer = self.reasoning = InPieces()
        self.open: str | None = None  # the kind of piece whose line is not ended yet
        self.shown = False  # pieces of this reply are on the screen
        self.spoke = False  # pieces of this reply's answer are on stdout
        self.answered = False  # the last reply, with no tool calls, is on stdout as it came
        self.reasoned = False  # the last reply's reasoning is on stderr already

    def see(self, event: Event) -> bool:
        """Show the event's part here (before its progress line, if it has one); True for a piece
        of a reply, which is shown here alone and never kept."""
        kind = event["type"]
        if kind == "delta":
            self.piece(event["kind"], event["text"])
            return True
        self.counter.stop()
        if kind == "request":
            self.answer = InPieces(piecewise(self.secrets))
            self.reasoning = InPieces(piecewise(self.secrets))
            self.shown = self.spoke = self.answered = self.reasoned = False
            if self.counting:
                self.counter.start("thinking…", THINKING_AFTER)
        elif kind == "reply":
            self.finish(event["tool_calls"] > 0)
            self.shown = False  # whole, and in the history
        elif kind == "retry" and self.shown:
            self.finish(True)
            self.write(sys.stderr, WITHDRAWN + "\n")
        elif kind == "call" and self.counting:
            self.counter.start("    running…", RUNNING_AFTER)
        elif kind == "end":  # before the lines that say how the run ended
            self.finish(True)
            # A reply cut short by an error is not kept; one Ctrl-C stops is, marked (retries.py)
            if self.shown and event.get("reason") == "error":
                self.write(sys.stderr, NOT_KEPT + "\n")
        return False

    @contextlib.contextmanager
    def waiting(self, text: str) -> typing.Iterator[None]:
        """A wait that sends no events (a session's MCP servers starting), counted."""
        if self.counting:
            self.counter.start(text, THINKING_AFTER)
        try:
            yield
        finally:
            self.counter.stop()

    @contextlib.contextmanager
    def asking(self) -> typing.Iterator[None]:
        """No line counts while a person is asked something; the call's starts again after."""
        self.counter.stop()
        try:
            yield
        finally:
            if self.counting:
                self.counter.start("    running…", RUNNING_AFTER)

    def piece(self, kind: str, text: str) -> None:
        if kind == "answer" or self.show_reasoning:  # what is shown takes the counting line's place
            self.counter.stop()
        if kind == "answer":
            if self.open == "reasoning":  # what the reasoning held back, on its line
                self.to("reasoning", sys.stderr, self.reasoning.end())
            self.to(kind, sys.stdout, self.answer.piece(text))
        elif self.show_reasoning:
            if self.open == "answer":
                self.to("answer", sys.stdout, self.answer.end())
            self.to(kind, sys.stderr, self.reasoning.piece(text))

    def to(self, kind: str, stream: typing.TextIO, text: str) -> None:
        if not text:
            return
        if self.open and self.open != kind:
            self.end_line()
        ended = False  # a reasoning line ended: the next one is marked when it starts
        if kind == "reasoning":
            start = THINKING if self.open != kind else ""
            ended, body = text.endswith("\n"), text.removesuffix("\n")
            text = start + body.replace("\n", f"\n{THINKING}") + "\n" * ended
            self.reasoned = True
        self.open, self.shown = None if ended else kind, True
        self.spoke = self.spoke or kind == "answer"
        self.write(stream, text)

    def finish(self, end_line: bool) -> None:
        """The reply is whole: the rest of its pieces shown, the reasoning's line ended, and the
        answer's too unless it may be the run's (ended with the run, as print() ends it)."""
        if self.show_reasoning:
            self.to("reasoning", sys.stderr, self.reasoning.end())
        self.to("answer", sys.stdout, self.answer.end())
        if not end_line:  # all of it shown, though reasoning after it may have ended its line
            self.answered = self.spoke
            if self.open == "answer":
                return
        if self.open:
            self.end_line()

    def end_line(self) -> None:
        self.write(sys.stdout if self.open == "answer" else sys.stderr, "\n")
        self.open = None

    def write(self, stream: typing.TextIO, text: str) -> None:
        with self.lock:
            stream.write(text)
            stream.flush()
