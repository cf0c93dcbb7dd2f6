"""What the agent may do without asking: the workspace its file tools are confined to, the allowlist of
read-only shell commands, and the approval prompt for everything else.
The harness asks needs_approval() before each tool call and, if so, asks the run's approver."""

import difflib
import re
import shlex
import sys
import typing
from pathlib import Path

from settings import current

# Programs that only read. A command runs without asking only if every part of it is one of these.
ALLOWED = {"ls", "dir", "cat", "type", "head", "tail", "wc", "grep", "find", "pwd", "echo", "which", "file",
           "stat", "du", "tree", "git", "python", "python3", "py"}
GIT_READ_ONLY = {"status", "log", "diff", "show", "branch"}
GIT_BRANCH_LISTING = {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "--show-current"}
FIND_ACTIONS = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls")
# Redirection, substitution, variables and backgrounding always need approval.
NEEDS_A_PERSON = re.compile(r"[<>`$]|%\w+%|(?<!&)&(?!&)")
SEPARATORS = re.compile(r"&&|\|\||[;|\n]")
ALWAYS_ASK = {"write_file", "edit_file"}

Approver = typing.Callable[[str, dict], "bool | str"]


def workspace() -> Path:
    """The folder this run works in (the workspace setting: --workspace, AGENT_WORKSPACE, else the working folder)."""
    return current().workspace


def confine(path: str) -> Path:
    """Resolve a path against the workspace; refuse one that ends up outside it (.., absolute, symlink)."""
    root = workspace()
    resolved = (root / Path(path).expanduser()).resolve()
    if resolved != root and root not in resolved.parents:
        raise PermissionError(f"{path} is outside the workspace {root}; use a path inside it")
    return resolved


def shell_verdict(command: str, also_allowed: typing.Collection[str] = ()) -> str | None:
    """None if every part of the command only reads; otherwise why it needs a person's approval.
    Programs the person trusts (AGENT_ALLOW, or 'always' at the prompt) skip the read-only checks."""
    trusted = set(also_allowed) | current().allow
    if NEEDS_A_PERSON.search(command):
        return "it redirects, substitutes, expands a variable or runs in the background"
    for part in SEPARATORS.split(command):
        try:
            words = shlex.split(part, posix=sys.platform != "win32")
        except ValueError:
            return "it could not be parsed"
        if not words:
            continue
        program, args = words[0], words[1:]
        if "=" in program:
            return "it sets environment variables"
        if program not in ALLOWED | trusted:
            return f"{program} is not on the allowlist"
        if program not in trusted and (problem := read_only_problem(program, args)):
            return problem
        if program != "echo" and any(outside_workspace(arg) for arg in args):
            return "it names a path outside the workspace"
    return None


def read_only_problem(program: str, args: list[str]) -> str | None:
    """Why this use of an allowlisted program is not read-only (or never ends), if it is not."""
    if program == "tail" and any(a in ("-f", "-F") or a.startswith("--follow") for a in args):
        return "tail -f never ends"
    if program == "find" and any(a.startswith(FIND_ACTIONS) for a in args):
        return "find with an action can run or delete things"
    if program == "git" and (not args or args[0] not in GIT_READ_ONLY):
        return "only git status, log, diff, show and branch run without asking"
    if program == "git" and args[0] == "branch" and not set(args[1:]) <= GIT_BRANCH_LISTING:
        return "git branch with arguments can create, rename or delete branches"
    if program == "git" and any(a.startswith("--output") for a in args):
        return "git --output writes a file"
    if program == "tree" and "-o" in args:
        return "tree -o writes a file"
    if program in ("python", "python3", "py") and args not in (["--version"], ["-V"]):
        return "only python --version runs without asking"
    return None


def outside_workspace(arg: str) -> bool:
    value = arg.split("=", 1)[-1]
    try:
        confine(value)
    except (PermissionError, OSError, RuntimeError):
        return True
    return False


def needs_approval(name: str, arguments: dict) -> bool:
    if name == "run_shell":
        return shell_verdict(arguments["command"]) is not None
    return name in ALWAYS_ASK


