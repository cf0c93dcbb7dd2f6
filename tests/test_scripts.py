"""`from harness import run` in a person's own project: a script beside its own settings.py, errors.py,
files.py, context.py, terminal.py and schema.py imports the agent and still gets its own modules; only
the four design-card names and the package's can collide, and a collision is one clear message."""

import subprocess
import sys
from pathlib import Path

import pytest

from fake_model import answer
from helpers import CHILD, ROOT

PERSONS_MODULES = ("settings", "errors", "files", "context", "terminal", "schema")
SCRIPT = """
import sys
{path_line}
from harness import run
import {modules}
print([module.WHO for module in ({modules},)])
print(run("hello", workspace=sys.argv[1], max_steps=2))
"""


def persons_project(folder: Path, path_line: str) -> Path:
    """A project folder with the person's own modules of generic names, and a script that uses the agent."""
    folder.mkdir()
    for name in PERSONS_MODULES:
        (folder / f"{name}.py").write_text(f"WHO = 'mine: {name}'\n")
    script = SCRIPT.format(path_line=path_line, modules=", ".join(PERSONS_MODULES))
    (folder / "script.py").write_text(script)
    return folder


def run_script_in(folder: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, "script.py", str(folder)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, **CHILD)


@pytest.mark.parametrize("how", ["readme-snippet", "pythonpath"])
def test_a_script_beside_its_own_generic_modules_runs_the_agent_and_keeps_its_own(model, tmp_path, how):
    path_line = f"sys.path.append({str(ROOT)!r})" if how == "readme-snippet" else ""
    project = persons_project(tmp_path / "project", path_line)
    model.queue(answer("hi there"))

    result = run_script_in(project, {"PYTHONPATH": str(ROOT)} if how == "pythonpath" else {})

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [str([f"mine: {name}" for name in PERSONS_MODULES]), "hi there"]


def test_a_persons_own_tools_py_is_one_message_naming_both_files(model, tmp_path):
    project = persons_project(tmp_path / "project", f"sys.path.append({str(ROOT)!r})")
    (project / "tools.py").write_text("WHO = 'mine: tools'\n")

    result = run_script_in(project, {})

    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (f"ImportError: {project / 'tools.py'} is imported as the agent's tools module in place "
                    f"of {ROOT / 'tools.py'}: rename yours, or start your script from another folder")
