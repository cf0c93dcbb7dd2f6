"""What the command line says as a run ends: the summary line (one line for a step limit, with how
to go on under it), the seconds of a call Ctrl-C stopped counted with the tools' (of a wait on the
model, with the model's), and a failed call's progress line whole enough to show what the error
names."""

import re
import signal
import time

from fake_model import answer, calls
from helpers import edit, linux_only, posix_only, under, wait_for

HINT = 'go on with --continue "go on", or give a run more with --max-steps N'


def test_the_step_limit_is_one_stopped_line_with_how_to_go_on_under_it(model, cli, tmp_path):
    model.queue(calls(("list_dir", {})), calls(("list_dir", {"path": "."})))

    result = cli("x", "--max-steps", "2")

    assert (result.returncode, result.stdout) == (1, "")
    lines = result.stderr.splitlines()
    assert [line for line in lines if line.startswith("stopped")] == [lines[-2]]
    assert lines[-2].startswith("stopped: hit the step limit (2 steps), 2 tool calls, 20 tokens in")
    assert lines[-1] == HINT


def test_the_step_limit_with_quiet_is_one_line_that_says_how_to_go_on(model, cli, tmp_path):
    model.queue(calls(("list_dir", {})))

    result = cli("x", "--max-steps", "1", "--quiet")

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"stopped: hit the step limit (1 step); {HINT}\n"


def summary_after_ctrl_c(process) -> str:
    """The last line the run says once Ctrl-C stops it, which exits 130."""
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    return stderr.splitlines()[-1]


@posix_only
@linux_only
def test_the_summary_after_ctrl_c_during_a_command_counts_its_seconds(model, tmp_path, start_cli):
    model.queue(calls(("run_shell", {"command": "sleep 300"})))
    process = start_cli(tmp_path, "sleep", "--yes", "--no-transcript")
    wait_for(lambda: under(process.pid, "sleep 300"))
    time.sleep(1.5)  # the command has run this long at least when it is stopped

    summary = summary_after_ctrl_c(process)
    assert summary.startswith("stopped: 1 step, 1 tool call, "), summary
    assert float(re.search(r"tools (\d+\.\d) s", summary)[1]) >= 1.5, summary


@posix_only
def test_the_summary_after_ctrl_c_during_a_wait_on_the_model_counts_its_seconds(
    model, tmp_path, start_cli
):
    model.queue({"silent": 30, "body": {}})
    process = start_cli(tmp_path, "slow", "--no-transcript")
    wait_for(lambda: model.requests)
    time.sleep(1.5)  # the model has been waited on this long at least when it is stopped

    summary = summary_after_ctrl_c(process)
    assert summary.startswith("stopped: 0 steps, 0 tool calls, "), summary
    assert float(re.search(r"model (\d+\.\d) s", summary)[1]) >= 1.5, summary


def test_a_failed_edit_shows_the_closest_line_it_names(model, cli, tmp_path):
    (tmp_path / "app.py").write_text(
        "import os\n\n\ndef configure_the_application_from_the_environment(settings):\n"
        "    return settings\n"
    )
    model.queue(
        calls(
            edit(
                "app.py",
                "def configure_the_application_from_environment(settings):\n",
                "def f():\n",
            )
        ),
        answer("could not"),
    )

    result = cli("--yes", "rename it")

    [line] = [line for line in result.stderr.splitlines() if line.startswith("    → ")]
    assert line == (
        "    → error: ValueError: old_text was not found in app.py; the closest line is 4: "
        "'def configure_the_application_from_the_environment(settings):'; copy the text exactly as "
        "read_file shows it, indentation and line breaks included"
    )
