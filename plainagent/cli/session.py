"""The terminal session (beyond the tutorial): `python harness.py` with no task at a terminal
prompts for tasks, each continuing the same conversation; a task pasted as several lines is one
task; a few /commands are answered here, never sent to the model."""

import difflib
import re
import select
import sys
import typing

from plainagent.core.keyboard import read_line, terminal_input, to_stderr

PROMPT = "> "  # a session's prompt for the next task
# seconds: lines that come this soon after a task's first were pasted (nobody types so fast)
PASTE_WINDOW = 0.05
# SIGTERM, SIGHUP: the terminal is gone, or someone wants us to stop: end the session
STOPPED_BY_SIGNAL = (143, 129)
LEAVE = ("/exit", "/quit")
COMMAND = re.compile(r"/[A-Za-z][\w-]*")  # a line that is one /word; "/usr/bin/x fails" is a task
CLOSE_COMMAND = 0.75  # how alike an unknown /word must be to a command to be named as a misspelling
HELP = """commands (any other line is a task for the agent):
  /help   this list
  /undo   take back the file changes of this conversation's newest task that still has some
  /new    start a new conversation, in a new transcript; the model forgets this one
  /exit   leave (or /quit, or Ctrl-D)"""


def session(
    attempt: typing.Callable[[str], int], commands: dict[str, typing.Callable[[], int]], banner: str
) -> int:
    """The session after its banner: each line typed is a task for attempt, or a command answered
    here. Ctrl-C stops a task and prompts again; Ctrl-D, /exit or /quit end the session (0), Ctrl-C
    at the prompt too (130)."""
    try:
        import readline  # noqa: F401  line editing and history for input(), where the system has it
    except ImportError:
        pass
    to_stderr(banner)
    while True:
        try:
            task = typed_task().strip()
        except EOFError:
            to_stderr()
            return 0
        except KeyboardInterrupt as interruption:
            to_stderr()
            return getattr(interruption, "code", 130)
        if task in LEAVE:
            return 0
        if not task:
            continue
        try:
            code = (
                commands[task]()
                if task in commands
                else answered_here(task, {*commands, *LEAVE, "/help"})
            )
            code = attempt(task) if code is None else code
        # A second Ctrl-C while the first was being reported
        except KeyboardInterrupt as interruption:
            code = getattr(interruption, "code", 130)
        if code in STOPPED_BY_SIGNAL:
            return code


def answered_here(task: str, known: set[str]) -> int | None:
    """0, having said here what to type instead, for a line that is no task: /help (or a bare help,
    or /?), an unknown /word, a known one with words after it (`/undo 2`: the model would try to
    undo on its own), a bare exit or quit; None for a task."""
    first = task.split(maxsplit=1)[0]
    if task == "/help" or task.lower() in ("help", "/?"):
        to_stderr(HELP)
    elif first in known:
        to_stderr(f"not sent to the model: {first} takes nothing after it; type {first} alone")
    elif COMMAND.fullmatch(task):
        to_stderr(f"unknown command {task}{meant(task.lower(), sorted(known))}; /help lists them")
    elif task.lower() in ("exit", "quit"):
        to_stderr("not sent to the model: type /exit or press Ctrl-D to leave")
    else:
        return None
    return 0


def meant(typed: str, known: list[str]) -> str:
    """The command an unknown /word is most likely a slip for, as ' (did you mean /undo?)': the one
    it begins (/h, /UNDO lowered) or one alike enough (/und); '' for none."""
    begun = [command for command in known if command.startswith(typed)]
    close = begun if len(begun) == 1 else []
    close = close or difflib.get_close_matches(typed, known, n=1, cutoff=CLOSE_COMMAND)
    return f" (did you mean {close[0]}?)" if close else ""


def typed_task() -> str:
    """The next task typed at the prompt: its first line, and the lines pasted with it. readline
    redraws its prompt on stdout, so it has it only where stdout is the terminal; elsewhere the
    prompt goes to stderr."""
    # None where the terminal cannot be asked what is waiting without reading it (Windows)
    fd = terminal_input()
    if sys.stdout.isatty():
        first = input(PROMPT)
    else:
        print(PROMPT, end="", file=sys.stderr, flush=True)
        # Unbuffered: the rest stays waiting
        first = read_line(fd) if fd is not None else sys.stdin.readline()
        if not first:
            raise EOFError
    # The rest of a paste, whole lines already waiting, would otherwise become the next task ('':
    # input has ended).
    more = []
    while (
        fd is not None
        and select.select([fd], [], [], PASTE_WINDOW)[0]
        and (line := read_line(fd, waiting=True))
    ):
        more.append(line.removesuffix("\n"))
    if any(more):  # not for a paste that only ended in an empty line
        to_stderr(
            f"note: {len(more)} more line{'s' if len(more) > 1 else ''} pasted with the first, "
            "sent as one task"
        )
    return "\n".join([first.removesuffix("\n"), *more])
