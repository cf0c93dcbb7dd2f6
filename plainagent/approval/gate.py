"""The gate (phase 2): the one call a tool call passes between its checked arguments and its run. A
read-only file is refused before anyone is asked; a call of a tool marked @asks goes to the run's
approver; while the tool runs, what the person approved is what it finds (writes.as_asked)."""

import contextlib
import dataclasses
import time
import typing

from plainagent.core import stop
from plainagent.core.settings import Settings
from plainagent.workspace.writes import as_asked, before_asking

Approver = typing.Callable[[str, dict], "bool | str"]
# When a tool marked @asks(when=...) asks: given the call's arguments and the run's settings
Condition = typing.Callable[[dict, Settings], bool]
Function = typing.TypeVar("Function", bound=typing.Callable[..., typing.Any])


@typing.overload
def asks(function: Function) -> Function: ...
@typing.overload
def asks(*, when: Condition) -> typing.Callable[[Function], Function]: ...
def asks(function: typing.Any = None, *, when: Condition | None = None) -> typing.Any:
    """Mark a tool whose calls a person approves before they run: every call (`@asks`, as
    write_file and edit_file are), or each call for which when(arguments, settings) is true
    (`@asks(when=...)`, as run_shell is, for a command the allowlist does not let through). The
    mark is an attribute of the function, `asks`, which functools.wraps copies to a wrapper."""

    def mark(tool: Function) -> Function:
        tool.asks = when or True  # type: ignore[attr-defined]  # read by needs_approval()
        return tool

    return mark if function is None else mark(function)


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
    function: typing.Callable, arguments: dict, approve: Approver, config: Settings
) -> typing.Iterator[Passage]:
    """Let a call of the tool `function` through, or say why not: inside, run the tool unless
    passage.refusal is set. config: the run's settings, which the checks read (its workspace, its
    trusted programs). A run being stopped (arun()'s task cancelled) stops here, before the call."""
    stop.check()
    name = function.__name__
    seen = before_asking(name, arguments, config)  # a read-only file is refused before anyone asks
    passage = Passage()
    if needs_approval(function, arguments, config):
        asking = time.perf_counter()
        try:
            passage.decision = approve(name, arguments)
        finally:
            passage.waited = time.perf_counter() - asking
        if passage.decision is not True:
            passage.refusal = denial(passage.decision)
    stop.check()  # and if it was stopped while the person was asked
    with as_asked(seen):  # write_file refuses a file that changed while the person was asked
        yield passage


def needs_approval(function: typing.Callable, arguments: dict, config: Settings) -> bool:
    """Whether a person approves this call first: its tool is marked @asks, for every call or for
    this one."""
    mark = getattr(function, "asks", None)
    return bool(mark(arguments, config)) if callable(mark) else mark is True


def denial(decision: bool | str) -> str:
    """The tool result for a denied call: the approver's own words, or plainly 'denied by the
    user'."""
    return decision if isinstance(decision, str) else "denied by the user"
