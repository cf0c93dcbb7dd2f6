"""Where the agent's own Python reads code from at its start (beyond the tutorial): a place that
is in the workspace, or holds it, and that no rule of ownfiles.py keeps commands and the file tools
from changing, stops the agent before it runs (cli/main.py)."""

import os
import site
import sys
from pathlib import Path

from plainagent.core.ownfiles import AGENT_FOLDER, interpreter_folders, real


def start_up_code_in(workspace: Path) -> str | None:
    """Why the agent must not work in this workspace: a place its own Python reads code from when it
    starts is in it or holds it, and no rule above keeps commands and the file tools from changing
    it (the agent's folder and the installation it runs on have theirs). A sitecustomize.py, or a
    json/ shadowing the real one, put there would run inside the agent, outside the sandbox and with
    the key, at its next start, or at a later import in this one. The places: PYTHONPATH and
    PYTHONHOME as set (even where -E ignores them now: the next start may not), the user site folder
    where -s skips it now, and sys.path itself, which holds what .pth files add. (PYTHONSTARTUP is
    read only by an interactive Python, never by the agent.)"""
    unset = (
        "unset it for the agent (env -u {} python harness.py ...) or use a workspace apart from it"
    )
    # a folder as named; what names it; what follows from its being there
    places: list[tuple[str, str, str]] = []
    for variable, planted in (("PYTHONPATH", "a sitecustomize.py"), ("PYTHONHOME", "modules")):
        value = os.environ.get(variable, "")  # Python ignores an empty one
        for entry in value.split(os.pathsep) if value else []:
            after = (
                f": {planted} put there would run inside the agent at its next start; "
                f"{unset.format(variable)}"
            )
            places.append((entry, f"{variable} names {entry or '.'}", after))
    # read when it is not skipped: then it is one of interpreter_folders()
    if sys.flags.no_user_site:
        user = site.getusersitepackages()
        places.append(
            (
                user,
                f"your user site-packages {user}",
                (
                    ", would run a .pth file put there inside the agent "
                    "at a start without -s or PYTHONNOUSERSITE; use a workspace apart from it"
                ),
            )
        )
    for entry in sys.path:
        places.append(
            (
                entry,
                (
                    "the agent's Python path (sys.path: how Python was started, or a "
                    f".pth file) holds {entry or '.'}"
                ),
                (
                    ": code put there would run inside the agent; run the agent on a "
                    "Python whose path is outside the workspace"
                ),
            )
        )
    guarded = interpreter_folders()
    for entry, subject, consequence in places:
        # src, . or an empty entry: the working folder
        path = real(os.path.abspath(entry or os.curdir))
        if path == AGENT_FOLDER or any(
            path == folder or folder in path.parents for folder in guarded
        ):
            continue
        if path == workspace or workspace in path.parents:
            return f"{subject}, in the workspace {workspace}{consequence}"
        if path in workspace.parents:
            return f"{subject}, which holds the workspace {workspace}{consequence}"
    return None
