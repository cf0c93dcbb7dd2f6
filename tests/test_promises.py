"""Promises the README makes that no other test pinned: argument types, the loop guard's idea of "the same
call", rate-limit waits and reset times, transcripts, what commands see, the budget, and the real prompt."""

import io
import os
import random
import select
import signal
import subprocess
import sys

import pytest

import approval

import harness
import tools
from conftest import CHILD, ROOT, run_script
from fake_model import answer, calls, error
from test_runs import read_events, wait_for

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, shell and pseudo-terminals")
PROMPT = "[y]es / [N]o / [a]lways"
WHY_NOT = "why not? (optional"


def results(model, request: int, count: int = 1) -> list[str]:
    """The last `count` tool results the model was sent in request number `request`."""
    return [m["content"] for m in model.messages(request)[-count:]]


def test_true_is_not_an_integer_argument(model, tmp_path):
    (tmp_path / "a.txt").write_text("ABC")
    model.queue(calls(("read_file", '{"path": "a.txt", "offset": true}')), answer("ok"))

    harness.run("read")

    assert results(model, 1) == ["error: argument 'offset' must be a JSON integer, not true; "
                                 "expected read_file(path: str, offset: int = 0) -> str"]


def test_an_integer_is_a_number_where_a_float_is_expected(model, monkeypatch):
    def scale(factor: float) -> str:
        """Scale by a factor."""
        return f"scaled by {factor}"
    monkeypatch.setitem(harness.REGISTRY, "scale", scale)  # no tool takes a float today
    model.queue(calls(("scale", '{"factor": 2}'), ("scale", '{"factor": 0.5}'), ("scale", '{"factor": true}')),
                answer("ok"))

    harness.run("scale")

    assert results(model, 1, 3) == ["scaled by 2", "scaled by 0.5", "error: argument 'factor' must be a JSON "
                                     "number, not true; expected scale(factor: float) -> str"]


def test_the_loop_guard_sees_reordered_and_respaced_arguments_as_the_same_call(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls(("read_file", '{"path": "a.txt", "offset": 0}')),
                calls(("read_file", '{"offset":0,"path":"a.txt"}')),
                calls(("read_file", '{ "offset" : 0 ,\n "path" : "a.txt" }')), answer("ok"))

    harness.run("read")

    assert [results(model, i)[0] for i in (1, 2)] == ["A", "A"]
    assert results(model, 3)[0].startswith("error: you already called read_file with these arguments 2 times")


RPM = ("Rate limit reached for model `openai/gpt-oss-120b` in organization `org_x` service tier `on_demand` "
       "on requests per minute (RPM): Limit 30, Used 30, Requested 1.")


def test_the_retry_after_header_sets_the_wait(model):
    model.queue(error(429, RPM, code="rate_limit_exceeded", type="requests", headers={"retry-after": "1"}),
                answer("ok"))
    events = []

    assert harness.run("go", on_event=events.append) == "ok"

    assert [e["seconds"] for e in events if e["type"] == "wait"] == [1]


def test_millisecond_reset_headers_give_the_daily_reset_time(model, cli):
    model.queue(error(429, "Rate limit reached for model `openai/gpt-oss-120b` on tokens per day (TPD): "
                           "Limit 200000, Used 200000, Requested 1500.", code="rate_limit_exceeded", type="tokens",
                      headers={"x-ratelimit-reset-requests": "250ms", "x-ratelimit-reset-tokens": "180000ms"}))

    result = cli("go")

    assert result.returncode == 1
    assert result.stderr.startswith("error: rate limited: the plan's tokens per day are used up; "
                                    "it resets in about 3 min (around ")


def test_continue_sends_the_elided_stub_not_the_full_result(model, cli, tmp_path, monkeypatch):
    for name in "ab":
        (tmp_path / f"{name}.txt").write_text(name * 3000)
    model.queue(calls(("read_file", {"path": "a.txt"})), calls(("read_file", {"path": "b.txt"})), answer("read"),
                answer("more"))
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "1000")
    assert cli("read both").returncode == 0
    monkeypatch.delenv("AGENT_CONTEXT_BUDGET")  # the full text would fit the default budget

    assert cli("--continue", "and now?").returncode == 0

    assert all(m.get("content") != "a" * 3000 for m in model.messages(3))  # the shortening is re-applied
    assert model.messages(3) == model.messages(2) + [{"role": "assistant", "content": "read"},
                                                     {"role": "user", "content": "and now?"}]


@posix_only
def test_ctrl_c_during_a_model_request_ends_the_transcript_with_interrupted(model, tmp_path, start_cli):
    model.queue({**answer("too late"), "delay": 5})
    process = start_cli(tmp_path, "wait for it", "--transcript", "t.jsonl")
    wait_for(lambda: model.requests)

    process.send_signal(signal.SIGINT)
    process.communicate(timeout=10)

    assert process.returncode == 130
    last = read_events(tmp_path / "t.jsonl")[-1]
    assert (last["type"], last.get("reason")) == ("end", "interrupted")


