"""`from harness import run` in a person's own project: a script beside its own settings.py,
errors.py, files.py, context.py, terminal.py and schema.py imports the agent and still gets
its own modules; only the four design-card names and the package's can collide, and a
collision is one clear message."""

import subprocess
import sys
from pathlib import Path

import pytest
from fake_model import answer, calls
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
    """A project folder with the person's own modules of generic names, and a
    script that uses the agent."""
    folder.mkdir()
    for name in PERSONS_MODULES:
        (folder / f"{name}.py").write_text(f"WHO = 'mine: {name}'\n")
    script = SCRIPT.format(path_line=path_line, modules=", ".join(PERSONS_MODULES))
    (folder / "script.py").write_text(script)
    return folder


def run_script_in(folder: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "script.py", str(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        **CHILD,
    )


@pytest.mark.parametrize("how", ["readme-snippet", "pythonpath"])
def test_a_script_beside_its_own_generic_modules_runs_the_agent_and_keeps_its_own(
    model, tmp_path, how
):
    path_line = f"sys.path.append({str(ROOT)!r})" if how == "readme-snippet" else ""
    project = persons_project(tmp_path / "project", path_line)
    model.queue(answer("hi there"))

    result = run_script_in(project, {"PYTHONPATH": str(ROOT)} if how == "pythonpath" else {})

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        str([f"mine: {name}" for name in PERSONS_MODULES]),
        "hi there",
    ]


def test_from_harness_beside_a_persons_own_tools_py_is_one_message_saying_what_to_do(
    model, tmp_path
):
    project = persons_project(tmp_path / "project", f"sys.path.append({str(ROOT)!r})")
    (project / "tools.py").write_text("WHO = 'mine: tools'\n")

    result = run_script_in(project, {})

    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"ImportError: {project / 'tools.py'} is imported as the agent's tools module in place "
        f"of {ROOT / 'tools.py'}: import the agent with `from plainagent import run` instead, "
        "which keeps yours"
    )


OWN_NAMES = ("tools", "backend", "harness", "probe")
PACKAGE_SCRIPT = """
import sys
{path_line}
{before}
from plainagent import run, TOOL_FUNCTIONS
from tools import slug
import backend, harness, probe
print([module.WHO for module in (backend, harness, probe)], slug("Hello World"))
print(run("hello", workspace=sys.argv[1], max_steps=2, tools=[*TOOL_FUNCTIONS, slug]))
print(sorted(name for name in sys.modules if name in {names}))
"""


@pytest.mark.parametrize("before", ["", "import tools"])
def test_a_script_beside_its_own_tools_py_runs_the_agent_from_the_package_and_keeps_its_own(
    model, tmp_path, before
):
    # The person's four files of the tutorial's names; their tools are imported
    # before the agent, or after it.
    project = tmp_path / "project"
    project.mkdir()
    for name in OWN_NAMES:
        (project / f"{name}.py").write_text(f"WHO = 'mine: {name}'\n")
    (project / "tools.py").write_text(
        'WHO = "mine: tools"\n\n\ndef slug(text: str) -> str:\n    """Make a slug."""\n'
        '    return text.lower().replace(" ", "-")\n'
    )
    (project / "script.py").write_text(
        PACKAGE_SCRIPT.format(
            path_line=f"sys.path.append({str(ROOT)!r})", before=before, names=set(OWN_NAMES)
        )
    )
    model.queue(calls(("slug", {"text": "A B"})), answer("hi there"))

    result = run_script_in(project, {})

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "['mine: backend', 'mine: harness', 'mine: probe'] hello-world",
        "hi there",
        str(sorted(OWN_NAMES)),
    ]
    offered = [tool["function"]["name"] for tool in model.requests[0]["body"]["tools"]]
    assert offered == [
        "read_file",
        "list_dir",
        "write_file",
        "edit_file",
        "run_shell",
        "slug",  # the agent's own
    ]
    assert model.messages(1)[-1]["content"] == "a-b"


def python_c(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """`python -c code` in a child of its own, in cwd, stdin not a terminal."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        **CHILD,
    )


def test_where_nothing_collides_the_package_and_harness_give_one_and_the_same_run(tmp_path):
    code = (
        f"import sys; sys.path.append({str(ROOT)!r}); from plainagent import run; import harness, "
        "plainagent; print(run is harness.run, plainagent.TOOL_FUNCTIONS is "
        "harness.tools.TOOL_FUNCTIONS)"
    )

    result = python_c(code, tmp_path)

    assert (result.returncode, result.stdout) == (0, "True True\n"), result.stderr


def test_importing_the_package_loads_nothing_of_the_agent(tmp_path):
    code = (
        f"import sys; sys.path.append({str(ROOT)!r}); import plainagent; "
        "print(sorted(n for n in sys.modules if n in {'harness', 'tools', 'backend', 'openai'}"
        " or n.startswith('plainagent.')))"
    )

    result = python_c(code, tmp_path)

    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr
