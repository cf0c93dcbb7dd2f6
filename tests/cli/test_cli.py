"""The command lines a person types: harness.py, probe.py and backend.py, run as subprocesses."""

import json
import os
import re
import shlex
import socket
import subprocess
import sys

import pytest
from fake_model import answer, calls, error
from helpers import ROOT, copy_of_the_agent, run_script, runs_of

TASK = "List the files here, then read backend.py and tell me which model it calls."


def test_cli_chains_two_calls_prints_only_the_answer_over_one_connection(model, tmp_path):
    (tmp_path / "backend.py").write_text('MODEL = "openai/gpt-oss-120b"\n')
    model.queue(
        calls(("list_dir", {})),
        calls(("read_file", {"path": "backend.py"})),
        answer("backend.py calls openai/gpt-oss-120b."),
    )

    result = run_script("harness.py", TASK, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "backend.py calls openai/gpt-oss-120b.\n"
    progress, summary = result.stderr.splitlines()[:-1], result.stderr.splitlines()[-1]
    assert progress == [
        "[1] list_dir {}",
        "    → ok",
        '[2] read_file {"path": "backend.py"}',
        "    → ok",
    ]
    assert summary.startswith("done: 3 steps, 2 tool calls, 30 tokens in, 15 out, model ")
    assert model.connections == 1
    assert model.messages(2)[-1]["content"] == 'MODEL = "openai/gpt-oss-120b"\n'


def test_cli_without_a_key_names_the_variable_and_exits_2(model, tmp_path, monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY")
    # with no .env, whatever the developer's folder holds
    agent = copy_of_the_agent(tmp_path / "agent")

    result = run_script("harness.py", "x", cwd=tmp_path, root=agent)

    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert "GROQ_API_KEY" in result.stderr and ".env.example" in result.stderr
    assert "Traceback" not in result.stderr
    assert model.requests == []


def test_cli_with_a_bad_key_says_so_in_one_line(model, cli, tmp_path):
    model.queue(error(401, "Invalid API Key", code="invalid_api_key"))

    result = cli("x")

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "error: the server rejected the API key (401): check GROQ_API_KEY in the environment\n"
    )


def test_cli_with_an_unreachable_server_says_so_in_one_line(model, tmp_path, monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("GROQ_BASE_URL", f"http://127.0.0.1:{port}/v1")

    result = run_script("harness.py", "x", cwd=tmp_path)

    assert result.returncode == 1
    assert result.stdout == ""
    # on this machine: whether it runs, not the network, is what to check
    assert result.stderr.splitlines()[-1] == (
        f"error: could not reach the model server at http://127.0.0.1:{port}/: "
        "is it running? check GROQ_BASE_URL"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("host", "local"),
    [("127.0.0.1", True), ("::1", True), ("localhost", True), ("192.0.2.1", False), ("a.b", False)],
)
def test_a_server_on_this_machine_is_told_from_one_across_the_network(host, local):
    from plainagent.model.errors import loopback

    assert loopback(host) is local


def test_cli_unknown_model_and_too_large_requests_are_one_line(model, cli, tmp_path):
    model.queue(
        error(
            404,
            "The model `nope` does not exist or you do not have access to it.",
            code="model_not_found",
        ),
        error(
            413,
            "Request too large for model `openai/gpt-oss-120b` on tokens per minute (TPM): "
            "Limit 8000, Requested 12000, please reduce your message size and try again.",
            code="rate_limit_exceeded",
            type="tokens",
        ),
    )

    not_found = cli("x", "--model", "nope")
    too_large = cli("x")

    assert model.requests[0]["body"]["model"] == "nope"
    assert not_found.returncode == 1 and too_large.returncode == 1
    # the model named as it was given: by --model here, not AGENT_MODEL alone
    assert not_found.stderr == (
        "error: the model or URL was not found (404): The model `nope` does not exist or you do "
        "not have access to it; check the model, nope (--model or AGENT_MODEL), and "
        "GROQ_BASE_URL\n"
    )
    assert too_large.stderr == (
        "error: the request was too large for the plan's tokens per minute (12000 tokens, "
        "the limit is 8000) (413): lower AGENT_CONTEXT_BUDGET, use fewer --max-steps, "
        "or use a paid tier\n"
    )
    for result in (not_found, too_large):
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def test_cli_unknown_backend_is_a_usage_error(model, cli, tmp_path):
    result = cli("x", "--backend", "nope")

    assert result.returncode == 2
    assert result.stderr == "error: unknown backend 'nope'; known backends: groq, openai, ollama\n"


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        # a flag's value would become the task, and the task an unknown word: the flag is named
        (["--max-stesp", "3", "hi"], "unknown flag --max-stesp (did you mean --max-steps?)"),
        (["--yse", "hi"], "unknown flag --yse (did you mean --yes?)"),
        (["--bogus=3", "hi"], "unknown flag --bogus"),
        (["fix", "the", "tests"], 'the task is one argument: put it in quotes, "fix the tests"'),
        (["fix", "--quiet", "the", "tests"], 'put it in quotes, "fix the tests"'),
        (["--forget-runs"], "--forget-runs needs a value: --forget-runs DAYS"),
        (["x", "--max-steps"], "--max-steps needs a value: --max-steps N"),
        (["--continue"], '--continue needs the follow-up in quotes (--continue "and now?")'),
    ],
)
def test_a_mistyped_command_line_says_what_to_type_in_one_line(model, tmp_path, typed, said):
    result = run_script("harness.py", *typed, cwd=tmp_path)

    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and said in result.stderr, result.stderr
    assert result.stderr.endswith("; see python harness.py --help\n")
    assert model.requests == []


