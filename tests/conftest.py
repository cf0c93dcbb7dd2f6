"""Shared fixtures: a scripted model server for every test, a clean environment, and a way to run the CLI."""

import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import harness

from fake_model import FakeModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    """No test sees the developer's keys or settings (neither their environment nor the .env beside harness.py;
    a test that runs the agent as a subprocess and needs no key uses copy_of_the_agent), and no variable a
    test or the CLI's flags set leaks into the next test."""
    import settings
    for name in list(os.environ):
        if name.startswith(("GROQ_", "OPENAI_", "OLLAMA_", "AGENT_")):
            monkeypatch.delenv(name)
    monkeypatch.setattr(settings, "DOTENV", tmp_path / "no-such-agent-folder" / ".env")
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
    assert not fake.unscripted, f"requests the test did not script a reply for: {len(fake.unscripted)}"
    assert not fake.script, f"scripted replies never asked for: {list(fake.script)}"


def default_signals() -> None:
    """Under `nohup` or `script &` the suite runs with SIGINT or SIGHUP ignored, and children inherit that;
    a child started with this as preexec_fn gets Ctrl-C (and SIGTERM, SIGHUP) as a person's shell would."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


CHILD = {} if sys.platform == "win32" else {"preexec_fn": default_signals}  # Popen options for every child


def run_script(name: str, *args: str, cwd: Path, timeout: float = 60, root: Path = ROOT,
               **kwargs) -> subprocess.CompletedProcess:
    """Run one of the project's scripts (from root, the agent's folder) as a user would, stdin not a terminal."""
    if "input" not in kwargs:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([sys.executable, str(root / name), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, **CHILD, **kwargs)


@pytest.fixture
def start_cli():
    """Start `python harness.py ARGS` in the background, output piped; one still running at the end of the
    test is interrupted (so it kills its command's process group), then killed."""
    started: list[subprocess.Popen] = []

    def start(cwd: Path, *args: str, **kwargs) -> subprocess.Popen:
        options = {"stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE,
                   "text": True, **CHILD, **kwargs}
        started.append(subprocess.Popen([sys.executable, str(ROOT / "harness.py"), *args], cwd=cwd, **options))
        return started[-1]

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # SIGINT ignored: kill it and what it started (in their own groups)
                for pid in [process.pid, *descendants(process.pid)]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                process.communicate()


def descendants(pid: int) -> list[int]:
    """The processes under pid, from /proc (none found where there is no /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, pending = [], [pid]
    while pending:
        below = children.get(pending.pop(), [])
        found += below
        pending += below
    return found


def copy_of_the_agent(folder: Path) -> Path:
    """The agent's files in a folder of their own, so a test can give it a .env without touching ours."""
    folder.mkdir()
    for source in ROOT.glob("*.py"):
        shutil.copy(source, folder / source.name)
    return folder


@pytest.fixture
def cli(model, capsys):
    """Run `python harness.py ARGS` in this process (faster than a subprocess; same cli.main(), same output)."""
    import cli

    def run(*args: str) -> subprocess.CompletedProcess:
        capsys.readouterr()
        code = cli.main(harness.run, list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["harness.py", *args], code, out, err)

    return run


@pytest.fixture
def in_a_run(tmp_path, monkeypatch):
    """Tools and checks called directly, the way a run calls them: inside its settings, tmp_path the workspace
    (and the working folder). Outside a run, a tool has no settings to read and raises."""
    import settings
    monkeypatch.chdir(tmp_path)
    with settings.use(settings.resolve(require_key=False)) as config:
        yield config


@pytest.fixture
def as_a_run():
    """For a test that sets its environment or working folder first: as_a_run(**settings) then resolves the
    settings as a run would and, until the test ends, tools and checks run inside them."""
    import settings
    tokens = []

    def enter(**given):
        tokens.append(settings.CURRENT.set(settings.resolve(require_key=False, **given)))
        return settings.CURRENT.get()

    yield enter
    for token in reversed(tokens):
        settings.CURRENT.reset(token)


class Terminal:
    """`python harness.py` on a real pseudo-terminal: read what it shows, type answers into it."""

    def __init__(self, *args: str, cwd) -> None:
        self.master, slave = os.openpty()
        try:
            self.process = subprocess.Popen([sys.executable, str(ROOT / "harness.py"), *args], cwd=cwd,
                                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                            **CHILD)  # Ctrl-C works even when the suite runs as a background job
        finally:
            os.close(slave)  # else the master never sees the end of the output
        self.raw = b""

    @property
    def output(self) -> str:
        return self.raw.decode("utf-8", "replace").replace("\r\n", "\n")

    def read_until(self, text: str, count: int = 1, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.output.count(text) < count:
            if not self.read(max(deadline - time.monotonic(), 0)):
                raise AssertionError(f"never saw {text!r} {count} times; the terminal shows:\n{self.output}")

    def read(self, timeout: float) -> bool:
        if not select.select([self.master], [], [], timeout)[0]:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the program has exited and closed the terminal
            return False
        self.raw += data
        return bool(data)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def finish(self, timeout: float = 30) -> int:
        code = self.process.wait(timeout)
        while self.read(1):
            pass
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


@pytest.fixture
def terminal(model, tmp_path):
    started = []

    def start(*args: str) -> Terminal:
        started.append(Terminal(*args, cwd=tmp_path))
        return started[-1]

    yield start
    for opened in started:
        opened.close()
