"""The kernel sandbox seen from a run: what runs without asking is read-only, the
model is told which mode holds, and where the sandbox is off or missing the run says
so once and works as before."""

import json
import os

import pytest
from fake_model import answer, calls
from helpers import copy_of_the_agent, needs_landlock, run_script

from plainagent.sandbox import process as sandbox


@needs_landlock
def test_a_trusted_program_writes_only_in_the_workspace_and_the_model_is_told(model, tmp_path):
    (tmp_path / "ws").mkdir()
    command = (
        "touch made-it && python3 -c \"open('../outside', 'w')\""  # no path the allowlist could see
    )
    model.queue(calls(("run_shell", {"command": command})), answer("could not"))

    result = run_script(
        "harness.py",
        "touch",
        "--workspace",
        "ws",
        "--transcript",
        "t.jsonl",
        cwd=tmp_path,
        env={**os.environ, "AGENT_ALLOW": "touch,python3"},
    )

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ws" / "made-it").exists() and not (tmp_path / "outside").exists()
    told = model.messages(1)[-1]["content"]
    assert told.startswith("exit code: 1") and "Permission denied" in told
    assert told.endswith(sandbox.OFFLINE_NOTE)
    assert "A kernel sandbox holds" in model.messages(0)[0]["content"]
    assert "note:" not in result.stderr


@needs_landlock
def test_an_approved_command_writes_in_the_workspace_but_not_outside(model, tmp_path):
    (tmp_path / "ws").mkdir()
    model.queue(
        calls(("run_shell", {"command": f"touch inside && touch {tmp_path}/outside"})), answer("ok")
    )

    result = run_script(
        "harness.py",
        "touch",
        "--yes",
        "--workspace",
        "ws",
        "--no-transcript",
        cwd=tmp_path,
        env=dict(os.environ),
    )

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ws" / "inside").exists() and not (tmp_path / "outside").exists()
    assert "Permission denied" in model.messages(1)[-1]["content"]


def test_with_the_sandbox_off_the_run_says_so_once_and_commands_run_as_before(model, tmp_path):
    model.queue(calls(("run_shell", {"command": "touch made-it"})), answer("done"))

    result = run_script(
        "harness.py",
        "touch",
        "--sandbox",
        "off",
        "--transcript",
        "t.jsonl",
        cwd=tmp_path,
        env={**os.environ, "AGENT_ALLOW": "touch"},
    )

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "made-it").exists()
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        "note: commands run without the kernel sandbox (--sandbox off); "
        "the allowlist and approval still apply; --undo takes back what approved commands change "
        "in the workspace only"
    ]
    start = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert start["type"] == "start" and start["notes"] == [notes[0].removeprefix("note: ")]
    assert "A kernel sandbox holds" not in model.messages(0)[0]["content"]


def test_where_landlock_is_missing_the_run_says_so_once_and_works(
    model, cli, tmp_path, monkeypatch
):
    monkeypatch.setattr(
        sandbox, "landlock_status", lambda: (0, "Landlock is not available on this kernel")
    )
    monkeypatch.setenv("AGENT_ALLOW", "touch")
    model.queue(
        calls(("run_shell", {"command": "touch made-it"})),
        calls(("run_shell", {"command": "touch again"})),
        answer("done"),
    )

    result = cli("touch")

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "made-it").exists() and (tmp_path / "again").exists()
    assert [line for line in result.stderr.splitlines() if line.startswith("note:")] == [
        "note: commands run without a kernel sandbox here (Landlock is not available on this "
        "kernel); the allowlist and approval still apply; --undo takes back what approved "
        "commands change in the workspace only"
    ]


def test_the_agents_own_dot_env_is_never_read_even_when_it_is_in_the_workspace(model, tmp_path):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("GROQ_API_KEY=gsk_never_to_be_read_by_the_model_0123456789\n")
    model.queue(
        calls(
            ("read_file", {"path": ".env"}), ("read_file", {"path": "./sub/../.env", "offset": 5})
        ),
        answer("no"),
    )

    result = run_script("harness.py", "read .env", "--no-transcript", cwd=agent, root=agent)

    assert result.returncode == 0, result.stderr
    told = [m["content"] for m in model.messages(1)[-2:]]
    assert told == [
        "error: PermissionError: .env holds the agent's own API keys; no tool reads or writes it",
        "error: PermissionError: ./sub/../.env holds the agent's own API keys; no tool reads or "
        "writes it",
    ]


@needs_landlock
@pytest.mark.parametrize("target", ["keys.env", "secrets/keys.env", "secrets/deeper/keys.env"])
def test_when_the_agents_env_is_a_link_to_a_file_not_there_yet_nothing_creates_that_file(
    model, tmp_path, target
):
    agent, ws = copy_of_the_agent(tmp_path / "agent"), tmp_path / "ws"
    ws.mkdir()
    (agent / ".env").symlink_to(ws / target)
    folder = os.path.dirname(target) or "."
    model.queue(
        calls(
            (
                "run_shell",
                {"command": f"mkdir -p {folder} && echo GROQ_BASE_URL=http://evil > {target}"},
            ),
            ("run_shell", {"command": f"mkdir -p {folder}; touch {target}"}),
            ("write_file", {"path": target, "content": "GROQ_BASE_URL=http://evil\n"}),
        ),
        answer("done"),
    )

    result = run_script(
        "harness.py",
        "make it",
        "--yes",
        "--no-transcript",
        cwd=ws,
        root=agent,
        env={**os.environ, "GROQ_API_KEY": "test-key-not-real"},
    )

    assert result.returncode == 0, result.stderr
    assert not os.path.lexists(ws / target), [m["content"] for m in model.messages(1)[-3:]]
    assert model.messages(1)[-1]["content"].startswith("error: PermissionError: ")
