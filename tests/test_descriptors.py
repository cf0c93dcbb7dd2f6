"""Nothing run_shell opens outlives the command: the agent's open file descriptors, temporary folders and
bookkeeping stay the same however many commands a long session runs."""

import os
import tempfile

import pytest

import sandbox
import tools
from settings import resolve, use

needs_landlock = pytest.mark.skipif(sandbox.available() is not None,
                                    reason=f"Landlock cannot be applied here: {sandbox.available()}")


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@needs_landlock
def test_three_hundred_sandboxed_commands_leave_no_more_descriptors_than_three(tmp_path, monkeypatch):
    workspace, temporary = tmp_path / "workspace", tmp_path / "tmp"
    workspace.mkdir()
    temporary.mkdir()
    (workspace / ".env").write_text("AGENT_MODEL=hidden\n")
    monkeypatch.setattr(tools, "DOTENV", workspace / ".env")  # a file to hide: a read-only command's own ruleset
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))  # where run_shell's files and folders go
    config = resolve(workspace=str(workspace), sandbox="auto", require_key=False)
    # Read-only and workspace-write in turn: the one builds a ruleset per command, the other keeps one per folder.
    commands = ["ls", "true"]
    assert [tools.sandbox_mode(config.sandbox, tools.shell_verdict(c) is None) for c in commands] == [
        sandbox.READ_ONLY, sandbox.WORKSPACE_WRITE]

    with use(config):
        for i in range(300):
            assert tools.run_shell(commands[i % 2]).startswith("exit code: 0")
            if i == 2:
                after_three = open_descriptors()
        after_three_hundred = open_descriptors()

    assert after_three_hundred == after_three
    assert list(temporary.iterdir()) == []  # every command's private folder and output files are gone
    assert sandbox.rulesets == {} and sandbox.roots == {}
