"""Whatever happens, a run ends cleanly, stays bounded, can be continued and never leaks the key: signals, kill -9,
transcripts that cannot be created or written, huge arguments, odd bytes, and a key read every way a model can."""

import json
import os
import resource
import shlex
import signal
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import terminal as screen


import harness

import transcript
from conftest import ROOT, copy_of_the_agent, default_signals, descendants, run_script
from fake_model import answer, calls, error
from test_loop import assert_well_formed
from test_runs import read_events, wait_for

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and files")
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
KEY = "gsk_" + "Ab3dE5fG7hJ9kL1mNp" + "nQ2rS4tU6vW8xY0zA1bC3dE5fG7hJ"  # 51 characters, 'n' at index 22
WINDOW = 12  # screen.SHORTEST_SECRET_PIECE: no run this long of a key may be written or printed


def state(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, pgid, sid, ...); None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    fields = state(pid)
    return fields is not None and fields[0] != "Z"


def live_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and alive(int(p.name))]


def in_group(group: int) -> list[int]:
    """The live processes whose process group is `group`."""
    return [pid for pid in live_pids() if (fields := state(pid)) and int(fields[2]) == group]


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def carrying(token: str) -> list[int]:
    """The live processes whose command line holds `token`."""
    return [pid for pid in live_pids() if token in command_line(pid)]


def under(pid: int, command: str) -> int | None:
    """The first live process under pid whose command line is `command`."""
    return next((p for p in descendants(pid) if command_line(p) == command and alive(p)), None)


@pytest.fixture
def leftovers():
    """A token to put in a command's line, and a list to add pids to: whatever of them still runs when the
    test ends is killed (and reaped, if it came back to this process), so a failing test leaves nothing."""
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
    """A command that forks a child which calls setsid() and sleeps, and returns once the child has left
    the command's session: a leftover no process group kill can reach."""
    code = ("import os, sys, time; r, w = os.pipe(); "
            "(os.setsid(), os.write(w, b'x'), time.sleep(300)) if os.fork() == 0 else os.read(r, 1)")
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)} {token}"


def windows(secret: str) -> set[str]:
    return {secret[i:i + WINDOW] for i in range(len(secret) - WINDOW + 1)}


def leaks(text: str, secret: str = KEY) -> list[str]:
    """The lines of text that hold the secret or any WINDOW characters of it in a row."""
    return [line for line in text.splitlines() if any(w in line for w in windows(secret))]


# 1. SIGTERM and SIGHUP stop a run the way Ctrl-C does, and nothing its command started runs on.

@posix_only
@linux_only
@pytest.mark.parametrize("name, code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_and_sighup_end_the_run_like_ctrl_c_and_kill_the_command(model, tmp_path, start_cli, leftovers,
                                                                         name, code):
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
    messages, _ = transcript.restore(tmp_path / "t.jsonl")
    assert_well_formed(messages)
    assert messages[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "interrupted"}


def ignoring_sighup() -> None:
    default_signals()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


@posix_only
@linux_only
def test_under_nohup_sighup_stays_ignored_and_the_run_finishes(model, tmp_path, start_cli, leftovers):
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
    assert "exit code: 0" in model.messages(1)[-1]["content"]  # the command finished, its child had left
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


# 2. A run killed in the middle of a tool can be continued, and a failed --continue does not make it worse.

@posix_only
@linux_only
def test_a_run_killed_in_a_tool_continues_and_a_failed_continue_keeps_the_history_valid(model, tmp_path,
                                                                                      start_cli, leftovers):
    model.queue(calls(("run_shell", {"command": "sleep 30"}), ("list_dir", {})))
    process = start_cli(tmp_path, "sleep", "--yes", "--transcript", "t.jsonl")
    wait_for(lambda: under(process.pid, "sleep 30"))
    leftovers[1].extend(descendants(process.pid))
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=10)
    model.queue(error(400, "the server did not like it"), answer("carried on"))

    failed = run_script("harness.py", "--continue", "go on", "--transcript", "t.jsonl", cwd=tmp_path)
    second = run_script("harness.py", "--continue", "again", "--transcript", "t.jsonl", cwd=tmp_path)

    assert failed.returncode == 1 and "error: the model server answered 400" in failed.stderr
    assert "note: 2 tool call(s) that never got a result are answered 'interrupted'" in failed.stderr
    assert [(m["role"], m.get("content")) for m in model.messages(1)[2:]] == [
        ("assistant", None), ("tool", "interrupted"), ("tool", "interrupted"), ("user", "go on")]
    assert second.returncode == 0 and second.stdout == "carried on\n", second.stderr
    assert model.messages(2) == model.messages(1) + [{"role": "user", "content": "again"}]
    for sent in (model.messages(1), model.messages(2)):
        assert_well_formed(sent)
        answered = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
        assert sorted(answered) == ["call_1", "call_2"]  # each call answered once


