"""The clone as a person meets it: what installing from it leaves there is ignored by git,
.env.example says which .env each way of running the agent reads, and the troubleshooting row for a
Python without the agent's packages names what that Python says and installs only into the agent's
own venv."""

import re
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT

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


def test_the_missing_package_row_names_what_python_says_and_installs_into_the_agents_venv(tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    said = subprocess.run(
        [str(bare / "bin" / "python"), str(ROOT / "harness.py"), "task"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    ).stderr.splitlines()[-1]
    row = next(
        line
        for line in (ROOT / "docs" / "troubleshooting.md").read_text().splitlines()
        if "No module named" in line
    )

    missing = re.search(r"No module named '(\w+)'", said)[1]
    assert f"No module named '{missing}'" in row or f"`'{missing}'`" in row, (said, row)
    commands = re.findall(r"`([^`]*pip install[^`]*)`", row)
    assert commands and all(
        re.match(r"(\.venv/bin/python|\.venv\\Scripts\\python) -m pip install", command)
        for command in commands
    ), commands
