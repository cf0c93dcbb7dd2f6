"""Approval (phase 2), entered once per run (approval()): the approvers the gate can ask, above
all the prompt that asks a person at the terminal: True runs the call; False, or a message for the
model, denies it. And the settings told what the kernel sandbox does here (with_the_sandbox())."""

import contextlib
import dataclasses
import functools
import sys
import threading
import typing

from plainagent.approval.gate import Approver
from plainagent.approval.previews import describe
from plainagent.core.awaiting import synchronous
from plainagent.core.keyboard import (
    DISCARDED,
    discard_typed_ahead,
    read_line,
    terminal_input,
    to_stderr,
)
from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import Settings
from plainagent.sandbox import process as sandbox
from plainagent.shell.allowlist import command_mode
from plainagent.shell.decision import Decision, decide
from plainagent.shell.pythons import python_line
from plainagent.shell.shapes import Pins, Shape, command_shapes, file_tool_covers

# One question at the terminal at a time, from its first line to the answer read
ASKING = threading.Lock()
# An item for each run going on in this process now (threads: append and pop are atomic)
RUNNING: list[None] = []


def with_the_sandbox(settings: Settings) -> Settings:
    """The settings with what the kernel sandbox does for their commands on this system, asked
    once where they are resolved (run(), the command line): whether it confines them (`confined`,
    which the system prompt tells the model) and, among the notes, what of it is off or missing.
    Settings told already come back as they are."""
    if settings.confined is not None:
        return settings
    return dataclasses.replace(
        settings,
        confined=sandbox.confines(settings),
        notes=(*settings.notes, *sandbox.kernel_notes(settings)),
    )


@contextlib.contextmanager
def approval(settings: Settings, approve: Approver | None = None) -> typing.Iterator[Approver]:
    """A run's approval, entered once: its approver (approve=, else default_approver()) for the
    gate to ask (an async one awaited), the run counted while inside as one going on (running())."""
    with running():
        yield synchronous(approve) if approve else default_approver(settings)


@contextlib.contextmanager
def running() -> typing.Iterator[None]:
    """Count a run as going on while inside: with more than one, each question names its
    workspace."""
    RUNNING.append(None)
    try:
        yield
    finally:
        RUNNING.pop()


