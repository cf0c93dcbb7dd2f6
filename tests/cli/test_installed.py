"""The installed command: `pip install` of the clone into a fresh venv gives `plainagent`, which
runs a task from any folder, reads its .env from the person's configuration folder, keeps that .env
from the model, and needs only openai and python-dotenv."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import CHILD, ROOT, cached_venv, needs_landlock

SOURCES = ["pyproject.toml", "README.md", "*.py", "plainagent/**/*.py"]


def source_files() -> list[Path]:
    return sorted(
        {
            path
            for pattern in SOURCES
            for path in ROOT.glob(pattern)
            if "__pycache__" not in path.parts
        }
    )


@pytest.fixture(scope="session")
def installed():
    """The clone as `pip install <clone>` installs it, in a venv of its own (not editable, so
    harness.py lands in site-packages). Built once per machine for these sources, under the
    temporary folder; skipped, saying why, where the package index cannot be reached."""
    key = b"".join(
        str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() for path in source_files()
    )

    def copy_sources(folder: Path) -> list[str]:
        # a copy: building in the clone would leave build/ and egg-info in it
        source = folder / "source"
        for path in source_files():
            (source / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, source / path.relative_to(ROOT))
        return [str(source)]

    return cached_venv("installed", key, copy_sources).parent.parent


def plainagent(
    venv: Path, *args: str, cwd: Path, env: dict | None = None
) -> subprocess.CompletedProcess:
    """The installed command, run by its path as a person's shell finds it on
    PATH (no venv active)."""
    return subprocess.run(
        [str(venv / "bin" / "plainagent"), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        **CHILD,
    )


def person(home: Path) -> dict:
    """The environment of a person whose home folder is `home`, with the fake
    model's address but no key."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GROQ_API_KEY", "VIRTUAL_ENV", "XDG_CONFIG_HOME")
    }
    return {**env, "HOME": str(home)}


