"""Every setting in one place: resolved once when a run starts (keyword arguments, then the environment, then
the agent's own .env, then the defaults below), validated with one-line errors, then carried by the run.
Tools read the run's settings with current(); called outside any run, they get the environment's defaults."""

import contextlib
import contextvars
import dataclasses
import math
import os
import re
import typing
from pathlib import Path

from dotenv import dotenv_values

import sandbox

AGENT_FOLDER = Path(__file__).resolve().parent
DOTENV = AGENT_FOLDER / ".env"  # the agent's own folder, never the workspace: a model cannot write our settings
# Settings that widen what runs without asking: only the real environment and the flags may set them.
NOT_FROM_DOTENV = ("AGENT_APPROVE", "AGENT_ALLOW", "AGENT_SANDBOX", "AGENT_WORKSPACE")
RUNS = "runs"  # the command line's transcripts, in the working folder

# Presets are data: each backend names its key variable, its base-URL variable and default, and its model.
BACKENDS = {
    "groq": {"key": "GROQ_API_KEY", "url_variable": "GROQ_BASE_URL",
             "url": "https://api.groq.com/openai/v1", "model": "openai/gpt-oss-120b"},
    "openai": {"key": "OPENAI_API_KEY", "url_variable": "OPENAI_BASE_URL",
               "url": "https://api.openai.com/v1", "model": "gpt-4.1-mini"},
    "ollama": {"key": None, "url_variable": "OLLAMA_BASE_URL",
               "url": "http://localhost:11434/v1", "model": "gpt-oss:20b"},
}
DEFAULT_BACKEND = "groq"
TIMEOUT = 60.0  # seconds one model request may take in all, retries included (AGENT_TIMEOUT)
MAX_STEPS = 10  # model requests in one run (--max-steps, AGENT_MAX_STEPS)
MAX_CHARS = 4000  # longest tool result the model sees (AGENT_MAX_CHARS)
SHELL_TIMEOUT = 30.0  # seconds before run_shell kills the whole command (--timeout, AGENT_SHELL_TIMEOUT)
CONTEXT_BUDGET = 6000  # estimated tokens per request (AGENT_CONTEXT_BUDGET); fits the free plan's 8,000 TPM
SANDBOX_MODES = ("auto", "off")
REASONING_EFFORTS = ("low", "medium", "high")


class ConfigError(ValueError):
    """A setting only the person running the agent can fix (a missing key, an unknown backend)."""


@dataclasses.dataclass(frozen=True)
class Settings:
    backend: str
    model: str
    base_url: str
    api_key: str
    timeout: float
    max_steps: int
    max_chars: int
    shell_timeout: float
    context_budget: int
    workspace: Path
    allow: frozenset[str]
    approve_all: bool
    sandbox: str
    reasoning_effort: str | None
    protected: tuple[Path, ...]  # written by no file tool and named by no command that runs without asking
    secrets: tuple[str, ...]  # every backend key the environment holds: kept out of commands and every line we write
    notes: tuple[str, ...] = ()  # said once when the run starts (a setting .env may not make, a missing sandbox)
    undo: Path | None = None  # the folder that keeps what undo needs for this task (the CLI sets it; else none)


RUN_SETTINGS = ("backend", "model", "timeout", "max_steps", "max_chars", "shell_timeout", "context_budget",
                "workspace", "allow", "approve_all", "sandbox", "reasoning_effort")


def resolve(*, require_key: bool = True, **given: typing.Any) -> Settings:
    """One run's settings: each one given (not None) wins, else its variable, else its default."""
    if unknown := set(given) - set(RUN_SETTINGS):
        raise TypeError(f"unknown setting {', '.join(sorted(unknown))}; known: {', '.join(RUN_SETTINGS)}")
    env, notes = environment()

    def pick(name: str, variable: str) -> typing.Any:
        return given[name] if given.get(name) is not None else env.get(variable) or None

    def positive(name: str, variable: str, default: int | float) -> int | float:
        where = f"the {name}= argument" if given.get(name) is not None else f"{variable} in .env or the environment"
        return number(pick(name, variable), variable, default, where)

    backend = pick("backend", "AGENT_BACKEND") or DEFAULT_BACKEND
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; known backends: {', '.join(BACKENDS)}")
    preset = BACKENDS[backend]
    workspace = Path(pick("workspace", "AGENT_WORKSPACE") or os.getcwd()).resolve()
    if not workspace.is_dir():
        raise ConfigError(f"the workspace {workspace} is not a folder; check --workspace or AGENT_WORKSPACE")
    allow = pick("allow", "AGENT_ALLOW") or ()
    if isinstance(allow, str):
        allow = allow.split(",")
    sandbox_setting = choice(pick("sandbox", "AGENT_SANDBOX"), "AGENT_SANDBOX", SANDBOX_MODES) or "auto"
    if sandbox_setting == "off":
        notes.append("commands run without the kernel sandbox (--sandbox off); the allowlist and approval still apply")
    elif missing := sandbox.available():
        notes.append(f"commands run without a kernel sandbox here ({missing}); the allowlist and approval "
                     "still apply")
    return Settings(
        backend=backend,
        model=pick("model", "AGENT_MODEL") or preset["model"],
        base_url=env.get(preset["url_variable"]) or preset["url"],
        api_key=api_key(preset, env) if require_key else env.get(preset["key"] or "", ""),
        timeout=positive("timeout", "AGENT_TIMEOUT", TIMEOUT),
        max_steps=positive("max_steps", "AGENT_MAX_STEPS", MAX_STEPS),
        max_chars=positive("max_chars", "AGENT_MAX_CHARS", MAX_CHARS),
        shell_timeout=positive("shell_timeout", "AGENT_SHELL_TIMEOUT", SHELL_TIMEOUT),
        context_budget=positive("context_budget", "AGENT_CONTEXT_BUDGET", CONTEXT_BUDGET),
        workspace=workspace,
        allow=frozenset(program.strip() for program in allow if program.strip()),
        approve_all=approval(pick("approve_all", "AGENT_APPROVE")),
        sandbox=sandbox_setting,
        reasoning_effort=choice(pick("reasoning_effort", "AGENT_REASONING_EFFORT"), "AGENT_REASONING_EFFORT",
                                REASONING_EFFORTS),
        protected=(Path(os.getcwd(), RUNS).resolve(),),  # the agent's .env: confine() refuses it outright
        secrets=tuple({env[p["key"]] for p in BACKENDS.values() if p["key"] and env.get(p["key"])}),
        notes=tuple(notes),
    )


