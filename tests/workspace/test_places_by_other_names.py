"""The agent's own places are known by what the file system says they are, not by name alone: a
name for one that differs from the one the agent knows (in case, on macOS and Windows; through a
bind mount, here) is refused by the file tools all the same."""

import shutil
import subprocess
import sys

import pytest
from fake_model import answer, calls
from helpers import CHILD, ROOT, copy_of_the_agent, linux_only, results, runs_of

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

    # AGENT is the agent's folder, STATE the state folder
    result = with_other_names(
        ws, {agent: ws / "AGENT", state: ws / "STATE"}, agent / "harness.py", "--yes", "change"
    )

    assert result.returncode == 0, result.stderr
    sent = results(model, 1, 4)
    assert all(r.startswith("error: ") for r in sent), sent
    assert planted not in (agent / "harness.py").read_text()
    assert not (agent / "plainagent" / "json.py").exists()
    assert not (state / runs / "forged.jsonl").exists()


@linux_only
@needs_bind_mounts
def test_the_file_a_link_named_dot_env_leads_to_by_another_name_is_kept_from_the_model(
    model, tmp_path
):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "prod.txt").write_text("TOKEN=s3cr3t-v4lu3\n")
    (tmp_path / ".env").symlink_to("conf/prod.txt")
    (tmp_path / "CONF").mkdir()
    model.queue(
        calls(
            ("read_file", {"path": "CONF/prod.txt"}),
            ("run_shell", {"command": "cat CONF/prod.txt"}),
        ),
        answer("done"),
    )

    # no kernel sandbox: the names the tools and the allowlist check are all there is
    result = with_other_names(
        tmp_path,
        {tmp_path / "conf": tmp_path / "CONF"},
        ROOT / "harness.py",
        "--sandbox",
        "off",
        "look",
    )

    assert result.returncode == 0, result.stderr
    read, ran = results(model, 1, 2)
    assert read.startswith("error: PermissionError: CONF/prod.txt is the file a link named .env")
    assert ran.startswith("denied: nobody is at a terminal"), ran
    assert "s3cr3t" not in str(model.requests)


def with_other_names(cwd, binds, harness, *args):
    """The agent (its harness.py) run in a mount namespace of its own, where each folder of `binds`
    is also mounted at the other name it maps to."""
    script = "".join(f'mount --bind "${2 * i + 1}" "${2 * i + 2}" && ' for i in range(len(binds)))
    pairs = [str(name) for pair in binds.items() for name in pair]
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", f'{script}shift {len(pairs)} && exec "$@"', "sh", *pairs]
        + [sys.executable, str(harness), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        **CHILD,
    )
