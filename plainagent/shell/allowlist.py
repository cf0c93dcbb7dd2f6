"""The allowlist (phase 2): which shell commands run without asking, and how: read-only if plain
words the lexer understands, each part a program in PROGRAMS within its option table, every path in
the workspace; allowed (it writes the workspace, offline) with a program the person trusts
(AGENT_ALLOW) among them. All else asks."""

import os
import re
import shutil
import typing
from pathlib import Path

from plainagent.core.settings import Settings
from plainagent.shell.expansion import as_run
from plainagent.shell.gitguard import GIT_SAFE_FLAGS, repository_elsewhere
from plainagent.shell.option_tables import (
    COUNT,
    COUNTED,
    FORMS,
    FROM_LINE,
    GIT,
    GIT_FORMATS,
    PATTERN_FIRST,
    PROGRAMS,
    SIGNATURE,
    loose_paths,
    parse_options,
    sed_problem,
)
from plainagent.shell.pythons import DESCRIBING, described, without_agent
from plainagent.shell.words import (
    VENV_PROGRAM,
    WINDOWS,
    Command,
    Redirection,
    parse,
    quote,
    trusted_program,
    trusted_programs,
)
from plainagent.workspace.files import confine, is_protected

SHELL_WORDS = {
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "do",
    "done",
    "case",
    "esac",
    "while",
    "until",
    "for",
    "in",
    "function",
    "select",
    "time",
    "coproc",
    "{",
    "}",
    "!",
    "[[",
    "]]",
}
SHELL_BUILTINS = {"cd", "echo", "pwd", "type"}  # sh runs its own, whatever PATH holds


# The variables a command of the allowlist's programs alone gets (and the locale's, LC_*, LANG,
# LANGUAGE).
UNASKED_VARIABLES = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "TERM",
    "TZ",
    "TMPDIR",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "PAGER",
    "GIT_PAGER",
    "GIT_TERMINAL_PROMPT",
    "GIT_EDITOR",
    "GCM_INTERACTIVE",
    "PYENV_VERSION",  # the version `pyenv shell` chose: what the person's python runs
)
LOADER_VARIABLES = ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")
# How a command that needs no approval runs: it only reads, or it runs a program the person trusts.
UNASKED_READ_ONLY, UNASKED_ALLOWED = "read-only", "allowed"


class Verdict(typing.NamedTuple):
    """How a command may run: `mode` UNASKED_READ_ONLY, UNASKED_ALLOWED, or None with the `reason`
    a person must approve it; unasked, the `command` as it runs (expansion.as_run: globs, cd)."""

    mode: str | None
    reason: str | None = None
    command: Command | None = None


def command_mode(
    command: Command, settings: Settings, also_allowed: typing.Collection[str] = ()
) -> Verdict:
    """The allowlist's verdict on a command read once (words.parse): read-only if every part is an
    allowlisted program that only reads, in the workspace; allowed if the parts are allowlisted or
    trusted (AGENT_ALLOW, or `also_allowed`: what a person said 'always' to) and one is trusted;
    else it asks, and says why. Trusted programs skip only the tables."""
    if command.problem is not None:
        return Verdict(None, command.problem)
    if isinstance(expanded := as_run(command, settings), str):
        return Verdict(None, expanded)
    command, folders = expanded
    trusted = (set(also_allowed) | settings.allow) - {""}
    beside_trusted, mode = bool(trusted_programs(command.parts, trusted)), UNASKED_READ_ONLY
    values: list[str]
    for (words, _), folder in zip(command.parts, folders, strict=True):
        program, args = words[0], [w for w in words[1:] if not isinstance(w, Redirection)]
        if folder is None:  # a cd into a folder of the workspace: as_run checked it
            continue
        runs = trusted_program(words, trusted)
        if tuple(words) in DESCRIBING:  # python --version, which python: the project's
            if problem := described(words, settings.workspace, os.environ)[1]:
                return Verdict(None, problem)
            continue
        if "=" in program:
            return Verdict(None, "it sets environment variables")
        if not runs and (program in SHELL_WORDS or program not in PROGRAMS):
            return Verdict(None, f"{program} is not on the allowlist")
        if runs:
            paths = [c for word in args for c in loose_paths(word)]
            values, mode = [], UNASKED_ALLOWED
            if problem := venv_problem(program, settings):
                return Verdict(None, problem)
        else:
            problem, paths, values = read_only_arguments(program, args, beside_trusted, settings)
            if problem:
                return Verdict(None, problem)
        for text in paths + values + args:  # HEAD:.env and --file=.env name it too
            if re.split(r"[/\\:=]", text)[-1].lower() == ".env":
                return Verdict(
                    None, f"it names {text}, which is protected (.env or the transcripts)"
                )
        for text in paths:
            try:
                if is_protected(confine(os.path.join(folder, text), settings), settings):
                    return Verdict(None, f"{text} is protected (.env or the transcripts)")
            except (OSError, RuntimeError, ValueError):
                return Verdict(None, "it names a path outside the workspace")
    return Verdict(mode, None, command)


