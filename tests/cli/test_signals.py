"""Signals and kill -9: a run ends on SIGTERM or SIGHUP as on Ctrl-C, kills what its commands
started, and leaves a transcript that can be continued."""

import os
import shlex
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from fake_model import answer, calls, error
from helpers import (
    CHILD,
    ROOT,
    alive,
    assert_well_formed,
    command_line,
    default_signals,
    descendants,
    linux_only,
    posix_only,
    read_events,
    run_script,
    under,
    wait_for,
)

from plainagent.runs import resume


def state(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, pgid,
    sid, ...); None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def live_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and alive(int(p.name))]


def in_group(group: int) -> list[int]:
    """The live processes whose process group is `group`."""
    return [pid for pid in live_pids() if (fields := state(pid)) and int(fields[2]) == group]


def carrying(token: str) -> list[int]:
    """The live processes whose command line holds `token`."""
    return [pid for pid in live_pids() if token in command_line(pid)]


@pytest.fixture
def leftovers():
    """A token to put in a command's line, and a list to add pids to: whatever of them still
    runs when the test ends is killed (and reaped, if it came back to this process), so a
    failing test leaves nothing."""
    token, pids = f"robustness-{uuid.uuid4().hex}", []
    yield token, pids
    for pid in [*pids, *carrying(token)]:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def setsid_child(token: str) -> str:
    """A command that forks a child which calls setsid() and sleeps, and returns once the child has
    left the command's session: a leftover no process group kill can reach."""
    code = (
        "import os, sys, time; r, w = os.pipe(); "
        "(os.setsid(), os.write(w, b'x'), time.sleep(300)) if os.fork() == 0 else os.read(r, 1)"
    )
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} {token}"


@posix_only
@linux_only
@pytest.mark.parametrize("name, code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_and_sighup_end_the_run_like_ctrl_c_and_kill_the_command(
    model, tmp_path, start_cli, leftovers, name, code
):
    model.queue(calls(("run_shell", {"command": "sleep 300"})))
    process = start_cli(tmp_path, "sleep", "--yes", "--timeout", "600", "--transcript", "t.jsonl")
    wait_for(lambda: under(process.pid, "sleep 300"))
    sleeper = under(process.pid, "sleep 300")
    group = int(state(sleeper)[2])
    leftovers[1].extend([sleeper, *in_group(group)])

    process.send_signal(getattr(signal, name))
    stdout, stderr = process.communicate(timeout=30)

    assert process.returncode == code, stderr
    assert stdout == ""
    assert "Traceback" not in stderr and stderr.splitlines()[-2] == "terminated"
    assert not alive(sleeper) and in_group(group) == []
    events = read_events(tmp_path / "t.jsonl")
    assert (events[-1]["type"], events[-1]["reason"]) == ("end", "terminated")
    messages, _ = resume.restore(tmp_path / "t.jsonl")
    assert_well_formed(messages)
    assert messages[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "interrupted"}


@posix_only
@linux_only
def test_the_summary_after_ctrl_c_during_a_command_counts_that_call(
    model, tmp_path, start_cli, leftovers
):
    model.queue(calls(("run_shell", {"command": "sleep 300"})))
    process = start_cli(tmp_path, "sleep", "--yes", "--timeout", "600", "--no-transcript")
    wait_for(lambda: under(process.pid, "sleep 300"))
    leftovers[1].append(under(process.pid, "sleep 300"))

    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)

    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-2:] == ["interrupted", stderr.splitlines()[-1]]
    # not "0 tool calls"
    assert stderr.splitlines()[-1].startswith("stopped: 1 step, 1 tool call, ")


def ignoring_sighup() -> None:
    default_signals()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


