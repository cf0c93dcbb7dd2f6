"""How one command runs, decided once (phase 2): the gate reads run_shell's command once
(words.parse) and decides once (decide(): the allowlist's verdict, then --yes), before anyone is
asked; a person's approval makes the Decision approved. The tool is given it, and run_command()
runs what it says: its mode's sandbox policy (MODES), and the project's Python where it runs one."""

import contextlib
import dataclasses
from pathlib import Path

from plainagent.core import settings as agent_settings
from plainagent.core.ownfiles import MCP_CONFIG, real
from plainagent.core.settings import Settings
from plainagent.sandbox import process as sandbox
from plainagent.sandbox import seccomp
from plainagent.sandbox.policy import Policy
from plainagent.sandbox.readable import dotenv_files
from plainagent.shell.allowlist import UNASKED_ALLOWED, UNASKED_READ_ONLY, command_mode
from plainagent.shell.option_tables import GIT, PROGRAMS, loose_paths, read_words
from plainagent.shell.words import Command, Redirection, parse, trusted_program
from plainagent.workspace import snapshot, walk
from plainagent.workspace.files import confine, same_file

# What reads the files in the folders it is given (the working folder, given none), not only the
# files it names: a program, or a program with one of its options. Only the kernel hides a .env from
# these.
READS_FOLDERS: dict[str, set[str] | None] = {
    "grep": {"-r", "--recursive", "-d", "--directories"},
    "rg": None,
    "git grep": None,
    "git diff": None,  # the work tree's files
}
APPROVED = "approved"  # by a person, or by --yes
# How each mode runs: (Landlock mode, seccomp filter, the note for a likely refusal). An approved
# command may write the workspace and use the network.
MODES: dict[str, tuple[str, str | None, str]] = {
    UNASKED_READ_ONLY: (sandbox.READ_ONLY, seccomp.NO_CHANGES, sandbox.BLOCKED_NOTE),
    UNASKED_ALLOWED: (sandbox.WORKSPACE_WRITE, seccomp.NO_NETWORK, sandbox.OFFLINE_NOTE),
    APPROVED: (sandbox.WORKSPACE_WRITE, None, ""),
}


@dataclasses.dataclass(frozen=True)
class Decision:
    """How one command runs: the `command`, read once, and its `mode`: UNASKED_READ_ONLY (every
    part only reads), UNASKED_ALLOWED (with a program the person trusts: it writes the workspace,
    offline) or APPROVED; None while a person must approve it, and `reason` says why. Given one
    that asks, run_command() runs it as approved: the gate asks first, and a script that calls the
    tool itself is the one who approves it."""

    command: Command
    mode: str | None
    reason: str | None = None
    dotenv: tuple[Path, ...] | PermissionError | None = None
    """The workspace's .env files, where decide() looked for them (no kernel sandbox hides them: for
    dotenv_unhidden() and the policy), or why it could not look through it; None: not looked for."""

    @property
    def asks(self) -> bool:
        """Whether a person approves it before it runs (the gate asks)."""
        return self.mode is None

    def approved(self) -> "Decision":
        """The decision once a person approved the command."""
        return dataclasses.replace(self, mode=APPROVED, reason=None)

    @property
    def unasked(self) -> bool:
        """Whether it runs with nobody's approval: under more of the sandbox (MODES), in an
        environment of its own (allowlist.unasked_environment), its words prepared
        (allowlist.prepare)."""
        return self.mode in (UNASKED_READ_ONLY, UNASKED_ALLOWED)

    @property
    def project_python(self) -> bool:
        """Whether it runs with the project's Python first on PATH (pythons.for_project): it is
        approved, or it runs a program the person trusts."""
        return self.mode != UNASKED_READ_ONLY

    @property
    def blocked_note(self) -> str:
        """What the model is told when the sandbox may have refused the command something."""
        return MODES[self.mode or APPROVED][2]

    def policy(self, settings: Settings, tmp: Path) -> Policy:
        """The sandbox policy it runs under, with `tmp` its private temporary folder: its mode's
        Landlock mode and seccomp filter (MODES), process_policy()."""
        landlock, filtered, _ = MODES[self.mode or APPROVED]
        return process_policy(
            settings, tmp, landlock, filtered, unasked=self.unasked, dotenv=self.dotenv
        )


def process_policy(
    settings: Settings,
    tmp: Path,
    landlock: str,
    filtered: str | None,
    *,
    unasked: bool,
    network: bool = False,
    dotenv: tuple[Path, ...] | PermissionError | None = None,
) -> Policy:
    """A process's sandbox policy, a command's or an MCP server's (mcp/launch.py): the Landlock
    mode and seccomp filter given, where the run wants the sandbox and the kernel has them; never
    reading the agent's .env and mcp.json, nor, unasked, the state folder or a project's .env;
    never writing the state folder; unasked, without capabilities. The project's .env files are
    `dotenv` where the caller looked for them already (decide()), else looked for here: past
    readable.MOST_ENTRIES, PermissionError refuses a process that would not ask."""
    mode = landlock if sandbox.confines(settings) else None
    seccomp_filter = filtered if sandbox.filters(settings) else None
    # The agent's .env and mcp.json (and their targets) from every process; the project's .env
    # and every workspace's transcripts in the state folder (when the workspace holds it, home)
    # from what did not ask
    state = settings.runs_folder.parent
    hidden = own_config()
    if unasked:
        looked = dotenv_files(settings.workspace) if dotenv is None else dotenv
        if isinstance(looked, PermissionError):
            raise looked
        hidden += (state, *looked)
    return Policy(
        workspace=settings.workspace,
        tmp=tmp,
        mode=mode,
        hidden=hidden,
        # every workspace's runs (a --transcript PATH in the workspace is the person's)
        protected=(state,),
        seccomp=seccomp_filter,
        # Unasked, no capabilities either: as root it could reboot the machine or set its clock
        unprivileged=unasked and (mode or seccomp_filter) is not None,
        network=network,
    )


