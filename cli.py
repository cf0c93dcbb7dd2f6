"""The command line around run() (a later addition): flags and the environment resolved once, a transcript to
keep, continue and undo, progress and a summary on stderr, the answer alone on stdout, and every failure as one
line with an exit code. `python harness.py "task"` runs main(harness.run)."""

import contextlib
import dataclasses
import os
import signal
import sys
import typing
from pathlib import Path

import openai

import resume
import transcript
import undo
from approval import Approver, can_ask, default_approver
from context import system_prompt
from errors import report
from flags import parse_arguments
from progress import ANSWERED, progress, summary
from session import session
from settings import RUNS, TABLE, ConfigError, Settings, resolve, use
from terminal import redactor, shown, tell

NO_TERMINAL = "note: no terminal: calls that need approval are denied; use --yes or --allow"
SIGNALS = {"SIGTERM": 143, "SIGHUP": 129}  # the terminal closed, `timeout`, a cancelled job: like Ctrl-C

Event = dict
Runner = typing.Callable[..., str]  # harness.run, which cli.py never imports (harness.py imports cli.py)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the run is, so it stops the way Ctrl-C does."""
    reason = "terminated"

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def main(run: Runner, argv: list[str] | None = None) -> int:
    """The command line around run (harness.run); returns the exit code. Ctrl-C outside a task (during --undo,
    or while a transcript is read) is one line too, never a traceback."""
    try:
        return command_line(run, argv)
    except KeyboardInterrupt as interruption:
        tell("interrupted")
        return getattr(interruption, "code", 130)


def command_line(run: Runner, argv: list[str] | None) -> int:
    """main() itself: what the arguments ask for, done; returns the exit code."""
    printable_anywhere()
    args = parse_arguments(argv)
    try:
        config = resolve(require_key=not args.undo,  # undo needs no key; the ones there are must still never be shown
                         **{setting.name: getattr(args, setting.name, None) for setting in TABLE})
    except ConfigError as error:
        return report(error)
    if args.undo:
        return undo_newest(Path(args.transcript) if args.transcript else None, config)
    if not args.quiet:
        for note in args.notes:
            tell(note)
    # One approver for the command line: an 'always' lasts the whole session, not one task.
    approve = default_approver(config.approve_all, config.secrets, config.workspace,
                               "this run" if args.task is not None else "this session")
    if not can_ask() and not config.approve_all and not args.quiet:
        approve = noted(approve, NO_TERMINAL)
    path = Path(args.transcript) if args.transcript else None
    if args.resume:
        path = path or transcript.newest()
    kept = Kept()
    if not args.no_transcript and (not args.resume or path is not None and path.is_file()):
        # An existing transcript is taken before it is read: another run may be writing to it right now.
        kept = keep(path or transcript.new_path(args.task or "session"), path is None, args.resume)
        if kept is None:
            return 2
    messages, moved_from = None, None
    if args.resume:
        try:
            messages, notes, workspace = resume.replay(kept.path or path)
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
            kept.close()
            return fail(f"error: cannot continue from {path or RUNS + '/'}: {error}; start a new run without "
                        "--continue", 2)
        for note in notes:
            tell(shown(f"note: {note}"))
        if workspace is not None and workspace != str(config.workspace):
            moved_from = workspace
    config = dataclasses.replace(config, protected=config.protected + tuple(
        p.resolve() for p in (kept.path, kept.undo_folder) if p is not None))
    conversation = list(messages or [])  # the run's history as its events change it, for a session's next task
    pending: list[str] = []  # calls of the newest turn still waiting for their results
    events: list[Event] = []
    say = redactor(config.secrets)
    listeners: list[typing.Callable[[Event], None]] = [
        lambda event: resume.apply(event, conversation, pending), lambda event: kept.write(event, config),
        events.append]
    if not args.quiet:
        listeners.append(lambda event: progress(event, say, args.show_reasoning))

    def emit(event: Event) -> None:
        for listen in listeners:
            listen(event)

    if moved_from is not None:
        # The old system prompt names the old folder: the model must know the one its tools now work in.
        try:
            with use(config):
                emit({"type": "system", "message": {"role": "system", "content": system_prompt(config)}})
        except transcript.TranscriptError as error:
            return fail(f"error: {error}", 1)
        tell(shown(f"note: this conversation worked in {moved_from}; its system prompt now names "
                   f"{config.workspace}", redact=say))

    def attempt(task: str) -> int:
        events.clear()  # the summary counts this task's events only
        kept.tasks += 1
        # Each task keeps what undo needs in a record of its own, beside the transcript, so /undo takes back one.
        task_config = dataclasses.replace(config, undo=undo.next_record(kept.undo_folder)) if kept.undo_folder \
            else config
        return run_task(run, approve, task, list(conversation), task_config, emit, events, kept.path, args.quiet)

    def undo_last() -> int:
        if kept.undo_folder is None:
            return fail("error: cannot undo: this session keeps no transcript, and so no undo data "
                        "(--no-transcript)", 2)
        return take_back(kept.undo_folder, emit, "/undo", config)

    def new_conversation() -> int:
        nonlocal kept
        conversation.clear()
        pending.clear()
        if kept.file is None:
            tell("new conversation (no transcript)")
            return 0
        kept.close()
        kept = keep(transcript.new_path("session"), True, False) or Kept()
        tell(shown(f"new conversation: transcript {kept.path.as_posix() if kept.path else 'none'}"))
        return 0 if kept.path else 2

    try:
        if args.task is not None:
            return attempt(args.task)
        with signals_stop_the_run():  # at the prompt too: SIGHUP or SIGTERM ends the session wherever it is
            return session(attempt, {"/undo": undo_last, "/new": new_conversation}, banner(config))
    except KeyboardInterrupt as interruption:  # a second Ctrl-C while the first was being reported
        return getattr(interruption, "code", 130)
    except BrokenPipeError:  # `| head` stopped reading: nothing more can be said on stdout, and nothing to fix
        return stdout_closed()
    finally:
        kept.close()  # and with it the lock: main() may be called again in this process


