"""run() from scripts: every setting per run, and several runs in threads of
one process kept apart."""

import os
import sys
import threading
from pathlib import Path

import pytest
from fake_model import answer, calls

import harness
from plainagent.core import settings

RUNS_AT_ONCE = 8


def reply_by_turn(body: dict) -> dict:
    """Each run: write a file named after its task, run pwd, then answer with what pwd printed."""
    messages, task = body["messages"], body["messages"][1]["content"]
    if len(messages) == 2:
        return {**calls(("write_file", {"path": f"{task}.txt", "content": task})), "delay": 0.02}
    if len(messages) == 4:
        return {**calls(("run_shell", {"command": "pwd"})), "delay": 0.02}
    return {**answer(messages[-1]["content"]), "delay": 0.02}


@pytest.mark.skipif(sys.platform == "win32", reason="pwd is POSIX")
def test_eight_runs_in_threads_each_stay_in_their_own_workspace(model, tmp_path):
    model.router = reply_by_turn
    folders = [tmp_path / f"ws{n}" for n in range(RUNS_AT_ONCE)]
    for folder in folders:
        folder.mkdir()
    environment, working_folder = dict(os.environ), os.getcwd()
    approved: dict[str, list[str]] = {folder.name: [] for folder in folders}
    answers: dict[str, str] = {}

    def one_run(folder: Path) -> None:
        def approve(name: str, arguments: dict) -> bool:
            approved[folder.name].append(arguments.get("path", arguments.get("command")))
            return True

        answers[folder.name] = harness.run(folder.name, workspace=folder, approve=approve)

    threads = [threading.Thread(target=one_run, args=(folder,)) for folder in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(model.requests) == 3 * RUNS_AT_ONCE
    for folder in folders:
        assert sorted(p.name for p in folder.iterdir()) == [f"{folder.name}.txt"]
        assert answers[folder.name] == f"exit code: 0\nstdout:\n{folder.resolve()}\n"
        assert approved[folder.name] == [f"{folder.name}.txt"]  # pwd runs without asking
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.name for f in folders)
    assert dict(os.environ) == environment and os.getcwd() == working_folder


def test_settings_are_read_once_when_the_run_starts(model, tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("x" * 50)
    monkeypatch.setenv("AGENT_MAX_CHARS", "10")

    def change_the_environment(event: dict) -> None:
        if event["type"] == "request":
            os.environ["AGENT_MAX_CHARS"] = "20"

    model.queue(calls(("read_file", {"path": "a.txt"})), answer("ok"))

    harness.run("read", on_event=change_the_environment)

    assert model.messages(1)[-1]["content"].startswith("x" * 10 + "\n[cut: showed bytes 0-10 of 50")


def test_a_setting_given_to_run_wins_over_its_variable(model, tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_text("x" * 50)
    monkeypatch.setenv("AGENT_MAX_CHARS", "10")
    model.queue(calls(("read_file", {"path": "a.txt"})), answer("ok"))

    harness.run("read", max_chars=30, max_steps=2)

    assert model.messages(1)[-1]["content"].startswith("x" * 30 + "\n[cut: showed bytes 0-30 of 50")


@pytest.mark.parametrize(
    "given, message",
    [
        ({"max_steps": 0}, "AGENT_MAX_STEPS must be a positive whole number"),
        ({"shell_timeout": float("nan")}, "AGENT_SHELL_TIMEOUT must be a positive number"),
        ({"workspace": "/no/such/folder"}, "the workspace /no/such/folder is not a folder"),
        ({"sandbox": "maybe"}, "AGENT_SANDBOX must be one of auto, off"),
        ({"reasoning_effort": "max"}, "AGENT_REASONING_EFFORT must be one of low, medium, high"),
    ],
)
def test_a_bad_setting_given_to_run_is_a_config_error_before_any_request(model, given, message):
    with pytest.raises(settings.ConfigError, match=message):
        harness.run("x", **given)
    assert model.requests == []


def test_settings_given_whole_and_one_by_one_is_a_type_error_not_a_keyword_dropped(model):
    # max_steps=2 beside settings= was read by nobody: the run went on to the default 20 steps
    with pytest.raises(TypeError) as raised:
        harness.run("x", settings=settings.resolve(), max_steps=2, model="m")

    assert str(raised.value) == "give run() settings= or max_steps=, model=, not both"
    assert model.requests == []


def test_an_unknown_setting_is_a_type_error(model):
    with pytest.raises(TypeError, match="unknown setting workspaces"):
        harness.run("x", workspaces="/tmp")


def test_a_request_field_given_as_a_setting_is_told_to_go_in_options(model):
    # As LiteLLM's completion() takes it: run() takes request fields in options=
    with pytest.raises(TypeError) as raised:
        harness.run("x", temperature=0, top_p=1)

    assert str(raised.value).startswith("unknown setting temperature, top_p; known: backend, ")
    assert str(raised.value).endswith(
        "; a request field goes in options= ({'temperature': ..., 'top_p': ...})"
    )
    assert model.requests == []


def test_a_tool_called_without_a_runs_settings_raises_instead_of_reading_the_environment(
    tmp_path, monkeypatch
):
    import tools

    (tmp_path / "here.txt").write_text("hi")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path))

    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'settings'"):
        tools.read_file("here.txt")
    assert tools.read_file("here.txt", settings=settings.resolve(require_key=False)) == "hi"