def own_config() -> tuple[Path, ...]:
    """The agent's .env and the mcp.json beside it, by their names and where links lead: hidden
    from every command and every MCP server (mcp/launch.py)."""
    files = (agent_settings.DOTENV, agent_settings.DOTENV.with_name(MCP_CONFIG))
    return tuple(dict.fromkeys(path for own in files for path in (own, real(own))))


def decide(command: str, settings: Settings) -> Decision:
    """The one decision on a command: read once (words.parse), it runs as the allowlist's verdict
    says (allowlist.command_mode): read-only, allowed, or asked for. With --yes everything is
    approved: a program the person trusts keeps the network an approved command has."""
    parsed = parse(command)
    verdict = command_mode(parsed, settings)
    if verdict.mode == UNASKED_ALLOWED and settings.approve_all:
        return Decision(parsed, APPROVED)
    shown = verdict.command or parsed  # a glob's matches, checked, in its place
    if verdict.mode is None or sandbox.confines(settings):
        return Decision(shown, verdict.mode, verdict.reason)
    # No kernel sandbox to hide them: the project's .env files, looked for once, for the check and
    # for the policy
    try:
        dotenv: tuple[Path, ...] | PermissionError = dotenv_files(settings.workspace)
    except PermissionError as error:
        dotenv = error
    if problem := dotenv_unhidden(shown, settings, dotenv):
        return Decision(shown, None, problem)
    return Decision(shown, verdict.mode, verdict.reason, dotenv)


def dotenv_unhidden(
    command: Command, settings: Settings, dotenv: tuple[Path, ...] | PermissionError
) -> str | None:
    """Why a command that would run unasked must ask where no kernel sandbox hides what policy()
    hides from it: one of its parts reads whole folders (grep -r, git grep:
    READS_FOLDERS) and the workspace holds a .env (the agent's own too), or the
    state folder (every workspace's transcripts), or is too big to look through for a .env; or it
    names, by another name, the file a link named .env leads to. The allowlist checks the names a
    command gives, and the kernel what it reads; without the kernel, only the names are left.
    `dotenv`: the workspace's .env files (readable.dotenv_files), or why it could not be looked
    through."""
    walking, named = [], set()
    for words, _ in command.parts:
        words = [w for w in words if not isinstance(w, Redirection)]
        if trusted_program(words, settings.allow):
            continue
        if reads_folders(words):
            walking.append(" ".join(words[:2]) if words[0] == "git" else words[0])
        named |= {path for word in words[1:] for path in files_named(word, settings)}
    if not walking and not named:
        return None
    state, root = settings.runs_folder.parent, settings.workspace
    found = (
        (root,)
        if isinstance(dotenv, PermissionError)
        else (*dotenv, *([state] if state.is_relative_to(root) else []))
    )
    # by identity too: CONF/prod.txt is conf/prod.txt where case is ignored (macOS, Windows)
    if led_to := {n for n in named for f in found if n == f or same_file(n, f)}:
        return (
            f"{min(led_to).relative_to(root).as_posix()} is the file a link named .env leads to, "
            "which may hold the project's secrets, and no kernel sandbox here hides it"
        )
    if not walking or not found:
        return None
    return (
        f"{walking[0]} reads whole folders, and with no kernel sandbox here nothing keeps it "
        "from the .env files in the workspace, which hold secrets, nor from the agent's "
        "transcripts where the workspace holds them"
    )


def files_named(word: str, settings: Settings) -> set[Path]:
    """The files of the workspace a word of a command may name (option_tables.loose_paths), links
    resolved."""
    found = set()
    for text in loose_paths(word):
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            if (path := confine(text, settings)).is_file():
                found.add(path)
    return found


def reads_folders(words: list[str]) -> bool:
    """Whether a part of allowlisted words reads files it does not name (READS_FOLDERS)."""
    program, args = words[0], words[1:]
    name, spec = program, PROGRAMS.get(program, ("", ""))
    if program == "git" and args and args[0] in GIT:
        name, spec, args = f"git {args[0]}", GIT[args[0]], args[1:]
    if name not in READS_FOLDERS:
        return False
    options = READS_FOLDERS[name]
    return options is None or any(r.option in options for r in read_words(*spec, args)[1])


def command_decision(arguments: dict, settings: Settings) -> Decision:
    """run_shell's decision at the gate (its @asks(deciding=...)): decide() on its command. One a
    person is asked about has the workspace kept for undo first (walk.look), so a file whose
    content could not be kept is named right above the question; the keep once approved then
    reads only what changed meanwhile."""
    decided = decide(arguments["command"], settings)
    if decided.asks and settings.undo is not None:
        with contextlib.suppress(OSError):  # said again, and the command still run, once approved
            snapshot.tell(settings, walk.look(settings))
    return decided