def stdout_closed() -> int:
    """Exit quietly (1) when whoever read stdout has gone: Python would report the closed pipe again at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1


@dataclasses.dataclass
class Kept:
    """Where a conversation is kept: its transcript (taken, so no other run writes to it) and undo folder; all
    None with --no-transcript."""
    file: typing.TextIO | None = None
    path: Path | None = None
    created: bool = False  # made by this session: ours to remove if it is left empty
    undo_folder: Path | None = None
    writer: typing.Callable[[Event], None] | None = None
    tasks: int = 0

    def write(self, event: Event, config: Settings) -> None:
        if self.file is not None:
            self.writer = self.writer or transcript.writer(self.file, self.path, config)
            self.writer(event)

    def close(self) -> None:
        """Let go of the transcript; remove the file this session made for itself if no task was ever typed."""
        if self.file is None:
            return
        self.file.close()
        if self.created and not self.tasks and self.path.is_file() and self.path.stat().st_size == 0:
            self.path.unlink()


def keep(path: Path, created: bool, resume: bool) -> Kept | None:
    """The transcript at path taken for this conversation (created new, or appended to), with its undo folder;
    None when it cannot be, said in one line."""
    try:
        file, path = transcript.open_new(path, append=not created)
    except transcript.InUse as error:
        fail(f"error: {error}; wait for that run to end, or start a new run "
             f"{'without --continue' if resume else 'with another --transcript PATH'}", 2)
        return None
    except transcript.TranscriptError as error:
        fail(f"error: {error}", 2)
        return None
    return Kept(file, path, created, undo.folder_for(path) if path.is_file() else None)  # no undo for /dev/null


def noted(approve: Approver, note: str) -> Approver:
    """approve, saying the note once, at the first call it decides: a run that needs no approval says nothing."""
    said = []

    def decide(name: str, arguments: dict) -> bool | str:
        if not said:
            tell(note)
            said.append(note)
        return approve(name, arguments)

    return decide


def banner(config: Settings) -> str:
    """A session's first line: what it runs, where, and how to get help or leave."""
    return shown(f"agent: {config.model} in {config.workspace} (sandbox: {'on' if config.sandboxed else 'off'}) — "
                 "type a task; /help for commands, /exit or Ctrl-D to leave")


def fail(line: str, code: int) -> int:
    """Say line on stderr, shown as one line; return code."""
    tell(shown(line))
    return code


