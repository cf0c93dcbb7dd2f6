"""Shared fixtures: a scripted model server for every test, a clean environment, and ways
to run the CLI (in this process, in the background, or on a pseudo-terminal). Plain
helpers live in helpers.py."""

import marshal
import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest
from helpers import CHILD, ROOT, Terminal, cached_venv, descendants

sys.path.insert(0, str(ROOT))

from fake_model import FakeModel  # noqa: E402

import harness  # noqa: E402  after the agent's folder is on the path

# set on CI machines, not in a person's shell
PERSONS_PYTHON = (
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path, tmp_path_factory):
    """No test sees the developer's keys or settings (neither their environment nor the .env beside
    harness.py; a test that runs the agent as a subprocess and needs no key uses copy_of_the_agent),
    and no variable a test or the CLI's flags set leaks into the next test. The programs a test
    starts get a person's Python settings too, whatever this machine's are: their output buffered
    (an exit code hangs on it after a hang-up), their bytecode written. Each test has a state folder
    of its own, beside tmp_path (outside the workspace, as a person's is), so no test writes runs
    into the real home or sees another test's."""
    from plainagent.core import settings

    for name in list(os.environ):
        if name.startswith(("GROQ_", "OPENAI_", "OLLAMA_", "AGENT_")) or name in PERSONS_PYTHON:
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    # the agent's .env: none, in a folder of its own outside the workspace, as a clone's is
    monkeypatch.setattr(settings, "DOTENV", tmp_path_factory.mktemp("agent") / ".env")
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def model(monkeypatch, tmp_path):
    """The fake model, reached through GROQ_BASE_URL, with tmp_path as the working folder."""
    fake = FakeModel()
    monkeypatch.setenv("GROQ_BASE_URL", fake.url)
    monkeypatch.setenv("GROQ_API_KEY", "test-key-not-real")
    monkeypatch.chdir(tmp_path)
    yield fake
    fake.close()
    assert not fake.unscripted, (
        f"requests the test did not script a reply for: {len(fake.unscripted)}"
    )
    assert not fake.script, f"scripted replies never asked for: {list(fake.script)}"


@pytest.fixture
def start_cli():
    """Start `python harness.py ARGS` in the background, output piped; one still running at the end
    of the test is interrupted (so it kills its command's process group), then killed."""
    started: list[subprocess.Popen] = []

    def start(cwd: Path, *args: str, **kwargs) -> subprocess.Popen:
        options = {
            "stdin": subprocess.DEVNULL,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.PIPE,
            "text": True,
            **CHILD,
            **kwargs,
        }
        started.append(
            subprocess.Popen([sys.executable, str(ROOT / "harness.py"), *args], cwd=cwd, **options)
        )
        return started[-1]

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.communicate(timeout=5)
            # SIGINT ignored: kill it and what it started (in their own groups)
            except subprocess.TimeoutExpired:
                for pid in [process.pid, *descendants(process.pid)]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                process.communicate()


@pytest.fixture
def cli(model, capsys):
    """Run `python harness.py ARGS` in this process (faster than a subprocess; same
    cli.main(), same output)."""
    from plainagent.cli import main as cli

    def run(*args: str) -> subprocess.CompletedProcess:
        capsys.readouterr()
        code = cli.main(harness.run, list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["harness.py", *args], code, out, err)

    return run


@pytest.fixture
def in_a_run(tmp_path, monkeypatch):
    """A run's settings, for tools and checks called directly the way a run calls them
    (settings=in_a_run): tmp_path the workspace (and the working folder)."""
    from plainagent.core import settings

    monkeypatch.chdir(tmp_path)
    return settings.resolve(require_key=False)


@pytest.fixture
def as_a_run():
    """For a test that sets its environment or working folder first: as_a_run(**settings) then
    resolves the settings as a run would, and returns them to hand to tools and checks."""
    from plainagent.core import settings

    def resolved(**given):
        return settings.resolve(require_key=False, **given)

    return resolved


@pytest.fixture
def terminal(model, tmp_path):
    """Start `python harness.py ARGS` on a real pseudo-terminal in tmp_path; each one is
    closed when the test ends."""
    started = []

    def start(*args: str) -> Terminal:
        started.append(Terminal(*args, cwd=tmp_path))
        return started[-1]

    yield start
    for opened in started:
        opened.close()


@pytest.fixture(scope="session")
def oldest_packages():
    """Run one of the project's scripts as run_script does, but on a virtualenv with the oldest
    openai and python-dotenv that requirements.txt allows, and httpx2 beside them (a downgrade from
    openai 3 leaves it there, and other packages bring it). The virtualenv is built once per
    machine, Python and versions, under the temporary folder; the test is skipped, saying why, where
    the package index cannot be reached."""
    floors = [
        line.split("#")[0].strip().replace(">=", "==")
        for line in (ROOT / "requirements.txt").open()
    ]
    wanted = [*filter(None, floors), "httpx2"]
    python = cached_venv("oldest", repr(wanted).encode(), lambda folder: wanted)

    def run(
        name: str, *args: str, cwd: Path, root: Path = ROOT, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(python), str(root / name), *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            **CHILD,
        )

    run.python = python
    return run


def pytest_sessionfinish(session):
    """After the suite, in the process that ran it (not in each worker): the agent still starts in
    this checkout, and no compiled file of its own is cut. A child run under a resource limit once
    wrote the agent's .pyc files cut at the limit (Python does not check its write of one), and
    every later start failed with 'marshal data too short'; helpers.limited now gives such children
    no bytecode, and this says so if any test does it again."""
    if hasattr(session.config, "workerinput"):
        return
    compiled = [
        *ROOT.glob("__pycache__/*.pyc"),
        *(ROOT / "plainagent").glob("**/__pycache__/*.pyc"),
    ]
    cut = [
        str(path.relative_to(ROOT))
        for path in sorted(compiled)
        if f".{sys.implementation.cache_tag}." in path.name and not whole(path)
    ]
    started = subprocess.run(
        [sys.executable, str(ROOT / "harness.py"), "--help"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    if cut or started.returncode != 0:
        said = started.stderr.strip().splitlines()[-1:] if started.returncode else []
        said += cut[:3] + [f"{len(cut) - 3} more cut"] * (len(cut) > 3)
        AFTER_THE_SUITE.append(
            f"the agent cannot start in {ROOT} ({', '.join(said)}): a test left its compiled "
            "files cut; give a child run under a resource limit helpers.limited"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


AFTER_THE_SUITE: list[str] = []  # what pytest_sessionfinish found wrong, said in the summary


def pytest_terminal_summary(terminalreporter):
    for line in AFTER_THE_SUITE:
        terminalreporter.write_line(f"after the suite: {line}", red=True)


def whole(pyc: Path) -> bool:
    """Whether a compiled file holds a whole code object after its 16-byte header."""
    try:
        return isinstance(marshal.loads(pyc.read_bytes()[16:]), types.CodeType)
    except (OSError, EOFError, ValueError, TypeError):
        return False
