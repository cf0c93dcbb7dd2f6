"""Running one command (phase 2): run_shell's command as the gate decided it (decision.py), under
its sandbox policy, with a timeout and an output limit, in its own process group, with nothing that
could wait for a person; and its result for the model: the exit code, then the start and end of
stdout and stderr."""

import os
import subprocess
import sys
import tempfile
import time
import typing
from pathlib import Path

from plainagent.core import stop
from plainagent.core.ownfiles import (
    LAUNCHER,
    launcher_names,
    launchers_on_path_in,
    pythons_on_path_in,
)
from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import BACKENDS, Settings
from plainagent.sandbox import process as sandbox
from plainagent.sandbox.policy import Policy
from plainagent.shell.allowlist import (
    UNASKED_READ_ONLY,
    WINDOWS,
    prepare,
    unasked_environment,
)
from plainagent.shell.decision import Decision
from plainagent.shell.gitguard import git_environment
from plainagent.shell.pythons import for_project, without_agent
from plainagent.workspace.files import decode, readable
from plainagent.workspace.snapshot import kept_for_undo, without_undo

MAX_OUTPUT_BYTES = 10_000_000  # stdout + stderr a command may write before it is killed
WATCH_INTERVAL = 0.02  # seconds between looks at a running command's output size


def run_command(decided: Decision, settings: Settings) -> str:
    """Run the command in the workspace as decided; return its status line, then what it printed,
    within max_chars, and what of it was taken away: a launcher it put on PATH
    (planted_launchers)."""
    # One that may write (approved, or with a program the person trusts) is kept for undo first
    writes = decided.mode != UNASKED_READ_ONLY
    kept = settings if writes else without_undo(settings)
    return watched(decided.command.text, kept, lambda: run_sandboxed(decided, settings))


def watched(
    step: str, settings: Settings, work: typing.Callable[[], str], by: str = "a command"
) -> str:
    """What `work` (a command, or a call of an MCP server that writes) returns, the workspace kept
    for undo before it as the step `step` (where settings.undo is set), and after it, whatever
    stopped it, each launcher it put on PATH in the workspace removed (planted_launchers), with
    what the model is told of that."""
    before = on_path_in(settings.workspace)
    try:
        with kept_for_undo(step, settings):
            result = work()
    finally:  # interrupted too: the command and all it started have ended
        removed = planted_launchers(before, settings, by)
    return "\n".join([result, *removed])


def planted_launchers(
    before: dict[Path, tuple[int, int]], settings: Settings, by: str = "a command"
) -> list[str]:
    """Remove each file of the launcher's name that the command (or what `by` names: an MCP
    server's call) made, or put in place of one, in a folder of PATH in the workspace, and say so
    on stderr; return what the model is told. The person's next `plainagent` would run it, outside
    the sandbox and with the key. Removed, not
    refused: the kernel could refuse it only by making the whole folder read-only (no `pip
    install` into the project's activated venv), and the command has ended, so nothing it started
    can put it back."""
    told = []
    for path, seen in on_path_in(settings.workspace).items():
        if before.get(path) == seen:
            continue
        name = path.relative_to(settings.workspace).as_posix()
        typed = LAUNCHER if path.name.lower() in launcher_names() else f"{path.name} harness.py"
        try:
            path.unlink()
        except FileNotFoundError:  # another run's check took it first
            continue
        except OSError as error:
            said = (
                f"{path} is a new {path.name} on PATH, which {by} made and the agent could not "
                f"remove ({error.strerror}): remove it before you type {typed} again, it would "
                "run in place of the agent"
            )
            told.append(f"note: {name} could not be removed; the user is told")
        else:
            said = (
                f"removed {path}, which {by} made: a {path.name} in a folder of PATH would run "
                f"in place of the agent the next time you type {typed}; if you want it there, "
                "put it there yourself"
            )
            told.append(
                f"note: {name} was removed: nothing the agent runs may put a file of that name "
                f"in a folder of PATH, where it would run in place of the agent ({typed}) at "
                "its next start"
            )
        print(shown(f"warning: {said}", redact=redactor(settings.secrets)), file=sys.stderr)
    return told


def on_path_in(workspace: Path) -> dict[Path, tuple[int, int]]:
    """What a person types to start the agent, where PATH finds it in the workspace: each
    `plainagent` (ownfiles.launchers_on_path_in) and the Python `python3 harness.py` runs
    (pythons_on_path_in)."""
    return {**launchers_on_path_in(workspace), **pythons_on_path_in(workspace)}


def run_sandboxed(decided: Decision, settings: Settings) -> str:
    """run_command() itself: the command run as decided, its result for the model."""
    tmp = sandbox.make_tmp()
    try:
        policy = decided.policy(settings, tmp)
        env = command_environment(decided, policy, settings)
        command = decided.command.text
        if decided.unasked:
            command = prepare(decided.command, settings, settings.allow)
    except BaseException:  # refused before it ran: its folder goes too
        sandbox.remove_tmp(tmp)
        raise
    # Files, not pipes: a background child that keeps a pipe open cannot make us wait for it.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            # The bytes misread_bytes() checked, not whatever Popen would encode the text to.
            process = sandbox.popen(
                command_bytes(command),
                policy,
                cwd=settings.workspace,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
            )
            try:
                code = wait_watching_output(process, settings.shell_timeout, (out, err))
                status = f"exit code: {code}"
            except subprocess.TimeoutExpired:
                status = (
                    f"timed out after {settings.shell_timeout:g} s; the command and its "
                    "children were killed"
                )
            except TooMuchOutput:
                status = (
                    f"stopped after {MAX_OUTPUT_BYTES // 1_000_000} MB of output; "
                    "the command and its children were killed"
                )
            finally:  # also on Ctrl-C, which never reaches a command in its own process group
                sandbox.finish(process)
        finally:
            sandbox.remove_tmp(tmp)
        result = shell_result(status, out, err, settings.max_chars)
        confined = policy.mode or policy.seccomp
        if decided.blocked_note and confined and sandbox.blocked(process.returncode, result):
            result += "\n" + decided.blocked_note
        return result