def test_a_path_flag_given_with_an_equals_sign_takes_tilde_as_the_home_folder(model, tmp_path):
    # No shell expands ~ after --flag=: the transcript went into a new folder named ~ in the
    # working folder, and the workspace and the schema were "not found".
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "proj").mkdir(parents=True)
    work.mkdir()
    (home / "schema.json").write_text('{"type": "object", "properties": {"a": {"type": "string"}}}')
    model.queue(answer("a is x"), answer('{"a": "x"}'))  # the answer, then the answer as JSON

    result = run_script(
        "harness.py",
        "x",
        "--workspace=~/proj",
        "--transcript=~/t.jsonl",
        "--output-schema=~/schema.json",
        cwd=work,
        env={**os.environ, "HOME": str(home)},
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"a":"x"}\n'
    assert (home / "t.jsonl").is_file() and list(work.iterdir()) == []
    assert f"in the folder {home / 'proj'}" in model.messages(0)[0]["content"]


def test_cli_step_limit_exits_1_with_the_stop_message(model, cli, tmp_path):
    model.queue(calls(("list_dir", {})), calls(("list_dir", {})))

    result = cli("x", "--max-steps", "2")

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[-2].startswith(
        "stopped: hit the step limit (2 steps), 2 tool calls, "
    )
    assert result.stderr.splitlines()[-1] == (
        'go on with --continue "go on", or give a run more with --max-steps N'
    )
    assert len(model.requests) == 2


def test_cli_help_lists_every_flag_of_the_configuration_table_with_its_variable_and_default(
    tmp_path,
):
    result = run_script("harness.py", "--help", cwd=tmp_path, env={**os.environ, "COLUMNS": "1000"})

    assert result.returncode == 0
    # one entry per option (each of its names: --stream, --no-stream); a long one's help is on the
    # next line
    options = result.stdout.split("options:")[1]
    helps = {
        name.rstrip(","): " ".join(entry.split())
        for entry in re.split(r"\n(?=  -)", options)
        if entry.strip()
        for name in re.match(r"\s*((?:-[\w-]+,?\s)+)", entry)[1].split()
    }
    # the manual's settings table
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = [row for row in configuration.splitlines() if row.startswith(("| `AGENT_", "| | `--"))]
    rows = [[cell.strip() for cell in row.strip("|").split("|")] for row in table]
    assert len(rows) >= 10
    for variable, flags, default, _ in rows:
        for flag in re.findall(r"--[a-z-]+", flags.split("(old name")[0]):
            assert flag in helps, flag
            variable_name = re.search(r"AGENT_\w+", variable)
            if variable_name:
                assert variable_name[0] in helps[flag], (flag, variable_name[0])
            if re.fullmatch(r"\d+|`\w+`", default):
                assert f"default {default.strip('`')}" in helps[flag], (flag, default)


