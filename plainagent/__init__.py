"""The layers beyond the tutorial that wrap around its four files (backend.py, tools.py, harness.py,
probe.py), one folder each, listed from the ground up; a folder imports only folders above it in
this list, never the four files:

    core/       what every layer uses: the settings, the agent's own files, what a person is shown
    calls/      a tool call checked: a function's schema, the model's arguments against it (phase 5)
    sandbox/    the kernel sandbox: a command's process under Landlock and seccomp
    workspace/  the workspace on disk: confined paths, whole-or-nothing writes, edits, undo
    shell/      one shell command: the allowlist and its option tables, git kept harmless, the run
itself
    approval/   phase 2: the one gate a tool call passes, the question a person answers, its
previews
    mcp/        tools from MCP servers, each server a process under the kernel sandbox
    model/      the model beyond phase 0: the client's deadline, retries for the free plan, the
context budget
    runs/       what a run leaves behind: its answer, transcripts, the run list, --continue
    cli/        the command line and the terminal session around run()

A script imports the agent from here (`from plainagent import run`): each name below is loaded at
its first use, so importing the package loads nothing, and run() comes from the agent's own
harness.py, found by where it is, even beside a person's own tools.py (core/ownmodules.py).
"""

import importlib
import signal
import sys
import typing
from pathlib import Path

# Each public name, and the module it comes from: the agent's own files (by where they are), or
# the package's.
PUBLIC = {
    "run": "harness",
    "arun": "harness",
    "TOOL_FUNCTIONS": "tools",
    "asks": "plainagent.approval.gate",
    "Answer": "plainagent.runs.answer",
    "Stopped": "plainagent.runs.answer",
    "OutputError": "plainagent.model.output",
    "ConfigError": "plainagent.core.values",
    "ToolError": "plainagent.calls.schema",
}
__all__ = list(PUBLIC)
# What a person types to start the command line: `python harness.py`, the installed command
COMMANDS = ("harness.py", "plainagent", "plainagent.exe", "plainagent-script.py")

# Ctrl-C while the command line is still loading (a fifth of a second) ends it quietly, with the
# exit code a shell gives it, not a traceback from whichever import it stopped; the command line
# takes Ctrl-C over as it starts (cli/main.py). A script's Ctrl-C is left to the script.
if sys.argv and Path(sys.argv[0]).name in COMMANDS:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def __getattr__(name: str) -> typing.Any:
    """A public name, loaded the first time it is asked for."""
    if name not in PUBLIC:
        raise AttributeError(f"module 'plainagent' has no attribute {name!r}")
    if PUBLIC[name].startswith("plainagent."):
        module = importlib.import_module(PUBLIC[name])
    else:
        from plainagent.core.ownmodules import own_modules

        module = own_modules()[PUBLIC[name]]
    value = globals()[name] = getattr(module, name)
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *PUBLIC])