def venv_problem(program: str, settings: Settings) -> str | None:
    """Why a trusted program named by its path (.venv/bin/pytest) is not the workspace venv's: the
    folder is not a venv (no pyvenv.cfg), or its bin folder leads out of the workspace (bin/python
    itself is a link to the Python the venv was made from)."""
    venv = VENV_PROGRAM.fullmatch(program)
    if venv is None:
        return None
    try:
        confine(f"{venv[1]}/bin", settings)
        is_venv = confine(f"{venv[1]}/pyvenv.cfg", settings).is_file()
    except (OSError, RuntimeError, ValueError):
        return "it names a path outside the workspace"
    return None if is_venv else f"{venv[1]} is not a virtual environment (it has no pyvenv.cfg)"


def reason_to_ask(
    command: str, settings: Settings, also_allowed: typing.Collection[str] = ()
) -> str | None:
    """Why a person must approve the command (its text, read here); None when it runs without
    asking."""
    return command_mode(parse(command), settings, also_allowed).reason


def read_only_arguments(
    program: str, args: list[str], beside_trusted: bool, settings: Settings
) -> tuple[str | None, list[str], list[str]]:
    """Check an allowlisted program and its arguments against its option table: (problem, paths,
    other values)."""
    if problem := resolution_problem(program, beside_trusted, settings):
        return problem, [], []
    if program in ("python", "python3", "py"):
        version = args in (["--version"], ["-V"])
        return (None if version else "only python --version runs without asking"), [], []
    if program == "echo":
        # The lexer let nothing through that expands, so echo prints its words as they are
        return (None, [], [])
    if program in FORMS:  # find's expression, date's +FORMAT
        return FORMS[program](args)
    spec, subcommand = PROGRAMS[program], args[0] if program == "git" and args else ""
    if program == "git":
        if subcommand not in GIT:
            return f"only git {', '.join(GIT)} run without asking", [], []
        if problem := repository_elsewhere(settings):
            return problem, [], []
        spec, args = GIT[subcommand], args[1:]
    problem, operands, paths, values = parse_options(*spec, args, glued=program != "tree")
    if problem:
        return problem, [], []
    name = f"git {subcommand}" if subcommand else program
    if name in PATTERN_FIRST and not PATTERN_FIRST[name] & {o for o, _ in values} and operands:
        values, operands = values + [("", operands[0])], operands[1:]  # the pattern, or script
    if program == "sed" and (
        problem := next(
            filter(None, (sed_problem(v) for o, v in values if o in ("", "-e", "--expression"))),
            None,
        )
    ):
        return problem, [], []
    if program == "git" and not all(
        v in GIT_FORMATS or ("%" in v or ":" in v) and not SIGNATURE.search(v)
        for o, v in values
        if o in ("--format", "--pretty")
    ):
        return "git formats may not check signatures or use configured aliases", [], []
    if subcommand == "branch" and operands and not {"-l", "--list"} & {o for o, _ in values}:
        return "git branch NAME creates a branch", [], []
    if program == "uniq" and len(operands + paths) > 1:
        return "uniq writes its second file operand", [], []
    if any(word.startswith("+") for word in operands):
        return f"{program} may read a word starting with + as an option", [], []
    if program in ("head", "tail") and any(re.fullmatch(r"-\d+[a-zA-Z].*", arg) for arg in args):
        return f"{program} reads -99c as a count and the next word as a file (the old form)", [], []
    if program in ("head", "tail") and not all(
        COUNT.fullmatch(v) or program == "tail" and FROM_LINE.fullmatch(v)
        for o, v in values
        if o in COUNTED
    ):
        return f"{program} counts must be numbers (tail reads -cf as -c with follow)", [], []
    return None, operands + paths, [v for _, v in values]


