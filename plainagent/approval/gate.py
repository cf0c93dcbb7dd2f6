"""The gate (phase 2): the one call a tool call passes between its checked arguments and its run. A
read-only file is refused before anyone is asked; a call that needs a person goes to the run's
approver; while the tool runs, what the person approved is what it finds (writes.as_asked)."""

import contextlib
import dataclasses
import time
import typing

from plainagent.core.settings import Settings
from plainagent.shell.allowlist import reason_to_ask
from plainagent.workspace.writes import as_asked, before_asking

Approver = typing.Callable[[str, dict], "bool | str"]

ALWAYS_ASK = {"write_file", "edit_file"}  # tools that change files: a person approves each call


@dataclasses.dataclass
class Passage:
    """How a call went through the gate: the approver's decision (True when nobody had to be asked),
    the seconds a person took to answer, and, for a call that may not run, its result for the
    model."""

    decision: bool | str = True
    waited: float = 0.0
    refusal: str | None = None


@contextlib.contextmanager
def before_tool_call(
    name: str, arguments: dict, approve: Approver, config: Settings
) -> typing.Iterator[Passage]:
    """Let the call through, or say why not: inside, run the tool unless passage.refusal is set.
    config: the run's settings, which the checks read (its workspace, its trusted programs)."""
    seen = before_asking(name, arguments, config)  # a read-only file is refused before anyone asks
    passage = Passage()
    if needs_approval(name, arguments, config):
        asking = time.perf_counter()
        try:
            passage.decision = approve(name, arguments)
        finally:
            passage.waited = time.perf_counter() - asking
        if passage.decision is not True:
            passage.refusal = denial(passage.decision)
    with as_asked(seen):  # write_file refuses a file that changed while the person was asked
        yield passage


def needs_approval(name: str, arguments: dict, config: Settings) -> bool:
    if name == "run_shell":
        return reason_to_ask(arguments["command"], config) is not None
    return name in ALWAYS_ASK


def denial(decision: bool | str) -> str:
    """The tool result for a denied call: the approver's own words, or plainly 'denied by the
    user'."""
    return decision if isinstance(decision, str) else "denied by the user"
