"""What a sandboxed command may read besides the workspace (beyond the tutorial): the system's
folders, the Python installations its python3 runs on (pyenv's too), and git's own configuration."""

import contextlib
import itertools
import os
import shutil
import stat
import sys
from pathlib import Path

SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# The most entries dotenv_files looks through: a large project (a venv, node_modules) has tens of
# thousands; the whole system, or a home folder, holds hundreds of thousands
MOST_ENTRIES = 200_000


def readable_folders() -> list[str]:
    """System folders and the agent's Python installation (which may live in a home folder, e.g.
    ~/.pyenv)."""
    python = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    }
    return [*SYSTEM_FOLDERS, *sorted(python)]


def python_installations(workspace: Path, path: str | None) -> tuple[str, ...]:
    """The Python installations the workspace's venvs (.venv, venv) and the python3 on `path` (a
    PATH) run on: a venv's interpreter links into one that may live in the home folder (pyenv, uv,
    conda), and fails with exit 126 where that cannot be read."""
    on_path = shutil.which("python3", path=path) if path else None
    candidates = [on_path]
    for venv in (workspace / ".venv", workspace / "venv"):
        candidates.append(str(venv / "bin" / "python"))
        home = venv_home(venv / "pyvenv.cfg")
        candidates += [os.path.join(home, "python3"), os.path.join(home, "python")] if home else []
    found = {prefix for c in candidates if c and (prefix := installation_of(c))}
    # pyenv's root, and the activated venv its python3 belongs to (outside the workspace, say)
    found.update(pyenv_roots(path or ""), filter(None, [on_path and venv_of(on_path)]))
    return tuple(sorted(found))


def venv_of(interpreter: str) -> str | None:
    """The venv a python3 on PATH belongs to (the one the person activated, which may be outside
    the workspace): its Python reads pyvenv.cfg and its site-packages there. Never the home folder
    or above."""
    folder = Path(os.path.abspath(interpreter)).parent.parent
    home = Path(os.path.realpath(os.path.expanduser("~")))
    real = Path(os.path.realpath(folder))
    if real == home or real in home.parents or not (folder / "pyvenv.cfg").is_file():
        return None
    return str(real)


def pyenv_roots(path: str) -> list[str]:
    """The pyenv installations whose shims are on `path`: a shim is a script that runs pyenv, which
    reads its versions and runs one of them, all in its root folder (~/.pyenv), which may then be
    read. Never the home folder or above."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    roots = []
    for entry in path.split(os.pathsep):
        root = Path(os.path.realpath(entry)).parent if os.path.isabs(entry) else None
        if root is None or Path(entry).name != "shims" or root == home or root in home.parents:
            continue
        if (root / "libexec" / "pyenv").is_file():
            roots.append(str(root))
    return roots


def venv_home(pyvenv_cfg: Path) -> str | None:
    """The `home =` folder of a venv's pyvenv.cfg, which the model may have made: only the start of
    a regular file is read, never through a link (the agent, unconfined, would open a device it
    names) nor from a named pipe."""
    try:
        if not stat.S_ISREG(os.lstat(pyvenv_cfg).st_mode):
            return None
        with open(
            pyvenv_cfg,
            "rb",
            opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK | os.O_NOFOLLOW),
        ) as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return None
            lines = file.read(16_384).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return next(
        (
            value.strip()
            for key, _, value in (line.partition("=") for line in lines)
            if key.strip().lower() == "home" and value.strip()
        ),
        None,
    )


def installation_of(interpreter: str) -> str | None:
    """The installation prefix of a Python interpreter, links resolved. The model may have made the
    venv, so only a real installation counts (a file bin/python* beside lib/pythonX.Y/os.py), never
    the home folder or above."""
    real = Path(os.path.realpath(interpreter))
    prefix, home = real.parent.parent, Path(os.path.realpath(os.path.expanduser("~")))
    if not (real.name.startswith("python") and real.parent.name == "bin" and real.is_file()):
        return None
    if prefix == home or prefix in home.parents or not any(prefix.glob("lib/python3*/os.py")):
        return None
    return str(prefix)


def git_config() -> list[str]:
    """The user's git settings files, without which git stops with "fatal" (a commit needs the name
    in them). Not the folder ~/.config/git, which may hold git's credential store."""
    home = os.path.expanduser("~")
    return [
        os.path.join(home, ".gitconfig"),
        *(
            os.path.join(home, ".config", "git", name)
            for name in ("config", "ignore", "attributes")
        ),
    ]


def dotenv_files(workspace: Path) -> tuple[Path, ...]:
    """Every .env file in the workspace (any case, any depth; a link named so and the file it
    points to; not a folder), which no command that runs without asking may read: a project's .env
    holds its secrets. Looked for folder by folder, never through a link, however deep they go,
    through MOST_ENTRIES entries at most: past them, a .env could be anywhere (the workspace is /,
    or a home folder), so PermissionError refuses the read or the command that would not ask,
    at no more cost than a large project's."""
    found, pending, looked_at = [], [str(workspace)], 0
    while pending and looked_at <= MOST_ENTRIES:
        with contextlib.suppress(OSError), os.scandir(pending.pop()) as entries:
            for entry in itertools.islice(entries, MOST_ENTRIES + 1 - looked_at):
                looked_at += 1
                if entry.name.lower() == ".env" and not entry.is_dir():  # a venv may be .env/
                    found += [Path(entry.path), Path(os.path.realpath(entry.path))]
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
    if looked_at > MOST_ENTRIES:
        raise PermissionError(
            f"the workspace {workspace} holds over {MOST_ENTRIES:,} files and folders, too many "
            "to look through for .env files (which hold secrets): here the file tools read "
            "nothing, and a command runs only if the user approves it; ask the user to start the "
            "agent in the project's own folder"
        )
    return tuple(dict.fromkeys(found))
