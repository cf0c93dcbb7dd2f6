"""Every setting the README lists does what it says: variables, flags, and bad values refused in one line."""

import os
import sys

import pytest

from conftest import run_script
from fake_model import answer, calls


def test_agent_max_steps_sets_the_step_limit(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_MAX_STEPS", "2")
    model.queue(calls(("list_dir", {})), calls(("list_dir", {"path": "."})))

    result = cli("loop")

    assert result.returncode == 1
    assert len(model.requests) == 2


def test_max_steps_flag_wins_over_the_variable(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_MAX_STEPS", "5")
    model.queue(calls(("list_dir", {})))

    assert cli("loop", "--max-steps", "1").returncode == 1
    assert len(model.requests) == 1


@pytest.mark.parametrize("value", ["lots", "nan", "inf", "-1", "0"])
@pytest.mark.parametrize("variable", ["AGENT_MAX_STEPS", "AGENT_TIMEOUT", "AGENT_CONTEXT_BUDGET",
                                      "AGENT_SHELL_TIMEOUT", "AGENT_MAX_CHARS"])
def test_a_bad_number_is_a_one_line_configuration_error(model, cli, monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)

    result = cli("x")

    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith(f"error: {variable} must be a positive ")
    assert model.requests == []


def test_max_steps_zero_is_a_usage_error(model, cli):
    with pytest.raises(SystemExit) as exit:
        cli("x", "--max-steps", "0")
    assert exit.value.code == 2


def test_agent_timeout_bounds_a_model_request(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_TIMEOUT", "0.3")
    model.queue({**answer("too late"), "delay": 1})  # no second try starts once AGENT_TIMEOUT is spent

    result = cli("x")

    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == "error: the model did not answer within 0.3 s: try again, or raise AGENT_TIMEOUT"


def test_agent_max_chars_sets_the_cut(model, tmp_path):
    (tmp_path / "a.txt").write_text("x" * 500)
    model.queue(calls(("read_file", {"path": "a.txt"})), answer("ok"))

    result = run_script("harness.py", "read", cwd=tmp_path, env={**os.environ, "AGENT_MAX_CHARS": "100"})

    assert result.returncode == 0, result.stderr
    assert model.messages(1)[-1]["content"] == \
        "x" * 100 + "\n[cut: showed bytes 0-100 of 500; call read_file with offset=100 for more]"


def test_workspace_flag_confines_the_tools_to_that_folder(model, cli, tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "inside.txt").write_text("in")
    model.queue(calls(("list_dir", {}), ("read_file", {"path": "../outside.txt"})), answer("ok"))

    assert cli("look", "--workspace", "project").returncode == 0

    listing, refused = [m["content"] for m in model.messages(1)[-2:]]
    assert listing == "inside.txt  2 bytes"
    assert refused.startswith("error: PermissionError: ../outside.txt is outside the workspace ")
    assert str((tmp_path / "project").resolve()) in model.messages(0)[0]["content"]


def test_a_workspace_that_is_not_a_folder_is_a_usage_error(model, cli):
    result = cli("x", "--workspace", "nowhere")
    assert result.returncode == 2
    assert "is not a folder; check --workspace or AGENT_WORKSPACE" in result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX sleep")
def test_timeout_flag_sets_the_shell_timeout(model, cli):
    model.queue(calls(("run_shell", {"command": "sleep 10"})), answer("slow"))

    assert cli("sleep", "--timeout", "0.5", "--yes").returncode == 0

    assert model.messages(1)[-1]["content"] == "timed out after 0.5 s; the command and its children were killed"


def test_an_unexpected_failure_is_still_one_line(model, cli, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls(("read_file", {"path": "a.txt"})))
    (tmp_path / "runs").mkdir(mode=0o700)

    def boom(event: dict, *details: object) -> None:
        if event["type"] == "call":
            raise RuntimeError("a listener failed")

    import cli as command_line
    command_line.progress, saved = boom, command_line.progress
    try:
        result = cli("x")
    finally:
        command_line.progress = saved

    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("error: unexpected RuntimeError: a listener failed; the run so far is in runs/")


@pytest.mark.parametrize("variable, value, message", [
    ("AGENT_APPROVE", "yes", "error: AGENT_APPROVE must be 'all' or unset, not 'yes'"),
    ("AGENT_SANDBOX", "on", "error: AGENT_SANDBOX must be one of auto, off, not 'on'"),
    ("AGENT_REASONING_EFFORT", "max", "error: AGENT_REASONING_EFFORT must be one of low, medium, high, not 'max'"),
    ("AGENT_BACKEND", "nope", "error: unknown backend 'nope'; known backends: groq, openai, ollama"),
])
def test_a_bad_choice_is_refused_in_one_line_and_leaves_no_transcript(model, cli, monkeypatch, tmp_path,
                                                                       variable, value, message):
    monkeypatch.setenv(variable, value)

    result = cli("x")

    assert result.returncode == 2 and result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1
    assert model.requests == [] and not (tmp_path / "runs").exists()
