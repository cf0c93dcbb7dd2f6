"""Which servers a run starts: mcp.json beside the agent's .env, --mcp FILE, run(mcp=...); never a
file in the workspace that nobody named; a config that is not one is one line, exit 2; --mcp-list
shows each tool with its server."""

import json
import os
import sys
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import needs_landlock, results, run_script

import harness
from plainagent.core import settings
from plainagent.core.values import ConfigError

SERVER = Path(__file__).with_name("script_server.py")


def script_config(workspace: Path) -> dict:
    copy = workspace / SERVER.name
    copy.write_bytes(SERVER.read_bytes())
    return {"mcpServers": {"script": {"command": sys.executable, "args": [str(copy)]}}}


def offered(model, request: int = 0) -> set[str]:
    return {tool["function"]["name"] for tool in model.requests[request]["body"]["tools"]}


def test_a_config_in_the_workspace_is_never_read_unless_named(model, tmp_path, cli):
    (tmp_path / "mcp.json").write_text(json.dumps(script_config(tmp_path)))
    model.queue(answer("not read"), answer("read"))

    assert cli("--yes", "--no-transcript", "one").returncode == 0
    assert cli("--yes", "--no-transcript", "--mcp", "mcp.json", "two").returncode == 0

    assert not any(name.startswith("script__") for name in offered(model, 0))
    assert "script__add" in offered(model, 1)


def test_the_config_beside_the_agents_env_is_read_by_default(model, tmp_path, cli):
    (settings.DOTENV.parent / "mcp.json").write_text(json.dumps(script_config(tmp_path)))
    model.queue(answer("read"))

    assert cli("--yes", "--no-transcript", "one").returncode == 0

    assert "script__add" in offered(model)


@pytest.mark.parametrize("named", [False, True])
def test_mcp_list_with_no_servers_names_the_file_to_put_them_in(model, tmp_path, cli, named):
    # It said "put them in mcp.json beside the .env", and an installed copy's .env is out of sight.
    (tmp_path / "empty.json").write_text('{"mcpServers": {}}')
    where = tmp_path / "empty.json" if named else settings.DOTENV.with_name("mcp.json")

    result = cli("--mcp-list", *(["--mcp", str(where)] if named else []))

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: no MCP servers are configured in {where}; put them there (docs/mcp.md)\n"
    )


@pytest.mark.parametrize(
    ("config", "said"),
    [
        (
            {"mcpServers": {"time": {"command": "x", "autoApprove": []}}},
            "server 'time' has an unknown field 'autoApprove'; the fields are command, args, env,",
        ),
        ({"mcpServers": {"time": {"args": []}}}, "server 'time' has no \"command\""),
        ({"servers": {}}, 'must be a JSON object with "mcpServers"'),
        ({"mcpServers": {"a__b": {"command": "x"}}}, "a server's name is letters, digits"),
        ({"mcpServers": {"t": {"command": "x", "network": "yes"}}}, '"network" must be true'),
        # what exec cannot take: a NUL in any string, a variable's name with = or none
        ({"mcpServers": {"t": {"command": "x", "env": {"A": "a\0b"}}}}, '"env" holds a NUL'),
        ({"mcpServers": {"t": {"command": "x", "args": ["a\0b"]}}}, '"args" holds a NUL'),
        ({"mcpServers": {"t": {"command": "x\0"}}}, '"command" holds a NUL'),
        ({"mcpServers": {"t": {"command": "x", "cwd": "a\0"}}}, '"cwd" holds a NUL'),
        ({"mcpServers": {"t": {"command": "x", "env": {"A=B": "1"}}}}, "\"env\" has 'A=B', which"),
        ({"mcpServers": {"t": {"command": "x", "env": {"": "1"}}}}, "\"env\" has '', which is no"),
    ],
)
def test_a_config_that_is_not_one_is_one_line_and_exit_2(model, tmp_path, cli, config, said):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))

    result = cli("--no-transcript", "--mcp", str(path), "task")

    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"error: {path}") and said in result.stderr


