"""The gate (phase 2): the one call a tool call passes between its checked arguments and its run,
where the call is decided once. A tool marked @asks(deciding=...) has its decision made here, before
anyone is asked (run_shell: how its command runs; write_file and edit_file: what the person is
shown of the file, a read-only one refused); a call that needs a person goes to the run's approver;
and the decision, approved, is what the tool is given (its keyword-only `decided`)."""

import dataclasses
import inspect
import time
import typing

from plainagent.calls.schema import DECIDED
from plainagent.core import stop
from plainagent.core.settings import Settings

Approver = typing.Callable[[str, dict], "bool | str"]
# When a tool marked @asks(when=...) asks: given the call's arguments and the run's settings
Condition = typing.Callable[[dict, Settings], bool]
Function = typing.TypeVar("Function", bound=typing.Callable[..., typing.Any])


class Decided(typing.Protocol):
    """What the gate decides about one call, for its tool: whether a person approves it first, and
    the decision once they have."""

    @property
    def asks(self) -> bool: ...

    def approved(self) -> "Decided": ...


# How a tool marked @asks(deciding=...) has a call decided: given its arguments and the settings
Decide = typing.Callable[[dict, Settings], Decided]


@dataclasses.dataclass(frozen=True)
class Mark:
    """A tool's @asks: a person approves every call; or each for which when(arguments, settings) is
    true; or each whose decision, deciding(arguments, settings), asks."""

    when: Condition | None = None
    deciding: Decide | None = None


@typing.overload
def asks(function: Function) -> Function: ...
@typing.overload
def asks(
    *, when: Condition | None = None, deciding: Decide | None = None
) -> typing.Callable[[Function], Function]: ...
def asks(
    function: typing.Any = None, *, when: Condition | None = None, deciding: Decide | None = None
) -> typing.Any:
    """Mark a tool whose calls a person approves before they run: every call (`@asks`), or each
    call for which when(arguments, settings) is true (`@asks(when=...)`). With
    `@asks(deciding=...)`, as the built-in tools are, each call is decided once, at the gate, by
    deciding(arguments, settings): that decision says whether a person is asked, and, approved, is
    given to the tool as its keyword-only `decided` (which the model never sees). The mark is an
    attribute of the function, `asks`, which functools.wraps copies to a wrapper."""

    def mark(tool: Function) -> Function:
        tool.asks = Mark(when, deciding)  # type: ignore[attr-defined]  # read by needs_approval()
        return tool

    return mark if function is None else mark(function)


@dataclasses.dataclass
class Passage:
    """How a call went through the gate: what was decided for its tool (`decided`, None for a tool
    that is decided nothing), the approver's decision (True when nobody had to be asked), the
    seconds a person took to answer, and, for a call that may not run, its result for the model."""

    decided: Decided | None = None
    decision: bool | str = True
    waited: float = 0.0
    refusal: str | None = None


def before_tool_call(
    function: typing.Callable, arguments: dict, approve: Approver, settings: Settings
) -> Passage:
    """Let a call of the tool `function` through, or say why not: run the tool, given
    passage.decided, unless passage.refusal is set. settings: the run's settings, which the decision
    reads (its workspace, its trusted programs). A run being stopped (arun()'s task cancelled)
    stops here, before the call."""
    stop.check()
    passage = Passage(decided=decided(function, arguments, settings))
    if needs_approval(function, arguments, settings, passage.decided):
        asking = time.perf_counter()
        try:
            passage.decision = asked(approve, function.__name__, arguments, passage.decided)
        finally:
            passage.waited = time.perf_counter() - asking
        if passage.decision is not True:
            passage.refusal = denial(passage.decision)
        elif passage.decided is not None:
            passage.decided = passage.decided.approved()
    stop.check()  # and if it was stopped while the person was asked
    return passage


def asked(approve: Approver, name: str, arguments: dict, made: Decided | None) -> bool | str:
    """The approver's answer about a call. One that takes a `decided` parameter (the terminal's) is
    given the call's decision, as a tool is: what it shows and remembers of a command is read from
    it, not read again."""
    if made is not None and DECIDED in inspect.signature(approve).parameters:
        return typing.cast(typing.Callable[..., "bool | str"], approve)(
            name, arguments, **{DECIDED: made}
        )
    return approve(name, arguments)


def decided(function: typing.Callable, arguments: dict, settings: Settings) -> Decided | None:
    """The call's decision, made once, here, for a tool marked @asks(deciding=...); None for the
    others."""
    mark = getattr(function, "asks", None)
    if isinstance(mark, Mark) and mark.deciding is not None:
        return mark.deciding(arguments, settings)
    return None


def needs_approval(
    function: typing.Callable, arguments: dict, settings: Settings, made: Decided | None = None
) -> bool:
    """Whether a person approves this call first: its tool is marked @asks, for every call, for
    this one (its condition), or as the call's decision says (`made`, or made now)."""
    mark = getattr(function, "asks", None)
    if not isinstance(mark, Mark):
        return False
    if mark.deciding is not None:
        return (mark.deciding(arguments, settings) if made is None else made).asks
    return mark.when is None or bool(mark.when(arguments, settings))


def denial(decision: bool | str) -> str:
    """The tool result for a denied call: the approver's own words, or plainly 'denied by the
    user' (an empty result would tell the model nothing)."""
    return decision if isinstance(decision, str) and decision.strip() else "denied by the user"
