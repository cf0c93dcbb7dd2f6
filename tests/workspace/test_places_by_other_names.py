"""The agent's own places are known by what the file system says they are, not by name alone: a
name for one that differs from the one the agent knows (in case, on macOS and Windows; through a
bind mount, here) is refused by the file tools all the same."""

import shutil
import subprocess
import sys

import pytest
from fake_model import answer, calls
from helpers import CHILD, copy_of_the_agent, linux_only, results, runs_of

BIND_MOUNTS = (
    shutil.which("unshare") is not None
    and subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
)
needs_bind_mounts = pytest.mark.skipif(not BIND_MOUNTS, reason="no mount namespace to bind in")


@linux_only
@needs_bind_mounts
def test_the_agents_folder_and_state_by_another_name_are_refused(model, tmp_path, monkeypatch):
    ws, state = tmp_path / "ws", tmp_path / "ws" / "state"
    state.mkdir(parents=True)
    agent = copy_of_the_agent(ws / "agent")
    (ws / "AGENT").mkdir()
    (ws / "STATE").mkdir()
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    runs = runs_of(ws).relative_to(state).as_posix()
    planted = "print('planted')\n"
    model.queue(
        calls(
            ("write_file", {"path": "AGENT/harness.py", "content": planted}),
            ("write_file", {"path": "AGENT/plainagent/json.py", "content": planted}),
            ("list_dir", {"path": f"STATE/{runs}"}),
            ("write_file", {"path": f"STATE/{runs}/forged.jsonl", "content": "{}\n"}),
        ),
        answer("done"),
    )
    # AGENT is the agent's folder, STATE the state folder, in a mount namespace of the run's own
    script = 'mount --bind "$1" "$2" && mount --bind "$3" "$4" && shift 4 && exec "$@"'
    bound = [agent, ws / "AGENT", state, ws / "STATE"]

    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", *bound, sys.executable]
        + [str(agent / "harness.py"), "--yes", "change the agent"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
        **CHILD,
    )

    assert result.returncode == 0, result.stderr
    sent = results(model, 1, 4)
    assert all(r.startswith("error: ") for r in sent), sent
    assert planted not in (agent / "harness.py").read_text()
    assert not (agent / "plainagent" / "json.py").exists()
    assert not (state / runs / "forged.jsonl").exists()
