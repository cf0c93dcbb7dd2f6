"""What reaches the agent from the terminal, on a real pseudo-terminal: a pasted task is one task
and never answers a question; what was typed before an approval question is thrown away; and when
the terminal goes away (SIGHUP) or the agent is told to stop (SIGTERM), wherever the session is, it
ends with 129 or 143 and a closed transcript."""

import os
import signal
import subprocess
import threading

import pytest
from fake_model import answer, calls
from helpers import (
    PROMPT,
    Terminal,
    alive,
    asleep,
    default_signals,
    edit,
    only_transcript,
    posix_only,
    read_events,
    results,
    runs_of,
    under,
    wait_for,
)

# in a session, where always lasts it
EDIT_PROMPT = "[y]es / [N]o / [a]lways allow edit_file for this session: "
RUN_EDIT_PROMPT = "[y]es / [N]o / [a]lways allow edit_file for this run: "  # with a task given
WHY_NOT = "why not? (optional, Enter to skip): "
DISCARDED = "note: discarded input typed before this question\n"
NOTES = "old notes\n"
CODES = {signal.SIGHUP: 129, signal.SIGTERM: 143}


def take_the_terminal() -> None:
    """In the child, after setsid(): make stdin's pseudo-terminal its controlling
    terminal, the way a login shell's is, so closing the other end hangs it up (SIGHUP) as
    closing a terminal window does."""
    import fcntl
    import termios

    default_signals()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Session(Terminal):
    """`python harness.py ARGS` with stdin and stderr on a pseudo-terminal, and stdout too, or
    else a pipe (then the prompt is on stderr and the task is read without readline); as the
    controlling terminal, if asked."""

    def __init__(
        self, *args: str, cwd, stdout_is_terminal: bool = True, controlling: bool = False
    ) -> None:
        super().__init__(
            *args,
            cwd=cwd,
            **({} if stdout_is_terminal else {"stdout": subprocess.PIPE}),
            preexec_fn=take_the_terminal if controlling else default_signals,
        )

    def paste(self, text: str) -> None:
        os.write(self.master, text.encode())  # in one write, as a terminal delivers a paste

    def hang_up(self) -> None:
        os.close(self.master)
        self.master = os.open(os.devnull, os.O_RDONLY)  # for close()


@pytest.fixture
def session(model, tmp_path):
    started = []

    def start(*args: str, **options) -> Session:
        started.append(Session(*args, cwd=tmp_path, **options))
        return started[-1]

    yield start
    for opened in started:
        opened.close()
        if opened.process.stdout:
            opened.process.stdout.close()


@pytest.fixture
def held(model):
    """Script the model's replies, the first of which the server keeps until the returned event is
    set (or the test ends): a model request in flight for as long as the test needs it."""
    release, script = threading.Event(), []

    def reply(body: dict) -> dict | None:
        if len(model.requests) == 1:
            release.wait(30)
        # None: a request the test did not script, and the test fails
        return script.pop(0) if script else None

    def hold(*replies: dict) -> threading.Event:
        script.extend(replies)
        model.router = reply
        return release

    yield hold
    release.set()
    assert not script, f"scripted replies never asked for: {script}"


def deny_the_edit_and_leave(shown) -> None:
    """At the edit's question: n, no reason, then /exit at the next prompt."""
    shown.read_until(EDIT_PROMPT)
    shown.type("n")
    shown.read_until(WHY_NOT)
    shown.type("")
    shown.read_until(PROMPT, count=2)
    shown.type("/exit")


# A paste is one task, and what was typed before a question never answers it.


@posix_only
@pytest.mark.parametrize("stdout_is_terminal", [True, False], ids=["readline", "stdout-piped"])
def test_a_pasted_task_is_one_task_and_its_lines_answer_no_question(
    model, session, tmp_path, stdout_is_terminal
):
    (tmp_path / "notes.txt").write_text(NOTES)
    model.queue(calls(edit("notes.txt", "old", "new")), answer("left them"))
    shown = session("--no-transcript", stdout_is_terminal=stdout_is_terminal)

    shown.read_until(PROMPT)
    shown.paste("edit the notes\ny\n")
    deny_the_edit_and_leave(shown)

    assert shown.finish() == 0, shown.output
    assert model.messages(0)[1:] == [{"role": "user", "content": "edit the notes\ny"}]
    assert "note: 1 more line pasted with the first, sent as one task\n" in shown.output
    assert (tmp_path / "notes.txt").read_text() == NOTES
    assert results(model, 1) == ["denied by the user"]


