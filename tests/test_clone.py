"""The clone as a person meets it: what installing from it leaves there is ignored by git,
.env.example says which .env each way of running the agent reads, and a Python without the agent's
packages says in one line which Python to use or what to install, as its troubleshooting row does,
installing only into the agent's own venv."""

import re
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT, copy_of_the_agent

from plainagent.core import ownfiles

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git")


@needs_git
def test_what_installing_from_the_clone_leaves_is_ignored_by_git(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(ROOT / ".gitignore", tmp_path / ".gitignore")
    left = ["build/lib/harness.py", "plainagent.egg-info/PKG-INFO", "src/x.egg-info/SOURCES.txt"]
    for name in [*left, "keep.py"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")

    ignored = subprocess.run(
        ["git", "check-ignore", *left, "keep.py"], cwd=tmp_path, capture_output=True, text=True
    )

    assert ignored.stdout.splitlines() == left


def test_env_example_says_where_a_clone_and_an_installed_copy_read_their_env(monkeypatch):
    monkeypatch.setenv("HOME", "/home/you")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    header = " ".join(
        line.lstrip("# ")
        for line in (ROOT / ".env.example").read_text().split("\n\n")[0].splitlines()
    )
    installed = ownfiles.config_folder().as_posix().replace("/home/you", "~") + "/.env"

    assert "beside harness.py" in header and f"reads {installed}" in header
    assert "Never one in the folder you work on" in header


def bare_python(folder) -> str:
    """A venv's Python at folder, with neither of the agent's packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return str(folder / ("Scripts" if sys.platform == "win32" else "bin") / "python")


@pytest.mark.skipif(sys.platform == "win32", reason="the venv's layout and activate script")
def test_a_python_without_the_agents_packages_says_which_to_use_in_one_line(tmp_path):
    # The newcomer's first error: a new terminal, the venv not activated. It was a traceback ending
    # in ModuleNotFoundError: No module named 'dotenv'.
    agent = copy_of_the_agent(tmp_path / "agent")
    other = bare_python(tmp_path / "other")

    def said(python: str, script: str) -> str:
        result = subprocess.run(
            [python, script, *["task"][: script != "backend.py"]],  # backend.py takes none
            cwd=agent,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2 and result.stdout == "", result.stderr
        [line] = result.stderr.splitlines()
        return line

    start = f"error: this Python, {other}, has no openai or python-dotenv, which the agent needs: "
    for script in ("harness.py", "backend.py", "probe.py"):
        assert said(other, script) == (
            f"{start}make the agent's venv and install the packages, as the README's quick start "
            f"does: {other} -m venv {agent / '.venv'}, then {agent / '.venv/bin/python'} -m pip "
            f"install -r {agent / 'requirements.txt'}"
        )
    own = bare_python(agent / ".venv")  # made, but the terminal's Python is another
    assert said(other, "harness.py") == (
        f"{start}run it with the agent's own venv, {own} harness.py, or activate that venv first "
        f"(. {agent / '.venv/bin/activate'})"
    )
    assert said(own, "harness.py") == (
        f"error: this Python, {own}, has no openai or python-dotenv, which the agent needs: "
        f"install the packages into it, {own} -m pip install -r {agent / 'requirements.txt'}"
    )
    row = next(
        line
        for line in (ROOT / "docs" / "troubleshooting.md").read_text().splitlines()
        if "which the agent needs" in line
    )
    assert row.startswith("| `error: this Python, …, has no openai or python-dotenv, which the ")
    commands = re.findall(r"`([^`]*pip install[^`]*)`", row)
    assert commands and all(
        re.match(r"(\.venv/bin/python|\.venv\\Scripts\\python) -m pip install", command)
        for command in commands
    ), commands
