"""Promises that a planted one-line bug broke without any other test noticing (mutation testing): each test
here pins one of them by what a person or the model can see (exit code, stderr, requests, files on disk)."""

import json
import os
import select
import signal
import subprocess
import sys

import pytest

import tools

import settings

import context

import allowlist

import harness
import sandbox
from conftest import CHILD, ROOT, copy_of_the_agent, run_script
from fake_model import answer, calls
from settings import ConfigError
from test_runs import wait_for

needs_landlock = pytest.mark.skipif(bool(sandbox.unavailable()), reason=f"no Landlock: {sandbox.unavailable()}")
OTHER_KEY = "sk-openai-0123456789abcdefghijklmnop"


def events_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# settings.py: .env, the environment, validation

def test_agent_sandbox_in_dot_env_is_ignored_and_said_so(model, tmp_path):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("AGENT_SANDBOX=off\n")
    model.queue(answer("hi"))

    result = run_script("harness.py", "x", cwd=tmp_path, root=agent)

    assert result.returncode == 0, result.stderr
    assert "note: AGENT_SANDBOX in" in result.stderr and "is ignored" in result.stderr
    if not sandbox.unavailable():  # the sandbox stays on, so the model is told it holds
        assert "A kernel sandbox holds" in model.messages(0)[0]["content"]


def test_a_boolean_for_a_number_setting_is_a_config_error(model):
    with pytest.raises(ConfigError, match="max_steps|AGENT_MAX_STEPS"):
        harness.run("x", max_steps=True)
    assert model.requests == []


