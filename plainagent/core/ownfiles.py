"""The agent's own files (phase 2, the guardrails): what in the agent's folder, the Python it runs
on and the program a person types to start it no tool and no command may change when the workspace
holds it. The file tools (workspace/files.py) and the kernel's rules (sandbox/landlock.py) both
follow this one rule."""

import contextlib
import functools
import importlib
import importlib.machinery
import importlib.util
import os
import re
import shutil
import site
import stat
import sys
import sysconfig
import typing
from pathlib import Path


def real(path: str | os.PathLike) -> Path:
    """The path with every link on it followed, as resolve() gives it; a loop of links gives the
    path as it is, where resolve() raises RuntimeError (Python 3.10-3.12)."""
    return Path(os.path.realpath(path))


PACKAGE = real(__file__).parents[1].name  # this package's folder, beside harness.py
# The folder that holds harness.py and the package
AGENT_FOLDER = real(__file__).parents[2]
# Subfolders Python runs from whatever their content: compiled modules and virtual environments.
RUN_FROM = {"__pycache__", ".venv", "venv", "env"}
CONFIG_NAME = "plainagent"  # the agent's folder in the person's configuration folder
LAUNCHER = "plainagent"  # the command pyproject.toml installs, which a person types to start it
# Beside the agent's .env: the MCP servers a run starts (mcp/config.py), and the tokens their "env"
# may hold; no tool reads or writes it, no command reads it or makes it
MCP_CONFIG = "mcp.json"
# The venvs a person activates in a project, and the folder activating one puts first on PATH
PROJECT_VENVS = (".venv", "venv")
VENV_BIN = "Scripts" if sys.platform == "win32" else "bin"
# A launcher's first lines, where pip names the Python it runs: #!/path/python, or under #!/bin/sh
# (a path with spaces, or too long for #!) '''exec' "/path/python" "$0" "$@"
SHEBANG = re.compile(
    r"\A#!(/\S*python[\w.]*)[ \t]*$|\A#!/bin/sh\n'''exec' (?:\"([^\"\n]+)\"|(\S+)) ", re.M
)
SHEBANG_BYTES = 4096  # of a launcher, read for them
# What a person types to run the agent's tutorial script: python harness.py, python3, python3.12
PYTHON_NAMES = ("python", "python3", "python{}.{}".format(*sys.version_info[:2]))
MAX_LINKS = 40  # links followed from a launcher before it counts as a loop (as the kernel)


def installed(folder: Path = AGENT_FOLDER) -> bool:
    """Whether the agent's files were installed into a Python installation (pipx, uv tool, pip
    install) rather than run from a clone: harness.py then sits directly in a site-packages folder,
    shared with every other package and replaced at the next upgrade, no place for the person's
    .env."""
    places = {sysconfig.get_paths()[name] for name in ("purelib", "platlib")}
    places.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    places.add(site.getusersitepackages())
    return folder.name in ("site-packages", "dist-packages") or any(
        real(place) == folder for place in places if place
    )


