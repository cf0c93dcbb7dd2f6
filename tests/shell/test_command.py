"""run_shell (command.py): timeouts, bounded output, the environment and stdin a command gets."""

import re
import sys
import time

import pytest
from fake_model import answer, calls
from helpers import GROWTH_ALLOWED_MB, alive, in_child, posix_only, results, run_script

import harness
import tools
from plainagent.approval import prompt as approval
from plainagent.calls.results import NOTE_ROOM
from plainagent.core import settings


@posix_only
def test_sleep_is_killed_at_the_timeout_and_the_run_ends_normally(model, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENT_SHELL_TIMEOUT", "2")
    model.queue(
        calls(("run_shell", {"command": "sleep 60 & echo $!; wait"})), answer("it timed out")
    )

    started = time.monotonic()
    assert harness.run("sleep", approve=approval.approve_all) == "it timed out"
    elapsed = time.monotonic() - started

    result = model.messages(1)[-1]["content"]
    assert elapsed < 20  # killed at 2 s, not after the 60 s sleep (slack for a busy machine)
    assert result.startswith(
        "timed out after 2 s; the command and its children were killed\nstdout:\n"
    )
    assert_gone(int(result.splitlines()[2]))


@posix_only
def test_a_background_child_holding_the_output_does_not_hang_the_harness(
    tmp_path, monkeypatch, in_a_run
):
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    result = tools.run_shell("sleep 60 & echo $!; echo started", settings=in_a_run)
    assert time.monotonic() - started < 20  # not the 60 s the child holds its output
    assert result.startswith("exit code: 0\nstdout:\n") and result.endswith("started\n")
    assert_gone(int(result.splitlines()[2]))


def assert_gone(pid: int) -> None:
    """The process no longer runs: it does not exist, or is a zombie waiting
    to be reaped by init."""
    for _ in range(50):
        if not alive(pid):
            return
        time.sleep(0.05)
    pytest.fail(f"process {pid} is still running")


@posix_only
def test_commands_cannot_wait_for_a_person(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    # stdin is /dev/null, not the terminal
    assert tools.run_shell("cat", settings=in_a_run) == "exit code: 0"
    assert (
        tools.run_shell(
            "echo $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $GIT_EDITOR $GCM_INTERACTIVE",
            settings=in_a_run,
        )
        == "exit code: 0\nstdout:\ncat cat 0 true never\n"
    )


def test_shell_runs_in_the_workspace(tmp_path, monkeypatch, as_a_run):
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    config = as_a_run()
    command = "cd" if sys.platform == "win32" else "pwd"
    assert tools.run_shell(command, settings=config).splitlines()[2] == str(
        (tmp_path / "ws").resolve()
    )


MARKER = re.compile(r"\n\[\.\.\. cut ([0-9,]+) bytes of ([0-9,]+) \.\.\.\]\n")


@posix_only
def test_yes_is_stopped_and_the_agents_memory_stays_bounded(tmp_path, in_a_run):
    child = in_child(
        "tools.run_shell('true', settings=config)\n"
        "result = tools.run_shell('yes', settings=config)",
        tmp_path,
        AGENT_SHELL_TIMEOUT="2",
    )

    result = child["result"]
    assert result.startswith(
        "stopped after 10 MB of output; the command and its children were killed\n"
    )
    assert len(result) <= settings.BY_NAME["max_chars"].default + NOTE_ROOM and MARKER.search(
        result
    )
    assert child["growth_mb"] < GROWTH_ALLOWED_MB


@posix_only
@pytest.mark.parametrize(
    "command", ["yes >&2", "yes | head -c 6000000; yes | head -c 6000000 >&2; sleep 60"]
)
def test_the_output_bound_counts_stdout_and_stderr_together(
    tmp_path, monkeypatch, as_a_run, command
):
    # Each stream alone stays under 10 MB in the second command: only their sum reaches the bound.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_SHELL_TIMEOUT", "60")
    started = time.monotonic()

    result = tools.run_shell(command, settings=as_a_run())

    assert result.startswith(
        "stopped after 10 MB of output; the command and its children were killed\n"
    )
    assert time.monotonic() - started < 30  # at the bound, not at the timeout
    assert "\nstderr:\n" in result


@posix_only
def test_a_command_printing_20_mb_is_stopped_at_the_limit_and_says_so(
    tmp_path, monkeypatch, in_a_run
):
    monkeypatch.chdir(tmp_path)
    # 10 MB and one byte, then a pause the watcher must cut short, then the
    # other 10 MB (never written)
    result = tools.run_shell(
        "yes | head -c 10000001; sleep 60; yes | head -c 9999999", settings=in_a_run
    )

    assert result.startswith(
        "stopped after 10 MB of output; the command and its children were killed\nstdout:\ny\n"
    )
    assert MARKER.search(result)[2] == "10,000,001"


def test_long_output_keeps_its_start_and_its_end_where_the_error_is(
    tmp_path, monkeypatch, in_a_run
):
    monkeypatch.chdir(tmp_path)
    printed = "".join(f"{i}\n" for i in range(1, 100001)) + "Error: it broke at the very end\n"

    result = tools.run_shell(
        f'{sys.executable} -c "import sys; [print(i) for i in range(1, 100001)]; '
        "print('Error: it broke at the very end'); sys.exit(1)\"",
        settings=in_a_run,
    )

    head, marker, tail = (
        MARKER.split(result, maxsplit=1)[0],
        MARKER.search(result),
        MARKER.split(result)[-1],
    )
    assert head.startswith("exit code: 1\nstdout:\n1\n2\n3\n")
    assert tail.endswith("99999\n100000\nError: it broke at the very end\n")
    assert len(tail) > len(head) - len("exit code: 1\nstdout:\n")  # the end gets the larger share
    shown = len(head.removeprefix("exit code: 1\nstdout:\n")) + len(tail)
    assert (int(marker[1].replace(",", "")), marker[2]) == (
        len(printed) - shown,
        f"{len(printed):,}",
    )
    assert printed.startswith(head.removeprefix("exit code: 1\nstdout:\n")) and printed.endswith(
        tail
    )
    assert len(result) <= settings.BY_NAME["max_chars"].default + NOTE_ROOM


@posix_only
def test_commands_do_not_read_the_harness_stdin(model, tmp_path):
    model.queue(calls(("run_shell", {"command": "cat"})), answer("ok"))

    result = run_script("harness.py", "cat", cwd=tmp_path, input="SECRET-STDIN\n")

    assert result.returncode == 0, result.stderr
    assert results(model, 1) == ["exit code: 0"]


def test_run_shell_returns_exit_code_stdout_and_stderr(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    newline = "\r\n" if sys.platform == "win32" else "\n"

    assert (
        tools.run_shell("echo out&& echo err 1>&2&& exit 3", settings=in_a_run)
        == f"exit code: 3\nstdout:\nout{newline}\nstderr:\nerr{newline}"
    )
    assert tools.run_shell("exit 0", settings=in_a_run) == "exit code: 0"


@posix_only
def test_when_stderr_is_short_stdout_gets_the_rest_of_the_budget(tmp_path, monkeypatch, as_a_run):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_MAX_CHARS", "1000")
    config = as_a_run()

    result = tools.run_shell("echo oops >&2; yes x | head -c 100000", settings=config)

    status, rest = result.split("\nstdout:\n", 1)
    stdout, stderr = rest.split("\nstderr:\n")
    # the start and the end of stdout, without the note on what was cut
    shown = MARKER.sub("", stdout)
    assert status == "exit code: 0" and stderr == "oops\n" and MARKER.search(stdout)
    # what stderr leaves to stdout
    room = 1000 - len(status) - len("\nstdout:\n\nstderr:\n") - len(stderr)
    assert room - 5 <= len(shown) <= room


@posix_only
def test_output_within_the_character_budget_is_shown_whole_even_when_its_bytes_are_over_it(
    tmp_path, monkeypatch, as_a_run
):
    # 900 characters of two bytes each: 1,800 bytes, but within AGENT_MAX_CHARS=1000 as characters.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_MAX_CHARS", "1000")

    result = tools.run_shell(
        f"{sys.executable} -c \"print('é' * 900, end='')\"", settings=as_a_run()
    )

    assert result == "exit code: 0\nstdout:\n" + "é" * 900


@posix_only
def test_a_variable_holding_the_key_among_other_text_never_reaches_a_command(
    model, monkeypatch, tmp_path
):
    # The redactor knows the key only as it is written: an approved command that printed
    # "Bearer <key>" in capitals took it past the redactor to the model
    monkeypatch.setenv("EXTRA_AUTH", "Bearer test-key-not-real")
    monkeypatch.setenv("PIECE", "key-not-real")  # 12 of its characters
    monkeypatch.setenv("OTHER", "kept")
    command = "echo $EXTRA_AUTH $PIECE $OTHER | tr a-z A-Z"
    model.queue(calls(("run_shell", {"command": command})), answer("done"))

    harness.run("show the header", approve=lambda name, arguments: True)

    assert results(model, 1) == ["exit code: 0\nstdout:\nKEPT\n"]


@posix_only
def test_a_cd_goes_where_the_checks_followed_it_whatever_the_persons_cdpath(
    tmp_path, monkeypatch, as_a_run
):
    from plainagent.shell.command import run_command
    from plainagent.shell.decision import decide

    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere" / "sub").mkdir(parents=True)
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("CDPATH", str(tmp_path / "elsewhere"))
    config = as_a_run()
    for decided in (decide("cd sub && pwd", config), decide("cd sub && pwd", config).approved()):
        ran = run_command(decided, config)
        assert ran.splitlines()[2:] == [str((tmp_path / "ws" / "sub").resolve())], ran
