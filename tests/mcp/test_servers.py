"""A run's MCP servers, with a server of the tests' own (script_server.py): its tools listed page
by page and called through the loop, a server that crashes, hangs or prints junk an error for the
model while the run goes on, and the kernel refusing its writes outside the workspace."""

import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import needs_landlock, results, run_script

import harness

SERVER = Path(__file__).with_name("script_server.py")


def config(**fields) -> dict:
    """A config with the script server as `script`, with more fields for it. The server is copied
    into the workspace (the working folder): a server reads only what an unasked command may, and
    this test folder is none of that."""
    copy = Path.cwd() / SERVER.name
    if not copy.exists():
        shutil.copyfile(SERVER, copy)
    return {"mcpServers": {"script": {"command": sys.executable, "args": [str(copy)], **fields}}}


def test_the_servers_tools_are_listed_page_by_page_and_called_with_a_ping_answered(model):
    model.queue(calls(("script__add", {"a": 2, "b": 3})), answer("5"))
    asked = []

    answer_ = harness.run(
        "add", mcp=config(), approve=lambda name, arguments: asked.append((name, arguments)) or True
    )

    assert answer_ == "5"
    offered = {tool["function"]["name"] for tool in model.requests[0]["body"]["tools"]}
    # both pages, and never the tool whose schema is no object's
    assert {"script__write", "script__hang", "script__junk", "script__add"} <= offered
    assert "script__broken" not in offered
    add = next(
        t for t in model.requests[0]["body"]["tools"] if t["function"]["name"] == "script__add"
    )
    assert add["function"]["parameters"]["required"] == ["a", "b"]
    assert results(model, 1) == ["5"]
    assert asked == [("script__add", {"a": 2, "b": 3})]


def test_arguments_that_do_not_fit_the_schema_are_refused_before_the_server_sees_them(model):
    model.queue(calls(("script__add", {"a": "two"})), answer("no"))

    harness.run("add", mcp=config(), approve=lambda name, arguments: True)

    [result] = results(model, 1)
    assert result.startswith("error: ") and "missing field 'b'" in result
    assert "'a'" in result and "integer" in result


@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("crash", "MCP server script ended (exit status 3); its stderr ends: crashing now"),
        ("hang", "MCP server script did not answer tools/call within 1 s"),
        (
            "junk",
            "MCP server script printed what is not JSON-RPC on its stdout: 'this is not JSON'",
        ),
    ],
)
def test_a_server_that_crashes_hangs_or_prints_junk_gives_an_error_and_the_run_goes_on(
    model, tool, said
):
    model.queue(calls((f"script__{tool}", {})), answer("it failed"))

    started = time.monotonic()
    done = harness.run("try", mcp=config(), approve=lambda name, arguments: True, mcp_timeout=1)

    assert done == "it failed" and done.reason == "answer"
    [result] = results(model, 1)
    assert result.startswith(f"error: {said}")
    assert time.monotonic() - started < 10


def test_a_server_that_cannot_start_is_a_note_and_the_run_goes_on_without_it(model):
    model.queue(answer("done"))
    events = []

    harness.run(
        "x",
        mcp={"mcpServers": {"gone": {"command": "no-such-program-here"}}},
        on_event=events.append,
    )

    [start] = [event for event in events if event["type"] == "start"]
    assert any("MCP server gone: 'no-such-program-here' is not found" in n for n in start["notes"])


def test_a_command_with_a_folder_is_found_from_where_the_server_starts_as_its_args_are(
    model, tmp_path, tmp_path_factory, monkeypatch
):
    program = tmp_path / "sub" / "server.py"
    program.parent.mkdir()
    program.write_text(f"#!{sys.executable}\n{SERVER.read_text()}")
    program.chmod(0o755)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))  # the agent started in another folder
    entries = {
        "a": {"command": "./sub/server.py"},
        "b": {"command": "./server.py", "cwd": "sub"},
        "c": {"command": "./server.py"},
        "d": {"command": sys.executable, "args": ["server.py"], "cwd": "gone"},
    }
    model.queue(calls(("a__add", {"a": 1, "b": 2}), ("b__add", {"a": 3, "b": 4})), answer("done"))
    events = []

    harness.run(
        "add",
        mcp={"mcpServers": entries},
        workspace=tmp_path,
        approve=lambda name, arguments: True,
        on_event=events.append,
    )

    assert results(model, 1, 2) == ["3", "7"]
    [start] = [event for event in events if event["type"] == "start"]
    assert (
        f"MCP server c: './server.py' is no program in {tmp_path}; its tools are left out"
        in (start["notes"])
    )
    gone = tmp_path / "gone"
    assert (
        f'MCP server d: its "cwd" {gone} is not a folder; its tools are left out'
        in (start["notes"])
    )


@needs_landlock
def test_the_kernel_refuses_a_servers_write_outside_the_workspace_and_in_it_without_writes(
    model, tmp_path, tmp_path_factory
):
    outside = tmp_path_factory.mktemp("outside") / "planted.txt"
    inside = tmp_path / "inside.txt"
    model.queue(
        calls(("script__write", {"path": str(outside)}), ("script__write", {"path": str(inside)})),
        answer("refused"),
    )

    harness.run("write", mcp=config(), approve=lambda name, arguments: True)

    first, second = results(model, 1, 2)
    assert first.startswith("error: MCP server script: write: could not write: [Errno 13]")
    assert second.startswith("error: MCP server script: write: could not write: [Errno 13]")
    assert not outside.exists() and not inside.exists()