def command_environment(decided: Decision, policy: Policy, settings: Settings) -> dict:
    """The environment the command runs in (shell_environment()): unasked, PATH and LD_LIBRARY_PATH
    without the workspace (no planted bin/git, libc.so.6: allowlist.unasked_environment), and git
    whose repository's hooks and filters run nothing (gitguard.git_environment); the project's
    Python first where it runs one (project_environment())."""
    env = shell_environment(policy.tmp, settings)
    if decided.unasked:
        env = unasked_environment(env, decided.command, settings.allow, settings)
    if decided.project_python:
        env = project_environment(env, settings.workspace, confined=policy.mode is not None)
    if decided.unasked and "git" in decided.command.programs:  # trusted or not
        env = git_environment(settings, env)
    return env


def project_environment(env: dict, workspace: Path, confined: bool) -> dict:
    """The environment of an approved command, or of one that runs a program the person named with
    --allow: the project's venv first (pythons.for_project); under the sandbox, pip keeps no cache,
    since the person's (~/.cache/pip) is not a place a command may write and one in its private
    TMPDIR would be deleted when it ends (pip would warn that the cache is disabled, and to use
    sudo -H)."""
    env = for_project(env, workspace)
    return {**env, "PIP_NO_CACHE_DIR": "1"} if confined else env


def shell_environment(tmp: Path, settings: Settings) -> dict:
    """The environment for commands: no API keys, by name or in any variable that holds one or a
    piece the redactor would hide (a header, a URL with the key in it), not the agent's own venv, a
    private TMPDIR, and nothing may stop to wait for a person who is not there. No CDPATH: `cd sub`
    goes to the workspace's sub, where the checks followed it, not to a sub found on the person's
    CDPATH."""
    keys, redact = {preset["key"] for preset in BACKENDS.values()}, redactor(settings.secrets)
    given = without_agent(os.environ)
    return {
        **{k: v for k, v in given.items() if k not in {*keys, "CDPATH"} and redact(v) == v},
        "TMPDIR": str(tmp),
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_EDITOR": "true",
        "GCM_INTERACTIVE": "never",
    }


def command_bytes(command: str) -> bytes | str:
    """The command's bytes in the file system's encoding, the ones misread_bytes() checked, so that
    Python never encodes it on its own. Windows takes text (cmd.exe reads UTF-16)."""
    if WINDOWS:
        return command
    try:
        return os.fsencode(command)
    except UnicodeEncodeError as error:
        raise ValueError(
            f"the command has {error.object[error.start]!r}, which this locale's encoding "
            f"({error.encoding}) cannot write; use only characters it has"
        ) from None


class TooMuchOutput(Exception):
    """A command wrote more than MAX_OUTPUT_BYTES."""


def wait_watching_output(
    process: subprocess.Popen, timeout: float, files: tuple[typing.BinaryIO, ...]
) -> int:
    """process.wait(timeout), that also raises TooMuchOutput once the command's output files hold
    more than
    MAX_OUTPUT_BYTES: a command that prints without end would otherwise fill the disk until the
    timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return process.wait(timeout=max(0.0, min(WATCH_INTERVAL, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            stop.check()  # arun()'s task cancelled: the caller's finally kills the command
            if sum(os.fstat(f.fileno()).st_size for f in files) > MAX_OUTPUT_BYTES:
                raise TooMuchOutput() from None
            if time.monotonic() >= deadline:
                raise


def shell_result(status: str, out: typing.BinaryIO, err: typing.BinaryIO, max_chars: int) -> str:
    """The status line, then the start and end of stdout and of stderr, within AGENT_MAX_CHARS in
    all. Only the slices shown are read back: the files may hold MAX_OUTPUT_BYTES and more."""
    sizes = [os.fstat(f.fileno()).st_size for f in (out, err)]
    budget = max(0, max_chars - len(status) - len("\nstdout:\n\nstderr:\n"))
    if sum(sizes) <= budget:  # a byte is at most one character
        shares = sizes
    else:  # the smaller stream keeps up to half, the larger gets the rest
        small = min(min(sizes), budget // 2)
        shares = [budget - small, small] if sizes[0] >= sizes[1] else [small, budget - small]
    return "\n".join(
        [status]
        + [
            f"{name}:\n{excerpt(file, size, share)}"
            for name, file, size, share in zip(
                ("stdout", "stderr"), (out, err), sizes, shares, strict=True
            )
            if size
        ]
    )


def excerpt(file: typing.BinaryIO, size: int, chars: int) -> str:
    """At most `chars` characters of an output file: all of it, or its first third and last two
    thirds (errors are usually at the end) with a marker between saying how many bytes were left
    out."""
    file.seek(0)
    if size <= 4 * chars:
        text = decode(file.read(size), final=True)
        if len(text) <= chars:
            return readable(text)
    head_chars, tail_chars = chars // 3, chars - chars // 3
    file.seek(0)
    head = decode(file.read(4 * head_chars), final=False)[:head_chars]
    head_bytes = len(head.encode("utf-8", "surrogateescape"))
    start = max(head_bytes, size - 4 * tail_chars)
    file.seek(start)
    tail = decode(file.read(size - start), final=True)[-tail_chars:] if tail_chars else ""
    cut = size - head_bytes - len(tail.encode("utf-8", "surrogateescape"))
    return f"{readable(head)}\n[... cut {cut:,} bytes of {size:,} ...]\n{readable(tail)}"
