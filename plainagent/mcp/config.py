"""Which MCP servers a run starts (beyond the tutorial): the `mcpServers` JSON that Claude Desktop,
Cursor and Claude Code write, read from mcp.json beside the agent's .env, or from the file or dict
the person names (--mcp FILE, run(mcp=...)); never from the workspace unless named. A field it does
not know, or a server without a command, is a ConfigError: one line saying what to fix."""

import dataclasses
import json
import os
import re
import typing
from pathlib import Path

from plainagent.core import settings as agent_settings
from plainagent.core.ownfiles import MCP_CONFIG
from plainagent.core.values import ConfigError, text_of

# Each server's fields; type is "stdio" or left out (the only transport this client speaks)
FIELDS = ("command", "args", "env", "cwd", "network", "writes", "trust", "type")
# Letters, digits and - or _, never two _ in a row: they part a tool's name from its server's
NAME = re.compile(r"[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*")
LONGEST_NAME = 30  # of a server's name; OpenAI takes tool names of 64 characters at most


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """One server as configured: the program and its arguments, what its environment adds, the
    folder it starts in (None: the workspace), and what the sandbox lets it do beyond reading:
    write the workspace (`writes`), use the network (`network`); `trust`: its tools run unasked."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: Path | None = None
    network: bool = False
    writes: bool = False
    trust: bool = False


def config_file() -> Path:
    """mcp.json in the agent's configuration folder, beside its .env (read now: a test moves it)."""
    return agent_settings.DOTENV.with_name(MCP_CONFIG)


def none_configured(source: typing.Any) -> str:
    """What --mcp-list says when `source` (read_config's) configures no server: the file to put
    them in, which for an installed copy is out of sight."""
    where = config_file() if source is None else source
    return f"no MCP servers are configured in {where}; put them there (docs/mcp.md)"


def read_config(source: typing.Any) -> tuple[ServerConfig, ...]:
    """The servers `source` configures: None for the configuration folder's mcp.json (none if it is
    missing), a path for that file, or the parsed dict. Raises ConfigError, one line, for a file
    that cannot be read or a config that is not one."""
    if isinstance(source, dict):
        return servers(source, "the mcp= dict")
    path = config_file() if source is None else Path(os.path.expanduser(source))
    if source is None and not path.exists():
        return ()
    where = str(path)
    try:
        data = json.loads(text_of(path))
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such file; name an existing MCP config (--mcp)") from None
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or error
        raise ConfigError(f"{where} cannot be read ({reason}); fix the file or --mcp") from None
    except (ValueError, RecursionError) as error:
        raise ConfigError(f"{where} is not JSON ({error}); fix the file") from None
    return servers(data, where)


def servers(data: typing.Any, where: str) -> tuple[ServerConfig, ...]:
    """Each server of a parsed config, checked."""
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise ConfigError(
            f'{where} must be a JSON object with "mcpServers": {{name: {{"command": ...}}}}'
        )
    if unknown := sorted(set(data) - {"mcpServers"}):
        raise ConfigError(f"{where} has an unknown field {unknown[0]!r}; only mcpServers is read")
    return tuple(server(name, entry, where) for name, entry in data["mcpServers"].items())


def server(name: str, entry: typing.Any, where: str) -> ServerConfig:
    """One server's entry, checked: each problem is one line naming the server and the field."""
    about = f"{where}: server {name!r}"
    if not NAME.fullmatch(name) or len(name) > LONGEST_NAME:
        raise ConfigError(
            f"{about}: a server's name is letters, digits, - and single _, at most "
            f"{LONGEST_NAME} characters; rename it"
        )
    if not isinstance(entry, dict):
        raise ConfigError(f'{about} must be a JSON object like {{"command": "mcp-server-time"}}')
    if unknown := [field for field in entry if field not in FIELDS]:
        raise ConfigError(
            f"{about} has an unknown field {unknown[0]!r}; the fields are {', '.join(FIELDS)}"
        )
    if entry.get("type", "stdio") != "stdio":
        raise ConfigError(f'{about}: only "type": "stdio" servers can be started; remove it')
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f'{about} has no "command"; add the program that starts it')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise ConfigError(f'{about}: "args" must be a list of strings')
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise ConfigError(f'{about}: "env" must be an object of strings, like {{"TZ": "UTC"}}')
    if bad := [name for name in env if not name or "=" in name]:
        raise ConfigError(
            f'{about}: "env" has {bad[0]!r}, which is no variable\'s name; give it one without "="'
        )
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(f'{about}: "cwd" must be a folder\'s path, as a string')
    texts = {"command": [command], "args": args, "env": [*env, *env.values()], "cwd": [cwd or ""]}
    if held := [field for field, values in texts.items() if any("\0" in v for v in values)]:
        raise ConfigError(
            f'{about}: "{held[0]}" holds a NUL character, which no program takes; remove it'
        )
    flags = {key: entry.get(key, False) for key in ("network", "writes", "trust")}
    if wrong := [key for key, value in flags.items() if not isinstance(value, bool)]:
        raise ConfigError(f'{about}: "{wrong[0]}" must be true or false')
    return ServerConfig(
        name=name,
        command=command,
        args=tuple(args),
        env=tuple(env.items()),
        cwd=None if cwd is None else Path(os.path.expanduser(cwd)),
        **flags,
    )
