"""The terminal session's own words: a banner first; /help, /exit, /quit, /undo, /new, an unknown
/word and a bare `quit` answered at the terminal, never sent to the model; an 'always' lasting the
whole session; /new starting a new conversation in a new transcript."""

import json
import re
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import PROMPT, posix_only, runs_of

from plainagent.core import settings
from plainagent.sandbox import process

RM_PROMPT = "[y]es / [N]o / [a]lways allow rm like this for this session: "


def banner(tmp_path: Path) -> str:
    sandbox = "on" if process.confines(settings.resolve()) else "off"
    return (
        f"agent: openai/gpt-oss-120b in {tmp_path} (sandbox: {sandbox}) — type a task; /help for "
        "commands, /exit or Ctrl-D to leave\n"
    )


@posix_only
def test_a_session_starts_with_one_line_saying_what_runs_where_and_how_to_leave(
    model, terminal, tmp_path
):
    shown = terminal("--no-transcript")
    shown.read_until(PROMPT)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert shown.output == f"{banner(tmp_path)}{PROMPT}/exit\n"


@posix_only
@pytest.mark.parametrize("given", ["flag", "environment"])
def test_a_session_that_approves_everything_says_so_in_its_banner(
    model, terminal, tmp_path, monkeypatch, given
):
    # AGENT_APPROVE=all left in a shell's profile gave a banner like any other session's
    if given == "environment":
        monkeypatch.setenv("AGENT_APPROVE", "all")
    shown = terminal("--no-transcript", *(["--yes"] if given == "flag" else []))
    shown.read_until(PROMPT)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert (
        shown.output
        == banner(tmp_path).replace(
            ") — type", "; --yes: every command and write runs without asking) — type"
        )
        + f"{PROMPT}/exit\n"
    )


@posix_only
@pytest.mark.parametrize("leave", ["/quit", "/exit"])
def test_help_and_quit_are_answered_at_the_terminal_with_no_model_request(
    model, terminal, tmp_path, leave
):
    shown = terminal("--no-transcript")
    shown.read_until(PROMPT)
    shown.type("/help")
    shown.read_until(PROMPT, count=2)
    shown.type(leave)

    assert shown.finish() == 0, shown.output
    assert model.requests == []
    assert shown.output == (
        f"{banner(tmp_path)}{PROMPT}/help\n"
        "commands (any other line is a task for the agent):\n"
        "  /help   this list\n"
        "  /undo   take back the file changes of this conversation's newest task that still has "
        "some\n"
        "  /new    start a new conversation, in a new transcript; the model forgets this one\n"
        "  /exit   leave (or /quit, or Ctrl-D)\n"
        f"{PROMPT}{leave}\n"
    )


@posix_only
def test_a_bare_help_shows_the_commands_and_a_slip_of_case_or_a_prefix_names_its_command(
    model, terminal, tmp_path
):
    # "help" went to the model as a task, and /UNDO or /h was an unknown command with no hint.
    shown = terminal("--no-transcript")
    shown.type_at_prompts("help", "/?", "/UNDO", "/h", "/exit")

    assert shown.finish() == 0, shown.output
    assert model.requests == []
    for typed in ("help", "/?"):
        assert f"{PROMPT}{typed}\ncommands (any other line is a task for the agent):\n" in (
            shown.output
        )
    assert "\nunknown command /UNDO (did you mean /undo?); /help lists them\n" in shown.output
    assert "\nunknown command /h (did you mean /help?); /help lists them\n" in shown.output


@posix_only
def test_an_unknown_command_and_a_bare_quit_are_answered_not_sent(model, terminal, tmp_path):
    model.queue(answer("it is in /usr/bin"))
    shown = terminal("--no-transcript")
    shown.read_until(PROMPT)
    shown.type("/frobnicate")
    shown.read_until(PROMPT, count=2)
    shown.type("quit")
    shown.read_until(PROMPT, count=3)
    shown.type("Exit")  # as typed with a capital too
    shown.read_until(PROMPT, count=4)
    shown.type("/usr/bin/env is what?")  # a path, then words: a task
    shown.read_until(PROMPT, count=5)
    shown.type("/und")
    shown.read_until(PROMPT, count=6)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert "\nunknown command /frobnicate; /help lists them\n" in shown.output
    assert "\nunknown command /und (did you mean /undo?); /help lists them\n" in shown.output
    for typed in ("quit", "Exit"):
        assert (
            f"{PROMPT}{typed}\nnot sent to the model: type /exit or press Ctrl-D to leave\n"
            in shown.output
        )
    assert [m["content"] for m in model.messages(0) if m["role"] == "user"] == [
        "/usr/bin/env is what?"
    ]