def alpha(word: str) -> str:
    """Say alpha."""
    return f"alpha {word}"


def beta(word: str) -> str:
    """Say beta."""
    return f"beta {word}"


def reply_with_the_runs_own_tool(body: dict) -> dict:
    """Call the one tool the request offers, then answer with its result."""
    if body["messages"][-1]["role"] == "tool":
        return {**answer(body["messages"][-1]["content"]), "delay": 0.02}
    [tool] = body["tools"]
    return {
        **calls((tool["function"]["name"], {"word": body["messages"][1]["content"]})),
        "delay": 0.02,
    }


def test_runs_in_threads_with_their_own_tools_each_see_only_theirs(model):
    model.router = reply_with_the_runs_own_tool
    answers: dict[str, list[str]] = {"alpha": [], "beta": []}

    def runs(tool) -> None:
        for n in range(4):
            answers[tool.__name__].append(harness.run(f"w{n}", tools=[tool]))

    threads = [threading.Thread(target=runs, args=(tool,)) for tool in (alpha, beta)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert answers == {
        "alpha": [f"alpha w{n}" for n in range(4)],
        "beta": [f"beta w{n}" for n in range(4)],
    }
    offered = [[tool["function"]["name"] for tool in r["body"]["tools"]] for r in model.requests]
    assert len(offered) == 16 and offered.count(["alpha"]) == offered.count(["beta"]) == 8
    import tools

    # nothing process-wide changed
    assert (
        [f.__name__ for f in tools.TOOL_FUNCTIONS]
        == list(tools.REGISTRY)
        == ["read_file", "list_dir", "write_file", "edit_file", "run_shell"]
    )


def test_no_tools_is_a_plain_conversation(model):
    model.queue(answer("hello"))

    assert harness.run("hi", tools=[]) == "hello"

    assert "tools" not in model.requests[0]["body"]


def test_options_reach_the_body_of_every_request_of_the_run(model):
    model.queue(calls(("list_dir", {})), answer("ok"))
    options = {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_completion_tokens": 300,
        "seed": 7,
        "stop": ["END"],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "extra_headers": {"X-Trace": "t-1"},
    }

    harness.run("go", options=options)

    for request in model.requests:
        body = request["body"]
        assert {key: body[key] for key in options if key != "extra_headers"} == {
            key: value for key, value in options.items() if key != "extra_headers"
        }
        assert request["headers"]["x-trace"] == "t-1" and "extra_headers" not in body
        assert body["model"] == "openai/gpt-oss-120b" and body["tools"]


TOOL_FIELDS = ("tool_choice", "parallel_tool_calls")


def test_the_tool_fields_go_only_with_tools_as_the_api_requires(model):
    # OpenAI: "'parallel_tool_calls' is only allowed when 'tools' are specified"
    model.queue(answer("hello"), answer("done"), answer('{"answer": true}'))
    options = {"tool_choice": "auto", "parallel_tool_calls": False, "temperature": 0}

    harness.run("hi", tools=[], options=options)
    harness.run("hi", options=options, output=bool)

    no_tools, with_tools, structured = (request["body"] for request in model.requests)
    assert not any(key in no_tools for key in TOOL_FIELDS) and no_tools["temperature"] == 0
    assert {key: with_tools[key] for key in TOOL_FIELDS} == {
        "tool_choice": "auto",
        "parallel_tool_calls": False,
    }
    assert "tools" not in structured and "response_format" in structured
    assert not any(key in structured for key in TOOL_FIELDS) and structured["temperature"] == 0


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "list_dir"}}]
)
def test_a_tool_choice_that_forces_a_call_holds_until_the_model_has_called_one(model, choice):
    # As the OpenAI Agents SDK resets it: sent on every request, the model could never answer
    model.queue(calls(("list_dir", {})), answer("done"))

    assert harness.run("look", options={"tool_choice": choice}) == "done"

    first, second = (request["body"] for request in model.requests)
    assert first["tool_choice"] == choice
    assert "tool_choice" not in second and second["tools"]


@pytest.mark.parametrize(
    "field, said",
    [
        ("model", "options= cannot set 'model': give it as run()'s model= instead"),
        ("messages", "options= cannot set 'messages': the loop sets it for every request"),
        ("tools", "options= cannot set 'tools': the loop sets it for every request"),
        ("stream", "options= cannot set 'stream': the loop sets it for every request"),
        (
            "response_format",
            "options= cannot set 'response_format': give run() output= a type or a JSON Schema "
            "instead, which asks for the answer in a request of its own, after the tools",
        ),
    ],
)
def test_an_option_the_loop_owns_is_one_config_error_before_any_request(model, field, said):
    with pytest.raises(settings.ConfigError) as raised:
        harness.run("x", options={field: True})

    assert str(raised.value) == said
    assert model.requests == []


def test_base_url_given_to_run_is_this_runs_alone(model):
    from fake_model import FakeModel

    other = FakeModel()
    try:
        other.queue(answer("from the other server"))
        model.queue(answer("from the usual one"))

        assert harness.run("x", base_url=other.url) == "from the other server"
        assert harness.run("x") == "from the usual one"
    finally:
        other.close()
    assert len(other.requests) == len(model.requests) == 1
