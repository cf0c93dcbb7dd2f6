"""Every setting (beyond the tutorial), declared once as a field of Settings (with its variable,
default, parser, flag, and whether .env may set it), and resolved once when a run starts: run()'s
keyword arguments or the flags, then the environment, then the agent's own .env, then the defaults.
The run then carries its Settings, handed to each function that needs them (a tool declares a
`settings` parameter)."""

import dataclasses
import difflib
import io
import os
import typing
from pathlib import Path

from plainagent.core import statefolder
from plainagent.core.ownfiles import (
    AGENT_FOLDER,
    LAUNCHER,
    dotenv_file,
    installed,
    stray_launchers,
)
from plainagent.core.values import (
    BACKENDS,
    Backend,
    ConfigError,
    address,
    approval,
    backend,
    folder,
    key,
    mcp_config,
    number,
    one_of,
    programs,
    switch,
    text_of,
)

# Beside harness.py in a clone, else the configuration folder; never the workspace (a model writes)
DOTENV = dotenv_file()
RUNS = "runs"  # where an older version kept transcripts, in the folder a run started in


@dataclasses.dataclass(frozen=True)
class Setting:
    """How one field of Settings is set: its variable, its default, its parser, and its flag, if
    any."""

    name: str  # run()'s keyword argument, and the field of Settings
    variable: str
    default: typing.Any  # None: worked out in resolve() (the backend's model, the current folder)
    parse: typing.Callable[[typing.Any], typing.Any]
    flag: str | None = None
    help: str = ""
    from_dotenv: bool = True  # False for settings that widen what runs without asking
    default_text: str = ""  # how --help names a default worked out in resolve()
    # For a setting each backend names a variable for: the preset's field that names it ("key").
    # `variable` then says which they are, for --help.
    per_backend: typing.Literal["key", "url_variable"] | None = None


def setting(
    variable: str,
    default: typing.Any,
    parse: typing.Callable[[typing.Any], typing.Any],
    flag: str | None,
    help: str,
    *,
    from_dotenv: bool = True,
    default_text: str = "",
    per_backend: typing.Literal["key", "url_variable"] | None = None,
) -> typing.Any:
    """A field of Settings declared with how it is set (see Setting); resolve() gives every one a
    value."""
    row = dict(locals())  # its arguments, each a field of Setting
    return dataclasses.field(metadata={"setting": row})