def test_tool_events_flag_errors_and_denials(model, cli, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal: what asks is denied
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls(("read_file", {"path": "a.txt"}), ("read_file", {"path": "missing.txt"}),
                      ("run_shell", {"command": "rm a.txt"})), answer("ok"))

    assert cli("go", "--transcript", "t.jsonl").returncode == 0

    tool_events = [e for e in read_events(tmp_path / "t.jsonl") if e["type"] == "tool"]
    assert [(e["result"][:7], e["error"]) for e in tool_events] == [
        ("A", False), ("error: ", True), ("denied:", True)]


@posix_only
def test_commands_do_not_read_the_harness_stdin(model, tmp_path):
    model.queue(calls(("run_shell", {"command": "cat"})), answer("ok"))

    result = run_script("harness.py", "cat", cwd=tmp_path, input="SECRET-STDIN\n")

    assert result.returncode == 0, result.stderr
    assert results(model, 1) == ["exit code: 0"]


def test_list_dir_is_sorted_by_name(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    names = [f"f{i:02d}.txt" for i in range(30)]
    for name in random.Random(7).sample(names, len(names)):
        (tmp_path / name).write_text("x")

    assert tools.list_dir() == "\n".join(f"{name}  1 bytes" for name in names)


def test_valid_utf8_with_a_nul_byte_is_binary(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nul.txt").write_bytes(b"text\x00more")

    assert tools.read_file("nul.txt") == "nul.txt is a binary file (9 bytes), not text; it was not read"


def test_tool_call_arguments_count_toward_the_budget(model, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CONTEXT_BUDGET", "1500")  # 6,000 characters
    (tmp_path / "a.txt").write_text("a" * 2000)
    model.queue(calls(("read_file", {"path": "a.txt"})),
                calls(("write_file", {"path": "w.txt", "content": "w" * 6000})), answer("ok"))

    harness.run("read then write", approve=approval.approve_all)

    # Without the 6,000 characters of arguments the request would fit, and the file's text would stay.
    assert [m["content"] for m in model.messages(2) if m["role"] == "tool"][-1] == "created w.txt (6000 bytes)"
    assert all(m.get("content") != "a" * 2000 for m in model.messages(2))


def test_an_option_value_outside_the_workspace_needs_approval(model, tmp_path):
    (tmp_path / "x.txt").write_text("x")
    asked = []
    model.queue(calls(("run_shell", {"command": "grep -r --exclude-from=/etc/passwd x ."})), answer("ok"))

    harness.run("grep", approve=lambda name, arguments: asked.append(arguments["command"]) or False)

    assert asked == ["grep -r --exclude-from=/etc/passwd x ."]
    assert results(model, 1) == ["denied by the user"]


def at_a_terminal(cwd, task: str, answers: list[str]) -> tuple[int, str]:
    """Run `python harness.py TASK` with stdin, stdout and stderr on a pseudo-terminal, typing the next answer
    at each prompt (Enter once they run out). Returns the exit code and everything the terminal showed."""
    master, slave = os.openpty()
    process = subprocess.Popen([sys.executable, str(ROOT / "harness.py"), task, "--no-transcript"], cwd=cwd,
                               stdin=slave, stdout=slave, stderr=slave, **CHILD)
    os.close(slave)
    shown, typed, answers = "", 0, list(answers)
    try:
        while select.select([master], [], [], 30)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the harness exited and the terminal closed
                break
            if not chunk:
                break
            shown += chunk.decode(errors="replace")
            while typed < shown.count(PROMPT) + shown.count(WHY_NOT):
                os.write(master, ((answers.pop(0) if answers else "") + "\n").encode())
                typed += 1
        return process.wait(timeout=10), shown
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
            process.wait()


@posix_only
def test_always_at_the_write_file_prompt_approves_the_next_write(model, tmp_path):
    model.queue(calls(("write_file", {"path": "one.txt", "content": "1"})),
                calls(("write_file", {"path": "two.txt", "content": "2"})), answer("wrote both"))

    code, shown = at_a_terminal(tmp_path, "write two files", ["a"])

    assert code == 0, shown
    assert shown.count(PROMPT) == 1
    assert (tmp_path / "one.txt").read_text() == "1" and (tmp_path / "two.txt").read_text() == "2"


@posix_only
def test_yes_writes_and_no_with_a_reason_tells_the_model(model, tmp_path):
    model.queue(calls(("write_file", {"path": "one.txt", "content": "1"})),
                calls(("write_file", {"path": "two.txt", "content": "2"})), answer("done"))

    code, shown = at_a_terminal(tmp_path, "write two files", ["y", "n", "not that one"])

    assert code == 0, shown
    assert (tmp_path / "one.txt").read_text() == "1" and not (tmp_path / "two.txt").exists()
    assert results(model, 1) == ["created one.txt (1 bytes)"]
    assert results(model, 2) == ["denied by the user: not that one"]


@posix_only
def test_always_on_a_compound_command_trusts_each_of_its_programs(model, tmp_path):
    (tmp_path / "x").write_text("x")
    model.queue(calls(("run_shell", {"command": "rm x && touch y"})), calls(("run_shell", {"command": "touch z"})),
                answer("done"))

    code, shown = at_a_terminal(tmp_path, "shuffle files", ["a"])

    assert code == 0, shown
    assert shown.count(PROMPT) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y", "z"]