@needs_landlock
def test_with_writes_a_server_writes_the_workspace_but_still_nothing_outside(
    model, tmp_path, tmp_path_factory
):
    outside = tmp_path_factory.mktemp("outside") / "planted.txt"
    model.queue(
        calls(("script__write", {"path": str(outside)}), ("script__write", {"path": "in.txt"})),
        answer("done"),
    )

    harness.run("write", mcp=config(writes=True), approve=lambda name, arguments: True)

    first, second = results(model, 1, 2)
    assert "[Errno 13]" in first and not outside.exists()
    assert second == "written" and (tmp_path / "in.txt").is_file()


def test_undo_takes_back_what_a_call_of_a_server_with_writes_changed(
    model, tmp_path, tmp_path_factory
):
    (tmp_path / "a.txt").write_text("mine\n")
    path = tmp_path_factory.mktemp("config") / "mcp.json"
    path.write_text(json.dumps(config(writes=True, trust=True)))
    model.queue(
        calls(("script__write", {"path": "a.txt"}), ("script__write", {"path": "b.txt"})),
        answer("done"),
    )

    ran = run_script("harness.py", "--mcp", str(path), "write", cwd=tmp_path)

    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "b.txt").read_text() == "written by the MCP server\n"
    undone = run_script("harness.py", "--undo", cwd=tmp_path)
    assert undone.returncode == 0, undone.stderr
    assert (tmp_path / "a.txt").read_text() == "mine\n" and not (tmp_path / "b.txt").exists()
    assert undone.stdout.splitlines() == [
        "restored a.txt (changed by: MCP tool script__write)",
        "removed b.txt (the run created it; changed by: MCP tool script__write)",
    ]


def test_structured_content_reaches_the_model_as_json(model):
    model.queue(calls(("script__group", {})), answer("ok"))

    harness.run("group", mcp=config(), approve=lambda name, arguments: True)

    [result] = results(model, 1)
    text, structured = result.split("\n")
    assert text == "see structuredContent"
    assert set(json.loads(structured)) == {"pid", "group", "child"}


def test_without_the_sandbox_the_run_says_once_that_its_servers_run_unconfined(model):
    model.queue(answer("done"))
    events = []

    harness.run("x", mcp=config(), sandbox="off", on_event=events.append)

    [start] = [event for event in events if event["type"] == "start"]
    said = [note for note in start["notes"] if "MCP servers run without the kernel sandbox" in note]
    assert said == [
        "MCP servers run without the kernel sandbox here (--sandbox off): they can read, write "
        "and reach whatever you can"
    ]


def test_a_lone_surrogate_in_the_arguments_reaches_the_server_escaped_and_it_goes_on(model):
    model.queue(
        calls(("script__env", '{"name": "X\\ud800"}'), ("script__add", {"a": 1, "b": 1})),
        answer("ok"),
    )

    harness.run("odd", mcp=config(), approve=lambda name, arguments: True)

    assert results(model, 1, 2) == ["(not a name: 'X\\ud800')", "2"]


def test_a_servers_tools_ask_first_unless_it_is_trusted_or_allowed(model):
    model.queue(
        calls(("script__add", {"a": 1, "b": 1})),
        answer("denied"),
        calls(("script__add", {"a": 1, "b": 2})),
        answer("trusted"),
        calls(("script__add", {"a": 1, "b": 3})),
        answer("allowed"),
    )

    # nobody at a terminal: what asks is denied
    harness.run("add", mcp=config())
    harness.run("add", mcp=config(trust=True))
    harness.run("add", mcp=config(), allow="script")

    assert results(model, 1)[0].startswith("denied: nobody is at a terminal")
    assert results(model, 3) == ["3"] and results(model, 5) == ["4"]


def test_a_server_that_speaks_another_protocol_version_is_left_out_with_a_note(model):
    model.queue(answer("done"))
    events = []
    given = config()
    given["mcpServers"]["script"]["args"].append("version=2099-01-01")

    harness.run("x", mcp=given, on_event=events.append)

    [start] = [event for event in events if event["type"] == "start"]
    assert "MCP server script speaks protocol '2099-01-01', which this agent does not" in " ".join(
        start["notes"]
    )
    assert not any(
        t["function"]["name"].startswith("script__") for t in model.requests[0]["body"]["tools"]
    )


@needs_landlock
def test_a_servers_tools_are_refused_once_a_env_is_made_in_the_workspace_after_it_started(
    model, tmp_path
):
    # Its sandbox was set when it started, when there was no .env to hide: a session's servers
    # run for hours, and a .env made meanwhile holds secrets
    (tmp_path / "later").mkdir()
    model.queue(
        calls(("script__read", {"path": "later/notes.txt"})),
        calls(("script__read", {"path": "later/.env"})),
        answer("done"),
    )
    (tmp_path / "later" / "notes.txt").write_text("notes\n")

    def approve(name: str, arguments: dict) -> bool:
        if arguments["path"] == "later/.env":  # made after the first call, by the person, say
            (tmp_path / "later" / ".env").write_text("SECRET=made-later\n")
        return True

    harness.run("read", mcp=config(), approve=approve)

    assert results(model, 1) == ["notes\n"]
    [refused] = results(model, 2)
    assert refused == (
        f"error: MCP server script: {tmp_path / 'later' / '.env'} was made after the server "
        "started, and the sandbox it started in may not hide it (a .env holds secrets); its tools "
        "cannot be called until the user starts the agent again"
    )
