"""The installed command: `pip install` of the clone into a fresh venv gives `plainagent`, which
runs a task from any folder, reads its .env from the person's configuration folder, keeps that .env
from the model, and needs only openai and python-dotenv."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
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
    assert result.stderr == "error: unknown flag --no-such-flag; see plainagent --help\n"


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


# The README's routes to the agent from a project whose venv is active: each install line of its
# "install it as a command" block, and the clone itself (the quick start alone)
CLONE_ROUTE = "the clone, no install"
ROUTES = ["pip install -e .", "pipx install .", "uv tool install .", CLONE_ROUTE]


def readme_block(holding: str) -> list[str]:
    """The commands of the README's first code block holding `holding`, comments cut off, each
    alternative a comment offers (`# or: uv tool install .`) as a line of its own."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S) if holding in b)
    lines = []
    for line in block.splitlines():
        command, _, comment = line.partition("#")
        lines += [command.strip()] + re.findall(r"^ *or: (.+)$", comment)
    return [line.strip() for line in lines if line.strip()]


def readme_by_path(program: str) -> str | None:
    """The README's inline command that runs the agent's `program` by its path in the agent's venv
    (path/to/agent/.venv/bin/plainagent "task"), if it shows one."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("\n", " ")
    return next(iter(re.findall(rf"`(path/to/agent/\.venv/bin/{program} [^`]+)`", text)), None)


@pytest.mark.parametrize("route", ROUTES)
def test_each_install_route_of_the_readme_runs_from_a_project_whose_venv_is_active(
    route, model, tmp_path
):
    # The README as a person follows it: the quick start in a copy of the clone, the route's
    # install line, then "Work on your own project" as written, in one shell. Offline: the venvs
    # see the suite's packages through a .pth, and pip takes nothing from the index.
    tool = route.split()[0]
    if route != CLONE_ROUTE and tool != "pip" and shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed on this machine: the route '{route}' is not tried")
    assert route == CLONE_ROUTE or route in readme_block("install -e"), "the README dropped it"
    agent, project, home, bin_ = (tmp_path / name for name in ("agent", "project", "home", "bin"))
    for path in [*source_files(), ROOT / "requirements.txt", ROOT / ".env.example"]:
        (agent / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, agent / path.relative_to(ROOT))
    bin_.mkdir()
    base = os.path.realpath(sys.executable)
    (bin_ / "python3").symlink_to(base)
    subprocess.run([base, "-m", "venv", "--without-pip", str(project / ".venv")], check=True)
    # The suite's packages (openai, dotenv, and wheel, which setuptools before 70.1 builds with)
    site = (
        " ".join(p for p in sys.path if p.endswith("site-packages"))
        or sysconfig.get_paths()["purelib"]
    )
    if route.startswith("pip install -e") and importlib.util.find_spec("wheel") is None:
        pytest.skip("no wheel package beside the suite: pip install -e . cannot build offline")
    quick = [
        line
        for line in readme_block("git clone")
        if not line.startswith(("git clone", "python harness.py"))
    ]
    made = next(i for i, line in enumerate(quick) if "-m venv .venv" in line)
    quick.insert(
        made + 1, f"printf '%s\\n' {site} > $(echo .venv/lib/python3*/site-packages)/s.pth"
    )
    offline = "pip install --no-index --no-deps --no-build-isolation"
    installs = [] if route == CLONE_ROUTE else [route]
    install = "\n".join(["set -e", f"cd {agent}", *quick, *installs]).replace(
        "pip install", offline
    )
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "XDG_CONFIG_HOME")},
        "HOME": str(home),
        "PATH": f"{bin_}:{home}/.local/bin:/usr/local/bin:/usr/bin:/bin",
    }
    done = subprocess.run(["bash", "-c", install], env=env, capture_output=True, text=True)
    if done.returncode and tool != "pip" and route != CLONE_ROUTE:
        pytest.skip(f"'{route}' could not install offline here: {done.stderr[-200:]}")
    assert done.returncode == 0, done.stderr

    lines = readme_block("path/to/project")
    instead = {"pip": readme_by_path("plainagent"), "the": readme_by_path("python")}.get(tool)
    if instead:  # what the README says to run in place of `plainagent` for this route
        lines = [instead if line.startswith("plainagent ") else line for line in lines]
    script = "\n".join(lines).replace("path/to/project", str(project))
    model.queue(answer("They pass."))

    result = subprocess.run(
        ["bash", "-c", script.replace("path/to/agent", str(agent))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **CHILD,
    )

    assert (result.returncode, result.stdout) == (0, "They pass.\n"), result.stderr
    system = model.requests[0]["body"]["messages"][0]["content"]
    assert f"Their python is {project}/.venv/bin/python. " in system
