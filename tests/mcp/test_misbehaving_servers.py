"""Servers that misbehave (misbehaving_server.py): at start a note and the run goes on without
them; in a call an `error: …` or a result the model can read; a tool whose inputSchema JSON Schema
does not allow is left out with a note, never the run's end; a call stopped by Ctrl-C is
cancelled, so the session's server goes on with the next."""

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import PROMPT, posix_only, results

import harness

SERVER = Path(__file__).with_name("misbehaving_server.py")


def config(*faults: str) -> dict:
    """The misbehaving server as `bad`, copied into the workspace (where a server may read)."""
    copy = Path.cwd() / SERVER.name
    shutil.copyfile(SERVER, copy)
    return {"mcpServers": {"bad": {"command": sys.executable, "args": [str(copy), *faults]}}}


def start_notes(*faults: str) -> list[str]:
    events: list[dict] = []
    harness.run("x", mcp=config(*faults), on_event=events.append, mcp_timeout=5)
    [start] = [event for event in events if event["type"] == "start"]
    return start["notes"]


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (
            "exit-at-start",
            "MCP server bad ended (exit status 5); its stderr ends: cannot open the database; "
            "its tools are left out",
        ),
        (
            "banner",
            "MCP server bad printed what is not JSON-RPC on its stdout: "
            "'Starting server v1.0...'; its tools are left out",
        ),
    ],
)
def test_a_server_that_fails_at_start_is_one_note_and_the_run_goes_on(model, fault, said):
    model.queue(answer("done"))
    assert said in start_notes(fault)
    assert model.requests[0]["body"]["tools"]  # the agent's own, still offered


def test_of_500_tools_listed_100_are_offered_and_a_note_says_the_rest_are_left_out(model):
    model.queue(answer("done"))

    notes = start_notes("many")

    offered = [tool["function"]["name"] for tool in model.requests[0]["body"]["tools"]]
    assert len(offered) == 5 + 100  # the agent's own, and the first 100 of the server's
    assert offered[5:8] == ["bad__echo", "bad__wait", "bad__cancelled"]
    said = "MCP server bad listed 503 tools; 100 are kept, as the model's API takes 128 tools"
    assert any(note.startswith(said) for note in notes)


def test_a_server_that_sends_the_same_page_again_is_listed_once_with_one_note_for_it(model):
    model.queue(answer("done"))

    notes = start_notes("endless-pages")

    offered = [tool["function"]["name"] for tool in model.requests[0]["body"]["tools"]]
    assert offered[5:] == ["bad__echo", "bad__wait", "bad__cancelled"]
    assert notes[-1] == (
        "MCP server bad sent the cursor 'again' a second time; its tools are those of the pages "
        "before"
    )
    # each note once: the tools left out, and the three the page sent again listed twice
    assert len(notes) == len(set(notes)) == len(BROKEN) + 3 + 1


BROKEN = [
    ("properties-a-string", "has properties that is not an object"),
    ("required-a-number", "has required that is not a list of names"),
    ("allof-a-number", "has allOf that is not a list"),
    ("enum-a-number", "has properties.s.enum that is not a list"),
    ("type-a-number", "has properties.s.type that is neither a type's name nor a list of them"),
    ("ref-a-number", "has properties.s.$ref that is not a string"),
    ("anyof-a-number", "has properties.s.anyOf that is not a list"),
    ("minimum-a-string", "has properties.s.minimum that is not a number"),
]


def test_a_tool_whose_input_schema_is_broken_is_left_out_with_a_note_and_the_rest_work(model):
    model.queue(
        calls(("bad__echo", {"s": "hi"}), *[(f"bad__{name}", {"s": "hi"}) for name, _ in BROKEN]),
        answer("done"),
    )
    events: list[dict] = []

    done = harness.run(
        "x", mcp=config(), approve=lambda name, arguments: True, on_event=events.append
    )

    assert done == "done"
    [start] = [event for event in events if event["type"] == "start"]
    for name, problem in BROKEN:
        note = f"MCP tool bad__{name}: its inputSchema {problem}; it is left out"
        assert note in start["notes"]
    offered = {tool["function"]["name"] for tool in model.requests[0]["body"]["tools"]}
    assert "bad__echo" in offered and not offered & {f"bad__{name}" for name, _ in BROKEN}
    echoed, *refused = results(model, 1, 1 + len(BROKEN))
    assert echoed == 'echo {"s": "hi"}'  # its pattern Python cannot read is left to the server
    assert all(result.startswith("error: unknown tool 'bad__") for result in refused)


@pytest.mark.parametrize(
    ("fault", "result"),
    [
        ("flood", 'echo {"s": "a"}'),
        ("image", "[image: image/png, not shown]\n[resource: file:///data.bin, not text]"),
        # a server's sampling and roots requests refused: this client offers neither
        ("unasked", json.dumps([[99, -32601], ["r", -32601]])),
        ("giant", "error: MCP server bad sent a message over 10,000,000 bytes"),
        (
            "dies",
            "error: MCP server bad ended in the middle of a message: "
            '\'{"jsonrpc": "2.0", "id": 3, "res\' (exit status 9)',
        ),
    ],
)
def test_a_call_to_a_misbehaving_server_is_a_result_the_model_reads(model, fault, result):
    model.queue(calls(("bad__echo", {"s": "a"})), answer("done"))

    done = harness.run("x", mcp=config(fault), approve=lambda name, arguments: True)

    assert done == "done" and results(model, 1) == [result]


def test_a_result_of_megabytes_reaches_the_model_capped(model):
    model.queue(calls(("bad__echo", {})), answer("done"))

    harness.run("x", mcp=config("huge"), approve=lambda name, arguments: True, max_chars=4000)

    [result] = results(model, 1)
    assert result.startswith("y" * 1333 + "\n[... cut 4,996,000 characters of 5,000,000 ...]\n")
    assert len(result) < 4100


@posix_only
def test_ctrl_c_in_a_call_cancels_it_and_the_sessions_server_answers_the_next(
    model, terminal, tmp_path, monkeypatch
):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config()))
    monkeypatch.setenv("AGENT_MCP_TIMEOUT", "5")  # without the cancel, the next call waits this
    model.queue(calls(("bad__wait", {})), calls(("bad__cancelled", {})), answer("done"))
    shown = terminal("--no-transcript", "--yes", "--mcp", str(path))

    shown.read_until(PROMPT)
    shown.type("wait")
    shown.read_until("[1] bad__wait {}")
    time.sleep(0.5)
    os.killpg(shown.process.pid, signal.SIGINT)
    shown.read_until(PROMPT, count=2)
    shown.type("which were cancelled?")
    shown.read_until(PROMPT, count=3)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    # initialize was request 1, tools/list 2, the call waited for 3
    assert results(model, 2) == ["cancelled: [3]"]