def prepare(command: Command, settings: Settings, trusted: typing.Collection[str] = ()) -> str:
    """The text to run for a command that runs without asking: git subcommands get GIT_SAFE_FLAGS
    and rg --no-config; beside a trusted program (so on the full PATH: unasked_environment) each
    allowlisted program is named by its path outside the workspace."""
    if command.problem is not None:
        return command.text
    runs_trusted, rebuilt = trusted_programs(command.parts, trusted), []
    for words, separator in command.parts:
        if words[0] == "git" and words[1:2] and words[1] in GIT_SAFE_FLAGS:
            words = words[:2] + GIT_SAFE_FLAGS[words[1]] + words[2:]
        if words[0] == "rg":  # no config file (RIPGREP_CONFIG_PATH) adds options such as --pre
            words = words[:1] + ["--no-config"] + words[1:]
        beside = runs_trusted and not trusted_program(words, trusted)
        if tuple(words) in DESCRIBING:  # answers for the project's Python, as command_mode checked
            words = described(words, settings.workspace, os.environ)[0] or words
        elif beside and words[0] not in SHELL_BUILTINS and not WINDOWS:
            words = [outside_program(words[0], settings) or words[0]] + words[1:]
        written = [w if isinstance(w, Redirection) else quote(w) for w in words]
        rebuilt.append(" ".join(written) + (f" {separator}" if separator else ""))
    return " ".join(rebuilt)


def their_path() -> str:
    """The person's PATH without the agent's own venv: a python, pip or pytest found there would run
    the agent's interpreter, whose packages are not the project's."""
    return without_agent({"PATH": os.environ.get("PATH", os.defpath)})["PATH"]


def unasked_environment(
    env: dict, command: Command, trusted: typing.Collection[str], settings: Settings
) -> dict:
    """The environment for a command that runs without asking. Where a part runs a trusted
    program, PATH is the person's (their_path), which their own shell finds it on (a project's .venv
    included: they chose it). Else PATH leaves out the workspace (outside_path), and only
    UNASKED_VARIABLES are kept, so nothing else points a program at code or data there (GCONV_PATH,
    LOCPATH, ...), no locale is named by a path, and the dynamic loader's variables lose what it
    would read from there: an empty or relative LD_LIBRARY_PATH entry (read from the working folder,
    as sh does PATH's), an LD_PRELOAD or LD_AUDIT path (a bare library name is looked for in the
    entries kept), and any entry inside the workspace. A HOME or TZ file inside the workspace is
    left out too."""
    if as_their_shell(command, trusted):
        return {**env, "PATH": their_path()}
    env = {**env, "PATH": outside_path(their_path(), settings.workspace)}
    env = {
        name: value
        for name, value in env.items()
        if name in UNASKED_VARIABLES + LOADER_VARIABLES
        or (name.startswith("LC_") or name in ("LANG", "LANGUAGE"))
        and "/" not in value
    }
    # The home folder as the workspace: file reads ~/.magic, git ~/.gitconfig
    for name in ("HOME", "TZ"):
        if (
            os.path.isabs(path := env.get(name, "").lstrip(":"))
            and outside_path(path, settings.workspace) != path
        ):
            del env[name]
    for name in LOADER_VARIABLES:  # glibc splits them at : ; and (LD_PRELOAD) spaces
        kept = [
            entry
            for entry in re.split("[:; ]", env.pop(name, ""))
            if entry
            and (
                "/" not in entry
                and name != "LD_LIBRARY_PATH"
                or outside_path(entry, settings.workspace) == entry
            )
        ]
        env.update({name: ":".join(kept)} if kept else {})
    return env


def as_their_shell(command: Command, trusted: typing.Collection[str]) -> bool:
    """Whether a command that runs without asking finds its programs as the person's own shell
    would: where a part runs a trusted program, and on Windows (cmd.exe looks in the working folder
    first anyway)."""
    return WINDOWS or bool(command.problem) or bool(trusted_programs(command.parts, trusted))


def outside_path(path: str, root: Path) -> str:
    """PATH without its empty and relative entries (the shell reads them from the working folder,
    the workspace) and without entries inside the workspace: a planted .venv/bin/git never stands in
    for git. With none left, os.devnull, where nothing is found (an empty PATH, too, is the working
    folder to the shell)."""
    return (
        os.pathsep.join(
            entry
            for entry in path.split(os.pathsep)
            if os.path.isabs(entry) and not Path(os.path.realpath(entry)).is_relative_to(root)
        )
        or os.devnull
    )


def outside_program(program: str, settings: Settings) -> str | None:
    """Where the shell finds a program on the PATH without the workspace; None if nowhere."""
    return shutil.which(program, path=outside_path(their_path(), settings.workspace))


def resolution_problem(program: str, beside_trusted: bool, settings: Settings) -> str | None:
    """Why an allowlisted program could be one from the workspace: what PATH finds outside it links
    into it; or, beside a trusted program (run on the full PATH), none is found outside it."""
    if WINDOWS or program in SHELL_BUILTINS:
        return None
    found, root = outside_program(program, settings), settings.workspace
    if found is None:
        return f"no {program} is found on PATH outside the workspace" if beside_trusted else None
    inside = Path(os.path.realpath(found)).is_relative_to(root)
    return f"the {program} found on PATH is a link into the workspace" if inside else None