def test_the_installed_command_runs_a_task_from_any_folder(installed, model, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("the answer is 42\n")
    model.queue(calls(("read_file", {"path": "notes.txt"})), answer("It says 42."))

    result = plainagent(installed, "what do the notes say?", cwd=elsewhere)

    assert (result.returncode, result.stdout) == (0, "It says 42.\n"), result.stderr
    assert "the answer is 42" in model.messages(1)[-1]["content"]
    # not the clone's
    assert (
        str(installed)
        in subprocess.run(
            [str(installed / "bin" / "python"), "-c", "import harness; print(harness.__file__)"],
            capture_output=True,
            text=True,
        ).stdout
    )


def test_the_installed_distribution_needs_only_openai_and_python_dotenv(installed):
    listed = subprocess.run(
        [
            str(installed / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print('\\n'.join(m.requires('plainagent')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()

    assert sorted(
        requirement.split(">")[0].split("=")[0].split("<")[0] for requirement in listed
    ) == ["openai", "python-dotenv"]


def test_an_installed_copy_reads_its_env_from_the_configuration_folder(installed, model, tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(parents=True)
    env = person(home)

    missing = plainagent(installed, "hi", cwd=work, env=env)

    dotenv = home / ".config" / "plainagent" / ".env"
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip() == (
        f"error: GROQ_API_KEY is not set: put the line GROQ_API_KEY=your-key in {dotenv} "
        "(make the folder if it is missing), or export GROQ_API_KEY=..."
    )
    dotenv.parent.mkdir(parents=True)
    dotenv.write_text("GROQ_API_KEY=from-the-config-folder\n")
    model.queue(answer("hello"))

    assert plainagent(installed, "hi", cwd=work, env=env).stdout == "hello\n"
    assert model.requests[0]["headers"]["authorization"] == "Bearer from-the-config-folder"


def test_xdg_config_home_moves_the_installed_copys_env(installed, model, tmp_path):
    config = tmp_path / "config"
    (config / "plainagent").mkdir(parents=True)
    (config / "plainagent" / ".env").write_text("GROQ_API_KEY=from-xdg\n")
    model.queue(answer("hello"))

    result = plainagent(
        installed,
        "hi",
        cwd=tmp_path,
        env={**person(tmp_path / "home"), "XDG_CONFIG_HOME": str(config)},
    )

    assert result.stdout == "hello\n", result.stderr
    assert model.requests[0]["headers"]["authorization"] == "Bearer from-xdg"


def test_a_relative_xdg_config_home_is_ignored_as_the_spec_says(installed, model, tmp_path):
    # Relative, it would name a folder under wherever the agent starts: the
    # workspace, which the model can write.
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".config" / "plainagent").mkdir(parents=True)
    (home / ".config" / "plainagent" / ".env").write_text("GROQ_API_KEY=from-home\n")
    (work / "config" / "plainagent").mkdir(parents=True)
    (work / "config" / "plainagent" / ".env").write_text("GROQ_API_KEY=planted-in-the-workspace\n")
    model.queue(answer("hello"))

    result = plainagent(
        installed, "hi", cwd=work, env={**person(home), "XDG_CONFIG_HOME": "config"}
    )

    assert result.stdout == "hello\n", result.stderr
    assert model.requests[0]["headers"]["authorization"] == "Bearer from-home"


@needs_landlock
def test_the_installed_copys_env_is_kept_from_the_model(installed, model, tmp_path):
    home = tmp_path / "home"  # the workspace holds the configuration folder
    dotenv = home / ".config" / "plainagent" / ".env"
    dotenv.parent.mkdir(parents=True)
    dotenv.write_text("GROQ_API_KEY=secret-in-the-config-folder\n")
    os.link(dotenv, home / "linked")
    model.queue(
        calls(("read_file", {"path": ".config/plainagent/.env"})),
        calls(("run_shell", {"command": "cat .config/plainagent/.env linked"})),
        calls(
            (
                "write_file",
                {"path": ".config/plainagent/.env", "content": "GROQ_BASE_URL=http://x\n"},
            )
        ),
        answer("done"),
    )

    result = plainagent(installed, "show me the key", "--yes", cwd=home, env=person(home))

    assert result.stdout == "done\n", result.stderr
    read, shown, written = (model.messages(i)[-1]["content"] for i in (1, 2, 3))
    assert read.startswith(
        "error: PermissionError: .config/plainagent/.env holds the agent's own API keys"
    )
    assert "Permission denied" in shown and "secret" not in shown
    assert written.startswith("error: PermissionError:")
    assert dotenv.read_text() == "GROQ_API_KEY=secret-in-the-config-folder\n"


@needs_landlock
@pytest.mark.parametrize("there", [".config/plainagent", ".config", "a file at .config"])
def test_no_command_creates_the_installed_copys_env_where_there_is_none_yet(
    installed, model, tmp_path, there
):
    # the workspace holds the configuration folder, with the key in the environment
    home = tmp_path / "home"
    dotenv = home / ".config" / "plainagent" / ".env"
    home.mkdir()
    if there == "a file at .config":
        (home / ".config").write_text("")
    else:
        (home / there).mkdir(parents=True)
    model.queue(
        calls(
            (
                "run_shell",
                {
                    "command": "rm -f .config; mkdir -p .config/plainagent; "
                    "echo GROQ_BASE_URL=http://x > .config/plainagent/.env"
                },
            ),
            ("run_shell", {"command": "touch .config/plainagent/.env"}),
            (
                "write_file",
                {"path": ".config/plainagent/.env", "content": "GROQ_BASE_URL=http://x\n"},
            ),
        ),
        answer("done"),
    )

    result = plainagent(
        installed, "plant it", "--yes", cwd=home, env={**person(home), "GROQ_API_KEY": "k"}
    )

    assert result.stdout == "done\n", result.stderr
    assert not os.path.lexists(dotenv), [m["content"] for m in model.messages(1)[-3:]]
    assert model.messages(1)[-1]["content"].startswith("error: PermissionError:")


def test_a_usage_error_of_the_installed_command_names_it(installed, tmp_path):
    result = plainagent(installed, "x", "--no-such-flag", cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr == "error: unrecognized arguments: --no-such-flag; see plainagent --help\n"


def test_an_installed_agent_runs_from_a_script_beside_its_own_tools_py(installed, model, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "tools.py").write_text("WHO = 'mine'\n")
    (project / "script.py").write_text(
        "from plainagent import run\nimport tools\nprint(tools.WHO, run('hi'))\n"
    )
    model.queue(answer("hello"))

    result = subprocess.run(
        [str(installed / "bin" / "python"), "script.py"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        **CHILD,
    )

    assert (result.returncode, result.stdout) == (0, "mine hello\n"), result.stderr
    assert [tool["function"]["name"] for tool in model.requests[0]["body"]["tools"]][
        0
    ] == "read_file"


def test_the_installed_command_says_its_version_from_the_packages_metadata(installed, tmp_path):
    # its harness.py is in site-packages, with no pyproject.toml beside it
    declared = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M)[1]

    result = plainagent(installed, "--version", cwd=tmp_path)

    assert (result.returncode, result.stdout, result.stderr) == (0, f"plainagent {declared}\n", "")
