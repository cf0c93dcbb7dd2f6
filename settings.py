"""Every setting, declared once in TABLE (name, variable, default, parser, whether .env may set it, flag), and
resolved once when a run starts: run()'s keyword arguments or the flags, then the environment, then the agent's
own .env, then the defaults. The run then carries its Settings; tools read them with current()."""

import contextlib
import contextvars
import dataclasses
import math
import os
import typing
from pathlib import Path

from dotenv import dotenv_values

import sandbox

AGENT_FOLDER = Path(__file__).resolve().parent
DOTENV = AGENT_FOLDER / ".env"  # the agent's own folder, never the workspace: a model cannot write our settings
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


class ConfigError(ValueError):
    """A setting only the person running the agent can fix (a missing key, an unknown backend)."""


def number(kind: type) -> typing.Callable[[typing.Any], int | float]:
    """The one number parser: a positive, finite int or float, from text or from a number (never a bool)."""
    def parse(raw: typing.Any) -> int | float:
        try:
            value = kind(raw)
        except (TypeError, ValueError, OverflowError):
            value = 0
        if isinstance(raw, bool) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"must be a positive {'whole number' if kind is int else 'number'}, not {raw!r}")
        return value
    parse.__name__, parse.metavar = f"positive {kind.__name__}", "SECONDS" if kind is float else "N"
    return parse


def one_of(*allowed: str) -> typing.Callable[[typing.Any], str]:
    def parse(raw: typing.Any) -> str:
        if raw not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, not {raw!r}")
        return raw
    parse.choices = allowed
    return parse


def folder(raw: typing.Any) -> Path:
    path = Path(raw).resolve()
    if not path.is_dir():
        raise ConfigError(f"the workspace {path} is not a folder; check --workspace or AGENT_WORKSPACE")
    return path


def backend(raw: typing.Any) -> str:
    if raw not in BACKENDS:
        raise ConfigError(f"unknown backend {raw!r}; known backends: {', '.join(BACKENDS)}")
    return raw


def programs(raw: typing.Any) -> frozenset[str]:
    """Program names, comma-separated (or a list of them). A list that cannot be what was meant is refused, not
    guessed at: an empty name (make,,pytest), a name with a space inside, a path, or an option."""
    names = [str(name).strip() for name in (raw.split(",") if isinstance(raw, str) else raw)]
    for name in names:
        if not name or any(c.isspace() or c in "/\\" for c in name) or name.startswith("-"):
            raise ConfigError(f"AGENT_ALLOW (--allow) must be program names separated by commas, like make,pytest, "
                              f"not {raw!r}: {'an empty name' if not name else repr(name)} is not a program's name")
    return frozenset(names)


folder.metavar, programs.metavar = "DIR", "PROGRAMS"  # how --help names their values


def approval(raw: typing.Any) -> bool:
    if raw in (False, True):
        return raw
    if raw == "all":
        return True
    raise ValueError(f"must be 'all' or unset, not {raw!r}; use --yes to approve everything")


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str  # run()'s keyword argument, and the field of Settings
    variable: str
    default: typing.Any  # None: worked out in resolve() (the backend's model, the current folder)
    parse: typing.Callable[[typing.Any], typing.Any]
    flag: str | None = None
    help: str = ""
    from_dotenv: bool = True  # False for settings that widen what runs without asking
    default_text: str = ""  # how --help names a default worked out in resolve()


TABLE = [
    Setting("backend", "AGENT_BACKEND", "groq", backend, "--backend", "groq, openai or ollama"),
    Setting("model", "AGENT_MODEL", None, str, "--model", "the model name", default_text="the backend's"),
    Setting("timeout", "AGENT_TIMEOUT", 60.0, number(float), None, "seconds one model request may take in all, "
            "retries included"),
    Setting("max_steps", "AGENT_MAX_STEPS", 10, number(int), "--max-steps", "most model requests in one run"),
    Setting("max_chars", "AGENT_MAX_CHARS", 4000, number(int), None, "longest tool result the model sees"),
    Setting("shell_timeout", "AGENT_SHELL_TIMEOUT", 30.0, number(float), "--shell-timeout --timeout",
            "seconds before a shell command and its children are killed"),
    Setting("context_budget", "AGENT_CONTEXT_BUDGET", 6000, number(int), None, "estimated tokens per request"),
    Setting("approve_all", "AGENT_APPROVE", False, approval, "--yes", "approve every command and write without "
            "asking (AGENT_APPROVE=all); only for a folder and task you trust", from_dotenv=False, default_text="ask"),
    Setting("allow", "AGENT_ALLOW", frozenset(), programs, "--allow", "more programs that run without asking, "
            "comma-separated (make,pytest)", from_dotenv=False, default_text="none"),
    Setting("sandbox", "AGENT_SANDBOX", "auto", one_of("auto", "off"), "--sandbox", "auto: commands run in a "
            "kernel sandbox where the system has one; off: no sandbox", from_dotenv=False),
    Setting("workspace", "AGENT_WORKSPACE", None, folder, "--workspace", "the folder the agent may work in",
            from_dotenv=False, default_text="the current folder"),
    Setting("reasoning_effort", "AGENT_REASONING_EFFORT", None, one_of("low", "medium", "high"),
            "--reasoning-effort", "how much the model reasons before it answers", default_text="the server's"),
]
BY_NAME = {setting.name: setting for setting in TABLE}
# What resolve() works out from the table's settings, beside them.
DERIVED = [("base_url", str), ("api_key", str),
           ("sandboxed", bool),  # commands run under Landlock: wanted, and the system has it
           ("filtered", bool),  # unasked commands run under a seccomp filter: wanted, and the system has it
           ("protected", tuple), ("secrets", tuple), ("notes", tuple), ("undo", Path | None)]