def test_agent_approve_all_in_the_environment_approves_without_a_terminal(model, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_APPROVE", "all")
    model.queue(calls(("write_file", {"path": "made.txt", "content": "yes"})), answer("made"))

    assert harness.run("make it") == "made"
    assert (tmp_path / "made.txt").read_text() == "yes"
    assert model.messages(1)[-1]["content"] == "created made.txt (3 bytes)"


def test_another_backends_key_in_the_environment_is_redacted_and_kept_from_commands(model, cli, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_KEY)
    (tmp_path / "notes.txt").write_text(f"openai key {OTHER_KEY}\n")
    model.queue(calls(("read_file", {"path": "notes.txt"})), calls(("run_shell", {"command": "env"})),
                answer(f"it is {OTHER_KEY}"))

    result = cli("find it", "--transcript", "t.jsonl", "--yes")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "it is [redacted API key]\n"
    assert OTHER_KEY not in (tmp_path / "t.jsonl").read_text()
    assert OTHER_KEY not in model.messages(2)[-1]["content"]  # env printed no key


def test_a_whole_key_becomes_one_marker_with_nothing_of_it_left(model, cli, tmp_path, monkeypatch):
    key = "gsk_" + "abcdefghij" * 4 + "XYZ"  # 47 characters: not a multiple of any piece length
    monkeypatch.setenv("GROQ_API_KEY", key)
    (tmp_path / "notes.txt").write_text(f"key: {key}.\n")
    model.queue(calls(("read_file", {"path": "notes.txt"})), answer(f"the key is {key}."))

    result = cli("read it", "--transcript", "t.jsonl")

    assert result.stdout == "the key is [redacted API key].\n"
    [read] = [e["message"]["content"] for e in events_of(tmp_path / "t.jsonl")
              if e["type"] == "message" and e["message"]["role"] == "tool"]
    assert read == "key: [redacted API key].\n"


def test_a_workspace_that_is_a_file_is_a_usage_error(model, cli, tmp_path):
    (tmp_path / "a-file").write_text("x")

    result = cli("x", "--workspace", "a-file")

    assert result.returncode == 2 and "is not a folder" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and model.requests == []


def test_a_key_under_another_variable_name_reaches_no_command(model, tmp_path, monkeypatch):
    key = "gsk_copied0123456789abcdefghij"
    monkeypatch.setenv("GROQ_API_KEY", key)
    monkeypatch.setenv("MY_COPY_OF_IT", key)
    model.queue(calls(("run_shell", {"command": "env"})), answer("done"))

    harness.run("show the environment", approve_all=True)

    shown = model.messages(1)[-1]["content"]
    assert shown.startswith("exit code: 0") and key not in shown and "MY_COPY_OF_IT" not in shown


# harness.py: how a call ended, as the events and progress lines say

def test_an_approver_that_denies_with_words_is_a_denial(model):
    model.queue(calls(("write_file", {"path": "x.txt", "content": "x"})), answer("ok"))
    events = []

    harness.run("write", approve=lambda name, arguments: "not today", on_event=events.append)

    [tool] = [e for e in events if e["type"] == "tool"]
    assert (tool["result"], tool["outcome"], tool["error"]) == ("not today", "denied", True)
    assert model.messages(1)[-1]["content"] == "not today"


# cli.py: the transcript a run writes

def test_the_transcript_named_by_the_flag_is_protected_from_the_file_tools(model, cli, tmp_path):
    model.queue(calls(("write_file", {"path": "t.jsonl", "content": "forged"})), answer("refused"))

    result = cli("forge it", "--transcript", "t.jsonl", "--yes")

    assert result.returncode == 0, result.stderr
    assert model.messages(1)[-1]["content"].startswith("error: PermissionError: t.jsonl is protected")
    assert "forged" not in (tmp_path / "t.jsonl").read_text().splitlines()[0]
    assert all(json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines())


# transcript.py: what --continue refuses

@pytest.mark.parametrize("damage, says", [
    ({"type": "dropped", "index": 2, "count": 1}, "line 3 drops 1 message(s) at 2, which is not one old turn"),
    ('{"type": "message", "mess', "line 3 is not JSON"),  # half-written, but no run started after it
])
def test_continue_refuses_a_transcript_damaged_just_past_its_end_or_in_its_middle(model, cli, tmp_path, damage,
                                                                                  says):
    from test_robustness import SYSTEM, USER, event_lines
    (tmp_path / "t.jsonl").write_text(event_lines(SYSTEM, USER, damage, USER))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: cannot continue from t.jsonl: {says}")
    assert model.requests == []


# cli.py: how a run stopped by a signal or a bug is recorded and shown; a session's prompt and transcript

@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_during_a_model_request_ends_the_transcript_with_terminated(model, tmp_path, start_cli):
    model.queue({**answer("too late"), "delay": 5})
    process = start_cli(tmp_path, "wait for it", "--transcript", "t.jsonl")
    wait_for(lambda: model.requests)

    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=10)

    assert process.returncode == 143
    last = events_of(tmp_path / "t.jsonl")[-1]
    assert (last["type"], last.get("reason")) == ("end", "terminated")


def test_an_unexpected_failure_with_a_line_break_in_it_is_still_one_line(model, cli, monkeypatch):
    import cli as command_line
    model.queue(calls(("read_file", {"path": "a.txt"})))

    def boom(event: dict, *details: object) -> None:
        if event["type"] == "call":
            raise RuntimeError("first line\nsecond line")

    monkeypatch.setattr(command_line, "progress", boom)
    result = cli("x", "--no-transcript")

    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line == "error: unexpected RuntimeError: first line\\nsecond line"  # the break shown, not made


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_a_session_ended_before_a_task_leaves_the_empty_transcript_it_was_given(model, terminal, tmp_path):
    (tmp_path / "given.jsonl").write_text("")
    shown = terminal("--transcript", "given.jsonl")

    shown.read_until("> ")
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert (tmp_path / "given.jsonl").is_file()  # not made by this session, so not its to remove


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_a_session_with_stdout_not_a_terminal_keeps_the_prompt_off_stdout(model, tmp_path):
    model.queue(answer("one"))
    master, slave = os.openpty()
    with open(tmp_path / "out.txt", "w") as out:
        try:
            process = subprocess.Popen([sys.executable, str(ROOT / "harness.py"), "--no-transcript"], cwd=tmp_path,
                                       stdin=slave, stdout=out, stderr=slave, start_new_session=True, **CHILD)
        finally:
            os.close(slave)
    shown = b""
    try:
        for line, prompts in (("hello", 1), ("/exit", 2)):
            while shown.count(b"> ") < prompts:
                assert select.select([master], [], [], 30)[0], shown
                shown += os.read(master, 65536)
            os.write(master, line.encode() + b"\n")
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)

    assert (tmp_path / "out.txt").read_text() == "one\n"  # the answer alone: the prompts went to the terminal



