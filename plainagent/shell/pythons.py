"""The project's Python for commands (phase 2): python, pip and pytest in the model's commands are
the project's, the venv the person activated or the workspace's own .venv, never the agent's own
interpreter, whose packages are not the project's."""

import os
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from plainagent.core.ownfiles import PROJECT_VENVS, VENV_BIN, real

VENVS = PROJECT_VENVS  # the workspace's own, in the order they are looked for
BIN = VENV_BIN  # the folder of a venv's programs
# Words of a command that run a Python: the approval prompt then says which one
PYTHON_WORDS = ("python", "pip", "pytest", "py")
# The commands, word for word, that only describe the Python the project's commands run: they run
# without asking and answer for it (described()), as an approved command would find it.
DESCRIBING = {
    *((name, option) for name in ("python", "python3") for option in ("--version", "-V")),
    *(("which", name) for name in ("python", "python3")),
    *(("command", "-v", name) for name in ("python", "python3")),
}


def agent_venv() -> Path | None:
    """The virtual environment the agent itself runs on; None on a base installation."""
    if sys.prefix == sys.base_prefix:
        return None
    return real(sys.prefix)


def is_venv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() and (folder / BIN).is_dir()


def project_venv(workspace: Path, env: Mapping[str, str]) -> Path | None:
    """The project's venv: the one activated (VIRTUAL_ENV) when it is not the agent's own, else the
    workspace's .venv or venv; None when there is neither."""
    agent, active = agent_venv(), env.get("VIRTUAL_ENV", "")
    if os.path.isabs(active) and is_venv(Path(active)) and real(active) != agent:
        return Path(active)
    for name in VENVS:
        if is_venv(venv := workspace / name) and real(venv) != agent:
            return venv
    return None


def without_agent(env: Mapping[str, str]) -> dict[str, str]:
    """The environment without the agent's own venv: its bin folder left out of PATH, and
    VIRTUAL_ENV when it names it."""
    agent, env = agent_venv(), dict(env)
    if agent is None:
        return env
    if "PATH" in env:  # with nothing left, the shell's default, never the working folder
        env["PATH"] = (
            os.pathsep.join(
                entry
                for entry in env["PATH"].split(os.pathsep)
                if not entry or Path(os.path.realpath(entry)) != agent / BIN
            )
            or os.defpath
        )
    if env.get("VIRTUAL_ENV") and real(env["VIRTUAL_ENV"]) == agent:
        del env["VIRTUAL_ENV"]
    return env


def for_project(env: Mapping[str, str], workspace: Path) -> dict[str, str]:
    """The environment of a command the person approved (or a program they named with --allow):
    without the agent's venv, and with the project's venv first on PATH and named by VIRTUAL_ENV,
    as its `activate` would."""
    env = without_agent(env)
    if (venv := project_venv(workspace, env)) is None:
        return env
    folder = str(venv / BIN)
    rest = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and entry != folder]
    env.pop("PYTHONHOME", None)  # activate unsets it: it would point the venv's Python elsewhere
    return {**env, "PATH": os.pathsep.join([folder, *rest]), "VIRTUAL_ENV": str(venv)}


def project_program(name: str, workspace: Path, env: Mapping[str, str]) -> str | None:
    """Where an approved command's PATH (for_project()) finds the program `name`, or None."""
    return shutil.which(name, path=for_project(env, workspace).get("PATH", os.defpath))


def described(
    words: list[str], workspace: Path, env: Mapping[str, str]
) -> tuple[list[str] | None, str | None]:
    """A command of DESCRIBING as it runs, answering for the project's Python: `python --version`
    runs the interpreter the project's python leads to (a venv's is a link to one outside it), and
    `which python` names the project's python by its path, so neither finds another on the PATH of
    a command that was not asked for. (None, why) where it must be asked for: the python found is,
    or leads to, a file of the workspace (it would run the workspace's code), or there is none."""
    name = words[-1] if words[0] in ("which", "command") else words[0]
    found = project_program(name, workspace, env)
    if found is None:
        return None, f"no {name} is found on PATH"
    if words[0] in ("which", "command"):
        return [*words[:-1], found], None  # says where it is; runs nothing
    resolved = real(found)
    if resolved.is_relative_to(real(workspace)):
        return None, f"{found} is a file of the workspace, not an interpreter outside it"
    return [str(resolved), *words[1:]], None


def python_line(command: str, workspace: Path) -> str:
    """For the approval prompt, where the command runs a Python (python, pip, pytest, or a program
    of the project's venv): a line naming the python it will find; else nothing."""
    env = for_project(os.environ, workspace)
    venv = env.get("VIRTUAL_ENV")
    words = {os.path.basename(word) for word in re.split(r"[\s;&|()<>'\"`]+", command)}
    if not any(
        word.startswith(PYTHON_WORDS) or venv and (Path(venv) / BIN / word).is_file()
        for word in words
        if word
    ):
        return ""
    found = shutil.which("python", path=env.get("PATH", os.defpath))
    return f"(python: {found or 'none found on PATH'})"
