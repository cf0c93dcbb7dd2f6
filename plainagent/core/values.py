"""How a setting's text becomes its value (beyond the tutorial): the backends' presets, one
parser per kind of value, and ConfigError, the one-line error a person fixes; text_of(), how a file
of settings is read."""

import errno
import math
import os
import stat
import typing
import urllib.parse
from pathlib import Path

# Bytes a file of settings may hold (.env, an MCP config, an output schema): each is a few KB; a
# bigger one is not one (a log named by mistake), and would take the run's memory and time to read
SETTINGS_FILE_LIMIT = 1_000_000


class Backend(typing.TypedDict):
    """A backend's preset; key is None for a server that takes no key (ollama). output: how run()'s
    output= asks for JSON: "json_schema" (structured outputs, the server keeps to the schema) or
    "json_object" (JSON mode, the schema in the request's text); either way the answer is
    checked."""

    key: str | None
    url_variable: str
    url: str
    model: str
    output: str


# Presets are data: each backend names its key variable, its base-URL variable and default, and its
# model.
BACKENDS: dict[str, Backend] = {
    "groq": {
        "key": "GROQ_API_KEY",
        "url_variable": "GROQ_BASE_URL",
        "url": "https://api.groq.com/openai/v1",
        "model": "openai/gpt-oss-120b",
        "output": "json_schema",  # strict on gpt-oss; a model without it is asked in JSON mode
    },
    "openai": {
        "key": "OPENAI_API_KEY",
        "url_variable": "OPENAI_BASE_URL",
        "url": "https://api.openai.com/v1",
        "model": "gpt-4.1-mini",
        "output": "json_schema",
    },
    "ollama": {
        "key": None,
        "url_variable": "OLLAMA_BASE_URL",
        "url": "http://localhost:11434/v1",
        "model": "gpt-oss:20b",
        "output": "json_object",  # Ollama before 0.5 ignores a schema; JSON mode it always keeps
    },
}


class ConfigError(ValueError):
    """A setting only the person running the agent can fix (a missing key, an unknown backend)."""


def number(kind: type) -> typing.Callable[[typing.Any], int | float]:
    """The one number parser: a positive, finite int or float, from text or from a number (never a
    bool)."""

    def parse(raw: typing.Any) -> int | float:
        try:
            value = kind(raw)
        except (TypeError, ValueError, OverflowError):
            value = 0
        if isinstance(raw, bool) or not math.isfinite(value) or value <= 0:
            raise ValueError(
                f"must be a positive {'whole number' if kind is int else 'number'}, not {raw!r}"
            )
        return value

    parse.__name__ = f"positive {kind.__name__}"
    parse.metavar = "SECONDS" if kind is float else "N"  # type: ignore[attr-defined]  # read by --help
    return parse


def word(raw: typing.Any) -> typing.Any:
    """A person's word in the case choices are written in (Groq is groq); else as it is."""
    return raw.lower() if isinstance(raw, str) else raw


def one_of(*allowed: str) -> typing.Callable[[typing.Any], str]:
    def parse(raw: typing.Any) -> str:
        if (said := word(raw)) not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, not {raw!r}")
        return said

    parse.choices = allowed  # type: ignore[attr-defined]  # read by --help
    return parse


def folder(raw: typing.Any) -> Path:
    # ~ too where no shell expanded it (DIR=~/x); not resolve(): a loop of links must not raise
    path = Path(os.path.realpath(os.path.expanduser(raw)))
    if not path.is_dir():
        raise ConfigError(
            f"the workspace {path} is not a folder; check --workspace or AGENT_WORKSPACE"
        )
    return path


def backend(raw: typing.Any) -> str:
    if (said := word(raw)) not in BACKENDS:
        raise ConfigError(f"unknown backend {raw!r}; known backends: {', '.join(BACKENDS)}")
    return said


def programs(raw: typing.Any) -> frozenset[str]:
    """Program names, comma-separated (or a list of them). A list that cannot be what was meant is
    refused, not guessed at: an empty name (make,,pytest), a name with a space inside, a path, or an
    option."""
    names = [str(name).strip() for name in (raw.split(",") if isinstance(raw, str) else raw)]
    for name in names:
        if not name or any(c.isspace() or c in "/\\" for c in name) or name.startswith("-"):
            raise ConfigError(
                "AGENT_ALLOW (--allow) must be program names separated by commas, like "
                "make,pytest, "
                f"not {raw!r}: {'an empty name' if not name else repr(name)} is not a program's "
                "name"
            )
    return frozenset(names)


def mcp_config(raw: typing.Any) -> typing.Any:
    """Where a run's MCP servers are configured (mcp/config.py reads it): a file's path, or the
    config itself as a dict."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, (str, os.PathLike)) and str(raw):
        return Path(os.path.expanduser(raw))
    raise ValueError(f"must be a JSON file's path or a dict of mcpServers, not {raw!r}")


mcp_config.metavar = "FILE"  # type: ignore[attr-defined]  # a function attribute


folder.metavar = "DIR"  # type: ignore[attr-defined]  # a function attribute: how --help names it
programs.metavar = "PROGRAMS"  # type: ignore[attr-defined]  # a function attribute


def address(raw: typing.Any) -> str:
    """A server's base URL: http or https, with a host (and a port that is a number), so that a
    value the SDK cannot use is one line before the run, not a connection error at its first
    request ("could not reach the model server at /") or an InvalidURL."""
    try:
        parts = urllib.parse.urlsplit(str(raw))
        parts.port  # noqa: B018  raises ValueError for a port that is no number
    except ValueError:
        parts = urllib.parse.urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"must be an http:// or https:// address, like https://api.groq.com/openai/v1, not "
            f"{raw!r}"
        )
    return str(raw)


def key(raw: typing.Any) -> str:
    """An API key as an HTTP header carries it: printable ASCII, with no space at either end. A
    key read from a file with its line break was sent as nothing at all, and said 'Connection
    error.' after every retry. The error never shows the key."""
    text = str(raw)
    if text.isascii() and text.isprintable() and text == text.strip():
        return text
    raise ValueError(
        "must be the key alone: it holds a space or line break at an end, or a character an HTTP "
        "header cannot carry (a line read from a file keeps its line break: strip() it)"
    )


def approval(raw: typing.Any) -> bool:
    if raw in (False, True):
        return raw
    if word(raw) == "all":
        return True
    raise ValueError(f"must be 'all' or unset, not {raw!r}; use --yes to approve everything")


def switch(raw: typing.Any) -> bool | None:
    """on or off (True or False from a script, 1 or 0, yes or no), or auto: None."""
    words = {"on": True, "1": True, "yes": True, "off": False, "0": False, "no": False}
    if (said := word(raw)) == "auto" or raw in (False, True):
        return None if said == "auto" else raw
    if said in words:
        return words[said]
    raise ValueError(f"must be on, off or auto, not {raw!r}")


def text_of(path: Path) -> str:
    """A file of settings a person names, as UTF-8 text (a BOM left out): only a regular file
    (opened without waiting: a FIFO), at most SETTINGS_FILE_LIMIT bytes (not /dev/zero); else
    OSError, its strerror saying why, or UnicodeDecodeError."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    with open(os.open(path, flags), "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file")
        data = file.read(SETTINGS_FILE_LIMIT + 1)
    if len(data) > SETTINGS_FILE_LIMIT:
        raise OSError(errno.EFBIG, f"it is over {SETTINGS_FILE_LIMIT // 1_000_000} MB")
    return data.decode("utf-8-sig")