def printable_anywhere() -> None:
    """Whatever the encoding of stdout and stderr (cp1252 on a Windows redirect), a character it cannot write
    is written as an escape (\\u2192) instead of ending the run with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):  # not a text file, or closed
            stream.reconfigure(errors="backslashreplace")


def undo_newest(given: Path | None, config: Settings) -> int:
    """--undo: take back the file changes of the newest run of the transcript given, else of the newest one in
    runs/, in the workspace of these settings. The transcript is taken first, so no run can be changing those
    files meanwhile."""
    path = given or transcript.newest()
    if path is None or not path.is_file():
        where = path.as_posix() if path else f"{RUNS}/"
        reason = "it is not a transcript file" if path else "no transcript in it yet"
        return fail(f"error: cannot undo: {where}: {reason}; name the run's transcript with --transcript PATH", 2)
    try:
        file, path = transcript.open_new(path, append=True)
    except transcript.InUse as error:
        return fail(f"error: {error}; wait for that run to end, then undo", 2)
    except transcript.TranscriptError as error:
        return fail(f"error: {error}", 2)
    with file:
        return take_back(undo.folder_for(path), transcript.writer(file, path, config), "--undo", config)


def take_back(folder: Path, emit: typing.Callable[[Event], None], how: str, config: Settings) -> int:
    """Undo the newest run kept in the undo folder: one line per file on stdout, and a message in the
    conversation, so a model that goes on knows its changes are gone. Return 0 if every file is as it was
    before that run, 1 if some are not (changed since, too large to keep, or failed), 2 if nothing was undone."""
    say = redactor(config.secrets)
    try:
        with use(config):  # undo writes only where write_file may: in the workspace, never .env or the agent's files
            lines, complete = undo.take_back(folder)
    except undo.UndoError as error:
        print(shown(f"error: cannot undo: {error}", redact=say), file=sys.stderr)
        return 2
    for line in lines:
        print(shown(line, redact=say), flush=True)
    try:
        emit({"type": "message", "message": {"role": "user", "content": "(I undid the file changes of your latest "
                                             f"task that still had any, with {how}: {'; '.join(lines)}.)"}})
    except transcript.TranscriptError as error:
        return fail(f"error: {error}", 1)
    return 0 if complete else 1


def run_task(run: Runner, approve: Approver, task: str, messages: list[dict] | None, config: Settings,
             emit: typing.Callable[[Event], None], events: list[Event], path: Path | None, quiet: bool) -> int:
    """Run one task: the answer on stdout, the summary on stderr, a failure in one line; return the exit code."""
    say = redactor(config.secrets)
    try:
        with signals_stop_the_run():
            text = run(task, approve=approve, settings=config, on_event=emit, messages=messages)
    except KeyboardInterrupt as interruption:
        code = getattr(interruption, "code", 130)
        if not events or events[-1]["type"] != "end":  # stopped outside a tool call
            quietly(emit, {"type": "end", "reason": getattr(interruption, "reason", "interrupted"), "answer": None})
        tell("\nterminated" if code != 130 else "interrupted")
        if not quiet:
            tell(summary(events, path))
        return code
    except transcript.TranscriptError as error:
        return fail(f"error: {error}", 1)
    except Exception as error:
        quietly(emit, {"type": "end", "reason": "error", "error": say(f"{type(error).__name__}: {error}")})
        if isinstance(error, (ConfigError, openai.OpenAIError)):
            return report(error, config)
        # A bug, or a reply no model should send: still one line, and the transcript keeps the rest.
        where = f"; the run so far is in {path.as_posix()}" if path else ""
        print(shown(f"error: unexpected {type(error).__name__}: {error}{where}", redact=say), file=sys.stderr)
        return 1
    answered = events[-1]["reason"] in ANSWERED
    # A model may repeat a key it read, or write escape sequences that would rewrite the terminal.
    print(shown(text, redact=say, newlines=True), file=sys.stdout if answered else sys.stderr)
    if not quiet:
        tell(summary(events, path))
    return 0 if answered else 1


def stop(code: int) -> None:
    raise Terminated(code)


@contextlib.contextmanager
def signals_stop_the_run() -> typing.Iterator[None]:
    """While the run goes on, SIGTERM and SIGHUP raise Terminated; afterwards the handlers before are back (main()
    may run inside a program with its own). A signal the caller ignored (nohup ignores SIGHUP) stays ignored."""
    previous = {}
    for name in SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, lambda signum, frame: stop(SIGNALS[signal.Signals(signum).name]))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def quietly(emit: typing.Callable[[Event], None], event: Event) -> None:
    """Record the end of a run that already failed; a transcript that cannot be written has said so once."""
    try:
        emit(event)
    except transcript.TranscriptError:
        pass
