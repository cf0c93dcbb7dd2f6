"""A server's life on the command line: its whole process group gone when the run ends, after
Ctrl-C and after SIGTERM; a session's servers kept from task to task; its environment without the
agent's key."""

import contextlib
import json
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import alive, command_line, linux_only, posix_only, results, wait_for

import harness

SERVER = Path(__file__).with_name("script_server.py")


def live_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and alive(int(p.name))]


def in_group(group: int) -> list[int]:
    """The live processes whose process group is `group`."""
    found = []
    for pid in live_pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:
            found.append(pid)
    return found


def carrying(token: str) -> list[int]:
    return [pid for pid in live_pids() if token in command_line(pid)]


@pytest.fixture
def server_config(tmp_path, tmp_path_factory):
    """An --mcp file outside the workspace naming the tests' server (copied into the workspace,
    where the sandbox lets it be read) with a token on its command line to find it by."""
    token = f"mcp-{uuid.uuid4().hex}"
    copy = tmp_path / SERVER.name
    copy.write_bytes(SERVER.read_bytes())
    path = tmp_path_factory.mktemp("config") / "servers.json"
    entry = {"command": sys.executable, "args": [str(copy), token], "env": {"EXTRA": "given"}}
    path.write_text(json.dumps({"mcpServers": {"script": entry}}))
    yield path, token
    for pid in carrying(token):  # a failing test leaves nothing
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@posix_only
@linux_only
def test_the_servers_process_group_is_gone_after_the_run(model, tmp_path, server_config, cli):
    path, token = server_config
    model.queue(calls(("script__group", {})), answer("done"))

    result = cli("--yes", "--mcp", str(path), "--no-transcript", "which group?")

    assert result.returncode == 0, result.stderr
    said = json.loads(results(model, 1)[0].split("\n")[1])
    assert carrying(token) == [] and in_group(said["group"]) == []
    assert not alive(said["child"])


@posix_only
@linux_only
@pytest.mark.parametrize(("stop", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_the_servers_process_group_is_gone_after_ctrl_c_and_sigterm(
    model, tmp_path, server_config, start_cli, stop, code
):
    path, token = server_config
    model.queue(calls(("script__hang", {})))
    process = start_cli(tmp_path, "--yes", "--mcp", str(path), "--no-transcript", "hang")
    wait_for(lambda: len(model.requests) == 1 and carrying(token))
    [server] = carrying(token)
    group = int(Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[2])
    assert group == server  # a session of its own

    process.send_signal(getattr(signal, stop))
    _, stderr = process.communicate(timeout=30)

    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert not alive(server) and in_group(group) == []


def test_a_servers_environment_has_the_configs_variables_and_never_the_agents_key(
    model, server_config
):
    path, _ = server_config
    model.queue(
        calls(("script__env", {"name": "GROQ_API_KEY"}), ("script__env", {"name": "EXTRA"})),
        answer("done"),
    )

    harness.run("env", mcp=path, approve=lambda name, arguments: True)

    assert results(model, 1, 2) == ["(not set)", "given"]


def test_a_session_starts_its_servers_once_and_keeps_them_from_task_to_task(
    model, tmp_path, server_config, terminal
):
    path, token = server_config
    model.queue(
        calls(("script__group", {})),
        answer("first"),
        calls(("script__group", {})),
        answer("second"),
    )
    session = terminal("--yes", "--mcp", str(path), "--no-transcript")

    session.type_at_prompts("one")
    session.read_until("first")
    session.type_at_prompts("two")
    session.read_until("second")
    pids = {json.loads(results(model, i)[0].split("\n")[1])["pid"] for i in (1, 3)}
    assert len(pids) == 1 and alive(pids.pop())
    session.type_at_prompts("/exit")

    assert session.finish() == 0
    wait_for(lambda: carrying(token) == [])


@posix_only
def test_a_session_whose_server_never_answers_counts_the_seconds_then_says_so(
    model, tmp_path, terminal, monkeypatch
):
    copy = tmp_path / SERVER.name
    copy.write_bytes(SERVER.read_bytes())
    path = tmp_path / "servers.json"
    entry = {"command": sys.executable, "args": [str(copy), "silent"]}
    path.write_text(json.dumps({"mcpServers": {"slow": entry}}))
    monkeypatch.setenv("AGENT_MCP_TIMEOUT", "3")
    session = terminal("--mcp", str(path), "--no-transcript")

    model.queue(answer("done"))
    session.read_until("starting MCP servers… 2 s")
    session.type_at_prompts("one")  # the first task's start gives the note
    session.read_until("done")
    session.type_at_prompts("/exit")

    assert session.finish() == 0
    said = session.output.split("starting MCP servers… 2 s")[1]
    assert "MCP server slow did not answer initialize within 3 s" in said


@posix_only
@linux_only
def test_ctrl_c_while_a_server_starts_ends_the_run_at_once_and_the_server_with_it(
    model, tmp_path, tmp_path_factory, start_cli
):
    token = f"mcp-{uuid.uuid4().hex}"
    copy = tmp_path / SERVER.name
    copy.write_bytes(SERVER.read_bytes())
    path = tmp_path_factory.mktemp("config") / "servers.json"
    entry = {"command": sys.executable, "args": [str(copy), token, "silent"]}
    path.write_text(json.dumps({"mcpServers": {"silent": entry}}))
    process = start_cli(tmp_path, "--yes", "--mcp", str(path), "--no-transcript", "task")
    wait_for(lambda: carrying(token))
    [server] = carrying(token)

    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=20)  # never the 30 s AGENT_MCP_TIMEOUT

    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert not alive(server) and carrying(token) == []
