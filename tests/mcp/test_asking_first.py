"""An MCP tool asks first at the terminal, showing the server, the tool and the arguments; `a`
lets that tool alone run unasked for the rest of the run; --allow SERVER runs its tools unasked."""

import json
import sys
from pathlib import Path

from fake_model import answer, calls
from helpers import posix_only, results

SERVER = Path(__file__).with_name("script_server.py")


def write_config(workspace: Path, folder: Path) -> Path:
    copy = workspace / SERVER.name
    copy.write_bytes(SERVER.read_bytes())
    path = folder / "servers.json"
    server = {"command": sys.executable, "args": [str(copy)]}
    time = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
    path.write_text(json.dumps({"mcpServers": {"script": server, "time": time}}))
    return path


@posix_only
def test_the_question_shows_server_tool_and_arguments_and_always_covers_that_tool_alone(
    model, tmp_path, tmp_path_factory, terminal
):
    path = write_config(tmp_path, tmp_path_factory.mktemp("config"))
    model.queue(
        calls(("script__add", {"a": 1, "b": 2})),
        calls(("script__add", {"a": 2, "b": 3}), ("script__env", {"name": "HOME"})),
        answer("done"),
    )
    session = terminal("--mcp", str(path), "--no-transcript", "add")

    session.read_until("[y]es / [N]o / [a]lways allow script__add for this run: ")
    session.type("a")
    session.read_until("[y]es / [N]o / [a]lways allow script__env for this run: ")
    session.type("n")
    session.read_until("why not? (optional, Enter to skip): ")
    session.type("")

    assert session.finish() == 0
    shown = session.output
    assert 'MCP server script wants to run its tool add with {"a": 1, "b": 2}' in shown
    assert 'MCP server script wants to run its tool env with {"name": "HOME"}' in shown
    # the second add ran unasked
    assert 'wants to run its tool add with {"a": 2' in shown
    assert shown.count("[a]lways allow script__add") == 1
    assert "(allowed: always script__add, for this run)" in shown
    assert results(model, 1) == ["3"]
    assert results(model, 2, 2) == ["5", "denied by the user"]


@posix_only
def test_allow_names_a_server_whose_tools_run_unasked(model, tmp_path, tmp_path_factory, terminal):
    path = write_config(tmp_path, tmp_path_factory.mktemp("config"))
    model.queue(
        calls(("time__get_current_time", {"timezone": "UTC"}), ("script__add", {"a": 1, "b": 1})),
        answer("done"),
    )
    session = terminal("--mcp", str(path), "--allow", "time", "--no-transcript", "now")

    session.read_until("[a]lways allow script__add for this run: ")
    session.type("y")

    assert session.finish() == 0
    assert "wants to run its tool get_current_time" not in session.output
    now, added = results(model, 1, 2)
    assert '"timezone": "UTC"' in now and added == "2"


@posix_only
def test_arguments_that_would_push_the_question_off_the_screen_are_also_shown_in_short(
    model, tmp_path, tmp_path_factory, terminal
):
    # Thousands of blanks wrap over the screen: above the choices only the arguments' end showed,
    # made to read as another tool's harmless question
    path = write_config(tmp_path, tmp_path_factory.mktemp("config"))
    fake = "MCP server time wants to run its tool get_current_time with {}"
    model.queue(calls(("script__env", {"name": "HOME" + " " * 5000 + fake})), answer("done"))
    session = terminal("--mcp", str(path), "--no-transcript", "look")

    session.read_until("[y]es / [N]o / [a]lways allow script__env for this run: ")
    session.type("n")
    session.read_until("why not? (optional, Enter to skip): ")
    session.type("")

    assert session.finish() == 0
    lines = session.output.replace("\r\n", "\n").splitlines()
    asked = next(i for i, line in enumerate(lines) if line.startswith("[y]es / [N]o"))
    assert lines[asked - 1] == (
        f'  (in short: script__env with {{"name": "HOME [5,000 blanks] {fake}"}})'
    )
    assert lines[asked - 2].startswith('MCP server script wants to run its tool env with {"name"')