def describe(name: str, arguments: dict) -> str:
    """What a person is asked to approve: the exact command, or the file and the size of the change."""
    if name == "run_shell":
        return f"run_shell wants to run:\n  {arguments['command']}\n  ({shell_verdict(arguments['command'])})"
    if name == "write_file":
        return describe_write(arguments["path"], arguments["content"])
    if name == "edit_file":
        return describe_edit(arguments["path"], arguments["old_text"], arguments["new_text"])
    return f"{name} wants to run with {arguments}"


def describe_write(path: str, content: str) -> str:
    target = confine(path)
    new = content.encode("utf-8")
    if not target.exists():
        return f"write_file wants to create {path} (new file, {len(new)} bytes)"
    old = target.read_bytes()
    shown = diff_preview(path, old, new)
    return f"write_file wants to overwrite {path} (exists, {len(old)} -> {len(new)} bytes)\n{shown}"


def describe_edit(path: str, old_text: str, new_text: str) -> str:
    """The edit exactly as edit_file will make it; an edit that cannot be made raises before anyone is asked."""
    from tools import planned_edit  # tools imports this module, so not at the top
    _, old, text = planned_edit(path, old_text, new_text)
    new = text.encode("utf-8")
    return f"edit_file wants to edit {path} ({len(old)} -> {len(new)} bytes)\n{diff_preview(path, old, new)}"


def diff_preview(path: str, old: bytes, new: bytes) -> str:
    """The start of a unified diff from old to new, indented under the question."""
    lines = difflib.unified_diff(old.decode("utf-8", "replace").splitlines(),
                                 new.decode("utf-8", "replace").splitlines(),
                                 f"{path} (now)", f"{path} (new)", lineterm="")
    return "\n".join(f"  {line}" for line in list(lines)[:20])


def terminal_approver() -> Approver:
    """Ask at the terminal; 'always' remembers a program (or a file tool) for the rest of this run only."""
    programs: set[str] = set()
    tools: set[str] = set()  # kept apart: 'always' for a program named edit_file does not trust the tool

    def approve(name: str, arguments: dict) -> bool | str:
        if name in tools or name == "run_shell" and shell_verdict(arguments["command"], programs) is None:
            return True
        print(describe(name, arguments), file=sys.stderr)
        what = ", ".join(sorted(shell_programs(arguments["command"]))) if name == "run_shell" else name
        while True:
            answer = typed(f"[y]es / [N]o / [a]lways allow {what} for this run: ").lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("a", "always"):
                if name == "run_shell":
                    programs.update(shell_programs(arguments["command"]))
                else:
                    tools.add(name)
                return True
            if answer in ("n", "no", ""):  # Enter, or no terminal left, is a no
                reason = typed("why not? (optional, Enter to skip): ")
                return f"denied by the user: {reason}" if reason else False
            print("please answer y, n or a", file=sys.stderr)

    return approve


def typed(question: str) -> str:
    """The line typed in answer; Ctrl-C first ends the question's line, so "interrupted" gets its own."""
    try:
        print(question, end="", file=sys.stderr, flush=True)
        return sys.stdin.readline().strip()
    except KeyboardInterrupt:
        print(file=sys.stderr)
        raise


def shell_programs(command: str) -> set[str]:
    try:
        return {words[0] for part in SEPARATORS.split(command) if (words := shlex.split(part))}
    except ValueError:
        return {command}


def approve_all(name: str, arguments: dict) -> bool:
    return True


def no_terminal(name: str, arguments: dict) -> str:
    return ("denied: nobody is at a terminal to approve it; run read-only commands instead, "
            "or the user can rerun with --yes to approve everything")


def default_approver(approve_everything: bool) -> Approver:
    """--yes or AGENT_APPROVE=all approves everything; else ask at a terminal; with no terminal, deny."""
    if approve_everything:
        return approve_all
    return terminal_approver() if sys.stdin is not None and sys.stdin.isatty() else no_terminal


def denial(decision: bool | str) -> str:
    """The tool result for a denied call: the approver's own words, or plainly 'denied by the user'."""
    return decision if isinstance(decision, str) else "denied by the user"
