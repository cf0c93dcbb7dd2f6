"""The answer and the reasoning as they arrive: at a terminal the pieces of a streamed reply are
shown as the server sends them, escaped and redacted as whole text is; with stdout a pipe, stdout
is what it always was; a reply that breaks off is asked for again once, and says so; Ctrl-C in the
middle keeps what was shown, marked, for --continue."""

import os
import signal
import subprocess
import time

from fake_model import CUT, answer, call_pieces, chunk, stream
from helpers import KEY, Terminal, assert_well_formed, posix_only, readable, wait_for, windows

pytestmark = posix_only

PIECES = ("The answer ", "comes ", "in three pieces.")
WHOLE = "".join(PIECES)


def sent(model) -> int:
    """How many events of a streamed reply the server has written so far."""
    return sum(1 for kind, _ in model.timeline if kind == "piece")


def second_screen() -> tuple[int, int]:
    """Another pseudo-terminal, for stderr apart from stdout: (the side read, the side given)."""
    return os.openpty()


def read_all(fd: int, seen: bytes, until: bytes, timeout: float = 30) -> bytes:
    """What fd shows, read until `until` is in it."""
    while until not in seen:
        if not readable(fd, timeout):
            raise AssertionError(f"never saw {until!r}; saw {seen!r}")
        try:
            seen += os.read(fd, 65536)
        except OSError:
            raise AssertionError(f"never saw {until!r}; saw {seen!r}") from None
    return seen