@posix_only
@linux_only
def test_under_nohup_sighup_stays_ignored_and_the_run_finishes(
    model, tmp_path, start_cli, leftovers
):
    model.queue(calls(("run_shell", {"command": "sleep 2"})), answer("slept"))
    process = start_cli(tmp_path, "sleep", "--yes", "--no-transcript", preexec_fn=ignoring_sighup)
    wait_for(lambda: under(process.pid, "sleep 2"))
    leftovers[1].extend(descendants(process.pid))

    process.send_signal(signal.SIGHUP)
    stdout, stderr = process.communicate(timeout=30)

    assert (process.returncode, stdout) == (0, "slept\n"), stderr


@posix_only
def test_main_in_a_program_leaves_its_signal_handlers_as_they_were(model, cli):
    def mine(signum, frame):
        pass

    before = {number: signal.signal(number, mine) for number in (signal.SIGTERM, signal.SIGHUP)}
    model.queue(answer("hi"))
    try:
        assert cli("hello", "--no-transcript").returncode == 0
        assert [signal.getsignal(number) for number in before] == [mine, mine]
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


@posix_only
@linux_only
def test_a_setsid_child_of_a_finished_command_is_gone_when_the_run_ends(model, tmp_path, leftovers):
    token, _ = leftovers
    model.queue(calls(("run_shell", {"command": setsid_child(token)})), answer("started it"))

    result = run_script("harness.py", "start it", "--yes", "--no-transcript", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    # the command finished, its child had left
    assert "exit code: 0" in model.messages(1)[-1]["content"]
    assert carrying(token) == []


@posix_only
@linux_only
def test_a_setsid_child_is_gone_when_the_run_is_terminated(model, tmp_path, start_cli, leftovers):
    token, _ = leftovers
    model.queue(calls(("run_shell", {"command": f"{setsid_child(token)}; sleep 300"})))
    process = start_cli(tmp_path, "start it", "--yes", "--timeout", "600", "--no-transcript")
    wait_for(lambda: under(process.pid, "sleep 300"))
    [child] = [pid for pid in carrying(token) if command_line(pid).startswith(sys.executable)]
    assert int(state(child)[3]) == child  # in a session of its own

    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)

    assert process.returncode == 143
    assert carrying(token) == [] and not alive(child)


@posix_only
@linux_only
def test_a_run_killed_in_a_tool_continues_and_a_failed_continue_keeps_the_history_valid(
    model, tmp_path, start_cli, leftovers
):
    model.queue(calls(("run_shell", {"command": "sleep 30"}), ("list_dir", {})))
    process = start_cli(tmp_path, "sleep", "--yes", "--transcript", "t.jsonl")
    wait_for(lambda: under(process.pid, "sleep 30"))
    leftovers[1].extend(descendants(process.pid))
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=10)
    model.queue(error(400, "the server did not like it"), answer("carried on"))

    failed = run_script(
        "harness.py", "--continue", "go on", "--transcript", "t.jsonl", cwd=tmp_path
    )
    second = run_script(
        "harness.py", "--continue", "again", "--transcript", "t.jsonl", cwd=tmp_path
    )

    assert failed.returncode == 1 and "error: the model server answered 400" in failed.stderr
    assert (
        "note: 2 tool call(s) that never got a result are answered 'interrupted'" in failed.stderr
    )
    assert [(m["role"], m.get("content")) for m in model.messages(1)[2:]] == [
        ("assistant", None),
        ("tool", "interrupted"),
        ("tool", "interrupted"),
        ("user", "go on"),
    ]
    assert second.returncode == 0 and second.stdout == "carried on\n", second.stderr
    assert model.messages(2) == model.messages(1) + [{"role": "user", "content": "again"}]
    for sent in (model.messages(1), model.messages(2)):
        assert_well_formed(sent)
        answered = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
        assert sorted(answered) == ["call_1", "call_2"]  # each call answered once


