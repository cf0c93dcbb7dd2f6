"""Commands that send no request (--help, --runs, --undo) answer without loading the openai SDK,
which takes most of a second to import: run as a person runs them, in a process of their own."""

import subprocess
import sys

from fake_model import answer, calls
from helpers import CHILD, ROOT, write


def loaded_modules(*flags: str, cwd) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run `python -X importtime harness.py FLAGS`; return it and the modules it imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(ROOT / "harness.py"), *flags],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        **CHILD,
    )
    loaded = {
        line.rsplit("|", 1)[1].strip().partition(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return done, loaded


def test_help_runs_and_undo_never_import_the_openai_sdk(model, cli, tmp_path):
    model.queue(calls(write("notes.txt", "one\n")), answer("wrote"))
    assert cli("--yes", "write the notes").returncode == 0  # a run to list and to undo

    for flags in (["--help"], ["--runs"], ["--undo"]):
        done, loaded = loaded_modules(*flags, cwd=tmp_path)

        assert done.returncode == 0, done.stderr[-500:]
        assert "plainagent" in loaded and "openai" not in loaded, flags
    assert "usage:" in loaded_modules("--help", cwd=tmp_path)[0].stdout
    assert not (tmp_path / "notes.txt").exists()  # the undo was done, without the SDK


def test_a_run_still_loads_the_sdk_where_it_asks_the_model(model, tmp_path):
    model.queue(answer("hello"))

    done, loaded = loaded_modules("say hello", cwd=tmp_path)

    assert done.returncode == 0 and done.stdout == "hello\n", done.stderr[-500:]
    assert "openai" in loaded