def pasted_then_left(session, text: str, stdout_is_terminal: bool):
    """A session where text is pasted at the first prompt and /exit typed at the next;
    returns it, finished with 0."""
    shown = session("--no-transcript", stdout_is_terminal=stdout_is_terminal)
    shown.read_until(PROMPT)
    shown.paste(text)
    shown.read_until(PROMPT, count=2)
    shown.type("/exit")
    assert shown.finish() == 0, shown.output
    return shown


@posix_only
def test_a_paste_that_only_ends_in_an_empty_line_has_no_note(model, session):
    model.queue(answer("looked"))

    shown = pasted_then_left(session, "look\n\n", stdout_is_terminal=False)

    assert "pasted with the first" not in shown.output
    assert model.messages(0)[1]["content"].strip() == "look"


@posix_only
def test_a_paste_whose_last_line_has_no_line_end_is_sent_with_it_at_once(model, session):
    # With readline, the part after the last line end arrives while readline has the terminal raw;
    # once it is given back, the kernel hands that part on as a line of its own without a line end,
    # and reading on to one waited for the person's next key, which then joined the task unseen.
    model.queue(answer("both"))

    shown = pasted_then_left(session, "first\nsecond half", stdout_is_terminal=True)

    assert model.messages(0)[1:] == [{"role": "user", "content": "first\nsecond half"}]
    assert "note: 1 more line pasted with the first, sent as one task\n" in shown.output


@posix_only
def test_a_y_typed_while_the_model_works_is_discarded_at_the_question_and_said_so(
    model, session, held, tmp_path
):
    (tmp_path / "notes.txt").write_text(NOTES)
    release = held(calls(edit("notes.txt", "old", "new")), answer("left them"))
    shown = session("--no-transcript")

    shown.read_until(PROMPT)
    shown.type("edit the notes")
    wait_for(lambda: model.requests)
    # after the task was read, before the question: the rest of a slow paste, a key pressed early
    shown.type("y")
    shown.read_until("\ny\n")  # the terminal has it: it is waiting to be read
    release.set()
    deny_the_edit_and_leave(shown)

    assert shown.finish() == 0, shown.output
    assert f"{DISCARDED}{EDIT_PROMPT}n\n" in shown.output
    assert (tmp_path / "notes.txt").read_text() == NOTES
    assert results(model, 1) == ["denied by the user"]
    assert [m["content"] for m in model.messages(1) if m["role"] == "user"] == ["edit the notes"]


@posix_only
def test_a_y_typed_before_the_question_is_discarded_and_one_typed_after_it_approves(
    model, session, held, tmp_path
):
    (tmp_path / "notes.txt").write_text(NOTES)
    release = held(calls(edit("notes.txt", "old", "new")), answer("edited"))
    shown = session("--no-transcript", "edit the notes", stdout_is_terminal=False)

    wait_for(lambda: model.requests)
    shown.type("y")
    shown.read_until("y\n")
    release.set()
    shown.read_until(RUN_EDIT_PROMPT)
    # waiting for an answer: the y before the question did not give one
    wait_for(lambda: asleep(shown.process.pid))
    assert (tmp_path / "notes.txt").read_text() == NOTES
    shown.type("y")

    assert shown.finish() == 0, shown.output
    # on stderr: stdout is the pipe, and has the answer
    assert f"{DISCARDED}{RUN_EDIT_PROMPT}y\n" in shown.output
    assert shown.process.stdout.read() == b"edited\n"
    assert (tmp_path / "notes.txt").read_text() == "new notes\n"


# SIGHUP and SIGTERM end a session wherever it is, with the transcript closed.


