"""The terminal session (a later addition): `python harness.py` with no task at a terminal prompts for tasks,
each continuing the same conversation; a task pasted as several lines is one task; a few /commands are
answered here, never sent to the model."""

import re
import select
import sys
import typing

from terminal import read_line, tell, terminal_input

PROMPT = "> "  # a session's prompt for the next task
PASTE_WINDOW = 0.05  # seconds: lines that come this soon after a task's first were pasted (nobody types so fast)
STOPPED_BY_SIGNAL = (143, 129)  # SIGTERM, SIGHUP: the terminal is gone, or someone wants us to stop
LEAVE = ("/exit", "/quit")
COMMAND = re.compile(r"/[A-Za-z][\w-]*")  # a line that is one /word; "/usr/bin/x fails" is a task
HELP = """commands (any other line is a task for the agent):
  /help   this list
  /undo   take back the file changes of the last task
  /new    start a new conversation, in a new transcript; the model forgets this one
  /exit   leave (or /quit, or Ctrl-D)"""


def session(attempt: typing.Callable[[str], int], commands: dict[str, typing.Callable[[], int]], banner: str) -> int:
    """Tasks typed at the terminal, each continuing the same conversation; a pasted task of several lines is
    one task. The banner first; the commands (/help, /exit, /quit and those given: /undo, /new) are answered
    here and never sent, and so are an unknown /word and a bare `exit` or `quit`. Ctrl-C stops a task and
    prompts again; Ctrl-D, /exit or /quit ends the session (0), Ctrl-C at the prompt too (130); SIGHUP or
    SIGTERM ends it wherever it is, at the prompt or in a task (129, 143)."""
    try:
        import readline  # noqa: F401  line editing and history for input(), where the system has it
    except ImportError:
        pass
    tell(banner)
    while True:
        try:
            task = typed_task().strip()
        except EOFError:
            tell()
            return 0
        except KeyboardInterrupt as interruption:
            tell()
            return getattr(interruption, "code", 130)
        if task in LEAVE:
            return 0
        if not task:
            continue
        try:
            code = commands[task]() if task in commands else answered_here(task, {*commands, *LEAVE, "/help"})
            code = attempt(task) if code is None else code
        except KeyboardInterrupt as interruption:  # a second Ctrl-C while the first was being reported
            code = getattr(interruption, "code", 130)
        if code in STOPPED_BY_SIGNAL:  # SIGTERM or SIGHUP: the terminal is gone or someone wants us to stop
            return code


def answered_here(task: str, known: set[str]) -> int | None:
    """What a line that is no task gets, said here (0; never a model request): /help's list, or what to type
    instead of an unknown /word, a known one with words after it (`/undo 2`: the model would take it as a task
    and may try to undo on its own), or a bare exit or quit. None for a task."""
    first = task.split(maxsplit=1)[0]
    if task == "/help":
        tell(HELP)
    elif first in known:
        tell(f"not sent to the model: {first} takes nothing after it; type {first} alone")
    elif COMMAND.fullmatch(task):
        tell(f"unknown command {task}; /help lists them")
    elif task.lower() in ("exit", "quit"):
        tell("not sent to the model: type /exit or press Ctrl-D to leave")
    else:
        return None
    return 0


def typed_task() -> str:
    """The next task typed at the prompt: its first line, and the lines pasted with it. readline redraws the
    prompt it is given, on stdout; so it gets it only where stdout is the terminal, and elsewhere the prompt goes
    to stderr, keeping stdout for answers."""
    if sys.stdout.isatty():
        first = input(PROMPT)
    else:
        print(PROMPT, end="", file=sys.stderr, flush=True)
        fd = terminal_input()
        first = read_line(fd) if fd is not None else sys.stdin.readline()  # unbuffered: the rest stays waiting
        if not first:
            raise EOFError
    more = pasted_lines()
    if any(more):  # not for a paste that only ended in an empty line
        tell(f"note: {len(more)} more line{'s' if len(more) > 1 else ''} pasted with the first, sent as one task")
    return "\n".join([first.removesuffix("\n"), *more])


def pasted_lines() -> list[str]:
    """The whole lines already waiting at the terminal right after a task's first: the rest of a paste, which
    would otherwise answer the next question or become the next task. None where the terminal cannot be asked
    without reading it (Windows)."""
    fd, lines = terminal_input(), []
    while fd is not None and select.select([fd], [], [], PASTE_WINDOW)[0]:
        line = read_line(fd)
        if not line:  # the end of input, or the terminal has gone
            break
        lines.append(line.removesuffix("\n"))
    return lines
