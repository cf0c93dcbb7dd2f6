"""What run() gives back (beyond the tutorial): the answer's text as a str that also says whether
the run answered or stopped, and its totals (steps, tool calls, tokens, seconds), the same as its
`end` event carries; Stopped, the exception for a caller that needs an answer and got a stop."""

import time
import typing

ANSWERED = "answer"  # the one end reason that is an answer; every other is a stop


class Answer(str):
    """run()'s result: the answer's text, or for a stop the words saying why (so
    `print(run(task))` shows either). `reason` is why the run ended: "answer", or a stop:
    "step_limit", "length" (the reply was cut at the model's output limit; its text is kept) or
    "empty"; `stopped` is True for a stop. `totals` is the end event's account of the run."""

    reason: str
    totals: dict

    def __new__(
        cls, text: str = "", reason: str = ANSWERED, totals: dict | None = None
    ) -> "Answer":
        made = super().__new__(cls, text)
        made.reason, made.totals = reason, totals or {}
        return made

    @property
    def stopped(self) -> bool:
        return self.reason != ANSWERED


class Stopped(Exception):
    """A run that stopped where its caller needs an answer: `answer` is what run() returned (its
    `reason`, its text, its totals)."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(f"the run stopped without an answer ({answer.reason}): {answer}")
        self.answer, self.reason = answer, answer.reason

    def __reduce__(self) -> tuple:
        # Made again from its answer, not its message: a process pool sends it back pickled
        return Stopped, (self.answer,)


class Totals:
    """A run's account, kept from its events: its steps (the model's replies), its tool calls, the
    tokens the server reported (in, out, and of those the cached and the reasoning ones, None when
    it never said), and its seconds so far."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.steps = self.tool_calls = self.tokens_in = self.tokens_out = 0
        self.tokens_cached: int | None = None
        self.tokens_reasoning: int | None = None

    def count(self, event: dict) -> None:
        if event["type"] == "call":
            self.tool_calls += 1
        elif event["type"] == "reply":
            usage = event["usage"]
            self.steps += 1
            self.tokens_in += usage["prompt_tokens"]
            self.tokens_out += usage["completion_tokens"]
            self.tokens_cached = added(self.tokens_cached, usage["cached_tokens"])
            self.tokens_reasoning = added(self.tokens_reasoning, usage["reasoning_tokens"])

    def now(self) -> dict[str, typing.Any]:
        """The totals as the end event carries them."""
        return {
            "steps": self.steps,
            "tool_calls": self.tool_calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_cached": self.tokens_cached,
            "tokens_reasoning": self.tokens_reasoning,
            "seconds": round(time.perf_counter() - self.started, 3),
        }


def added(total: int | None, more: int | None) -> int | None:
    """A count the server may leave out: None until a reply reports it."""
    return total if more is None else (total or 0) + more
