"""Where the command line keeps what a run leaves behind (beyond the tutorial): transcripts and
undo data in the person's state folder, never the project. One folder per workspace, named so a
person can tell which: the workspace's own folder name and a short hash of its resolved path. No
tool writes there and no command may change it (settings.protected names it, the kernel's rules
follow)."""

import contextlib
import hashlib
import itertools
import os
import re
import sys
from pathlib import Path

AGENT = "plainagent"  # the folder under the state folder that holds every workspace's runs
NAME_CHARS = 40  # the most of the workspace's folder name kept in its runs folder's name
HASH_CHARS = 10


def state_home(env: dict[str, str]) -> Path:
    """The person's state folder: $XDG_STATE_HOME where it is an absolute path (on every system),
    else ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows, ~/.local/state
    elsewhere."""
    given = env.get("XDG_STATE_HOME", "")
    if given and os.path.isabs(given):
        return Path(given)
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"])
    if sys.platform == "win32":
        return Path.home() / "AppData" / "Local"
    return Path.home() / ".local" / "state"


def agent_state(env: dict[str, str]) -> Path:
    """The folder that holds every workspace's runs, with the links on its way resolved (realpath,
    not resolve(): it may not exist yet, and a loop of links must not raise)."""
    return Path(os.path.realpath(state_home(env) / AGENT))


def runs_folder(workspace: Path, env: dict[str, str]) -> Path:
    """The folder this workspace's transcripts and undo data live in: `<name>-<hash>`, the
    workspace's folder name (characters a file system may refuse replaced by _) and a short hash
    of its resolved path, so two projects of one name get two folders."""
    return agent_state(env) / folder_name(workspace)


def folder_name(workspace: Path) -> str:
    """The name of a workspace's runs folder (see runs_folder)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", workspace.name)[:NAME_CHARS].lstrip(".") or "root"
    hashed = hashlib.sha256(os.fsencode(workspace)).hexdigest()[:HASH_CHARS]
    return f"{name}-{hashed}"


def make_folders(folder: Path, mode: int) -> list[Path]:
    """The folder and each one missing on its way, every one made with `mode` (less the umask; not
    os.makedirs, which gives the mode to the last folder only); returns those made, outermost
    first."""
    missing = list(itertools.takewhile(lambda f: not f.is_dir(), (folder, *folder.parents)))
    made = []
    for each in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made since by another run
            each.mkdir(mode=mode)
            made.append(each)
    return made
