"""The command line around run() (beyond the tutorial): flags and the environment resolved once, a
transcript to keep, continue and undo, progress and a summary on stderr, the answer alone on stdout,
and every failure as one line with an exit code. `python harness.py "task"` runs
main(harness.run)."""

import contextlib
import dataclasses
import json
import os
import signal
import sys
import typing
from pathlib import Path

from plainagent.approval.prompt import with_the_sandbox
from plainagent.cli.conversation import Conversation, Runner, fail
from plainagent.cli.flags import parse_arguments
from plainagent.cli.live import streaming
from plainagent.cli.progress import plural
from plainagent.cli.session import session
from plainagent.cli.signals import signals_stop_the_run
from plainagent.core import statefolder
from plainagent.core.keyboard import to_stderr
from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import RUNS, TABLE, ConfigError, Settings, resolve
from plainagent.core.startup import start_up_code_in
from plainagent.core.values import text_of
from plainagent.mcp.config import ServerConfig, none_configured, read_config
from plainagent.mcp.servers import Servers
from plainagent.model.errors import report, without_packages
from plainagent.model.output import output_type
from plainagent.runs import listing
from plainagent.runs.forget import forget
from plainagent.workspace import store

NEW_RUN = "; start a new run without --continue"
# In a session's banner with --yes (or AGENT_APPROVE=all, which a shell's profile may have set)
YES = "; --yes: every command and write runs without asking"
# The system's programs: a workspace that holds them takes them off an unasked command's PATH
PROGRAM_FOLDERS = ("/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/opt/homebrew/bin")