# 3. The transcript: cannot be created, cannot be written, two at once, owner-only, damaged.

@posix_only
@pytest.mark.parametrize("setup, args, reason", [
    ("runs is a file", (), ": runs is not a folder; "),
    ("a folder", ("--transcript", "."), ".: it is not a regular file; "),
    ("a file the kernel will not let us write", ("--transcript", "/proc/version"), "/proc/version: "),
    ("a path under a file", ("--transcript", "a.txt/t.jsonl"), "a.txt/t.jsonl: a.txt is not a folder; "),
    ("a FIFO nobody reads", ("--transcript", "fifo"), "fifo: it is not a regular file; "),
])
def test_a_transcript_that_cannot_be_created_is_one_line_and_exit_2_before_any_request(model, tmp_path,
                                                                                       setup, args, reason):
    (tmp_path / ("runs" if setup == "runs is a file" else "a.txt")).write_text("x")
    os.mkfifo(tmp_path / "fifo")

    result = run_script("harness.py", "hello", *args, cwd=tmp_path, timeout=30)

    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: cannot create the transcript ") and reason in line
    assert line.endswith("choose another file with --transcript PATH, or run with --no-transcript")
    assert model.requests == []


@posix_only
def test_continue_from_a_fifo_is_refused_instead_of_waiting_forever(model, tmp_path):
    os.mkfifo(tmp_path / "fifo")

    result = run_script("harness.py", "--continue", "more", "--transcript", "fifo", cwd=tmp_path, timeout=30)

    assert result.returncode == 2
    assert result.stderr.startswith("error: cannot continue from fifo: ")
    assert len(result.stderr.splitlines()) == 1


def limited_to(size: int):
    """preexec_fn for a child that may write files of at most `size` bytes (writes past it fail with EFBIG:
    Python ignores SIGXFSZ), with the signals a person's shell would give it."""
    def setup() -> None:
        default_signals()
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return setup


@posix_only
def test_a_disk_full_in_the_middle_of_a_run_is_one_line_and_the_run_continues_later(model, tmp_path):
    (tmp_path / "big.txt").write_text("b" * 3000)
    model.queue(calls(("read_file", {"path": "big.txt"})), answer("read it"), answer("and more"))
    harness = [sys.executable, str(ROOT / "harness.py")]

    full = subprocess.run([*harness, "read big.txt", "--transcript", "t.jsonl"], cwd=tmp_path, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=60, preexec_fn=limited_to(3000))
    lines, requests = (tmp_path / "t.jsonl").read_bytes().split(b"\n"), len(model.requests)
    first = run_script("harness.py", "--continue", "go on", "--transcript", "t.jsonl", cwd=tmp_path)
    second = run_script("harness.py", "--continue", "more", "--transcript", "t.jsonl", cwd=tmp_path)

    assert full.returncode == 1 and "Traceback" not in full.stderr and "Exception" not in full.stderr
    assert [line for line in full.stderr.splitlines() if not line.startswith("[1] read_file")] == [
        "error: cannot write the transcript t.jsonl: File too large; free some disk space, "
        "or run with --no-transcript"]
    assert requests == 1  # the run stopped when it could not keep its record
    assert lines[-1] != b""  # the last line was cut in the middle
    assert all(json.loads(line) for line in lines[:-1])
    assert first.returncode == 0 and first.stdout == "read it\n", first.stderr
    assert "note: the last line of t.jsonl was half-written and is skipped" in first.stderr
    assert second.returncode == 0 and second.stdout == "and more\n", second.stderr
    assert_well_formed(model.messages(2))
    assert model.messages(2)[:len(model.messages(1))] == model.messages(1)