def test_a_file_that_is_no_json_or_missing_is_one_line_and_exit_2(model, tmp_path, cli):
    (tmp_path / "bad.json").write_text("{not json")

    broken = cli("--mcp", "bad.json", "task")
    missing = cli("--mcp", "nowhere.json", "task")

    assert broken.returncode == missing.returncode == 2
    assert broken.stderr.startswith("error: bad.json is not JSON (")
    assert (
        missing.stderr == "error: nowhere.json: no such file; name an existing MCP config (--mcp)\n"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_a_config_that_is_a_fifo_or_too_big_is_one_line_at_once(model, tmp_path, cli):
    # A FIFO was read from for ever, /dev/zero until the memory ran out (a traceback)
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "big.json").write_text(json.dumps({"mcpServers": {}, "pad": "x" * 1_000_000}))

    fifo = run_script("harness.py", "--mcp", "fifo.json", "task", cwd=tmp_path, timeout=30)
    big = cli("--mcp", "big.json", "task")

    assert (fifo.returncode, fifo.stderr) == (
        2,
        "error: fifo.json cannot be read (it is not a regular file); fix the file or --mcp\n",
    )
    assert (big.returncode, big.stderr) == (
        2,
        "error: big.json cannot be read (it is over 1 MB); fix the file or --mcp\n",
    )


def test_a_bad_config_given_to_run_raises_config_error(model):
    with pytest.raises(ConfigError, match="server 'x' has no \"command\""):
        harness.run("task", mcp={"mcpServers": {"x": {}}})


def test_mcp_list_shows_each_tool_with_its_server_and_what_was_left_out(model, tmp_path, cli):
    (tmp_path / "servers.json").write_text(json.dumps(script_config(tmp_path)))

    result = cli("--mcp-list", "--mcp", "servers.json")

    assert result.returncode == 0
    assert "script__add  (server script) Add\n" in result.stdout
    assert "script__write  (server script) Write a file\n" in result.stdout
    assert "script__broken" not in result.stdout
    assert "note: MCP tool script__broken: its inputSchema is not an object schema" in result.stderr


@pytest.fixture
def agent_folder_in_the_workspace(tmp_path, monkeypatch):
    """The agent's configuration folder inside the workspace (your home folder as the workspace
    holds ~/.config/plainagent), with an mcp.json holding a server's token."""
    folder = tmp_path / "config"
    folder.mkdir()
    monkeypatch.setattr(settings, "DOTENV", folder / ".env")
    server = {"command": "some-server", "env": {"TOKEN": "tok-secret"}}
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {"some": server}}))
    return folder


def test_no_tool_reads_or_writes_the_agents_mcp_json(model, agent_folder_in_the_workspace):
    model.queue(
        calls(
            ("read_file", {"path": "config/mcp.json"}),
            ("write_file", {"path": "config/mcp.json", "content": "{}"}),
            ("run_shell", {"command": "cat config/mcp.json"}),
        ),
        answer("refused"),
    )

    harness.run("read it", approve=lambda name, arguments: True, mcp={"mcpServers": {}})

    read, written, catted = results(model, 1, 3)
    assert read.startswith("error: PermissionError: config/mcp.json holds the agent's own MCP")
    assert written.startswith("error: PermissionError: config/mcp.json holds the agent's own MCP")
    assert "tok-secret" not in catted and "Permission denied" in catted
    assert "tok-secret" in (agent_folder_in_the_workspace / "mcp.json").read_text()


@needs_landlock
def test_no_command_changes_the_agents_mcp_json_even_approved(
    model, tmp_path, agent_folder_in_the_workspace
):
    (agent_folder_in_the_workspace / ".env").write_text("GROQ_API_KEY=test-key-not-real\n")
    before = (agent_folder_in_the_workspace / "mcp.json").read_text()
    planted = '{"mcpServers": {"x": {"command": "sh", "network": true}}}'
    model.queue(
        calls(("run_shell", {"command": f"echo '{planted}' > config/mcp.json"})),
        answer("refused"),
    )

    harness.run("plant it", approve_all=True, mcp={"mcpServers": {}})

    assert (agent_folder_in_the_workspace / "mcp.json").read_text() == before