def config_folder() -> Path:
    """The agent's folder in the person's configuration folder: $XDG_CONFIG_HOME/plainagent
    (~/.config/plainagent), %APPDATA%\\plainagent on Windows, ~/Library/Application
    Support/plainagent on macOS."""
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(home / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = str(home / "Library" / "Application Support")
    else:  # the XDG rule: a relative value is ignored
        given = os.environ.get("XDG_CONFIG_HOME", "")
        base = given if os.path.isabs(given) else str(home / ".config")
    return Path(os.path.abspath(base)) / CONFIG_NAME


def dotenv_file(folder: Path = AGENT_FOLDER) -> Path:
    """Where the agent reads its .env: beside harness.py in a clone, in the person's configuration
    folder for an installed copy."""
    return (config_folder() if installed(folder) else folder) / ".env"


def read_only_entries(folder: Path = AGENT_FOLDER) -> list[Path]:
    """The entries of the agent's folder that nothing may change. Python imports from the top of the
    folder before anything else (a dotenv.py or json/ put there runs inside the agent at its next
    start), and .env sets where the key is sent: so every file and link directly in it, and each
    subfolder Python imports or runs from. Its other subfolders (docs/, tests/) may be written; new
    names directly in it are refused (may_change)."""
    with os.scandir(folder) as scan:
        return sorted(
            Path(entry.path)
            for entry in scan
            if entry.is_symlink() or not entry.is_dir() or imported_from(Path(entry.path))
        )


def interpreter_folders() -> list[Path]:
    """The Python installation the agent runs on: its venv, the base installation (site-packages
    included), and the user's site-packages when Python reads it. A .pth file or module put there
    runs inside the agent."""
    folders = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    if site.ENABLE_USER_SITE and site.USER_SITE:
        folders.add(site.USER_SITE)
    return sorted({real(folder) for folder in folders})


def launchers(path: str | None = None) -> list[Path]:
    """The program a person types to start the agent: every file of its name in a folder of PATH
    (`path`, else the agent's own), each link on the way from it and the file it leads to (pipx and
    uv tool make ~/.local/bin/plainagent a link into their venv; pip --user writes the script
    itself), and the script this process was started from when it is one (sys.argv[0]). Another
    program put in its place would run outside the sandbox, with the key, at the next start."""
    found = [file for folder in path_folders(path) for file in launchers_in(folder)]
    started = sys.argv[0] if sys.argv else ""
    if started and Path(started).name.lower() in launcher_names():
        found.append(Path(os.path.abspath(started)))
    return sorted({link for file in found for link in links_from(file)})


def launcher_installations(starters: list[Path] | None = None) -> list[Path]:
    """The Python installations the launchers (`starters`, else launchers()) run on, as a script's
    first lines name its Python (pip's `#!/path/to/python`, or its `exec "/path/to/python"` under
    `#!/bin/sh`): the code the person's next `plainagent` imports, outside the sandbox and with the
    key, where it is not the installation this agent runs on (interpreter_folders). A venv (pipx,
    uv tool) and the installation it is made from; a Python that is no venv (pip --user), and every
    Python version's user site-packages. A launcher through `env`, or a Windows .exe, names none."""
    found: set[Path] = set()
    for launcher in launchers() if starters is None else starters:
        try:
            with open(launcher, "rb") as file:
                head = file.read(SHEBANG_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        named = SHEBANG.search(head)
        if named is None or not os.path.isabs(python := named[1] or named[2] or named[3]):
            continue
        # a venv's python is a link to its base's; one not in a bin folder is its installation
        prefix = installation(real(os.path.dirname(python)))
        found |= {prefix, installation(real(python).parent)}
        if not (prefix / "pyvenv.cfg").is_file():
            found.add(Path(site.getusersitepackages()).parents[1])
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for line in (prefix / "pyvenv.cfg").read_text(encoding="utf-8").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    found.add(installation(real(value.strip())))  # its base's bin folder
    return sorted(found)


def installation(folder: Path) -> Path:
    """The installation whose programs are in the folder: the one its bin (Scripts) is in."""
    return folder.parent if folder.name == VENV_BIN else folder


def launcher_names() -> set[str]:
    """The names a shell runs when a person types the launcher: plainagent, and on Windows with each
    extension PATHEXT lists (plainagent.exe, which pip and uv write)."""
    if sys.platform != "win32":
        return {LAUNCHER}
    extensions = os.environ.get("PATHEXT") or ".COM;.EXE;.BAT;.CMD"
    return {
        LAUNCHER,
        *(LAUNCHER + extension.lower() for extension in extensions.split(os.pathsep) if extension),
    }


def path_folders(path: str | None = None) -> list[Path]:
    """The folders of PATH (`path`, else the agent's own, which the person's shell has too), links
    resolved: an empty or relative entry is the working folder, or a folder in it."""
    value = os.environ.get("PATH", os.defpath) if path is None else path
    entries = (real(entry or os.curdir) for entry in value.split(os.pathsep))
    return list(dict.fromkeys(entries))


def launchers_in(folder: Path) -> list[Path]:
    """The entries of a folder a shell would run for the launcher's name (a file or a link, not a
    folder; looked up by name, so a file system that ignores case finds it in any case)."""
    names = (folder / name for name in sorted(launcher_names()))
    return [entry for entry in names if os.path.lexists(entry) and not entry.is_dir()]


def links_from(path: Path) -> list[Path]:
    """The path (the links in its folders resolved, not its own), each link it leads through, and
    the file it ends at (which may not be there)."""
    chain: list[Path] = []
    for _ in range(MAX_LINKS):
        path = real(path.parent) / path.name
        chain.append(path)
        try:
            path = path.parent / os.readlink(path)
        except OSError:  # not a link (or not there): the end
            return chain
    return chain  # a loop of links: what it went through


def launcher_folders(workspace: Path) -> list[Path]:
    """Where a file of the launcher's name runs when a person types it: the folders of PATH, and
    the bin folder of the workspace's .venv and venv, which are on PATH once the person activates
    one (links resolved)."""
    venvs = [real(workspace / name / VENV_BIN) for name in PROJECT_VENVS]
    return list(dict.fromkeys([*path_folders(), *venvs]))


def launchers_on_path_in(workspace: Path) -> dict[Path, tuple[int, int]]:
    """Each file of the launcher's name in a folder of PATH in the workspace (the project's
    activated .venv/bin, say), or in the bin folder of its .venv or venv (on PATH as soon as the
    person activates it), with what tells it from another put in its place: its device and inode
    (the kernel keeps the one there from being changed where it is; its mode and times may be). A
    command may make one; the person's next `plainagent` would run it."""
    found = {}
    for folder in launcher_folders(workspace):
        if folder == workspace or workspace in folder.parents:
            for file in launchers_in(folder):
                with contextlib.suppress(OSError):
                    info = os.lstat(file)
                    found[file] = (info.st_dev, info.st_ino)
    return found


def pythons_on_path_in(workspace: Path) -> dict[Path, tuple[int, int]]:
    """The file each name a person types to run Python (`python3 harness.py`: PYTHON_NAMES) runs,
    where PATH finds it in the workspace: a command that puts one in a folder of PATH before the
    one found now (~/.local/bin, with the home folder the workspace) changes what the next start
    runs, outside the sandbox. By its path alone ((0, 0)): one made again where it was (a venv made
    anew) runs as it did."""
    found = {}
    for name in PYTHON_NAMES:
        if (program := shutil.which(name)) is not None:
            path = real(os.path.dirname(os.path.abspath(program))) / os.path.basename(program)
            if workspace in path.parents:
                found[path] = (0, 0)
    return found


def stray_launchers(workspace: Path) -> list[Path]:
    """The launchers on PATH in the workspace that did not start this process and are none of the
    agent's own places (its folder, the Python it runs on): a command of a run that was stopped
    before it could look may have put one there."""
    started = real(sys.argv[0]) if sys.argv and sys.argv[0] else None
    guarded = [AGENT_FOLDER, *interpreter_folders()]
    return [
        file
        for file in launchers_on_path_in(workspace)
        if real(file) != started and not any(folder in file.parents for folder in guarded)
    ]


def imported_from(subfolder: Path) -> bool:
    """Whether Python may run code from this subfolder of the agent's folder: the agent's own
    package, compiled modules, a virtual environment (the one running, or any with a pyvenv.cfg), or
    a name `import` would find here first (json/, openai/: one with an __init__.py in it would
    shadow the real module)."""
    name = subfolder.name
    running = real(sys.prefix)
    return (
        name.lower() in RUN_FROM
        or name == PACKAGE
        or (subfolder / "pyvenv.cfg").exists()
        or running == subfolder
        or subfolder in running.parents
        or importable(name)
    )


@functools.cache
def importable(name: str) -> bool:
    """A top-level module name this Python knows (built in, standard library, or installed
    elsewhere)."""
    if not name.isidentifier():
        return False
    if name in sys.builtin_module_names or name in sys.stdlib_module_names:
        return True
    elsewhere = [p for p in sys.path if p and real(p) != AGENT_FOLDER]
    return importlib.machinery.PathFinder.find_spec(name, elsewhere) is not None


def below(path: Path, place: Path) -> tuple[str, ...] | None:
    """The names of a resolved path beneath `place` (none: the place itself), or None outside it. By
    name, or by what the file system says a folder on its way is: a name that differs in case
    (macOS, Windows), in Unicode form, or goes through a bind mount is the place too. (A file with
    other names is a hard link, which its callers tell apart by inode, saying so.)"""
    if path == place or place in path.parents:
        return path.relative_to(place).parts
    try:
        info = os.stat(place)
    except OSError:
        return None
    for ancestor in (path, *path.parents) if path.is_absolute() else ():
        with contextlib.suppress(OSError):
            found = os.lstat(ancestor)
            if os.path.samestat(found, info) and (found.st_nlink < 2 or stat.S_ISDIR(info.st_mode)):
                return path.relative_to(ancestor).parts
    return None


def may_change(path: Path, folder: Path = AGENT_FOLDER) -> bool:
    """Whether a resolved path may be written or created as far as the agent's folder goes: anywhere
    outside it, or inside one of its subfolders that exists and is not read-only."""
    if not (names := below(path, folder)):
        return names is None
    top = folder / names[0]
    if not top.is_dir() or top.is_symlink():
        return False
    # By inode, not name: on a file system that ignores case, JSON/ is the folder json/.
    node = (info := os.lstat(top)).st_dev, info.st_ino
    return all(
        (entry.st_dev, entry.st_ino) != node for entry in map(os.lstat, read_only_entries(folder))
    )


# What each of the agent's own places is (own_places): the file tools say which when they refuse one
STATE = "state"  # the state folder: every workspace's transcripts and undo data
KEYS = "keys"  # the agent's .env
SERVERS = "servers"  # the mcp.json beside it
CODE = "code"  # the agent's folder
PYTHON = "python"  # the Python installation it runs on
STARTER = "starter"  # the program a person types to start it
INSTALLED = "installed"  # the Python installation that program runs on, where it is another


def own_places(state: typing.Iterable[Path], dotenv: Path) -> list[tuple[Path, str]]:
    """The one list of the agent's own places, each with what it is, which no tool and no command
    changes: the state folder (every workspace's transcripts and undo data, and a --transcript
    elsewhere: settings.protected, as `state`), its .env (`dotenv`) and the mcp.json beside it, its
    folder (whose top level, __pycache__ and virtual environments: may_change), the Python
    installation it runs on, and the program a person types to start it (launchers) with the
    installation that runs on (launcher_installations). The file tools refuse what is in one
    (workspace/files.writable), and 'always' keeps it as shown (shell/shapes.kept)."""
    starters = launchers()  # PATH looked through once, for both
    return [
        *((Path(place), STATE) for place in state),
        (dotenv, KEYS),
        (dotenv.with_name(MCP_CONFIG), SERVERS),
        (AGENT_FOLDER, CODE),
        *((folder, PYTHON) for folder in interpreter_folders()),
        *((launcher, STARTER) for launcher in starters),
        *((folder, INSTALLED) for folder in launcher_installations(starters)),
    ]


def in_own_place(path: Path, place: Path, kind: str) -> bool:
    """Whether a resolved path is in one of own_places(): the read-only part of the agent's folder
    (may_change), or any other place itself or anything in it."""
    if kind == CODE:
        return not may_change(path, place)
    return below(path, place) is not None