@pytest.mark.skipif(not os.path.exists("/dev/full") or not stat.S_ISCHR(os.stat("/dev/full").st_mode),
                    reason="no /dev/full device here")
def test_a_transcript_on_a_device_that_is_always_full_is_one_line_and_exit_1(model, tmp_path):
    result = run_script("harness.py", "hello", "--transcript", "/dev/full", cwd=tmp_path)

    assert result.returncode == 1
    assert result.stderr == ("error: cannot write the transcript /dev/full: No space left on device; "
                             "free some disk space, or run with --no-transcript\n")
    assert model.requests == []
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # the run never removes or replaces what it was given


@posix_only
def test_runs_started_in_the_same_second_get_two_files_readable_by_the_owner_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = transcript.new_path("the same task")

    first, first_path = transcript.open_new(path, append=False)
    second, second_path = transcript.open_new(path, append=False)
    first.close(), second.close()

    assert first_path != second_path and first_path.exists() and second_path.exists()
    assert stat.S_IMODE((tmp_path / "runs").stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in (first_path, second_path)} == {0o600}


@pytest.mark.parametrize("variable, value", [("AGENT_MAX_STEPS", "nan"), ("AGENT_APPROVE", "yes")])
def test_a_bad_setting_leaves_no_transcript(model, cli, tmp_path, monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)

    result = cli("hello")

    assert result.returncode == 2 and result.stderr.startswith(f"error: {variable} must be ")
    assert not (tmp_path / "runs").exists()


def event_lines(*events: object) -> str:
    return "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events)


SYSTEM = {"type": "message", "message": {"role": "system", "content": "sys"}}
USER = {"type": "message", "message": {"role": "user", "content": "hi"}}


@pytest.mark.parametrize("damage", [
    {"type": "elided", "index": 7, "content": "[elided]"},
    {"type": "elided", "index": -1, "content": "[elided]"},
    {"type": "dropped", "index": 5, "count": 1},
    {"type": "elided", "index": "1", "content": "[elided]"},
    {"type": "message", "message": "not a message"},
    {"type": "message", "message": {"role": "assistant", "content": None, "tool_calls": "not a list"}},
    [1, 2],
])
def test_continue_from_a_damaged_transcript_is_exit_2_cannot_continue(model, cli, tmp_path, damage):
    (tmp_path / "t.jsonl").write_text(event_lines(SYSTEM, USER, damage, USER))

    result = cli("--continue", "more", "--transcript", "t.jsonl")

    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: cannot continue from t.jsonl: line 3 ")
    assert model.requests == []


# 4. Big arguments stay bounded on the screen and are stored once.

def test_a_5_mb_write_shows_a_short_progress_line_and_stores_its_arguments_once(model, tmp_path):
    marker = f"marker-{uuid.uuid4().hex}"
    content = marker + "x" * 5_000_000
    model.queue(calls(("write_file", {"path": "big.txt", "content": content})), answer("written"))

    result = run_script("harness.py", "write it", "--yes", "--transcript", "t.jsonl", cwd=tmp_path)

    assert result.returncode == 0, result.stderr[:1000]
    [shown] = [line for line in result.stderr.splitlines() if "write_file" in line]
    assert shown.startswith("[1] write_file ") and len(shown) <= 300
    assert (tmp_path / "big.txt").read_text() == content
    assert (tmp_path / "t.jsonl").read_text().count(marker) == 1


# 5. Odd bytes: tests/test_bounded.py runs list_dir and read_file on a non-UTF-8 name and continues; here the
# transcript of such a run is checked to be strict UTF-8 JSON, line by line.