def at_the_prompt(model, shown: Session, tmp_path) -> None:
    shown.read_until(PROMPT)
    wait_for(lambda: asleep(shown.process.pid))


def at_the_prompt_after_a_task(model, shown: Session, tmp_path) -> None:
    model.queue(answer("one"))
    shown.read_until(PROMPT)
    shown.type("first task")
    shown.read_until(PROMPT, count=2)
    wait_for(lambda: asleep(shown.process.pid))


def in_a_model_request(model, shown: Session, tmp_path) -> None:
    model.queue({**answer("too late"), "delay": 30})
    shown.read_until(PROMPT)
    shown.type("wait for it")
    wait_for(lambda: model.requests)


def in_a_tool(model, shown: Session, tmp_path) -> None:
    model.queue(calls(("run_shell", {"command": "sleep 30"})))
    shown.read_until(PROMPT)
    shown.type("sleep")
    wait_for(lambda: under(shown.process.pid, "sleep 30"))


def at_an_approval_question(model, shown: Session, tmp_path) -> None:
    (tmp_path / "notes.txt").write_text(NOTES)
    model.queue(calls(edit("notes.txt", "old", "new")))
    shown.read_until(PROMPT)
    shown.type("edit the notes")
    shown.read_until(EDIT_PROMPT)
    wait_for(lambda: asleep(shown.process.pid))


PLACES = [
    at_the_prompt,
    at_the_prompt_after_a_task,
    in_a_model_request,
    in_a_tool,
    at_an_approval_question,
]
# SIGHUP everywhere; SIGTERM goes the same way, so it is checked where a session spends its time.
STOPS = [(place, signal.SIGHUP) for place in PLACES] + [
    (place, signal.SIGTERM) for place in (at_the_prompt, in_a_model_request, in_a_tool)
]


def assert_closed_properly(place, tmp_path) -> None:
    """The transcript: none left by a session with no task; else it ends with the
    last task's end event."""
    if place is at_the_prompt:
        assert list(runs_of(tmp_path).glob("*.jsonl")) == []
        return
    events = read_events(only_transcript(tmp_path))
    assert events[-1]["type"] == "end", events[-1]
    if place is at_the_prompt_after_a_task:
        assert events[-1]["reason"] == "answer"
        return
    assert events[-1]["reason"] == "terminated"
    if place is in_a_tool or place is at_an_approval_question:
        assert events[-2]["message"] == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "interrupted",
        }
    if place is at_an_approval_question:
        assert (tmp_path / "notes.txt").read_text() == NOTES


@posix_only
@pytest.mark.parametrize(
    "place, number",
    STOPS,
    ids=[f"{place.__name__}-{signal.Signals(number).name}" for place, number in STOPS],
)
def test_sighup_and_sigterm_end_a_session_anywhere_with_their_code_and_a_closed_transcript(
    model, session, tmp_path, place, number
):
    shown = session(*["--yes"] if place is in_a_tool else [])
    place(model, shown, tmp_path)
    sleeper = under(shown.process.pid, "sleep 30")

    os.kill(shown.process.pid, number)

    assert shown.finish() == CODES[number], shown.output
    assert "Traceback" not in shown.output
    assert ("\nterminated\n" in shown.output) == (
        place in (in_a_model_request, in_a_tool, at_an_approval_question)
    )
    assert_closed_properly(place, tmp_path)
    assert sleeper is None or not alive(sleeper)


@posix_only
@pytest.mark.parametrize(
    "place", [at_the_prompt, in_a_tool, at_an_approval_question], ids=lambda place: place.__name__
)
def test_closing_the_terminal_ends_the_session_with_129_and_a_closed_transcript(
    model, session, tmp_path, place
):
    shown = session(*["--yes"] if place is in_a_tool else [], controlling=True)
    place(model, shown, tmp_path)
    sleeper = under(shown.process.pid, "sleep 30")

    shown.hang_up()  # nothing more can be shown: the agent's writes to the terminal now fail

    assert shown.process.wait(timeout=30) == 129
    assert_closed_properly(place, tmp_path)
    assert sleeper is None or not alive(sleeper)