def environment() -> tuple[dict[str, str], list[str]]:
    """The environment over the agent's .env (a variable already set wins), and what .env may not set."""
    try:
        from_file = {k: v or "" for k, v in dotenv_values(DOTENV, encoding="utf-8").items()} if DOTENV.is_file() else {}
    except (UnicodeDecodeError, OSError) as error:
        raise ConfigError(f"{DOTENV} cannot be read as UTF-8 text ({error}); save it as UTF-8") from None
    ignored = [name for name in NOT_FROM_DOTENV if name in from_file]
    notes = [f"{', '.join(ignored)} in {DOTENV} {'is' if len(ignored) == 1 else 'are'} ignored: set "
             f"{'it' if len(ignored) == 1 else 'them'} in the environment or with a flag"] if ignored else []
    for name in ignored:
        del from_file[name]
    # An empty variable in the environment does not hide a value in .env (an `export GROQ_API_KEY=` left over).
    return {**from_file, **{k: v for k, v in os.environ.items() if v or k not in from_file}}, notes


def api_key(preset: dict, env: dict[str, str]) -> str:
    variable = preset["key"]
    if variable is None:
        return "no-key-needed"
    if env.get(variable):
        return env[variable]
    if variable in env:
        raise ConfigError(f"{variable} is empty: put your key after {variable}= in {DOTENV} "
                          f"(or export {variable}=...)")
    raise ConfigError(f"{variable} is not set: copy .env.example to .env in {AGENT_FOLDER} and put your key "
                      f"in it (or export {variable}=...)")


def number(raw: typing.Any, variable: str, default: int | float, where: str = "it in .env or the environment"
           ) -> int | float:
    """A positive, finite number of the default's type, or the default if unset; `where` it came from, to fix."""
    if raw is None or raw == "":
        return default
    try:
        value = type(default)(raw)
    except (TypeError, ValueError, OverflowError):
        value = 0
    if isinstance(raw, bool) or not math.isfinite(value) or value <= 0:
        kind = "whole number" if isinstance(default, int) else "number"
        raise ConfigError(f"{variable} must be a positive {kind}, not {raw!r}; fix {where}")
    return value


def approval(raw: typing.Any) -> bool:
    if raw in (None, "", False, True):
        return bool(raw)
    if raw == "all":
        return True
    raise ConfigError(f"AGENT_APPROVE must be 'all' or unset, not {raw!r}; use --yes to approve everything")


def choice(raw: str | None, variable: str, allowed: tuple[str, ...]) -> str | None:
    if raw is None or raw == "":
        return None
    if raw not in allowed:
        raise ConfigError(f"{variable} must be one of {', '.join(allowed)}, not {raw!r}")
    return raw


CURRENT: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("settings", default=None)


def current() -> Settings:
    """The settings of the run this code is part of; outside a run, the environment's defaults."""
    return CURRENT.get() or resolve(require_key=False)


@contextlib.contextmanager
def use(settings: Settings) -> typing.Iterator[Settings]:
    """Make these the current settings in this thread (and its context) for the duration of a run."""
    token = CURRENT.set(settings)
    try:
        yield settings
    finally:
        CURRENT.reset(token)


SHORTEST_SECRET_PIECE = 12  # no run of this many characters of a key is ever written or printed


def redactor(secrets: typing.Iterable[str]) -> typing.Callable[[str], str]:
    """A function that replaces each key, and any run of SHORTEST_SECRET_PIECE or more of its characters,
    with [redacted API key]. A key shorter than that is replaced only where it stands alone."""
    secrets = [secret for secret in secrets if secret]
    pieces = {secret[i:i + SHORTEST_SECRET_PIECE]: secret[i:] for secret in secrets
              for i in range(max(1, len(secret) - SHORTEST_SECRET_PIECE + 1))}
    if not pieces:
        return lambda text: text
    pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(p)}(?![\w-])" if len(p) < SHORTEST_SECRET_PIECE
                                  else re.escape(p) for p in sorted(pieces, key=len, reverse=True)))

    def redact(text: str) -> str:
        if not any(piece in text for piece in pieces):  # str's own search is fast; the regex runs only if needed
            return text
        out, at = [], 0
        while match := pattern.search(text, at):
            rest, end = pieces[match[0]], match.end()
            while end - match.start() < len(rest) and text[end:end + 1] == rest[end - match.start()]:
                end += 1  # the run goes on along the key
            out += [text[at:match.start()], "[redacted API key]"]
            at = end
        return "".join(out) + text[at:]

    return redact