# One run's settings: a frozen dataclass with a field for each row of TABLE and each of DERIVED.
Settings = dataclasses.make_dataclass("Settings", [(s.name, typing.Any) for s in TABLE] + DERIVED, frozen=True)


def resolve(*, require_key: bool = True, **given: typing.Any) -> Settings:
    """One run's settings: each one given (not None) wins, else its variable, else its default.
    Raises ConfigError (one line, saying what to fix) for a bad value, TypeError for an unknown name."""
    if unknown := set(given) - set(BY_NAME):
        raise TypeError(f"unknown setting {', '.join(sorted(unknown))}; known: {', '.join(BY_NAME)}")
    env, notes = environment()
    values = {}
    for setting in TABLE:
        raw = given.get(setting.name)
        where = f"the {setting.name}= argument" if raw is not None else f"{setting.variable} in .env or the environment"
        raw = env.get(setting.variable) or None if raw is None else raw
        try:
            values[setting.name] = setting.default if raw is None else setting.parse(raw)
        except ConfigError:
            raise  # worded already
        except ValueError as error:
            raise ConfigError(f"{setting.variable} {error}; fix {where}") from None
    preset = BACKENDS[values["backend"]]
    values["model"] = values["model"] or preset["model"]
    values["workspace"] = values["workspace"] or Path.cwd().resolve()
    missing, unfiltered = sandbox.unavailable(), sandbox.unfiltered()
    if values["sandbox"] == "off":
        notes.append("commands run without the kernel sandbox (--sandbox off); the allowlist and approval still apply")
    elif missing or unfiltered:
        notes.append(sandbox_note(missing, unfiltered))
    return Settings(
        **values,
        base_url=env.get(preset["url_variable"]) or preset["url"],
        api_key=api_key(preset, env) if require_key else env.get(preset["key"] or "", ""),
        sandboxed=values["sandbox"] != "off" and not missing,
        filtered=values["sandbox"] != "off" and not unfiltered,
        # realpath, not resolve(): Python 3.11 raises on a loop of links (a runs/ left linked to itself)
        protected=(Path(os.path.realpath(os.path.join(os.getcwd(), RUNS))),),  # .env: confine() refuses it
        secrets=tuple({env[p["key"]] for p in BACKENDS.values() if p["key"] and env.get(p["key"])}),
        notes=tuple(notes),
        undo=None,
    )


def sandbox_note(missing: str | None, unfiltered: str | None) -> str:
    """The one start note on what of the kernel sandbox is missing here: Landlock (`missing` says why), the
    seccomp filter (`unfiltered` says why), or both."""
    if missing and (not unfiltered or unfiltered == missing):
        without = f"a kernel sandbox here ({missing})"
    elif missing:
        without = f"a kernel sandbox here ({missing}; seccomp: {unfiltered})"
    else:
        without = (f"seccomp here ({unfiltered}): those that run without asking can still use UDP and Unix "
                   "sockets and change files' modes and times")
    return f"commands run without {without}; the allowlist and approval still apply"


def environment() -> tuple[dict[str, str], list[str]]:
    """The environment over the agent's .env (a variable already set wins), and notes on what .env may not set."""
    try:
        # utf-8-sig: a byte order mark (some editors save one) is not part of the first name, on every python-dotenv
        from_file = {k: v or "" for k, v in dotenv_values(DOTENV, encoding="utf-8-sig").items()} \
            if DOTENV.is_file() else {}
    except (UnicodeDecodeError, OSError) as error:
        raise ConfigError(f"{DOTENV} cannot be read as UTF-8 text ({error}); save it as UTF-8") from None
    ignored = [s.variable for s in TABLE if not s.from_dotenv and s.variable in from_file]
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


CURRENT: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("settings", default=None)


def current() -> Settings:
    """The settings of the run this code is part of: how a tool reads them (current().workspace, ...).
    Outside a run (run() or `with use(settings)`) there are none, and this raises."""
    if (settings := CURRENT.get()) is None:
        raise RuntimeError("no run is going on: tools read their run's settings, so call them inside run(), "
                           "or inside `with settings.use(settings.resolve(...))`")
    return settings


@contextlib.contextmanager
def use(settings: Settings) -> typing.Iterator[Settings]:
    """Make these the current settings in this thread (and its context) for the duration of a run."""
    token = CURRENT.set(settings)
    try:
        yield settings
    finally:
        CURRENT.reset(token)
