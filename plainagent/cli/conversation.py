"""What the command line keeps between tasks (beyond the tutorial): the conversation so far, its
transcript taken for this process alone, its undo folder, the approver; each task run and shown."""

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import time
import typing
from pathlib import Path

from plainagent.approval.prompt import can_ask, default_approver
from plainagent.cli.live import Live
from plainagent.cli.progress import ANSWERED, CallClock, plural, progress, summary
from plainagent.cli.signals import signals_stop_the_run
from plainagent.core.keyboard import to_stderr
from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import ConfigError, Settings
from plainagent.model.context import system_prompt
from plainagent.model.errors import BadReply, report
from plainagent.model.output import STOPS, OutputError
from plainagent.runs import listing, resume, transcript
from plainagent.runs.answer import Stopped
from plainagent.workspace import undo, undo_record

Event = dict
# Harness.run, which the package never imports (harness.py imports it)
Runner = typing.Callable[..., str]
NO_TERMINAL = "note: no terminal: calls that need approval are denied; use --yes or --allow"
TOLD_LINES = 20  # of an undo report, the model is told (a command's names each file); then a count


class Conversation:
    """What the command line keeps between tasks: the messages so far, the approver, and the
    transcript, taken so no other run writes to it, with its undo folder (none with
    --no-transcript)."""

    def __init__(
        self,
        run: Runner,
        args: argparse.Namespace,
        settings: Settings,
        output: dict | None = None,
        moved: Path | None = None,
    ) -> None:
        self.run, self.args, self.settings = run, args, settings
        self.redact = redactor(settings.secrets)
        self.output = output  # --output-schema's schema: each answer is JSON that fits it
        self.moved = moved  # --moved-from: undo puts back the files of a run there, here
        # One approver for the command line: an 'always' lasts the whole session, not one task.
        self.approver = default_approver(
            settings, "this run" if args.task is not None else "this session"
        )
        # NO_TERMINAL is still to say
        self.unasked = not can_ask() and not settings.approve_all and not args.quiet
        # The conversation, its calls still waiting for results, the current task's events (summary)
        self.messages: list[dict] = []
        self.pending: list[str] = []
        self.events: list[Event] = []
        # by keep()
        self.file: typing.TextIO | None = None
        self.path: Path | None = None
        self.undo_folder: Path | None = None
        self.write: typing.Callable[[Event], None] | None = None
        self.created, self.tasks = False, 0
        self.named: Path | None = None  # the transcript the last summary named
        self.clock = CallClock()  # the current task's call that Ctrl-C stops, timed
        self.live = Live(settings, args.show_reasoning, args.quiet)  # pieces, seconds counted

    def begin(self, path: Path | None) -> int | None:
        """Take the transcript and, with --continue, read back its conversation; the exit code if
        either fails."""
        args = self.args
        if not args.no_transcript and (not args.continue_ or path is not None and path.is_file()):
            # An existing transcript is taken before it is read: another run may be writing to it
            # right now.
            instead = (
                "or start a new run "
                f"{'without --continue' if args.continue_ else 'with another --transcript PATH'}"
            )
            if failed := self.keep(
                path or transcript.new_path(args.task or "session", self.settings.runs_folder),
                path is None,
                instead,
            ):
                return failed
        if not args.continue_:
            return None
        try:
            messages, notes, workspace = resume.replay(self.path or path)
        # A command given the file (a --transcript in the workspace) made it huge
        except MemoryError:
            return fail(
                f"error: cannot continue from {path}: it is too large to read into memory; start a "
                "new run without --continue"
            )
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as error:
            return fail(
                f"error: cannot continue from {path}: {error}; start a new run without --continue"
            )
        # The writer redacted every event; a line written since by something else (an older
        # version's runs/, which commands could write) was not.
        self.messages = transcript.redacted(messages, self.redact)
        for note in notes:
            to_stderr(shown(f"note: {note}"))
        if workspace is not None and workspace != str(self.settings.workspace):
            # The old system prompt names the old folder: the model must know the one its tools now
            # work in.
            prompt = {"role": "system", "content": system_prompt(self.settings)}
            try:
                self.emit({"type": "system", "message": prompt})
            except transcript.TranscriptError as error:
                return fail(f"error: {error}", 1)
            to_stderr(
                shown(
                    f"note: this conversation worked in {workspace}; its system prompt now names "
                    f"{self.settings.workspace}",
                    redact=self.redact,
                )
            )
        return None

    def keep(
        self, path: Path, created: bool, instead: str, hint: str = transcript.NO_TRANSCRIPT
    ) -> int | None:
        """Take the transcript at path (created new, or appended to) with its undo folder, protected
        from the model; if it cannot be taken, the exit code, having said what to do instead (if
        another run holds it, `instead`; else `hint`: not --no-transcript for an undo)."""
        self.file = self.path = self.undo_folder = self.write = None
        self.created, self.tasks = created, 0
        try:
            self.file, self.path, mended = transcript.open_new(
                path, append=not created, runs=self.settings.runs_folder, hint=hint
            )
        except transcript.InUse as error:
            return fail(f"error: {error}; wait for that run to end, {instead}")
        except transcript.TranscriptError as error:
            return fail(f"error: {error}")
        if mended and not self.args.continue_:  # --continue says so as it reads the transcript back
            to_stderr(
                shown(
                    f"note: the last line of {self.path.as_posix()} was half-written; it is ended "
                    "and marked, so --continue skips it"
                )
            )
        self.write = transcript.writer(self.file, self.path, self.settings)
        # No undo for /dev/null
        self.undo_folder = undo_record.folder_for(self.path) if self.path.is_file() else None
        # realpath: a loop of links is no RuntimeError
        kept = tuple(Path(os.path.realpath(p)) for p in (self.path, self.undo_folder) if p)
        self.settings = dataclasses.replace(self.settings, protected=self.settings.protected + kept)
        return None

    def close(self) -> None:
        """Let go of the transcript; remove the file this conversation made for itself if no task
        was ever typed."""
        if self.file is None:
            return
        assert self.path is not None  # keep() sets it with the file
        self.file.close()
        empty = self.path.is_file() and self.path.stat().st_size == 0
        if self.created and not self.tasks and empty:
            self.path.unlink()

    def emit(self, event: Event) -> None:
        if self.live.see(event):  # a piece of a reply: shown, never kept (its message is)
            return
        self.clock.see(event)
        resume.apply(event, self.messages, self.pending)
        if self.write is not None:
            self.write(event)
        self.events.append(event)
        if not self.args.quiet:
            progress(event, self.redact, self.args.show_reasoning and not self.live.reasoned)

    def approve(self, name: str, arguments: dict) -> bool | str:
        """The approver, saying NO_TERMINAL once, at the first call it decides: a run that needs
        none says nothing."""
        if self.unasked:
            to_stderr(NO_TERMINAL)
            self.unasked = False
        asked = time.perf_counter()
        try:
            with self.live.asking():  # no line counts seconds over the question
                return self.approver(name, arguments)
        finally:
            self.clock.waited += time.perf_counter() - asked

    def attempt(self, task: str) -> int:
        """Run one task: the answer on stdout, the summary on stderr, a failure in one line; return
        the exit code."""
        self.events.clear()  # the summary counts this task's events only
        self.clock, limit = CallClock(), False
        self.tasks += 1
        # Each task keeps what undo needs in a record of its own, beside the transcript, so /undo
        # takes back one.
        settings = (
            dataclasses.replace(self.settings, undo=undo_record.next_record(self.undo_folder))
            if self.undo_folder
            else self.settings
        )
        try:
            with signals_stop_the_run():
                text = self.run(
                    task,
                    approve=self.approve,
                    settings=settings,
                    on_event=self.emit,
                    messages=list(self.messages),
                    output=self.output,
                )
        except KeyboardInterrupt as interruption:
            code = getattr(interruption, "code", 130)
            if not self.events or self.events[-1]["type"] != "end":  # stopped outside a tool call
                self.end({"reason": getattr(interruption, "reason", "interrupted"), "answer": None})
            to_stderr("\nterminated" if code != 130 else "interrupted")
        except transcript.TranscriptError as error:
            return fail(f"error: {error}", 1)
        except Exception as error:
            if not self.events or self.events[-1]["type"] != "end":  # a stop with output has one
                self.end(
                    {"reason": "error", "error": self.redact(f"{type(error).__name__}: {error}")}
                )
            if isinstance(error, Stopped):  # --output-schema's run ended without an answer
                return fail(f"error: stopped: {STOPS[error.reason]}, so there is no output", 1)
            import openai  # here: --runs and --undo never load the SDK

            if isinstance(error, (ConfigError, BadReply, openai.OpenAIError, OutputError)):
                return report(error, settings)
            # A bug, or a reply no model should send: still one line, and the transcript keeps the
            # rest.
            where = f"; the run so far is in {self.path.as_posix()}" if self.path else ""
            return fail(f"error: unexpected {type(error).__name__}: {error}{where}", 1, self.redact)
        else:
            code = 0 if self.events[-1]["reason"] in ANSWERED else 1
            # The summary says so, with the hint under it; alone (--quiet), the stop says both
            limit = self.events[-1]["reason"] == "step_limit"
            if limit and self.args.quiet:
                text = f"{text} ({plural(self.settings.max_steps, 'step')}); {self.how_to_go_on()}"
            if self.output is not None:  # one line, ASCII: nothing in it for a terminal to read
                text = json.dumps(text, separators=(",", ":"))
            # A model may repeat a key it read, or write escape sequences that would rewrite the
            # terminal.
            streamed = self.live.answered and not code  # shown as it came, its line ended
            if not streamed and (not limit or self.args.quiet):
                stream = sys.stderr if code else sys.stdout
                print(shown(text, redact=self.redact, newlines=True), file=stream)
        if not self.args.quiet:  # a session names its transcript once, and again after /new
            named, self.named = self.tasks == 1 or self.path != self.named, self.path
            to_stderr(summary(self.events, self.path, self.clock, named))
            if limit:
                to_stderr(self.how_to_go_on())
        return code

    def how_to_go_on(self) -> str:
        """How to go on from the step limit."""
        if self.args.task is None:
            return "type a follow-up to go on (--max-steps N gives each task more)"
        return 'go on with --continue "go on", or give a run more with --max-steps N'

    def end(self, event: Event) -> None:
        """Record the end of a run that already failed; a transcript that cannot be written has said
        so once."""
        with contextlib.suppress(transcript.TranscriptError):
            self.emit({"type": "end", **event})

    def undo_newest(self, path: Path, elsewhere: str | None = None) -> int:
        """--undo: take back the newest task of the run whose transcript is at path, taken first so
        no run changes its files; `elsewhere`: what to say instead when that run has nothing left
        to undo but an older one has (listing.elsewhere())."""
        if not path.is_file():
            return fail(
                f"error: cannot undo: {path.as_posix()}: it is not a transcript file; name the "
                "run's transcript with --transcript PATH, or pick a run with --run N (--runs lists "
                "them)"
            )
        mend = "undo writes in the run's transcript: let it be written there (a file, not a link)"
        if failed := self.keep(path, False, "then undo", f"{mend}, then undo again"):
            return failed
        if elsewhere:
            return fail(f"error: cannot undo: {elsewhere}", 2, self.redact)
        assert self.write is not None  # keep() has opened the transcript
        return self.take_back("--undo", self.write)

    def undo_last(self) -> int:
        if self.undo_folder is None:
            return fail(
                "error: cannot undo: this session keeps no transcript, and so no undo data "
                "(--no-transcript)"
            )
        assert self.write is not None  # keep() sets it before the undo folder
        # With no conversation yet (a session on an earlier run's transcript, without --continue),
        # the note goes to the transcript alone, as --undo's does: it belongs to that run's
        # conversation, not to this session's next.
        return self.take_back("/undo", self.emit if self.messages else self.write)

    def take_back(self, how: str, tell_model: typing.Callable[[Event], None]) -> int:
        """Undo the newest run kept in the undo folder: one line per file on stdout, and a message
        in the conversation (its first TOLD_LINES lines), so a model that goes on knows its changes
        are gone. Return 0 if every file is as it was before that run, 1 if some are not (changed
        since, too large to keep, or failed), 2 if nothing was undone."""
        assert self.undo_folder is not None  # both callers have one: a transcript file's
        try:
            # undo writes only where write_file may: never .env or the agent's files
            lines, complete = undo.take_back(self.undo_folder, self.settings, self.moved)
        except undo.UndoError as error:
            where = (self.settings.runs_folder, self.settings.workspace, self.path)
            older = "" if how != "/undo" or self.moved else listing.undo_instead(*where)
            return fail(f"error: cannot undo: {error}{older}", 2, self.redact)
        for line in lines:
            print(shown(line, redact=self.redact), flush=True)
        more = len(lines) - TOLD_LINES
        told = "; ".join(lines[:TOLD_LINES]) + (
            f"; and {more} more lines like these" if more > 0 else ""
        )
        said = f"(I undid the file changes of your latest task that still had any, with {how}: "
        said += f"{told}.)"
        try:
            tell_model({"type": "message", "message": {"role": "user", "content": said}})
        except transcript.TranscriptError as error:
            return fail(f"error: {error}", 1)
        return 0 if complete else 1

    def new(self) -> int:
        """/new: a new conversation, in a new transcript (if this one has any)."""
        self.messages.clear()
        self.pending.clear()
        if self.file is None:
            to_stderr("new conversation (no transcript)")
            return 0
        self.close()
        self.keep(
            transcript.new_path("session", self.settings.runs_folder),
            True,
            "or start a new run with another --transcript PATH",
        )
        to_stderr(
            shown(f"new conversation: transcript {self.path.as_posix() if self.path else 'none'}")
        )
        return 0 if self.path else 2


def fail(line: str, code: int = 2, redact: typing.Callable[[str], str] | None = None) -> int:
    """Say line on stderr, shown as one line (keys redacted by say); return code."""
    to_stderr(shown(line, redact=redact))
    return code