def terminal_approver(settings: Settings, lasting: str = "this run") -> Approver:
    """Ask at the terminal about calls of runs with these settings (the workspace, the
    keys to redact, the trusted programs), one question at a time across every run of this process
    (naming the workspace while others go on); 'always' trusts a file tool, or a command's programs
    with words of the same shape (command_shapes), for as long as this approver is used
    (`lasting`)."""
    # Each with the files it names as they were when shown: each must still be so
    shapes: dict[Shape, Pins] = {}
    # Kept apart: 'always' for a program named edit_file does not trust the tool
    tools: set[str] = set()
    # One line: no key, nothing hidden
    show = functools.partial(shown, redact=redactor(settings.secrets))

    def remembered() -> set[str]:
        """The programs of every command said 'always' to."""
        return {str(part[0]) for shape in shapes for part in shape}

    def trusted(name: str, arguments: dict, decision: Decision | None) -> bool:
        if name != "run_shell":  # on a path 'always' covers, where the tool takes one
            path = arguments.get("path")
            return name in tools and (not isinstance(path, str) or file_tool_covers(path, settings))
        if not shapes or decision is None:
            return False
        # every part as a person said 'always' to (so no other program: one beside them, or one they
        # start), and its paths in the workspace, as for the programs of AGENT_ALLOW (it runs as
        # approved, on the full PATH); the command as the gate read it
        programs = remembered()
        found = command_shapes(decision.command, settings)
        return (
            bool(found)
            and all(shape in shapes and shapes[shape] <= pins for shape, pins in found.items())
            and command_mode(decision.command, settings, programs).reason is None
        )

    def approve(name: str, arguments: dict, decided: object = None) -> bool | str:
        """The answer about a call; the gate gives what it decided (`decided`): for a command, how
        it runs, read once (a caller without it has it made here)."""
        decision: Decision | None = None
        if name == "run_shell":
            decision = decided if isinstance(decided, Decision) else None
            decision = decision or decide(arguments["command"], settings)
        if decision is not None and trusted(name, arguments, decision):
            return True
        with ASKING:  # another run's question and answer come first, whole; then this one
            if trusted(name, arguments, decision):  # an 'always' given meanwhile
                if name != "run_shell":  # a write it lets through still shows what it changes
                    said = describe(name, arguments, show, settings)
                    print(f"{said}\n  (allowed: always {name}, for {lasting})", file=sys.stderr)
                return True
            return ask(name, arguments, decision)

    def ask(name: str, arguments: dict, decision: Decision | None) -> bool | str:
        where = f"[in {show(str(settings.workspace))}] " if len(RUNNING) > 1 else ""
        why = decision.reason if decision is not None else None
        print(where + describe(name, arguments, show, settings, why), file=sys.stderr)
        if name == "run_shell":
            if line := python_line(arguments["command"], settings.workspace):
                print(f"  {show(line)}", file=sys.stderr)  # the project's, not the agent's
        named = decision.command.programs if decision is not None else set()
        # 'always' only where it lets this very call run unasked next time (not for a redirection,
        # say): the one other verdict on the command, with its programs trusted
        programs = remembered()
        always = (
            decision is None
            or command_mode(decision.command, settings, programs | named).reason is None
        )
        what = f"{show(', '.join(sorted(named)))} like this" if named else name
        choices = (
            f"[y]es / [N]o / [a]lways allow {what} for {lasting}" if always else "[y]es / [N]o"
        )
        while True:
            answer = typed(f"{choices}: ")
            if answer is None:  # Ctrl-D, or no terminal left: a no, and nothing more asked
                return False
            answer = answer.lower()
            if answer in ("y", "yes"):
                return True
            if always and answer in ("a", "always"):
                shapes.update(command_shapes(decision.command, settings) if decision else ())
                if name != "run_shell":
                    tools.add(name)
                return True
            if answer in ("n", "no", ""):  # Enter is a no
                reason = typed("why not? (optional, Enter to skip): ")
                return f"denied by the user: {reason}" if reason else False
            print(f"please answer y, n{' or a' if always else ''}", file=sys.stderr)

    return approve


def typed(question: str) -> str | None:
    """The line typed in answer to the question, after it was shown: what was typed before (the rest
    of a paste, keys pressed while the model worked) is thrown away, and said to be. None at the end
    of input (Ctrl-D on an empty line). Ctrl-C, and Ctrl-D, end the question's line."""
    try:
        if discard_typed_ahead():
            print(DISCARDED, file=sys.stderr)
        print(question, end="", file=sys.stderr, flush=True)
        fd = terminal_input()
        line = read_line(fd) if fd is not None else sys.stdin.readline()
        if not line.endswith("\n"):  # Ctrl-D, not Enter: what comes next gets a line of its own
            to_stderr()
        return line.strip() if line else None
    except KeyboardInterrupt:
        to_stderr()  # so "interrupted" gets a line of its own
        raise


def approve_all(name: str, arguments: dict) -> bool:
    return True


def no_terminal(name: str, arguments: dict) -> str:
    return (
        "denied: nobody is at a terminal to approve it; run read-only commands instead, "
        "or the user can rerun with --yes to approve everything"
    )


def default_approver(settings: Settings, lasting: str = "this run") -> Approver:
    """--yes or AGENT_APPROVE=all approves everything; else ask at a terminal; with no terminal,
    deny."""
    if settings.approve_all:
        return approve_all
    return terminal_approver(settings, lasting) if can_ask() else no_terminal


def can_ask() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()
