"""Nothing run_shell opens outlives the command: the agent's open file descriptors, temporary
folders and bookkeeping stay the same however many commands a long session runs."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers import ROOT, needs_landlock

from plainagent.sandbox import process as sandbox


def measure(workspace: str, temporary: str) -> dict:
    """Run 300 sandboxed commands in this process, read-only and workspace-write in turn
    (the one builds a ruleset per command, the other keeps one per folder); what stayed open
    after 3 of them and after all."""
    import tools
    from plainagent.core import settings
    from plainagent.shell import allowlist

    # a file to hide: each read-only command gets a ruleset of its own
    settings.DOTENV = Path(workspace) / ".env"
    tempfile.tempdir = temporary  # where run_shell's private folders and output files go
    config = settings.resolve(workspace=workspace, sandbox="auto", require_key=False)
    commands = ["ls", "true"]
    counts, outputs = {}, set()
    for i in range(300):
        outputs.add(tools.run_shell(commands[i % 2], settings=config).split("\n", 1)[0])
        if i + 1 in (3, 300):
            counts[i + 1] = len(os.listdir("/proc/self/fd"))
    modes = [
        sandbox.READ_ONLY if allowlist.reason_to_ask(c, config) is None else sandbox.WORKSPACE_WRITE
        for c in commands
    ]
    return {
        "modes": modes,
        "outputs": sorted(outputs),
        "after 3": counts[3],
        "after 300": counts[300],
        "left in tmp": os.listdir(temporary),
        "rulesets": len(sandbox.rulesets),
        "roots": len(sandbox.roots),
    }


@needs_landlock
def test_three_hundred_sandboxed_commands_leave_no_more_descriptors_than_three(tmp_path):
    workspace, temporary = tmp_path / "workspace", tmp_path / "tmp"
    workspace.mkdir()
    temporary.mkdir()
    (workspace / ".env").write_text("AGENT_MODEL=hidden\n")

    # A process of its own: in the test runner, other tests' threads and garbage open
    # and close descriptors too.
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, test_descriptors as t; print(json.dumps(t.measure(*sys.argv[1:])))",
            str(workspace),
            str(temporary),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "sandbox")]
            ),
        },
    )

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["modes"] == [sandbox.READ_ONLY, sandbox.WORKSPACE_WRITE] and found["outputs"] == [
        "exit code: 0"
    ]
    assert found["after 300"] == found["after 3"]
    assert found["left in tmp"] == []  # every command's private folder and output files are gone
    assert (found["rulesets"], found["roots"]) == (0, 0)


def measure_cached(workspace: str, temporary: str, dotenv: str) -> dict:
    """Run 100 sandboxed commands in this process with the agent's .env outside the workspace, so
    that each command's ruleset comes from the cache (cached_ruleset: not the command's own); what
    stayed open after 1 and after 100, and whether the cache was what gave the rulesets."""
    import tools
    from plainagent.core import settings

    settings.DOTENV = Path(dotenv)
    tempfile.tempdir = temporary
    config = settings.resolve(workspace=workspace, sandbox="auto", require_key=False)
    hidden = (settings.DOTENV,)
    with sandbox.lock:
        probe = sandbox.make_tmp()
        cached = [
            sandbox.cached_ruleset(sandbox.Policy(Path(workspace), probe, mode, hidden), ())[1]
            for mode in (sandbox.READ_ONLY, sandbox.WORKSPACE_WRITE)
        ]
    sandbox.remove_tmp(probe)
    counts, outputs = {}, set()
    for i in range(100):
        outputs.add(tools.run_shell(["ls", "true"][i % 2], settings=config).split("\n", 1)[0])
        if i + 1 in (1, 2, 100):
            counts[i + 1] = len(os.listdir("/proc/self/fd"))
    return {
        "from the cache": cached,
        "outputs": sorted(outputs),
        "counts": counts,
        "rulesets": len(sandbox.rulesets),
        "left in tmp": os.listdir(temporary),
    }


@needs_landlock
def test_a_hundred_commands_whose_rulesets_come_from_the_cache_leave_no_more_descriptors_than_one(
    tmp_path,
):
    workspace, temporary, agent = tmp_path / "workspace", tmp_path / "tmp", tmp_path / "agent"
    for folder in (workspace, temporary, agent):
        folder.mkdir()
    (agent / ".env").write_text("AGENT_MODEL=hidden\n")

    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, test_descriptors as t; "
            "print(json.dumps(t.measure_cached(*sys.argv[1:])))",
            str(workspace),
            str(temporary),
            str(agent / ".env"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "sandbox")]
            ),
        },
    )

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["from the cache"] == [
        False,
        False,  # neither mode builds a ruleset of the command's own here
    ]
    assert found["outputs"] == ["exit code: 0"]
    assert found["counts"]["100"] == found["counts"]["2"] == found["counts"]["1"]
    assert found["rulesets"] == 0 and found["left in tmp"] == []