@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_without_a_task_and_stderr_not_a_terminal_a_task_is_required(model, tmp_path):
    master, slave = os.openpty()
    try:
        result = subprocess.run([sys.executable, str(ROOT / "harness.py"), "--no-transcript"], cwd=tmp_path,
                                stdin=slave, capture_output=True, text=True, timeout=30, **CHILD)
    finally:
        os.close(slave)
        os.close(master)

    assert result.returncode == 2  # no session: its prompts and progress would go where nobody sees them
    assert "the following arguments are required: task" in result.stderr
    assert model.requests == []

# transcript.py: a link planted in runs/ sends nothing elsewhere

@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_continue_from_a_link_in_runs_appends_nothing_to_the_file_it_points_to(model, cli, tmp_path):
    model.queue(answer("first"))
    outside = tmp_path / "elsewhere" / "t.jsonl"
    outside.parent.mkdir()
    assert cli("first", "--transcript", str(outside)).returncode == 0
    before = outside.read_bytes()
    (tmp_path / "runs").mkdir(mode=0o700)
    os.symlink(outside, tmp_path / "runs" / "9999-planted.jsonl")

    result = cli("--continue", "more")

    assert result.returncode == 2 and "cannot create the transcript" in result.stderr
    assert outside.read_bytes() == before
    assert len(model.requests) == 1  # the follow-up was never sent


# harness.py: the outcome and error flag of each tool event

def test_a_command_that_exits_0_ends_ok_and_is_no_error(model):
    model.queue(calls(("run_shell", {"command": "echo hi"})), answer("said hi"))
    events = []

    harness.run("say hi", on_event=events.append)

    [tool] = [e for e in events if e["type"] == "tool"]
    assert tool["result"].startswith("exit code: 0")
    assert (tool["outcome"], tool["error"]) == ("ok", False)