def test_probe_prints_content_tool_calls_and_the_raw_json(model, tmp_path):
    model.queue(calls(("list_dir", {"path": "."})))

    result = run_script("probe.py", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "content: None"
    assert lines[1].startswith("tool_calls: [ChatCompletionMessage") and "id='call_1'" in lines[1]
    raw = json.loads("\n".join(lines[2:]))
    assert raw[0]["function"] == {"name": "list_dir", "arguments": '{"path": "."}'}
    assert model.messages(0) == [
        {"role": "user", "content": "What files are in the current directory?"}
    ]
    assert [t["function"]["name"] for t in model.requests[0]["body"]["tools"]] == [
        "read_file",
        "list_dir",
        "write_file",
        "edit_file",
        "run_shell",
    ]


def test_probe_shows_the_models_text_and_tool_calls_escaped_and_its_key_redacted(model, tmp_path):
    from helpers import KEY

    sneaky = f"{KEY} \x1b]0;owned\x07 \u202e"
    # the characters, not escapes
    reply = calls(("list_dir", json.dumps({"path": sneaky}, ensure_ascii=False)))
    reply["body"]["choices"][0]["message"]["content"] = sneaky
    model.queue(reply)

    result = run_script("probe.py", cwd=tmp_path, env={**os.environ, "GROQ_API_KEY": KEY})

    assert result.returncode == 0, result.stderr
    assert KEY not in result.stdout and not any(char in result.stdout for char in "\x1b\x07\u202e")
    lines = result.stdout.splitlines()
    assert lines[0] == "content: [redacted API key] \\x1b]0;owned\\x07 \\u202e"
    assert (
        lines[1].startswith("tool_calls: [ChatCompletionMessage")
        and "[redacted API key]" in lines[1]
    )
    raw = json.loads("\n".join(lines[2:]))
    assert json.loads(raw[0]["function"]["arguments"]) == {
        "path": "[redacted API key] \x1b]0;owned\x07 \u202e"
    }


def test_probe_takes_another_question(model, tmp_path):
    model.queue(answer("no tools needed"))

    result = run_script("probe.py", "What is 2+2?", cwd=tmp_path)

    assert result.stdout.splitlines()[:2] == ["content: no tools needed", "tool_calls: None"]
    assert model.messages(0)[0]["content"] == "What is 2+2?"


@pytest.mark.parametrize(
    "script, args",
    [
        ("backend.py", ["--model", "other"]),
        ("backend.py", ["hello?"]),
        ("probe.py", ["--model", "other", "hi"]),
        ("probe.py", ["what", "is", "here"]),
    ],
)
def test_backend_and_probe_refuse_what_they_do_not_take_in_one_line(model, tmp_path, script, args):
    # --model was passed over (or sent to the model as the question), and the default model asked.
    result = run_script(script, *args, cwd=tmp_path)

    assert (result.returncode, result.stdout) == (2, "")
    said = {
        "--model": "--model is not taken here",
        "hello?": "hello? is not taken here",
        "what": 'the question is one argument: put it in quotes, "what is here"',
    }[args[0]]
    assert result.stderr.startswith(f"error: {said}; usage: python {script}"), result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert model.requests == []


@pytest.mark.parametrize("script", ["backend.py", "probe.py"])
def test_backend_and_probe_help_says_what_they_do_and_asks_nothing(model, tmp_path, script):
    result = run_script(script, "--help", cwd=tmp_path)

    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith(f"usage: python {script}")
    assert "AGENT_MODEL" in result.stdout and "harness.py --help" in result.stdout
    assert model.requests == []


def test_backend_says_hello(model, tmp_path):
    model.queue(answer("Hello there!"))

    result = run_script("backend.py", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello there!\n"
    request = model.requests[0]["body"]
    assert "tools" not in request
    assert request["model"] == "openai/gpt-oss-120b"


def test_backend_without_a_key_exits_2_in_one_line(model, tmp_path, monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY")

    result = run_script("backend.py", cwd=tmp_path, root=copy_of_the_agent(tmp_path / "agent"))

    assert result.returncode == 2
    assert (
        result.stderr.startswith("error: GROQ_API_KEY is not set")
        and "Traceback" not in result.stderr
    )


def test_importing_the_modules_does_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import harness, probe, backend, tools; import plainagent.cli.main, "
            "plainagent.approval.prompt, plainagent.shell.allowlist, plainagent.workspace.files, "
            "plainagent.shell.command, plainagent.sandbox.process, plainagent.core.settings, "
            "plainagent.runs.transcript",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )

    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert list(tmp_path.iterdir()) == []


def test_an_unexpected_failure_with_a_line_break_in_it_is_still_one_line(model, cli, monkeypatch):
    from plainagent.cli import conversation

    model.queue(calls(("read_file", {"path": "a.txt"})))

    def boom(event: dict, *details: object) -> None:
        if event["type"] == "call":
            raise RuntimeError("first line\nsecond line")

    monkeypatch.setattr(conversation, "progress", boom)  # the listener each task's run reports to
    result = cli("x", "--no-transcript")

    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    # the break shown, not made
    assert line == "error: unexpected RuntimeError: first line\\nsecond line"


def test_a_carriage_return_in_the_answer_is_shown_not_obeyed(model, cli):
    model.queue(answer("all good\rrm -rf ~ done"))

    result = cli("x", "--no-transcript")

    assert result.returncode == 0
    # \r would move back and print over "all good"
    assert result.stdout == "all good\\rrm -rf ~ done\n"


def test_an_unexpected_failure_is_still_one_line(model, cli, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls(("read_file", {"path": "a.txt"})))

    def boom(event: dict, *details: object) -> None:
        if event["type"] == "call":
            raise RuntimeError("a listener failed")

    from plainagent.cli import conversation

    conversation.progress, saved = boom, conversation.progress
    try:
        result = cli("x")
    finally:
        conversation.progress = saved

    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(
        "error: unexpected RuntimeError: a listener failed; the run so far is in "
        f"{runs_of(tmp_path)}/"
    )


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pipe and its reader")
@pytest.mark.parametrize("script, args", [("harness.py", ["--quiet", "x"]), ("probe.py", [])])
def test_a_reader_that_stops_reading_ends_the_run_quietly_not_with_a_traceback(
    model, tmp_path, script, args
):
    model.queue(
        answer("a long answer\n" * 50_000)
        if script == "harness.py"
        else calls(("list_dir", {"path": "." * 100_000}))
    )
    command = " ".join(shlex.quote(word) for word in [sys.executable, str(ROOT / script), *args])
    result = subprocess.run(
        [
            "bash",
            "-c",
            f"set -o pipefail; {command} | head -c 1 >/dev/null; echo ${{PIPESTATUS[0]}}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
    assert result.stdout.strip() == "1"
