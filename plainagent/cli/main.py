"""The command line around run() (beyond the tutorial): flags and the environment resolved once, a
transcript to keep, continue and undo, progress and a summary on stderr, the answer alone on stdout,
and every failure as one line with an exit code. `python harness.py "task"` runs
main(harness.run)."""

import contextlib
import json
import os
import sys
from pathlib import Path

from plainagent.approval.prompt import with_the_sandbox
from plainagent.cli.conversation import Conversation, Runner, fail
from plainagent.cli.flags import parse_arguments
from plainagent.cli.session import session
from plainagent.cli.signals import signals_stop_the_run
from plainagent.core.keyboard import to_stderr
from plainagent.core.ownfiles import start_up_code_in
from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import RUNS, TABLE, ConfigError, Settings, resolve
from plainagent.model.errors import report
from plainagent.model.output import output_type
from plainagent.runs import listing


def main(run: Runner, argv: list[str] | None = None) -> int:
    """The command line around run (harness.run); returns the exit code. Ctrl-C outside a task
    (during --undo, or while a transcript is read) is one line too, never a traceback."""
    try:
        return command_line(run, argv)
    except KeyboardInterrupt as interruption:
        to_stderr("interrupted" if getattr(interruption, "code", 130) == 130 else "terminated")
        return getattr(interruption, "code", 130)
    # `| head` stopped reading: nothing more can be said on stdout, and nothing to fix
    except BrokenPipeError:
        return 1
    finally:
        drop_what_cannot_be_written()


def drop_what_cannot_be_written() -> None:
    """Output still buffered for a terminal that hung up, or a pipe nobody reads, goes to the null
    device: else Python's own flush at exit fails on it, says so, and exits 120 instead of main()'s
    code (129 after a hang-up). (Where PYTHONUNBUFFERED is set nothing is ever buffered, which hides
    this.)"""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            with contextlib.suppress(OSError, ValueError):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, stream.fileno())
                os.close(null)
                stream.flush()
        except (AttributeError, ValueError):  # None (no console), or closed
            pass


def command_line(run: Runner, argv: list[str] | None) -> int:
    """main() itself: what the arguments ask for, done; returns the exit code."""
    # What cp1252 (a Windows redirect) cannot write becomes \u2192.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):  # not a text file, or closed
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    args = parse_arguments(argv)
    try:
        settings = resolve(
            # undo and the list need no key; the ones there are must still never be shown
            require_key=not (args.undo or args.list_runs),
            **{setting.name: getattr(args, setting.name, None) for setting in TABLE},
        )
        settings = with_the_sandbox(settings)  # as run() does, for the system prompt and the notes
    except ConfigError as error:
        return report(error)
    # Before a command could put code where the agent's own Python looks at its next start.
    if args.list_runs:
        return list_runs(settings)
    if not args.undo and (problem := start_up_code_in(settings.workspace)):
        return fail(f"error: {problem}")
    path, elsewhere = Path(args.transcript) if args.transcript else None, None
    if (args.undo or args.continue_) and path is None:
        try:
            picked, every = listing.pick(settings.runs_folder, settings.workspace, args.run)
        except LookupError as error:
            return fail(f"error: {error}")
        if picked is None:
            instead = "" if args.undo else "; start a new run without --continue"
            return fail(
                f"error: cannot {'undo' if args.undo else 'continue'}: {no_runs(settings)}{instead}"
            )
        path = picked.path
        elsewhere = listing.elsewhere(picked, every) if args.run is None else None
    schema = None
    if args.output_schema is not None:
        try:
            schema = output_schema(Path(args.output_schema))
        except ValueError as error:
            return fail(f"error: {error}")
    talk = Conversation(run, args, settings, schema)
    try:
        if args.undo:
            assert path is not None  # picked or named above
            # As Ctrl-C: a file being restored is left whole, no temporary file
            with signals_stop_the_run():
                return talk.undo_newest(path, elsewhere)
        if not args.quiet:
            for note in args.notes:
                to_stderr(note)
        if (failed := talk.begin(path)) is not None:
            return failed
        try:
            if args.task is not None:
                return talk.attempt(args.task)
            # At the prompt too: SIGHUP or SIGTERM ends the session wherever it is
            with signals_stop_the_run():
                return session(
                    talk.attempt,
                    {"/undo": talk.undo_last, "/new": talk.new},
                    shown(
                        f"agent: {settings.model} in {settings.workspace} (sandbox: "
                        f"{'on' if settings.confined else 'off'}) "
                        "— type a task; /help for commands, /exit or Ctrl-D to leave"
                    ),
                )
        # A second Ctrl-C while the first was being reported
        except KeyboardInterrupt as interruption:
            return getattr(interruption, "code", 130)
    finally:
        talk.close()  # and with it the lock: main() may be called again in this process


def output_schema(path: Path) -> dict:
    """--output-schema's JSON Schema, read and checked before any request; ValueError, saying what
    to fix, for a file that is not one run() can take."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(
            f"cannot read --output-schema {path}: {getattr(error, 'strerror', None) or error}; "
            "name a JSON Schema file"
        ) from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"--output-schema {path} is not JSON ({error}); fix the file, or name another"
        ) from None
    except RecursionError:
        raise ValueError(f"--output-schema {path} is nested too deeply; fix the file") from None
    if not isinstance(schema, dict):
        raise ValueError(
            f"--output-schema {path} holds JSON that is not a schema (a JSON object); write "
            'one of an object: {"type": "object", "properties": {...}}'
        )
    try:
        output_type(schema)
    except (TypeError, ValueError) as error:
        raise ValueError(f"--output-schema {path}: {error}") from None
    return schema


def list_runs(settings: Settings) -> int:
    """--runs: this workspace's runs on stdout, newest first, one line each; how to take one, on
    stderr."""
    every = listing.runs(settings.runs_folder, settings.workspace)
    if not every:
        to_stderr(shown(f"{no_runs(settings)}"))
        return 0
    redact = redactor(settings.secrets)  # a task may quote a key
    for each in reversed(every):
        print(shown(each.line(), redact=redact))
    to_stderr(
        shown(f"kept in {settings.runs_folder}; take one with --continue --run N or --undo --run N")
    )
    return 0


def no_runs(settings: Settings) -> str:
    """That the workspace has no run yet, where its runs are kept, and where transcripts an older
    version kept in runs/ of the working folder are, if it holds any: they are never taken without
    being named, as commands could write them there."""
    said = f"no run of {settings.workspace} yet (its runs are kept in {settings.runs_folder})"
    with contextlib.suppress(OSError):
        if any(Path(RUNS).glob("*.jsonl")):
            said += (
                f"; transcripts of an older version are in {RUNS}/: name one with "
                f"--transcript {RUNS}/NAME.jsonl"
            )
    return said