@dataclasses.dataclass(frozen=True)
class Settings:
    """One run's settings, made by resolve(): a field per setting, declared here once with its
    variable, default, parser and flag; then what resolve() works out from them."""

    backend: str = setting("AGENT_BACKEND", "groq", backend, "--backend", "groq, openai or ollama")
    model: str = setting(
        "AGENT_MODEL", None, str, "--model", "the model name", default_text="the backend's"
    )
    timeout: float = setting(
        "AGENT_TIMEOUT",
        60.0,
        number(float),
        None,
        "seconds one model request may take in all, retries included",
    )
    max_steps: int = setting(
        "AGENT_MAX_STEPS", 10, number(int), "--max-steps", "most model requests in one run"
    )
    max_chars: int = setting(
        "AGENT_MAX_CHARS", 4000, number(int), None, "longest tool result the model sees"
    )
    shell_timeout: float = setting(
        "AGENT_SHELL_TIMEOUT",
        30.0,
        number(float),
        "--shell-timeout --timeout",
        "seconds before a shell command and its children are killed",
    )
    context_budget: int = setting(
        "AGENT_CONTEXT_BUDGET", 6000, number(int), None, "estimated tokens per request"
    )
    approve_all: bool = setting(
        "AGENT_APPROVE",
        False,
        approval,
        "--yes",
        "approve every command and write without asking (AGENT_APPROVE=all); "
        "only for a folder and task you trust",
        from_dotenv=False,
        default_text="ask",
    )
    allow: frozenset[str] = setting(
        "AGENT_ALLOW",
        frozenset(),
        programs,
        "--allow",
        "more programs that run without asking, comma-separated (make,pytest)",
        from_dotenv=False,
        default_text="none",
    )
    sandbox: str = setting(
        "AGENT_SANDBOX",
        "auto",
        one_of("auto", "off"),
        "--sandbox",
        "auto: commands run in a kernel sandbox where the system has one; off: no sandbox",
        from_dotenv=False,
    )
    workspace: Path = setting(
        "AGENT_WORKSPACE",
        None,
        folder,
        "--workspace",
        "the folder the agent may work in",
        from_dotenv=False,
        default_text="the current folder",
    )
    reasoning_effort: str | None = setting(
        "AGENT_REASONING_EFFORT",
        None,
        one_of("low", "medium", "high"),
        "--reasoning-effort",
        "how much the model reasons before it answers",
        default_text="the server's",
    )
    # Set for one run from a script (run(base_url=..., api_key=...)); on the command line by their
    # variables alone: a key given as a flag would show in the list of processes.
    base_url: str = setting(
        ", ".join(preset["url_variable"] for preset in BACKENDS.values()),
        None,
        address,
        None,
        "the backend's OpenAI-compatible address, in its own variable",
        default_text="the backend's",
        per_backend="url_variable",
    )
    api_key: str = setting(
        ", ".join(preset["key"] for preset in BACKENDS.values() if preset["key"]),
        None,
        key,
        None,
        "the backend's API key, in its own variable",
        default_text="none",
        per_backend="key",
    )
    undo_file_limit: int = setting(
        "AGENT_UNDO_FILE_LIMIT", 50, number(int), None, "MB: a larger file is not kept for undo"
    )
    undo_store_limit: int = setting(
        "AGENT_UNDO_STORE_LIMIT", 5000, number(int), None, "MB the undo store may hold in all"
    )
    mcp: typing.Any = setting(
        "AGENT_MCP", None, mcp_config, "--mcp", "MCP servers' JSON file", default_text="mcp.json"
    )
    mcp_timeout: float = setting(
        "AGENT_MCP_TIMEOUT", 30.0, number(float), None, "seconds an MCP server has to answer"
    )
    stream: bool | None = setting(
        "AGENT_STREAM", None, switch, "--stream", "show the answer as it comes", default_text="auto"
    )
    # What resolve() works out from the settings above.
    protected: tuple[Path, ...] = ()
    """Paths no tool writes and no command changes: every workspace's runs in the state folder
    (the command line adds a --transcript elsewhere, and its undo data)."""
    runs_folder: Path = Path()
    """The folder this workspace's transcripts and undo data live in (statefolder.py)."""
    secrets: tuple[str, ...] = ()
    """Every key the environment holds, redacted wherever it could show."""
    notes: tuple[str, ...] = ()
    """What a person should know at the start (a setting .env may not set, say; what of the kernel
    sandbox is off or missing here)."""
    confined: bool | None = None
    """Whether the run's commands run under the kernel sandbox here; None until the sandbox is
    asked, with its notes, once the settings are resolved (approval.prompt.with_the_sandbox())."""
    undo: Path | None = None
    """The folder this task keeps its undo data in; None: it keeps none."""
    mcp_tools: tuple[typing.Any, ...] = ()  # the run's MCP servers' tools: mcp.servers.served()


TABLE = [
    Setting(field.name, **field.metadata["setting"])
    for field in dataclasses.fields(Settings)
    if "setting" in field.metadata
]
BY_NAME = {row.name: row for row in TABLE}
# Every variable the agent reads its settings from
VARIABLES = [
    *(row.variable for row in TABLE if row.per_backend is None),
    *(name for p in BACKENDS.values() for name in (p["key"], p["url_variable"]) if name),
    "XDG_STATE_HOME",
]
CLOSE_NAME = 0.85  # how alike a name not read must be to a setting's to be named as a misspelling


def unknown_settings(names: set[str]) -> str:
    """What to say of keyword arguments that are no setting: those that are fields of a Chat
    Completions request (temperature=, as other libraries take them) go in options=."""
    from openai.types.chat import completion_create_params as request

    said = f"unknown setting {', '.join(sorted(names))}; known: {', '.join(BY_NAME)}"
    if fields := sorted(names & set(request.CompletionCreateParamsBase.__annotations__)):
        example = ", ".join(f"{field!r}: ..." for field in fields)
        said += f"; a request field goes in options= ({{{example}}})"
    return said


