"""The command line around run() (a later addition): flags and the environment resolved once, a transcript to
keep, continue and undo, progress and a summary on stderr, the answer alone on stdout, and every failure as one
line with an exit code. `python harness.py "task"` runs main(harness.run)."""

import argparse
import contextlib
import dataclasses
import math
import signal
import sys
import typing
from pathlib import Path

import openai

import transcript
import undo
from context import system_prompt
from errors import report
from session import session
from settings import RUNS, TABLE, ConfigError, Settings, approval, backend, folder, programs, resolve, use
from terminal import redactor, shown, tell

ANSWERED = ("answer", "length")  # end reasons whose text goes to stdout; the others are stops (exit 1)
ARGUMENTS_SHOWN = 200  # characters of a call's arguments in its progress line
THINKING = "  thinking: "  # marks each line of the model's reasoning, so it is not taken for the answer
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
    """The command line around run (harness.run); returns the exit code."""
    args = parse_arguments(argv)
    if args.undo:
        return undo_newest(Path(args.transcript) if args.transcript else None)
    try:
        config = resolve(**{setting.name: getattr(args, setting.name, None) for setting in TABLE})
    except ConfigError as error:
        return report(error)
    path = Path(args.transcript) if args.transcript else None
    if args.resume:
        path = path or transcript.newest()
    file, created = None, False
    if not args.no_transcript and (not args.resume or path is not None and path.is_file()):
        # An existing transcript is taken before it is read: another run may be writing to it right now.
        created = path is None  # a new file, made exclusively: ours to remove if left empty
        try:
            file, path = transcript.open_new(path or transcript.new_path(args.task or "session"), append=not created)
        except transcript.InUse as error:
            print(f"error: {error}; wait for that run to end, or start a new run "
                  f"{'without --continue' if args.resume else 'with another --transcript PATH'}", file=sys.stderr)
            return 2
        except transcript.TranscriptError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    messages, moved_from = None, None
    if args.resume:
        try:
            messages, notes, workspace = transcript.replay(path)
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
            print(f"error: cannot continue from {path or RUNS + '/'}: {error}; start a new run without --continue",
                  file=sys.stderr)
            if file is not None:
                file.close()
            return 2
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        if workspace is not None and workspace != str(config.workspace):
            moved_from = workspace
    conversation = list(messages or [])  # the run's history as its events change it, for a session's next task
    pending: list[str] = []  # calls of the newest turn still waiting for their results
    listeners: list[typing.Callable[[Event], None]] = [lambda event: transcript.apply(event, conversation, pending)]
    undo_folder = None
    if file is not None:
        undo_folder = undo.folder_for(path) if path.is_file() else None  # not for /dev/null
        config = dataclasses.replace(config, protected=config.protected + tuple(
            p.resolve() for p in (path, undo_folder) if p is not None))
        listeners.append(transcript.writer(file, path, config))
    else:
        path = None
    events: list[Event] = []
    tasks: list[str] = []
    say = redactor(config.secrets)
    listeners.append(events.append)
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
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(shown(f"note: this conversation worked in {moved_from}; its system prompt now names "
                    f"{config.workspace}", redact=say), file=sys.stderr)

    def attempt(task: str) -> int:
        events.clear()  # the summary counts this task's events only
        tasks.append(task)
        # Each task keeps what undo needs in a record of its own, beside the transcript, so /undo takes back one.
        task_config = dataclasses.replace(config, undo=undo.next_record(undo_folder)) if undo_folder else config
        return run_task(run, task, list(conversation), task_config, emit, events, path, args.quiet)

    def undo_last() -> int:
        if undo_folder is None:
            print("error: cannot undo: this session keeps no transcript, and so no undo data (--no-transcript)",
                  file=sys.stderr)
            return 2
        return take_back(undo_folder, emit, "/undo", say)

    try:
        if args.task is not None:
            return attempt(args.task)
        with signals_stop_the_run():  # at the prompt too: SIGHUP or SIGTERM ends the session wherever it is
            return session(attempt, undo_last)
    except KeyboardInterrupt as interruption:  # a second Ctrl-C while the first was being reported
        return getattr(interruption, "code", 130)
    finally:
        if file is not None:
            file.close()  # and with it the lock: main() may be called again in this process
        if created and not tasks and path.is_file() and path.stat().st_size == 0:
            path.unlink()  # the file this session made for itself, left empty: no task was ever typed