@posix_only
def test_always_at_a_prompt_lasts_to_the_next_task(model, terminal, tmp_path):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    model.queue(
        calls(("run_shell", {"command": "rm a.txt"})),
        answer("removed a"),
        calls(("run_shell", {"command": "rm b.txt"})),
        answer("removed b"),
    )
    shown = terminal("--no-transcript")
    shown.read_until(PROMPT)
    shown.type("remove a.txt")
    shown.read_until(RM_PROMPT)
    shown.type("a")
    shown.read_until(PROMPT, count=2)
    shown.type("remove b.txt")
    shown.read_until(PROMPT, count=3)
    shown.type("/exit")

    assert shown.finish() == 0, shown.output
    assert shown.output.count("wants to run") == 1 and "\nremoved b\n" in shown.output
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()


@posix_only
def test_new_starts_a_fresh_conversation_in_a_new_transcript(model, terminal, tmp_path):
    model.queue(answer("one"), answer("two"))
    shown = terminal()
    shown.type_at_prompts("first task", "/new", "second task", "/exit")

    assert shown.finish() == 0, shown.output
    assert [m["role"] for m in model.messages(1)] == [
        "system",
        "user",  # nothing of the first conversation
    ]
    assert model.messages(1)[1]["content"] == "second task"
    [named] = re.findall(r"\nnew conversation: transcript (\S+)\n", shown.output)
    second = Path(named)
    assert second.parent == runs_of(tmp_path)
    [first] = set(runs_of(tmp_path).glob("*.jsonl")) - {second}
    tasks = [
        [json.loads(line).get("task") for line in path.read_text().splitlines()]
        for path in (first, second)
    ]
    assert [[task for task in found if task] for found in tasks] == [
        ["first task"],
        ["second task"],
    ]


@posix_only
def test_undo_after_new_names_the_conversation_before_it_that_has_changes(
    model, terminal, tmp_path
):
    # /undo said only "the changes kept in …/ were all undone already", the first conversation's
    # file left in place and no word of how to take it back.
    model.queue(calls(("write_file", {"path": "a.txt", "content": "A"})), answer("made"))
    shown = terminal("--yes")
    shown.type_at_prompts("make a.txt", "/new", "/undo", "/exit")

    assert shown.finish() == 0, shown.output
    assert (tmp_path / "a.txt").read_text() == "A"  # another run's: /undo never goes on to it
    [said] = [line for line in shown.output.splitlines() if line.startswith("error: cannot undo:")]
    assert said.startswith("error: cannot undo: no undo data in "), said
    assert re.search(r"; run 1 \(\S+ \S+, 'make a.txt'\) did: --undo --run 1$", said), said


@posix_only
def test_a_sessions_summaries_name_its_transcript_once_and_again_after_new(
    model, terminal, tmp_path
):
    # Each task's summary repeated the same long path, a line and a half at every answer.
    model.queue(answer("one"), answer("two"), answer("three"))
    shown = terminal()
    shown.type_at_prompts("first task", "second task", "/new", "third task", "/exit")

    assert shown.finish() == 0, shown.output
    summaries = [line for line in shown.output.splitlines() if line.startswith("done: ")]
    [again] = re.findall(r"\nnew conversation: transcript (\S+)\n", shown.output)
    named = [line.partition(", transcript ")[2] for line in summaries]
    assert named[0].endswith("-session.jsonl") and named[1:] == ["", again]
    assert named[0] != again and summaries[1].endswith(" s")


@posix_only
def test_new_right_away_leaves_no_empty_transcript(model, terminal, tmp_path):
    shown = terminal()
    shown.type_at_prompts("/new", "/exit")

    assert shown.finish() == 0, shown.output
    assert list(runs_of(tmp_path).glob("*.jsonl")) == []


@posix_only
def test_a_command_with_words_after_it_is_answered_not_sent(model, terminal, tmp_path):
    # "/undo 2" went to the model as a task, which could set about undoing files its own way.
    shown = terminal("--no-transcript")
    shown.type_at_prompts("/undo the last two tasks", "/exit now", "/exit")

    assert shown.finish() == 0, shown.output
    assert model.requests == []
    assert (
        f"{PROMPT}/undo the last two tasks\nnot sent to the model: /undo takes nothing after it; "
        f"type /undo alone\n{PROMPT}/exit now\nnot sent to the model: /exit takes nothing after "
        "it; type /exit alone\n"
    ) in shown.output
