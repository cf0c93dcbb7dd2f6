"""Shared fixtures: a scripted model server for every test, a clean environment, and a way to run the CLI."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fake_model import FakeModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """No test sees the developer's keys or settings (backend.py may have loaded a .env at import),
    and no variable a test or the CLI's flags set leaks into the next test."""
    for name in list(os.environ):
        if name.startswith(("GROQ_", "OPENAI_", "OLLAMA_", "AGENT_")):
            monkeypatch.delenv(name)
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


def run_script(name: str, *args: str, cwd: Path, timeout: float = 60, root: Path = ROOT,
               **kwargs) -> subprocess.CompletedProcess:
    """Run one of the project's scripts (from root, the agent's folder) as a user would, stdin not a terminal."""
    if "input" not in kwargs:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run([sys.executable, str(root / name), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, **kwargs)


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
        code = cli.main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["harness.py", *args], code, out, err)

    return run
