"""The project's Python for commands: python, pip and pytest in the model's commands are the
project's venv (the one activated, or the workspace's .venv), never the agent's own; the prompt
says which; under pyenv an unasked python --version works in the sandbox; an approved pip keeps
no cache it could not write."""

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import CHILD, ROOT, needs_landlock, run_script

import tools
from plainagent.approval import prompt as approval
from plainagent.core import settings

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX venv layout (bin/)")
AGENT_VENV = Path(sys.prefix)
needs_agent_venv = pytest.mark.skipif(
    sys.prefix == sys.base_prefix, reason="the tests run on no venv of their own"
)
PREFIX = 'python -c "import sys; print(sys.prefix)"'
PYENV_SHIMS = [
    entry
    for entry in os.environ.get("PATH", "").split(os.pathsep)
    if entry.endswith("/shims") and (Path(entry).parent / "libexec" / "pyenv").is_file()
]


def make_venv(folder: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)],
        check=True,
        capture_output=True,
    )
    return folder


def approved_command_prints(model, workspace: Path, env: dict, command: str = PREFIX) -> str:
    """Run the agent (harness.py on the agent's own Python) in the workspace, the model running a
    command (PREFIX unless another is given) approved; what the command printed."""
    model.queue(calls(("run_shell", {"command": command})), answer("done"))
    result = subprocess.run(
        [sys.executable, str(ROOT / "harness.py"), "where?", "--yes"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        **CHILD,
    )
    assert result.stdout == "done\n", result.stderr
    return model.messages(1)[-1]["content"]


@needs_agent_venv
def test_an_approved_python_is_the_activated_project_venv_even_with_the_agents_bin_first(
    model, tmp_path
):
    """The person activated their project's venv, and has the agent's venv bin on
    PATH too (for its command)."""
    project, workspace = make_venv(tmp_path / "project-venv"), tmp_path / "work"
    workspace.mkdir()
    path = os.pathsep.join([str(AGENT_VENV / "bin"), str(project / "bin"), os.environ["PATH"]])

    printed = approved_command_prints(
        model, workspace, {**os.environ, "PATH": path, "VIRTUAL_ENV": str(project)}
    )

    assert printed == f"exit code: 0\nstdout:\n{project}\n"


@needs_agent_venv
def test_with_only_the_agents_venv_active_an_approved_python_is_the_workspaces_venv(
    model, tmp_path
):
    workspace = tmp_path / "work"
    venv = make_venv(workspace / ".venv")
    path = os.pathsep.join([str(AGENT_VENV / "bin"), os.environ["PATH"]])

    printed = approved_command_prints(
        model, workspace, {**os.environ, "PATH": path, "VIRTUAL_ENV": str(AGENT_VENV)}
    )

    assert printed == f"exit code: 0\nstdout:\n{venv}\n"


@needs_agent_venv
def test_with_the_agent_on_the_workspaces_own_venv_an_approved_python_is_not_the_agents(
    model, tmp_path
):
    workspace = tmp_path / "work"
    workspace.mkdir()
    # the person installed the agent into the project's venv
    (workspace / ".venv").symlink_to(AGENT_VENV)
    path = os.pathsep.join([str(AGENT_VENV / "bin"), os.environ["PATH"]])

    printed = approved_command_prints(
        model, workspace, {**os.environ, "PATH": path, "VIRTUAL_ENV": str(AGENT_VENV)}
    )

    assert printed.startswith("exit code: 0\nstdout:\n/"), printed
    assert str(AGENT_VENV) not in printed and ".venv" not in printed


@needs_agent_venv
def test_an_unasked_command_never_finds_the_agents_own_python(in_a_run, tmp_path, monkeypatch):
    """python --version runs without asking: it is found on PATH without the agent's venv (and never
    in the workspace's), so the model is not told the agent's Python is the project's."""
    monkeypatch.setenv("PATH", os.pathsep.join([str(AGENT_VENV / "bin"), os.environ["PATH"]]))
    make_venv(tmp_path / ".venv")

    found = allowlist_python(in_a_run)
    assert found not in (
        str(AGENT_VENV / "bin" / "python"),
        str(tmp_path / ".venv" / "bin" / "python"),
    )


@needs_agent_venv
def test_an_unasked_command_never_finds_the_agents_own_python_through_a_link_to_its_venv(
    in_a_run, tmp_path_factory, monkeypatch
):
    """The agent's venv on PATH by another name (a link to it, outside the workspace)
    is left out all the same."""
    link = tmp_path_factory.mktemp("elsewhere") / "agent-venv"
    link.symlink_to(AGENT_VENV, target_is_directory=True)
    monkeypatch.setenv("PATH", os.pathsep.join([str(link / "bin"), os.environ["PATH"]]))

    found = allowlist_python(in_a_run)
    assert found not in (str(link / "bin" / "python"), str(AGENT_VENV / "bin" / "python"))


def allowlist_python(config) -> str | None:
    from plainagent.shell import allowlist

    return allowlist.outside_program("python", config)


def test_the_approval_prompt_says_which_python_a_command_will_use(
    model, tmp_path, monkeypatch, capsys
):
    venv = make_venv(tmp_path / ".venv")
    monkeypatch.setattr(sys, "stdin", Yes())
    approve = approval.terminal_approver(settings.resolve(require_key=False, workspace=tmp_path))
    assert approve("run_shell", {"command": "python -m pytest -q"}) is True
    assert approve("run_shell", {"command": "rm notes.txt"}) is True
    # python3, pip3, pytest-3 too
    assert approve("run_shell", {"command": "pip3 install -e ."}) is True

    asked = capsys.readouterr().err
    python, rm, pip3 = asked.split("run_shell wants to run:\n")[1:]
    assert python.startswith(
        "  python -m pytest -q\n  (only python --version runs without asking)\n"
        f"  (python: {venv}/bin/python)\n"
    )
    assert rm.startswith("  rm notes.txt\n  (rm is not on the allowlist)\n[y]es")
    assert pip3.startswith(
        f"  pip3 install -e .\n  (pip3 is not on the allowlist)\n  (python: {venv}/bin/python)\n"
    )


class Yes:
    """stdin for the approval prompt: a person who answers y."""

    def readline(self) -> str:
        return "y\n"

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        # as for a pipe pytest put there: read by readline()
        raise io.UnsupportedOperation("fileno")


@needs_landlock
@pytest.mark.skipif(not PYENV_SHIMS, reason="no pyenv shims on PATH")
def test_under_pyenv_an_unasked_python_version_runs_in_the_sandbox(in_a_run):
    result = tools.run_shell("python --version", settings=in_a_run)

    assert result.startswith("exit code: 0\nstdout:\nPython 3."), result


@needs_landlock
@pytest.mark.skipif(shutil.which("pip") is None, reason="no pip on PATH")
def test_an_approved_pip_under_the_sandbox_does_not_warn_about_its_cache(in_a_run):
    result = tools.run_shell("pip install --no-index no-such-package-anywhere", settings=in_a_run)

    assert "exit code: 1" in result and "No matching distribution" in result
    assert "sudo" not in result and "cache" not in result


def test_a_program_of_the_workspaces_venv_runs_unasked_only_where_the_person_named_it(
    tmp_path, monkeypatch, as_a_run
):
    monkeypatch.chdir(tmp_path)
    venv = make_venv(tmp_path / ".venv")
    (venv / "bin" / "pytest").write_text('#!/bin/sh\necho "the project\'s pytest $VIRTUAL_ENV"\n')
    (venv / "bin" / "pytest").chmod(0o755)
    from plainagent.shell.allowlist import reason_to_ask

    trusting = as_a_run(allow="pytest")
    assert (
        tools.run_shell("pytest -q", settings=trusting)
        == f"exit code: 0\nstdout:\nthe project's pytest {venv}\n"
    )
    config = as_a_run()
    assert reason_to_ask("pytest -q", config) == "pytest is not on the allowlist"
    assert reason_to_ask(".venv/bin/pytest -q", config) is not None


def test_a_project_venvs_python_runs_without_the_persons_pythonhome(tmp_path):
    """As `activate` does: PYTHONHOME would point the venv's python at another
    installation's library."""
    from plainagent.shell import pythons

    venv = make_venv(tmp_path / ".venv")
    env = pythons.for_project({**os.environ, "PYTHONHOME": str(tmp_path / "elsewhere")}, tmp_path)

    assert "PYTHONHOME" not in env and env["VIRTUAL_ENV"] == str(venv)
    done = subprocess.run(
        ["python", "-c", "import sys; print(sys.prefix)"], env=env, capture_output=True, text=True
    )
    assert done.stdout == f"{venv}\n", done.stderr


@needs_agent_venv
@pytest.mark.parametrize("active", ["agent", "another"])
def test_virtual_env_naming_the_agents_venv_is_left_out_of_an_approved_command_and_any_other_kept(
    model, tmp_path, active
):
    # With no project venv to name instead: uv, poetry and pip's --require-virtualenv go by
    # VIRTUAL_ENV, which must never point them at the agent's own packages; a value naming
    # something else is the person's, kept
    workspace, other = tmp_path / "work", str(tmp_path / "gone-venv")
    workspace.mkdir()
    given = str(AGENT_VENV) if active == "agent" else other

    printed = approved_command_prints(
        model, workspace, {**os.environ, "VIRTUAL_ENV": given}, 'echo "venv=${VIRTUAL_ENV-unset}"'
    )

    seen = "unset" if active == "agent" else other
    assert printed == f"exit code: 0\nstdout:\nvenv={seen}\n"


# Another interpreter than the one a command's PATH finds outside the project, where the machine
# has one (pyenv's python and the system's): the project's version then differs from that one's.
OTHER_PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").is_file() else sys.executable
DESCRIBING = [
    "python --version",
    "python3 --version",
    "python -V",
    "which python",
    "command -v python",
]


def test_unasked_python_version_and_which_python_answer_for_the_activated_project_venv(
    model, tmp_path
):
    venv = tmp_path / ".venv"
    subprocess.run([OTHER_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    version = subprocess.run(
        [venv / "bin" / "python", "--version"], capture_output=True, text=True, check=True
    ).stdout
    path = os.pathsep.join([str(venv / "bin"), os.environ["PATH"]])
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": path}
    model.queue(
        calls(*[("run_shell", {"command": command}) for command in DESCRIBING]), answer("done")
    )

    # stdin is no terminal: a command that asked would be refused
    result = run_script("harness.py", "which python?", cwd=tmp_path, env=env)

    assert result.stdout == "done\n", result.stderr
    said = [m["content"] for m in model.messages(1)[-len(DESCRIBING) :]]
    python = f"{venv}/bin/python"
    assert said == [
        f"exit code: 0\nstdout:\n{line}" for line in [version] * 3 + [python + "\n"] * 2
    ]
    assert f"Their python is {python}. " in model.messages(0)[0]["content"]


def test_a_project_python_that_is_a_file_of_the_workspace_is_asked_for(tmp_path, as_a_run):
    from plainagent.shell.allowlist import reason_to_ask

    venv = make_venv(tmp_path / ".venv")
    for name in ("python", "python3"):
        (venv / "bin" / name).unlink()
        (venv / "bin" / name).write_text("#!/bin/sh\necho the workspace's own\n")
        (venv / "bin" / name).chmod(0o755)
    os.environ.update(VIRTUAL_ENV=str(venv), PATH=f"{venv}/bin{os.pathsep}{os.environ['PATH']}")
    config = as_a_run(workspace=tmp_path)

    assert reason_to_ask("python --version", config) == (
        f"{venv}/bin/python is a file of the workspace, not an interpreter outside it"
    )
    assert reason_to_ask("which python", config) is None  # names it, runs nothing
    assert reason_to_ask("python --version --verbose", config) is not None
    assert reason_to_ask("command -v ls", config) == "command is not on the allowlist"