def undo_newest(given: Path | None) -> int:
    """--undo: take back the file changes of the newest run of the transcript given, else of the newest one in
    runs/. The transcript is taken first, so no run can be changing those files meanwhile."""
    try:
        config = resolve(require_key=False)  # no key is needed; the ones there are must still never be shown
    except ConfigError as error:
        return report(error)
    say = redactor(config.secrets)
    path = given or transcript.newest()
    if path is None or not path.is_file():
        where = path.as_posix() if path else f"{RUNS}/"
        reason = "it is not a transcript file" if path else "no transcript in it yet"
        print(f"error: cannot undo: {where}: {reason}; name the run's transcript with --transcript PATH",
              file=sys.stderr)
        return 2
    try:
        file, path = transcript.open_new(path, append=True)
    except transcript.InUse as error:
        print(f"error: {error}; wait for that run to end, then undo", file=sys.stderr)
        return 2
    except transcript.TranscriptError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with file:
        return take_back(undo.folder_for(path), transcript.writer(file, path, config), "--undo", say)


def take_back(folder: Path, emit: typing.Callable[[Event], None], how: str, say: typing.Callable[[str], str]) -> int:
    """Undo the newest run kept in the undo folder: one line per file on stdout, and a message in the
    conversation, so a model that goes on knows its changes are gone. Return 0 if every file is as it was
    before that run, 1 if some are not (changed since, too large to keep, or failed), 2 if nothing was undone."""
    try:
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
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0 if complete else 1


def run_task(run: Runner, task: str, messages: list[dict] | None, config: Settings,
             emit: typing.Callable[[Event], None], events: list[Event], path: Path | None, quiet: bool) -> int:
    """Run one task: the answer on stdout, the summary on stderr, a failure in one line; return the exit code."""
    say = redactor(config.secrets)
    try:
        with signals_stop_the_run():
            text = run(task, settings=config, on_event=emit, messages=messages)
    except KeyboardInterrupt as interruption:
        code = getattr(interruption, "code", 130)
        if not events or events[-1]["type"] != "end":  # stopped outside a tool call
            quietly(emit, {"type": "end", "reason": getattr(interruption, "reason", "interrupted"), "answer": None})
        tell("\nterminated" if code != 130 else "interrupted")
        if not quiet:
            tell(summary(events, path))
        return code
    except transcript.TranscriptError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
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
        print(summary(events, path), file=sys.stderr)
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


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The flags: one for each setting in settings.TABLE that has one, then the command line's own."""
    parser = argparse.ArgumentParser(description="Run the agent on a task in the current folder.")
    parser.add_argument("task", nargs="?", help="what you want the agent to do, in quotes; without it, at a "
                        "terminal, a session: type one task a line, each continuing the conversation")
    for setting in TABLE:
        default = setting.default_text or (f"{setting.default:g}" if isinstance(setting.default, float)
                                           else setting.default)
        about = f"{setting.help} (default {default}, {setting.variable})"
        if setting.parse is approval:
            parser.add_argument(setting.flag, dest=setting.name, action="store_const", const=True, help=about)
        elif (choices := getattr(setting.parse, "choices", None)) and setting.parse is not backend:
            parser.add_argument(setting.flag, dest=setting.name, choices=choices, help=about)
        elif setting.flag:
            # A folder is checked in resolve(), which words the error in one line like every other setting's.
            kind = str if setting.parse in (folder, backend, programs) else flag_value(setting.parse)
            parser.add_argument(*setting.flag.split(), dest=setting.name, type=kind, help=about,
                                metavar=getattr(setting.parse, "metavar", setting.name.upper()))
    parser.add_argument("--continue", dest="resume", action="store_true", help="continue the newest "
                        f"conversation in {RUNS}/ (or the --transcript one) with the task as a follow-up")
    parser.add_argument("--transcript", metavar="PATH", help=f"the transcript to write (default: a new file "
                        f"in {RUNS}/ named by time and task)")
    parser.add_argument("--no-transcript", action="store_true", help="write no transcript")
    parser.add_argument("--undo", action="store_true", help=f"take back the file changes of the newest run in "
                        f"{RUNS}/ (or the --transcript one): what write_file and edit_file changed is put back, "
                        "files they created are removed, a file changed since is left alone; commands' changes "
                        "are not undone")
    parser.add_argument("--show-reasoning", action="store_true", help="print the model's reasoning for each "
                        "step on stderr, each line marked 'thinking:'")
    parser.add_argument("--quiet", action="store_true", help="no progress lines and no summary; only the answer")
    args = parser.parse_args(argv)
    if args.undo and (args.task is not None or args.resume or args.no_transcript):
        parser.error("--undo takes no task, --continue or --no-transcript (only --transcript PATH)")
    if args.task is None and not args.undo and not at_a_terminal():
        parser.error("the following arguments are required: task (or start it at a terminal for a session)")
    return args


def flag_value(parse: typing.Callable[[str], typing.Any]) -> typing.Callable[[str], typing.Any]:
    """A setting's own parser as an argparse type: its words become argparse's one-line usage error."""
    def value(text: str) -> typing.Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return value


def at_a_terminal() -> bool:
    return all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stderr))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def summary(events: list[Event], path: Path | None) -> str:
    """One line: steps, tool calls, tokens in and out, seconds on the model and on tools, the transcript."""
    replies = [e for e in events if e["type"] == "reply"]
    tools = [e for e in events if e["type"] == "tool"]
    word = "done" if events[-1].get("reason") in ANSWERED else "stopped"
    return (f"{word}: {plural(len(replies), 'step')}, {plural(len(tools), 'tool call')}, "
            f"{sum(e['usage']['prompt_tokens'] for e in replies)} tokens in, "
            f"{sum(e['usage']['completion_tokens'] for e in replies)} out, "
            f"model {sum(e['seconds'] for e in replies):.1f} s, tools {sum(e['seconds'] for e in tools):.1f} s, "
            f"transcript {path.as_posix() if path else 'none'}")


def progress(event: Event, say: typing.Callable[[str], str] = str, show_reasoning: bool = False) -> None:
    """The CLI's progress lines on stderr: a tool call when it starts and, under it, how it ended; a wait, retry
    or elision; with show_reasoning, each step's reasoning, every line marked. Keys are never shown, and each
    thing the model or a server wrote is shown on its one line."""
    kind = event["type"]

    def one(text: str) -> str:
        return shown(text, redact=say)

    if kind == "call":
        arguments = event["arguments"] if len(event["arguments"]) <= ARGUMENTS_SHOWN else \
            f"{event['arguments'][:ARGUMENTS_SHOWN]}… ({len(event['arguments']):,} characters)"
        line = f"[{event['step']}] {one(event['name'])} {one(arguments)}"
    elif kind == "tool":
        line = f"    → {one(event['outcome'])}"
    elif kind == "reply" and show_reasoning and event.get("reasoning"):
        line = "\n".join(f"{THINKING}{one(text)}" for text in event["reasoning"].split("\n"))
    elif kind == "start" and event.get("notes"):
        line = "\n".join(f"note: {one(note)}" for note in event["notes"])
    elif kind == "wait":
        line = (f"rate limited ({one(event['limit'])}); waiting {math.ceil(event['seconds'])} s, "
                f"retry {event['retry']} of {event['of']}")
    elif kind == "retry" and event["reason"] == "tool_use_failed":
        line = f"the model wrote a malformed tool call; asking again (attempt {event['attempt']} of {event['of']})"
    elif kind == "retry":
        line = f"no good answer from the model server; trying again (attempt {event['attempt']} of {event['of']})"
    elif kind == "elided":
        line = f"context over {event['budget']:,} tokens: {one(event['content'])}"
    elif kind == "dropped":
        line = f"context over {event['budget']:,} tokens: dropped the oldest turn ({plural(event['count'], 'message')})"
    elif kind == "over_budget":
        line = (f"context still over {event['budget']:,} tokens (about {event['estimated_tokens']:,}): nothing "
                "older is left to shorten; the system prompt, your messages and the newest turn stay whole")
    elif kind == "end" and event["reason"] == "length":
        line = "the answer was cut off: the model hit its output limit (finish_reason: length)"
    else:
        return
    print(line, file=sys.stderr)

