"""An MCP server's process (beyond the tutorial), started as a command that nobody asked for runs:
in a session of its own (its process group, killed whole when it stops), under Landlock and the
seccomp filter where the kernel has them: it reads what an unasked command reads, never the agent's
.env, its state folder or a project's .env, and writes only its private temporary folder; "writes":
true adds the workspace, "network": true the network. Its environment is the person's, without any
API key the agent knows, plus what the config's "env" names."""

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import typing
from pathlib import Path

from plainagent.core.settings import Settings
from plainagent.mcp.client import Connection, ServerFailed
from plainagent.mcp.config import ServerConfig
from plainagent.sandbox import process as sandbox
from plainagent.sandbox import seccomp
from plainagent.sandbox.policy import Policy
from plainagent.sandbox.readable import dotenv_files
from plainagent.shell.command import shell_environment
from plainagent.shell.decision import process_policy

WINDOWS = sys.platform == "win32"  # where the shell is cmd.exe, which has no exec
# (writes, network) -> (the Landlock mode, the seccomp filter): as an unasked read-only command by
# default, as a program the person allowed (--allow) with writes; with the network, no filter
MODES: dict[tuple[bool, bool], tuple[str, str | None]] = {
    (False, False): (sandbox.READ_ONLY, seccomp.NO_CHANGES),
    (True, False): (sandbox.WORKSPACE_WRITE, seccomp.NO_NETWORK),
    (False, True): (sandbox.READ_ONLY, None),
    (True, True): (sandbox.WORKSPACE_WRITE, None),
}


class Started(typing.NamedTuple):
    """A server's connection (its process in it), its temporary folder, removed when it stops, and
    the project's .env files its sandbox hides, as they were when it started."""

    connection: Connection
    tmp: Path
    dotenv: tuple[Path, ...] = ()


def start(server: ServerConfig, settings: Settings) -> Started:
    """Start the server under its sandbox policy; ServerFailed, naming it, where it cannot start."""
    tmp = sandbox.make_tmp()
    try:
        env = server_environment(server, tmp, settings)
        cwd = settings.workspace / server.cwd if server.cwd else settings.workspace
        if not cwd.is_dir():
            raise ServerFailed(f'MCP server {server.name}: its "cwd" {cwd} is not a folder')
        program = found(server, cwd, env.get("PATH"))
        # Its own folder first: a Python server's venv is then one the sandbox lets it read
        folder = os.path.dirname(program)
        env["PATH"] = os.pathsep.join([folder, env.get("PATH", "")])
        words = [program, *server.args]
        line = subprocess.list2cmdline(words) if WINDOWS else "exec " + shlex.join(words)
        dotenv = dotenv_files(settings.workspace)  # PermissionError past MOST_ENTRIES
        process = sandbox.popen(
            line,
            policy(server, settings, tmp, dotenv),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
    except (OSError, RuntimeError, ValueError) as error:  # ValueError: what exec cannot take
        sandbox.remove_tmp(tmp)
        raise ServerFailed(f"MCP server {server.name} could not start: {error}") from None
    except BaseException:
        sandbox.remove_tmp(tmp)
        raise
    return Started(Connection(server.name, process), tmp, dotenv)


def found(server: ServerConfig, cwd: Path, path: str | None) -> str:
    """The server's program as an absolute path: a command with a folder in it (./server.py) from
    the folder the server starts in, as its args are; a bare name from PATH."""
    if os.sep in server.command or (os.altsep and os.altsep in server.command):
        program = shutil.which(os.path.join(cwd, server.command))
        where = f"is no program in {cwd}"
    else:
        program = shutil.which(server.command, path=path)
        where = "is not found on PATH"
    if program is None:
        raise ServerFailed(f"MCP server {server.name}: {server.command!r} {where}")
    return os.path.abspath(program)


def stop(started: Started, grace: float) -> None:
    """Close its input, give it `grace` seconds to exit, then kill its process group and whatever
    it left (sandbox.finish), and remove its temporary folder."""
    connection = started.connection
    connection.close_input()
    with contextlib.suppress(subprocess.TimeoutExpired):
        connection.process.wait(grace)
    sandbox.finish(connection.process)  # its stdout and stderr its threads close (client.py)
    sandbox.remove_tmp(started.tmp)


def policy(
    server: ServerConfig, settings: Settings, tmp: Path, dotenv: tuple[Path, ...] | None = None
) -> Policy:
    """The sandbox policy a server runs under (MODES), as decision.py makes an unasked command's:
    where the run wants the sandbox and the kernel has it; never reading the agent's .env and
    mcp.json (nor making them), the state folder or a project's .env, never writing the state
    folder, with no capabilities. `dotenv`: the project's .env files, where they were looked for
    already."""
    landlock, filtered = MODES[server.writes, server.network]
    return process_policy(
        settings, tmp, landlock, filtered, unasked=True, network=server.network, dotenv=dotenv
    )


def server_environment(server: ServerConfig, tmp: Path, settings: Settings) -> dict[str, str]:
    """The person's variables without an API key the agent knows (as a command's), then the
    config's own."""
    return {**shell_environment(tmp, settings), **dict(server.env)}
