"""Runs you can watch, keep and continue: events, transcripts, the summary line, --continue, Ctrl-C, kill -9."""

import json
import re
import signal
import sys
import time
from pathlib import Path

import pytest

import harness
import transcript
from conftest import descendants, run_script
from fake_model import answer, calls
from test_loop import assert_well_formed

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def read_events(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def only_transcript(folder):
    [path] = (folder / "runs").glob("*.jsonl")
    return path


def test_events_of_a_run_in_order(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue({**calls(("read_file", {"path": "a.txt"}), usage={"prompt_tokens": 100, "completion_tokens": 20}),
                 "delay": 0.3}, answer("A it is"))
    events = []

    harness.run("read a.txt", on_event=events.append)

    assert [(e["type"], e.get("message", {}).get("role")) for e in events] == [
        ("start", None), ("message", "system"), ("message", "user"), ("request", None), ("reply", None),
        ("message", "assistant"), ("call", None), ("tool", None), ("message", "tool"),
        ("request", None), ("reply", None), ("message", "assistant"), ("end", None)]
    reply, tool, end = events[4], events[7], events[-1]
    assert reply["usage"] == {"prompt_tokens": 100, "completion_tokens": 20}
    assert reply["step"] == 1 and reply["tool_calls"] == 1
    assert reply["seconds"] >= 0.3  # the reply's time covers the server's delay
    assert {k: tool[k] for k in ("step", "name", "arguments", "result", "error")} == {
        "step": 1, "name": "read_file", "arguments": '{"path": "a.txt"}', "result": "A", "error": False}
    assert end == {"type": "end", "reason": "answer", "answer": "A it is"}


def test_the_transcript_holds_the_exact_messages_sent(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls(("read_file", {"path": "a.txt"})), answer("A it is"))

    result = run_script("harness.py", "Read a.txt please", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    path = only_transcript(tmp_path)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-read-a-txt-please\.jsonl", path.name)
    assert transcript.restore(path)[0] == model.messages(1) + [{"role": "assistant", "content": "A it is"}]
    assert result.stderr.splitlines()[-1].endswith(f"transcript runs/{path.name}")


def test_the_summary_line_adds_up_the_scripted_usage(model, cli, tmp_path):
    model.queue(calls(("list_dir", {}), usage={"prompt_tokens": 300, "completion_tokens": 50}),
                calls(("list_dir", {"path": "."}), usage={"prompt_tokens": 150, "completion_tokens": 20}),
                answer("two files", usage={"prompt_tokens": 67, "completion_tokens": 13}))

    result = cli("list files", "--transcript", "mine.jsonl")

    assert re.fullmatch(r"done: 3 steps, 2 tool calls, 517 tokens in, 83 out, model \d+\.\d s, tools \d+\.\d s, "
                        r"transcript mine\.jsonl", result.stderr.splitlines()[-1])
    assert (tmp_path / "mine.jsonl").exists() and not (tmp_path / "runs").exists()


def test_quiet_prints_only_the_answer_and_no_transcript_writes_none(model, cli, tmp_path):
    model.queue(calls(("list_dir", {})), answer("quiet answer"))

    result = cli("x", "--quiet", "--no-transcript")

    assert (result.returncode, result.stdout, result.stderr) == (0, "quiet answer\n", "")
    assert not (tmp_path / "runs").exists()


def test_the_api_key_never_appears_in_a_transcript(model, cli, tmp_path):
    (tmp_path / ".env").write_text("GROQ_API_KEY=test-key-not-real\n")
    model.queue(calls(("read_file", {"path": ".env"})), answer("the key is test-key-not-real"))

    result = cli("show me .env")

    assert result.returncode == 0
    text = only_transcript(tmp_path).read_text()
    assert "test-key-not-real" not in text
    assert "[redacted API key]" in text


def test_continue_sends_the_earlier_messages_then_the_follow_up(model, tmp_path):
    model.queue(calls(("list_dir", {})), answer("one file"), answer("and that is all"))
    first = run_script("harness.py", "what is here?", cwd=tmp_path)
    path = only_transcript(tmp_path)

    second = run_script("harness.py", "--continue", "and now?", cwd=tmp_path)

    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert second.stdout == "and that is all\n"
    assert model.messages(2) == model.messages(1) + [{"role": "assistant", "content": "one file"},
                                                     {"role": "user", "content": "and now?"}]
    assert only_transcript(tmp_path) == path  # appended to the same file
    assert transcript.restore(path)[0] == model.messages(2) + [{"role": "assistant", "content": "and that is all"}]


def test_continue_takes_the_transcript_named_by_the_flag(model, cli, tmp_path):
    model.queue(answer("about cats"), answer("about dogs"), answer("more about cats"))
    cli("tell me about cats", "--transcript", "cats.jsonl")
    cli("tell me about dogs")  # the newest transcript now, in runs/

    result = cli("--continue", "more", "--transcript", "cats.jsonl")

    assert result.stdout == "more about cats\n"
    assert [m["content"] for m in model.messages(2)[1:]] == ["tell me about cats", "about cats", "more"]


def test_continue_from_a_script_with_messages(model):
    model.queue(answer("first"), answer("second"))
    events = []
    harness.run("one", on_event=events.append)
    earlier = [e["message"] for e in events if e["type"] == "message"]

    assert harness.run("two", messages=earlier) == "second"

    assert model.messages(1) == earlier + [{"role": "user", "content": "two"}]


@pytest.mark.parametrize("content, said", [("{not json\n", "runs/broken.jsonl: "),
                                           ("", "runs/: no transcript in runs/ yet")])  # an empty one is none
def test_continue_on_a_broken_transcript_is_one_line_and_exit_2(model, cli, tmp_path, content, said):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "broken.jsonl").write_text(content)

    result = cli("--continue", "and now?")

    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(f"error: cannot continue from {said}")
    assert model.requests == []


def test_continue_with_no_transcript_yet_is_exit_2(model, cli, tmp_path):
    result = cli("--continue", "and now?")

    assert result.returncode == 2
    assert result.stderr == ("error: cannot continue from runs/: no transcript in runs/ yet; "
                             "start a new run without --continue\n")


def wait_for(condition, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


@posix_only
def test_kill_9_after_the_second_tool_call_leaves_a_valid_transcript(model, tmp_path, start_cli):
    model.queue(calls(("list_dir", {})), calls(("list_dir", {"path": "."})), {**answer("never seen"), "delay": 5})
    process = start_cli(tmp_path, "list twice", "--transcript", "t.jsonl")

    wait_for(lambda: len(model.requests) == 3)
    process.send_signal(signal.SIGKILL)
    process.wait()

    events = read_events(tmp_path / "t.jsonl")  # every line parses
    assert [e["type"] for e in events if e["type"] == "tool"] == ["tool", "tool"]
    assert events[-1]["type"] == "request" and events[-1]["step"] == 3
    assert transcript.restore(tmp_path / "t.jsonl")[0] == model.messages(2)


@posix_only
@linux_only
def test_ctrl_c_during_a_slow_tool_leaves_interrupted_results_and_a_valid_history(model, tmp_path,
                                                                                  start_cli):
    model.queue(calls(("run_shell", {"command": "sleep 30"}), ("list_dir", {})))
    process = start_cli(tmp_path, "sleep", "--yes", "--transcript", "t.jsonl")

    wait_for(lambda: sleeping(process.pid))
    [sleeper] = sleeping(process.pid)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=10)

    assert process.returncode == 130
    assert stdout == ""
    assert stderr.splitlines()[-2] == "interrupted"
    messages, _ = transcript.restore(tmp_path / "t.jsonl")
    assert_well_formed(messages)
    assert [m["content"] for m in messages[-2:]] == ["interrupted", "interrupted"]
    assert read_events(tmp_path / "t.jsonl")[-1] == {**read_events(tmp_path / "t.jsonl")[-1],
                                                     "type": "end", "reason": "interrupted"}
    assert not running(sleeper)  # this run's own sleep: other runs on the machine may be sleeping 30 s too


def sleeping(pid: int) -> list[int]:
    """The processes under pid that run `sleep 30`."""
    found = []
    for child in descendants(pid):
        try:
            if Path(f"/proc/{child}/cmdline").read_bytes() == b"sleep\x0030\x00":
                found.append(child)
        except OSError:
            pass  # it has just ended
    return found


def running(pid: int) -> bool:
    """Whether the process is alive (not gone, not a zombie), from /proc."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