def resolve(*, require_key: bool = True, **given: typing.Any) -> Settings:
    """One run's settings: each one given (not None) wins, else its variable, else its default.
    Raises ConfigError (one line, saying what to fix) for a bad value, TypeError for an unknown
    name. The kernel is not asked here, below the sandbox: with_the_sandbox() adds what of it this
    system has."""
    if unknown := set(given) - set(BY_NAME):
        raise TypeError(unknown_settings(unknown))
    env, notes = environment()
    values: dict[str, typing.Any] = {}
    for row in TABLE:  # backend is the first row: a later one may be read from its variable
        variable: str | None = row.variable
        if row.per_backend is not None:
            variable = BACKENDS[values["backend"]][row.per_backend]
        raw = given.get(row.name)
        if raw is None:
            where = f"{variable} in {read_from(variable or '')}"
            raw = env.get(variable or "") or None
        else:
            where = f"the {row.name}= argument"
        try:
            values[row.name] = row.default if raw is None else row.parse(raw)
        except ConfigError:
            raise  # worded already
        except ValueError as error:
            raise ConfigError(f"{variable or row.name} {error}; fix {where}") from None
    preset = BACKENDS[values["backend"]]
    values["model"] = values["model"] or preset["model"]
    values["workspace"] = values["workspace"] or Path(os.path.realpath(os.getcwd()))
    values["base_url"] = values["base_url"] or preset["url"]
    if not values["api_key"]:
        values["api_key"] = api_key(preset, env) if require_key else ""
    keys = {env[p["key"]] for p in BACKENDS.values() if p["key"] and env.get(p["key"])}
    notes += [
        f"{stray} is a {LAUNCHER} on PATH, in the workspace, that did not start this run: typing "
        f"{LAUNCHER} may run it, outside the sandbox; if you did not put it there, remove it"
        for stray in stray_launchers(values["workspace"])
    ]
    if given.get("api_key"):  # this run's own, as hidden as the environment's
        keys.add(values["api_key"])
    return Settings(
        **values,
        # .env: confine() refuses it
        protected=(statefolder.agent_state(env),),
        runs_folder=statefolder.runs_folder(values["workspace"], env),
        secrets=tuple(keys),
        notes=tuple(notes),
    )


def environment() -> tuple[dict[str, str], list[str]]:
    """The environment over the agent's .env (a variable already set wins), and notes on what .env
    may not set."""
    from dotenv import dotenv_values  # here: a Python without it is one line, errors.py

    try:  # a folder or a device at its name is no .env; a FIFO, checked again as it opens
        text = text_of(DOTENV) if DOTENV.is_file() else ""
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{DOTENV} cannot be read as UTF-8 text ({error}); save it as UTF-8"
        ) from None
    except OSError as error:
        raise ConfigError(f"{DOTENV} cannot be read: {error.strerror or error}; fix it") from None
    from_file = {k: v or "" for k, v in dotenv_values(stream=io.StringIO(text)).items()}
    ignored = [s.variable for s in TABLE if not s.from_dotenv and s.variable in from_file]
    notes = (
        [
            f"{', '.join(ignored)} in {DOTENV} {'is' if len(ignored) == 1 else 'are'} ignored: set "
            f"{'it' if len(ignored) == 1 else 'them'} in the environment or with a flag"
        ]
        if ignored
        else []
    )
    for name in ignored:
        del from_file[name]
    # A name in .env, or an AGENT_ one in the environment, that is close to a setting's
    misspelled = [
        f"{name} (in {where}) is no setting; did you mean {close[0]}?"
        for name, where in [
            *((name, DOTENV) for name in from_file),
            *((name, "the environment") for name in os.environ if name.startswith("AGENT_")),
        ]
        if name not in VARIABLES
        and (close := difflib.get_close_matches(name, VARIABLES, n=1, cutoff=CLOSE_NAME))
    ]
    notes += ["; ".join(misspelled)] if misspelled else []
    # An empty variable in the environment (an `export GROQ_API_KEY=` left over) hides none in .env
    return {**from_file, **{k: v for k, v in os.environ.items() if v or k not in from_file}}, notes


def read_from(variable: str) -> str:
    """Where a variable's value is read from, as a message names it: the environment, where it is
    set there, else the agent's .env."""
    return "the environment" if os.environ.get(variable) else str(DOTENV)


def api_key(preset: Backend, env: dict[str, str]) -> str:
    variable = preset["key"]
    if variable is None:
        return "no-key-needed"
    if env.get(variable):
        return env[variable]
    if variable in env:
        raise ConfigError(
            f"{variable} is empty: put your key after {variable}= in {DOTENV} "
            f"(or export {variable}=...)"
        )
    if installed():  # no .env.example beside it
        raise ConfigError(
            f"{variable} is not set: put the line {variable}=your-key in {DOTENV} (make the "
            f"folder if it is missing), or export {variable}=..."
        )
    raise ConfigError(
        f"{variable} is not set: copy .env.example to .env in {AGENT_FOLDER} and put your key "
        f"in it (or export {variable}=...)"
    )
