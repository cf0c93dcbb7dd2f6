"""Nothing run_shell opens outlives the command: the agent's open file descriptors, temporary folders and
bookkeeping stay the same however many commands a long session runs."""

import json
import os
import subprocess
import sys

import sandbox
from helpers import ROOT, needs_landlock


@needs_landlock
def test_three_hundred_sandboxed_commands_leave_no_more_descriptors_than_three(tmp_path):
    workspace, temporary = tmp_path / "workspace", tmp_path / "tmp"
    workspace.mkdir()
    temporary.mkdir()
    (workspace / ".env").write_text("AGENT_MODEL=hidden\n")

    # A process of its own: in the test runner, other tests' threads and garbage open and close descriptors too.
    result = subprocess.run(
        [sys.executable, "-c", "import json, sys, test_descriptors as t; print(json.dumps(t.measure(*sys.argv[1:])))",
         str(workspace), str(temporary)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])})

    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["modes"] == [sandbox.READ_ONLY, sandbox.WORKSPACE_WRITE] and found["outputs"] == ["exit code: 0"]
    assert found["after 300"] == found["after 3"]
    assert found["left in tmp"] == []  # every command's private folder and output files are gone
    assert (found["rulesets"], found["roots"]) == (0, 0)