def test_the_first_piece_is_on_the_screen_before_the_server_sends_the_last(model, tmp_path):
    model.queue(stream(*PIECES, pause=0.5))
    shown = Terminal("--no-transcript", "say it", cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        shown.read_until("The answer")
        assert sent(model) < len(PIECES), "the first piece came after the last was sent"

        assert shown.finish() == 0
        # The screen holds the answer and nothing else: progress goes to stderr
        assert shown.output == WHOLE + "\n"
        assert model.requests[0]["body"]["stream"] is True
        assert model.requests[0]["body"]["stream_options"] == {"include_usage": True}
    finally:
        shown.close()


def test_reasoning_pieces_are_on_stderr_before_the_answer(model, tmp_path):
    model.queue(stream({"reasoning": "first I "}, {"reasoning": "think"}, "The answer", pause=0.5))
    errors, given = second_screen()
    shown = Terminal("--show-reasoning", "--no-transcript", "say", cwd=tmp_path, stderr=given)
    os.close(given)
    try:
        said = read_all(errors, b"", b"  thinking: first I")
        assert sent(model) < 3 and "The answer" not in shown.output
        assert shown.finish() == 0
        said = read_all(errors, said, b"done: 1 step")
        assert b"  thinking: first I think\n" in said.replace(b"\r\n", b"\n")
        assert shown.output == "The answer\n"
        # shown once, as it came, not again when the reply was whole
        assert said.count(b"thinking: ") == 1
    finally:
        shown.close()
        os.close(errors)


def test_reasoning_between_and_after_the_answers_pieces_shows_the_answer_once(model, tmp_path):
    pieces = ({"reasoning": "think A"}, "Answer one ", {"reasoning": "think B"}, "answer two")
    model.queue(stream(*pieces, {"reasoning": "think C"}, pause=0.1))
    shown = Terminal("--no-transcript", "--show-reasoning", "say", cwd=tmp_path)
    try:
        assert shown.finish() == 0
    finally:
        shown.close()
    assert shown.output.split("done: ")[0] == (
        "  thinking: think A\nAnswer one \n  thinking: think B\nanswer two\n  thinking: think C\n"
    )


def test_with_stdout_a_pipe_stdout_is_the_whole_answer_at_the_end(model, tmp_path):
    model.queue(answer(WHOLE))
    piped = Terminal("--no-transcript", "say", cwd=tmp_path, stdout=subprocess.PIPE)
    try:
        out = piped.process.stdout.read()
        assert piped.finish() == 0
    finally:
        piped.close()
    assert out == (WHOLE + "\n").encode()
    assert "stream" not in model.requests[0]["body"]  # today's request, today's bytes

    # --stream to a pipe: the same bytes, from the pieces
    model.queue(stream(*PIECES))
    forced = subprocess.run(
        [*piped.process.args, "--stream"], cwd=tmp_path, capture_output=True, timeout=60
    )
    assert forced.returncode == 0 and forced.stdout == out


def test_a_key_split_over_three_pieces_is_never_shown_nor_kept(model, tmp_path, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    model.queue(stream("the key is ", KEY[:15], KEY[15:30], KEY[30:], " indeed", pause=0.05))
    shown = Terminal("--transcript", "t.jsonl", "say", cwd=tmp_path)
    try:
        assert shown.finish() == 0
    finally:
        shown.close()
    assert "the key is [redacted API key] indeed\n" in shown.output
    kept = (tmp_path / "t.jsonl").read_text()
    assert not windows(KEY) & (windows(shown.output) | windows(kept))
    assert "the key is [redacted API key] indeed" in kept


def test_an_escape_sequence_split_over_pieces_is_shown_escaped(model, tmp_path):
    model.queue(stream("clear\x1b", "[2J", " e", "\u0301 ok", pause=0.05))
    shown = Terminal("--no-transcript", "say", cwd=tmp_path)
    try:
        assert shown.finish() == 0
    finally:
        shown.close()
    assert b"\x1b[2J" not in shown.raw
    assert "clear\\x1b[2J e\u0301 ok\n" in shown.output


def test_a_character_split_between_writes_is_shown_whole(model, tmp_path):
    model.queue(stream("caf", ("split", "é au lait"), pause=0.05))
    shown = Terminal("--no-transcript", "say", cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        assert shown.finish() == 0
    finally:
        shown.close()
    assert shown.output == "café au lait\n"


def test_tool_calls_put_together_from_their_pieces_all_run(model, cli, tmp_path):
    (tmp_path / "notes.txt").write_text("read me")
    arguments = '{"path": "out.txt", "content": "five pieces"}'
    model.queue(
        stream(
            *call_pieces(0, "call_a", "write_file", arguments, 5),
            *call_pieces(1, "call_b", "read_file", '{"path": "notes.txt"}', 2),
            finish_reason="tool_calls",
        ),
        stream("both ran"),
    )

    result = cli("--stream", "--yes", "--no-transcript", "do both")

    assert result.returncode == 0 and result.stdout == "both ran\n"
    assert (tmp_path / "out.txt").read_text() == "five pieces"
    sent_back = model.messages(1)
    assert sent_back[-3]["tool_calls"][0]["function"]["arguments"] == arguments
    assert [m["tool_call_id"] for m in sent_back[-2:]] == ["call_a", "call_b"]
    assert sent_back[-1]["content"] == "read me"


def test_an_error_chunk_mid_stream_is_asked_again_once(model, cli):
    broken = stream("Half an ans", ("error", {"message": "overloaded", "type": "server_error"}))
    model.queue(broken, stream("A whole answer"))

    result = cli("--stream", "--no-transcript", "say")

    assert result.returncode == 0 and result.stdout.endswith("A whole answer\n")
    assert "the server sent an error in the middle of the reply; asking again" in result.stderr
    assert len(model.requests) == 2

    # once only: a second error is the run's error
    model.queue(broken, broken)
    again = cli("--stream", "--no-transcript", "say")
    assert again.returncode == 1 and "overloaded" in again.stderr.splitlines()[-1]


def test_a_piece_that_is_not_json_twice_is_one_line_and_exit_1(model, cli):
    broken = {"stream": [chunk({"content": "Half "}), "{not json", "[DONE]"], "pause": 0.0}
    model.queue(broken, broken)

    result = cli("--stream", "--no-transcript", "say")

    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "the server sent a broken piece in the middle of the reply; asking again" in (
        result.stderr
    )
    last = result.stderr.splitlines()[-1]
    assert "sent a piece of its reply that is not a chat completion chunk" in last, result.stderr
    assert last.endswith("; try again, or ask it for whole replies: --no-stream (AGENT_STREAM=off)")


def test_a_malformed_call_mid_stream_is_asked_again_as_ever(model, cli):
    failed = {"message": "bad call", "type": "invalid_request_error", "code": "tool_use_failed"}
    model.queue(stream({"reasoning": "hm"}, ("error", failed)), stream("fine"))

    result = cli("--stream", "--no-transcript", "say")

    assert result.returncode == 0 and result.stdout == "fine\n"
    assert "the model wrote a malformed tool call; asking again (attempt 2 of 3)" in result.stderr


def test_a_stream_cut_mid_answer_is_asked_again_once_and_says_so(model, tmp_path):
    model.queue(stream("A first ans", CUT, pause=0.05), stream("The answer", pause=0.05))
    shown = Terminal("--no-transcript", "say", cwd=tmp_path)
    try:
        assert shown.finish() == 0
    finally:
        shown.close()
    assert len(model.requests) == 2
    assert "A first ans\n[withdrawn: the model server broke off this reply" in shown.output
    assert "the connection broke off in the middle of the reply; asking again" in shown.output
    assert shown.output.count("The answer") == 1


def test_a_reply_that_stalls_past_the_timeout_is_marked_not_kept_where_it_was_shown(
    model, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENT_TIMEOUT", "3")
    model.queue(stream("Part one ", "and more", "never sent", pause=1.2))
    shown = Terminal("--transcript", "t.jsonl", "say", cwd=tmp_path)
    try:
        assert shown.finish() == 1
    finally:
        shown.close()
    assert shown.output.endswith(
        "Part one and more\n"
        "[not kept: the run ended in the middle of this reply; --continue does not have it]\n"
        "error: the model did not answer within 3 s: try again, or raise AGENT_TIMEOUT\n"
    )
    assert "Part one" not in (tmp_path / "t.jsonl").read_text()


def test_ctrl_c_mid_stream_keeps_the_answer_so_far_for_continue(model, start_cli, cli, tmp_path):
    model.queue(stream("So far ", "so good", "never sent", pause=1.5))
    process = start_cli(tmp_path, "--stream", "--transcript", "t.jsonl", "say")
    wait_for(lambda: sent(model) >= 2)
    time.sleep(0.5)  # for the agent to read the piece sent; the next comes 1.5 s after it

    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=20)

    assert process.returncode == 130, stderr
    assert stdout == "So far so good\n"
    model.queue(answer("going on"))
    assert cli("--continue", "--transcript", "t.jsonl", "go on").returncode == 0
    history = model.messages(1)
    assert_well_formed(history)
    assert history[-2] == {"role": "assistant", "content": "So far so good\n\n(interrupted)"}
    assert history[-1] == {"role": "user", "content": "go on"}


def test_a_slow_model_shows_a_waiting_line_and_a_slow_command_its_seconds(model, terminal):
    slow_call = stream(*call_pieces(0, "c", "run_shell", '{"command": "sleep 5"}', 1))
    model.queue({**slow_call, "delay": 3}, stream("slept"))
    shown = terminal("--yes", "--no-transcript", "sleep")
    shown.read_until("thinking… 2 s")
    assert "[1] run_shell" not in shown.output  # while the model still works
    shown.read_until("running… 3 s")
    shown.read_until("running… 4 s")
    assert "→" not in shown.output  # before the command ends
    assert shown.finish() == 0
    assert "    → ok" in shown.output


def test_with_stderr_a_file_no_line_counts_seconds(model, tmp_path):
    slow_call = stream(*call_pieces(0, "c", "run_shell", '{"command": "sleep 5"}', 1))
    model.queue({**slow_call, "delay": 3}, stream("slept"))
    with open(tmp_path / "err.txt", "w") as err:
        shown = Terminal("--yes", "--no-transcript", "sleep", cwd=tmp_path, stderr=err)
        try:
            assert shown.finish(60) == 0
        finally:
            shown.close()
    said = (tmp_path / "err.txt").read_text()
    assert "thinking…" not in said and "running…" not in said and "\x1b" not in said
    assert "[1] run_shell" in said


def test_an_answer_cut_off_ends_its_line_before_the_line_that_says_so(model, terminal):
    model.queue(stream("cut ", "short", finish_reason="length"))
    shown = terminal("--no-transcript", "say")
    assert shown.finish() == 0  # a cut answer is still the answer, as ever
    assert "cut short\nthe answer was cut off" in shown.output


def test_a_session_streams_each_answer_and_prompts_on_the_next_line(model, terminal):
    model.queue(stream("first ", "answer"), stream("second ", "answer"))
    shown = terminal("--no-transcript")
    shown.type_at_prompts("one", "two", "/exit")
    assert shown.finish() == 0
    assert "first answer\n" in shown.output and "second answer\n" in shown.output
    assert model.messages(1)[-2] == {"role": "assistant", "content": "first answer"}