@posix_only
def test_kill_9_after_the_second_tool_call_leaves_a_valid_transcript(model, tmp_path, start_cli):
    model.queue(
        calls(("list_dir", {})),
        calls(("list_dir", {"path": "."})),
        {**answer("never seen"), "delay": 5},
    )
    process = start_cli(tmp_path, "list twice", "--transcript", "t.jsonl")

    wait_for(lambda: len(model.requests) == 3)
    process.send_signal(signal.SIGKILL)
    process.wait()

    events = read_events(tmp_path / "t.jsonl")  # every line parses
    assert [e["type"] for e in events if e["type"] == "tool"] == ["tool", "tool"]
    assert events[-1]["type"] == "request" and events[-1]["step"] == 3
    assert resume.restore(tmp_path / "t.jsonl")[0] == model.messages(2)


@posix_only
@linux_only
def test_ctrl_c_during_a_slow_tool_leaves_interrupted_results_and_a_valid_history(
    model, tmp_path, start_cli
):
    model.queue(calls(("run_shell", {"command": "sleep 30"}), ("list_dir", {})))
    process = start_cli(tmp_path, "sleep", "--yes", "--transcript", "t.jsonl")

    wait_for(lambda: sleeping(process.pid))
    [sleeper] = sleeping(process.pid)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=10)

    assert process.returncode == 130
    assert stdout == ""
    assert stderr.splitlines()[-2] == "interrupted"
    messages, _ = resume.restore(tmp_path / "t.jsonl")
    assert_well_formed(messages)
    assert [m["content"] for m in messages[-2:]] == ["interrupted", "interrupted"]
    assert read_events(tmp_path / "t.jsonl")[-1] == {
        **read_events(tmp_path / "t.jsonl")[-1],
        "type": "end",
        "reason": "interrupted",
    }
    # this run's own sleep: other runs on the machine may be sleeping 30 s too
    assert not alive(sleeper)


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


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_during_a_model_request_ends_the_transcript_with_terminated(
    model, tmp_path, start_cli
):
    model.queue({**answer("too late"), "delay": 5})
    process = start_cli(tmp_path, "wait for it", "--transcript", "t.jsonl")
    wait_for(lambda: model.requests)

    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=10)

    assert process.returncode == 143
    last = read_events(tmp_path / "t.jsonl")[-1]
    assert (last["type"], last.get("reason")) == ("end", "terminated")


@posix_only
def test_ctrl_c_during_a_model_request_ends_the_transcript_with_interrupted(
    model, tmp_path, start_cli
):
    model.queue({**answer("too late"), "delay": 5})
    process = start_cli(tmp_path, "wait for it", "--transcript", "t.jsonl")
    wait_for(lambda: model.requests)

    process.send_signal(signal.SIGINT)
    process.communicate(timeout=10)

    assert process.returncode == 130
    last = read_events(tmp_path / "t.jsonl")[-1]
    assert (last["type"], last.get("reason")) == ("end", "interrupted")


def test_the_programs_a_test_starts_have_a_persons_python_settings(tmp_path):
    """Buffered output and written bytecode, as in a person's shell, whatever the machine
    running the suite sets: with PYTHONUNBUFFERED a session whose terminal closed exited
    129 here and 120 for a person."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; print(sys.flags.dont_write_bytecode, "
            "os.environ.get('PYTHONUNBUFFERED'), sys.stdout.write_through)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )

    assert result.stdout == "0 None False\n"


@posix_only
@pytest.mark.parametrize("started_as", ["harness.py", "plainagent", "my_script.py"])
def test_ctrl_c_while_the_command_line_loads_ends_it_quietly(started_as):
    # Ctrl-C just after Enter lands on one import or another of the fifth of a second the command
    # line takes to load: once the package is loaded it ends the process as a shell expects, with
    # no traceback (before that, Python's own start-up is all there is). A script's is its own.
    code = (
        f"import sys; sys.argv[0] = {started_as!r}; import os, signal, time, plainagent; "
        "os.kill(os.getpid(), signal.SIGINT); time.sleep(5)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, **CHILD
    )

    if started_as == "my_script.py":
        assert "KeyboardInterrupt" in ran.stderr  # as Python leaves it
    else:
        assert (ran.returncode, ran.stderr) == (-signal.SIGINT, "")