@pytest.mark.skipif(sys.platform != "linux", reason="file names that are not UTF-8")
def test_a_run_meeting_a_non_utf8_name_writes_a_transcript_of_strict_utf8_json(model, tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"d\xe9j\xe0 vu\n")
    model.queue(calls(("list_dir", {})), calls(("read_file", {"path": "caf\\xe9.txt"})), answer("deja vu"))

    result = run_script("harness.py", "read it", "--transcript", str(tmp_path / "t.jsonl"), cwd=tmp_path / "ws")

    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "t.jsonl").read_bytes().decode("utf-8").splitlines()  # strict: no undecodable byte
    tools = [json.loads(line)["message"]["content"] for line in lines if '"role": "tool"' in line]
    assert tools == ["caf\\xe9.txt  8 bytes", "d\ufffdj\ufffd vu\n"]


# 6. Keys stay secret: not in commands, not in any line written or printed, whole or in pieces.

def test_the_key_reaches_no_command_no_line_written_and_no_line_printed(model, tmp_path, monkeypatch):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text(f"GROQ_API_KEY={KEY}\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    notes = f"my groq key {KEY}\n"
    (workspace / "notes.txt").write_text(notes)
    # The key's 'n' stands right after a line break here: its JSON escape \n must not be redacted in half.
    (workspace / "lines.txt").write_text(f"first line\n{KEY[23:]}\n")
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    size = len(notes)
    pieces = [("run_shell", {"command": f"cut -c {13 + i}-{13 + i + n - 1} notes.txt"})
              for i, n in ((0, 12), (12, 15), (27, 20), (35, 16))]
    model.queue(calls(("read_file", {"path": "notes.txt"})),
                calls(("read_file", {"path": "notes.txt", "offset": 20})),
                calls(("read_file", {"path": "notes.txt", "offset": size - 13}),
                      ("read_file", {"path": "notes.txt", "offset": size - 21}),
                      ("read_file", {"path": "lines.txt"})),
                calls(*pieces),
                calls(("run_shell", {"command": "env"}), ("run_shell", {"command": "printenv GROQ_API_KEY"}),
                      ("run_shell", {"command": f"echo {KEY[:20]} {KEY[20:]}"})),
                answer(f"the key is {KEY}, or in parts {KEY[:25]} and {KEY[25:]}"),
                error(400, f"Invalid API Key: {KEY} is not valid for {KEY[5:30]}"))

    first = run_script("harness.py", "find the key", "--yes", "--transcript", "t.jsonl", cwd=workspace, root=agent)
    second = run_script("harness.py", "--continue", "again", "--yes", "--transcript", "t.jsonl", cwd=workspace,
                        root=agent)

    assert first.returncode == 0 and second.returncode == 1, (first.stderr, second.stderr)
    env, printenv = [m["content"] for m in model.messages(5)[-3:-1]]
    assert "GROQ_API_KEY" not in env and leaks(env) == []
    assert printenv.startswith("exit code: 1")
    assert model.messages(1)[-1]["content"] == "my groq key [redacted API key]\n"  # what the model is sent too
    assert second.stderr.startswith("error: the model server answered 400: Invalid API Key: [redacted API key]")
    text = (tmp_path / "ws" / "t.jsonl").read_text()
    assert [json.loads(line) for line in text.splitlines()]  # every line still parses
    for output in (text, first.stdout, first.stderr, second.stdout, second.stderr):
        assert leaks(output) == []
    assert transcript.restore(workspace / "t.jsonl")[0][-1] == {"role": "user", "content": "again"}


def test_a_short_key_is_redacted_where_it_stands_alone_and_every_line_still_parses(model, cli, tmp_path,
                                                                                   monkeypatch):
    key = "short-key1"
    monkeypatch.setenv("GROQ_API_KEY", key)
    (tmp_path / "notes.txt").write_text(f'key={key}\n{key}\t{key}\\{key}"{key}\nnot-short-key1 or short-key10\n')
    model.queue(calls(("read_file", {"path": "notes.txt"})), answer(f"it is {key}"))

    result = cli("read it", "--transcript", "t.jsonl")

    assert result.returncode == 0 and result.stdout == "it is [redacted API key]\n"
    events = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    [read] = [e["message"]["content"] for e in events if e["type"] == "message" and e["message"]["role"] == "tool"]
    assert read == ('key=[redacted API key]\n[redacted API key]\t[redacted API key]\\[redacted API key]'
                    '"[redacted API key]\nnot-short-key1 or short-key10\n')