def main(run: Runner, argv: list[str] | None = None) -> int:
    """The command line around run (harness.run); returns the exit code. Ctrl-C outside a task
    (during --undo, or while a transcript is read) is one line too, never a traceback."""
    if missing := without_packages():  # the agent's venv not active: one line, no traceback
        return fail(missing)
    try:
        if signal.getsignal(signal.SIGINT) is signal.SIG_DFL:  # quiet while it loaded: __init__
            signal.signal(signal.SIGINT, signal.default_int_handler)
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
    forgetting = args.forget_runs is not None
    try:
        settings = resolve(
            # undo and the runs' list need no key; the ones there are must still never be shown
            require_key=not (args.undo or args.list_runs or forgetting),
            **{setting.name: getattr(args, setting.name, None) for setting in TABLE},
        )
        settings = with_the_sandbox(settings)  # as run() does, for the system prompt and the notes
    except ConfigError as error:
        return report(error)
    moved = None
    if args.moved_from is not None:
        try:
            moved = moved_from(args.moved_from, settings)
        except ValueError as error:
            return fail(f"error: {error}")
    # Before a command could put code where the agent's own Python looks at its next start.
    if args.list_runs:
        return list_runs(settings, moved)
    if forgetting:
        return forget_runs(settings, args.forget_runs, moved)
    configs: tuple[ServerConfig, ...] = ()
    if not args.undo:
        try:  # a bad MCP config is one line, before anything starts
            configs = read_config(settings.mcp)
        except ConfigError as error:
            return report(error)
    if args.mcp_list:
        return list_mcp_tools(configs, settings)
    if not args.undo and (problem := start_up_code_in(settings.workspace)):
        return fail(f"error: {problem}")
    path, elsewhere = Path(args.transcript) if args.transcript else None, None
    continuing = f"continuing {path}; " if args.continue_ and path else ""
    if (args.undo or args.continue_) and path is None:
        folder, workspace = runs_of(settings, moved)
        try:
            picked, every = listing.pick(folder, workspace, args.run)
        except LookupError as error:
            return fail(f"error: {error}")
        if picked is None:
            flag, instead = ("--undo", "") if args.undo else ("--continue", NEW_RUN)
            said = no_runs(settings, flag, moved)
            return fail(f"error: cannot {flag.lstrip('-')}: {said}{instead}")
        path = picked.path
        continuing = f"continuing {picked.named()}; " if args.continue_ else ""
        elsewhere = listing.elsewhere(picked, every) if args.run is None else None
        if elsewhere and moved:  # the run it names is reached the same way
            elsewhere += f" --moved-from {moved}"
    schema = None
    if args.output_schema is not None:
        try:
            schema = output_schema(Path(args.output_schema))
        except ValueError as error:
            return fail(f"error: {error}")
    talk = Conversation(run, args, streaming(settings, schema), schema, moved)
    try:
        if args.undo:
            assert path is not None  # picked or named above
            # As Ctrl-C: a file being restored is left whole, no temporary file
            with signals_stop_the_run():
                return talk.undo_newest(path, elsewhere)
        if not args.quiet:
            for note in [*args.notes, *folder_notes(settings.workspace)]:
                to_stderr(shown(note))
        if (failed := talk.begin(path)) is not None:
            return failed
        try:
            if args.task is not None:
                return talk.attempt(args.task)
            yes = YES if settings.approve_all else ""
            # At the prompt too: SIGHUP or SIGTERM ends the session wherever it is
            with signals_stop_the_run(), session_servers(talk, configs):
                return session(
                    talk.attempt,
                    {"/undo": talk.undo_last, "/new": talk.new},
                    shown(
                        f"agent: {settings.model} in {settings.workspace} (sandbox: "
                        f"{'on' if settings.confined else 'off'}{yes}) — {continuing}type a task; "
                        "/help for commands, /exit or Ctrl-D to leave",
                        redact=redactor(settings.secrets),  # a task continued may quote a key
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
        text = text_of(path)
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


def list_runs(settings: Settings, moved: Path | None = None) -> int:
    """--runs: this workspace's runs (or those of the folder it moved from) on stdout, newest
    first, one line each; how to take one, on stderr."""
    folder, workspace = runs_of(settings, moved)
    every = listing.runs(folder, workspace)
    if not every:
        to_stderr(shown(no_runs(settings, "--runs", moved)))
        return 0
    redact = redactor(settings.secrets)  # a task may quote a key
    for each in reversed(every):
        print(shown(each.line(), redact=redact))
    again = f" --moved-from {moved}" if moved else ""
    held = store.size(folder)  # what undo keeps of the files commands changed
    kept = f" ({listing.amount(held)} of it to undo commands)" if held else ""
    to_stderr(
        shown(
            f"kept in {folder}{kept}; take one with --continue --run N{again} or --undo --run "
            f"N{again}"
        )
    )
    return 0


def forget_runs(settings: Settings, days: float, moved: Path | None) -> int:
    """--forget-runs DAYS: remove this workspace's runs (or those of the folder it moved from) that
    started more than DAYS days ago; one line on stdout per run removed, what is left on stderr."""
    folder, workspace = runs_of(settings, moved)
    try:
        removed, going = forget(folder, workspace, days)
    except OSError as error:
        return fail(f"error: cannot forget the runs in {folder}: {error.strerror or error}", 1)
    redact = redactor(settings.secrets)
    for each in removed:
        print(shown(f"forgot {each.named()}", redact=redact))
    older = f" that started over {days:g} day{'' if days == 1 else 's'} ago" if days else ""
    left = f"; {plural(len(going), 'run')} still going, kept" if going else ""
    to_stderr(shown(f"forgot {plural(len(removed), 'run')} of {workspace}{older}{left}"))
    return 0


def runs_of(settings: Settings, moved: Path | None) -> tuple[Path, Path]:
    """The runs folder to look in, and the workspace whose runs it keeps: this one's, or with
    --moved-from, the folder's it moved from."""
    if moved is None:
        return settings.runs_folder, settings.workspace
    return settings.runs_folder.parent / statefolder.folder_name(moved), moved


def moved_from(given: str, settings: Settings) -> Path:
    """--moved-from's folder, as a run there recorded it (its links resolved); ValueError, saying
    what to do, for this workspace or a folder still there (its runs are its own)."""
    old = Path(os.path.realpath(os.path.expanduser(given)))
    if old == settings.workspace:
        raise ValueError(f"--moved-from {given} is this workspace; leave it out")
    if old.is_dir():
        raise ValueError(
            f"--moved-from {given}: {old} is still there, and its runs are its own: take them "
            f"there, or with --workspace {old}"
        )
    return old


def no_runs(settings: Settings, flag: str, moved: Path | None = None) -> str:
    """That the workspace (or the folder it moved from) has no run yet, where its runs are kept,
    where transcripts an older version kept in runs/ of the working folder are, if it holds any
    (they are never taken without being named, as commands could write them there), and whose
    runs may be this workspace's from before it moved, with the flags that reach them."""
    folder, workspace = runs_of(settings, moved)
    said = f"no run of {workspace} yet (its runs are kept in {folder})"
    with contextlib.suppress(OSError):
        if any(Path(RUNS).glob("*.jsonl")):
            said += (
                f"; transcripts of an older version are in {RUNS}/: name one with "
                f"--transcript {RUNS}/NAME.jsonl"
            )
    for other, there in [] if moved else listing.namesakes(folder.parent, workspace)[:3]:
        said += (
            f"; {other}, a folder of the same name, has runs: {flag} --workspace {other}"
            if there
            else f"; {other}, which is gone (moved here?), has runs: {flag} --moved-from {other}"
        )
    return said


def folder_notes(workspace: Path) -> list[str]:
    """What to know of the folder a run works in, at its start: that it is the whole system, the
    home folder or one that holds the system's programs, which a command that runs without asking
    then cannot find (the workspace's folders leave its PATH); and where the git repository it is
    a subfolder of starts. A repository at the top of the home folder (a person's dotfiles) or of
    the system is no project."""
    home = Path(os.path.realpath(Path.home()))
    system = [Path(os.path.realpath(f)) for f in PROGRAM_FOLDERS if os.path.isdir(f)]
    start = "start the agent in your project's folder, or give --workspace DIR"
    if workspace == home:
        return [
            f"note: the workspace is your home folder, {workspace}: every file in it is in the "
            f"model's reach; {start}"
        ]
    if any(folder == workspace or workspace in folder.parents for folder in system):
        return [
            f"note: the workspace {workspace} holds the system's programs: a command that runs "
            f"without asking finds none of them, and every file is in the model's reach; {start}"
        ]
    top = next((p for p in workspace.parents if (p / ".git").exists()), None)
    if (workspace / ".git").exists() or top is None or top in (home, Path(top.anchor)):
        return []
    return [
        f"note: {workspace} is a subfolder of the git repository {top}: to work on the whole "
        f"project, start the agent there (or give --workspace {top})"
    ]


def list_mcp_tools(configs: tuple[ServerConfig, ...], settings: Settings) -> int:
    """--mcp-list: each server started, its tools listed on stdout (name, server, the first line of
    the description), what went wrong on stderr, then stopped."""
    if not configs:
        return fail(f"error: {none_configured(settings.mcp)}")
    servers = Servers(configs, settings)
    try:
        for note in servers.served.notes:
            to_stderr(shown(f"note: {note}"))
        for tool in servers.served.tools:
            server, _, name = tool.name.partition("__")
            about = tool.schema["function"].get("description", "").strip().split("\n")[0]
            print(shown(f"{tool.name}  (server {server}) {about}"))
    finally:
        servers.close()
    return 0


@contextlib.contextmanager
def session_servers(talk: Conversation, configs: tuple[ServerConfig, ...]) -> typing.Iterator[None]:
    """A session's MCP servers: started once and kept for its life, each task's run using them."""
    if not configs:
        yield
        return
    with talk.live.waiting("starting MCP servers…"):  # each may take AGENT_MCP_TIMEOUT
        servers = Servers(configs, talk.settings)
    talk.settings = dataclasses.replace(talk.settings, mcp=servers)
    try:
        yield
    finally:
        servers.close()