def test_a_call_refused_as_repeated_is_flagged_an_error(model, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    model.queue(*[calls(("read_file", {"path": "a.txt"})) for _ in range(3)], answer("read"))
    events = []

    harness.run("read it", on_event=events.append)

    tools = [(e["outcome"], e["error"]) for e in events if e["type"] == "tool"]
    assert tools == [("ok", False), ("ok", False), ("refused: repeated call", True)]


# safety.py: what a person is shown, and what runs without asking

def test_a_carriage_return_in_the_answer_is_shown_not_obeyed(model, cli):
    model.queue(answer("all good\rrm -rf ~ done"))

    result = cli("x", "--no-transcript")

    assert result.returncode == 0
    assert result.stdout == "all good\\rrm -rf ~ done\n"  # \r would move back and print over "all good"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell quoting")
@pytest.mark.parametrize("command, asks", [
    ("find . '!' -name '*.pyc'", False),  # ! negates a test and reads nothing more
    ("tail -n 5x a.txt", True),  # a count that is not a number
    ("head -c 1K a.txt", False),
])
def test_find_negation_runs_and_a_count_must_be_a_number(tmp_path, monkeypatch, command, asks, as_a_run):
    (tmp_path / "a.txt").write_text("a\n")
    monkeypatch.chdir(tmp_path)  # the workspace outside a run
    as_a_run()

    assert (allowlist.reason_to_ask(command) is not None) is asks


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script as the filter")
def test_a_filter_defined_in_the_worktree_config_runs_on_no_read_only_git_command(tmp_path, monkeypatch, as_a_run):
    import tools

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "evil.sh").write_text("#!/bin/sh\ncat >/dev/null\necho FILTER-RAN\n")  # seen in the diff; in the
    (ws / "evil.sh").chmod(0o755)  # workspace, where the sandbox lets it run
    (ws / "f.txt").write_text("a\n")
    (ws / ".gitattributes").write_text("*.txt filter=evil\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    git("config", "extensions.worktreeConfig", "true")
    git("config", "--worktree", "filter.evil.clean", f"{ws}/evil.sh")
    (ws / "f.txt").write_text("a\nb\n")
    assert "FILTER-RAN" in git("diff")  # a plain git runs the worktree's filter
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    as_a_run()

    result = tools.run_shell("git diff")

    assert result.startswith("exit code: 0") and "+b" in result and "FILTER-RAN" not in result


# settings.py: a bad number names where it came from, to fix it there

def test_a_bad_number_given_to_run_names_the_argument_not_the_variable(model, monkeypatch):
    monkeypatch.setenv("AGENT_MAX_STEPS", "5")

    with pytest.raises(ConfigError, match=r"AGENT_MAX_STEPS must be a positive whole number, not 0; fix the "
                                          r"max_steps= argument$"):
        harness.run("x", max_steps=0)
    assert model.requests == []


def test_an_empty_key_in_the_environment_does_not_hide_the_one_in_dot_env(model, tmp_path, monkeypatch):
    import settings
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / ".env").write_text("GROQ_API_KEY=gsk_from_dot_env_0123456789\n")
    monkeypatch.setattr(settings, "DOTENV", tmp_path / "agent" / ".env")
    monkeypatch.setenv("GROQ_API_KEY", "")  # an `export GROQ_API_KEY=` left over
    model.queue(answer("hi"))

    assert harness.run("x") == "hi"
    assert len(model.requests) == 1



def test_an_empty_key_exported_and_none_in_dot_env_says_it_is_empty(model, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "")

    with pytest.raises(ConfigError, match="^GROQ_API_KEY is empty: put your key after GROQ_API_KEY="):
        harness.run("x")
    assert model.requests == []

# tools.py: what list_dir shows of a link

@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_list_dir_shows_a_link_inside_the_workspace_as_what_it_points_to(tmp_path, monkeypatch, in_a_run):
    import tools
    (tmp_path / "a.txt").write_text("abc")
    os.symlink(tmp_path / "a.txt", tmp_path / "b.txt")
    os.symlink(tmp_path, tmp_path / "top")  # the workspace itself is inside it
    monkeypatch.chdir(tmp_path)

    assert tools.list_dir(".") == "a.txt  3 bytes\nb.txt  3 bytes\ntop/"


# harness.py: what keeping to the budget never drops, and how a non-shell call is said to end

def test_dropping_several_old_turns_at_once_keeps_the_newest_turn(model):
    def turn(n: int) -> list[dict]:
        return [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"c{n}", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": f"c{n}", "content": "a.txt  3 bytes"}]  # shorter than a stub
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    for n in range(1, 6):
        messages += turn(n)
    events = []

    context.fit_to_budget(messages, 60, 6, events.append)

    assert messages == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, *turn(5)]
    assert [e["type"] for e in events] == ["dropped"] * 4 + ["over_budget"]


def test_a_file_whose_first_line_reads_like_an_exit_code_is_an_ok_read(model, tmp_path):
    (tmp_path / "log.txt").write_text("exit code: 3; from the last build\n")
    model.queue(calls(("read_file", {"path": "log.txt"})), answer("read"))
    events = []

    harness.run("read the log", on_event=events.append)

    [tool] = [e for e in events if e["type"] == "tool"]
    assert (tool["outcome"], tool["error"]) == ("ok", False)
