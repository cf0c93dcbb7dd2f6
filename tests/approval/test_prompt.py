"""Approval prompts of several runs at one terminal: one question at a time, each answered
before the next is shown, each naming the workspace it is for while more than one run goes on;
alone, a run's question names none."""

import io
import sys
import threading

from fake_model import answer, calls
from helpers import RM_PROMPT, ROOT, Terminal, posix_only

from plainagent.approval import gate
from plainagent.approval import prompt as approval
from plainagent.core import settings

# Two runs of harness.run in threads, with the default approver (stdin is the terminal); each waits,
# once its run counts as going on, for the other, so both are going on before either asks its
# question; and each waits at its end for the other, so the first one answered is still going on
# when the second question is shown (on a busy machine it could end before the other thread got to
# its question, which then named no workspace).
TWO_RUNS = f"""
import sys, threading
sys.path.insert(0, {str(ROOT)!r})
import harness
both, ends = threading.Barrier(2), threading.Barrier(2)
def listen(event):
    if event["type"] == "message" and event["message"]["role"] == "system":
        both.wait(20)
    if event["type"] == "end":
        ends.wait(20)
threads = [
    threading.Thread(
        target=harness.run,
        args=("remove a.txt",),
        kwargs={{"workspace": folder, "on_event": listen}},
    )
    for folder in sys.argv[1:]
]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""


class TwoRuns(Terminal):
    """A python process on a pseudo-terminal running two runs at once, one in each folder."""

    def __init__(self, *folders: str, cwd) -> None:
        super().__init__(cwd=cwd, command=[sys.executable, "-c", TWO_RUNS, *folders])


def remove_then_answer(body: dict) -> dict:
    return (
        calls(("run_shell", {"command": "rm a.txt"}))
        if len(body["messages"]) == 2
        else answer("removed")
    )


def question(folder) -> str:
    return (
        f"[in {folder}] run_shell wants to run:\n  rm a.txt\n  (rm is not on the allowlist)\n"
        f"{RM_PROMPT}"
    )


@posix_only
def test_two_runs_at_one_terminal_ask_one_at_a_time_each_naming_its_workspace(model, tmp_path):
    model.router = remove_then_answer
    folders = [tmp_path / "alpha", tmp_path / "beta"]
    for folder in folders:
        folder.mkdir()
        (folder / "a.txt").write_text("a")
    shown = TwoRuns(*map(str, folders), cwd=tmp_path)
    try:
        shown.read_until(RM_PROMPT)
        assert shown.output.count("wants to run") == 1  # the other run waits for this answer
        shown.type("y")
        shown.read_until(RM_PROMPT, count=2)
        shown.type("y")
        assert shown.finish() == 0, shown.output
    finally:
        shown.close()

    first = next(
        folder for folder in folders if f"[in {folder}]" in shown.output.split(RM_PROMPT)[0]
    )
    second = folders[1 - folders.index(first)]
    # whole, in turn, nothing between
    assert shown.output == f"{question(first)}y\n{question(second)}y\n"
    assert not any((folder / "a.txt").exists() for folder in folders)
    assert len(model.requests) == 4


class Person:
    """stdin for approval.typed(): a person who types y, once told to (at once, unless held)."""

    def __init__(self) -> None:
        self.answering, self.answered = threading.Event(), threading.Event()

    def readline(self) -> str:
        self.answering.set()
        self.answered.wait(10)
        return "y\n"

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        # as for a pipe pytest put there: read by readline()
        raise io.UnsupportedOperation("fileno")


def in_a_run_at(workspace) -> settings.Settings:
    """A run's settings in this workspace, for the approver it asks with (the
    preview reads the workspace)."""
    return settings.resolve(require_key=False, workspace=workspace)


def ask_in_a_run(approve: gate.Approver, path: str) -> None:
    """Ask approve about a write_file, as a run would."""
    assert approve("write_file", {"path": path, "content": ""}) is True


def test_a_run_alone_names_no_workspace(model, tmp_path, monkeypatch, capsys):
    """The [in ...] is for telling runs apart: a run going on alone does not name its workspace."""
    person = Person()
    person.answered.set()
    monkeypatch.setattr(sys, "stdin", person)
    with approval.running():
        ask_in_a_run(approval.terminal_approver(in_a_run_at(tmp_path)), "a")
    assert capsys.readouterr().err.startswith("write_file wants to create a (new file, 0 bytes)\n")


def test_a_question_waits_while_another_is_being_answered(model, tmp_path, monkeypatch, capsys):
    """The lock is held from the question's first line to the answer read: a second question is not
    printed meanwhile, and is printed once the first is answered."""
    person = Person()
    monkeypatch.setattr(sys, "stdin", person)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    with approval.running(), approval.running():
        first = threading.Thread(
            target=ask_in_a_run, args=(approval.terminal_approver(in_a_run_at(one)), "a")
        )
        first.start()
        assert person.answering.wait(10)
        second = threading.Thread(
            target=ask_in_a_run, args=(approval.terminal_approver(in_a_run_at(two)), "b")
        )
        second.start()
        second.join(0.2)
        assert second.is_alive() and capsys.readouterr().err.count("wants to create") == 1
        person.answered.set()
        first.join(10)
        second.join(10)
    assert f"[in {two}] write_file wants to create b (new file, 0 bytes)" in capsys.readouterr().err
    assert (one / "a").exists() is False  # asking writes nothing: the run writes, after a yes


def test_the_question_shows_no_key_in_a_command_a_new_file_or_an_edit(
    model, tmp_path, monkeypatch, capsys
):
    key = "gsk_asked0123456789abcdefghijklmnop"
    monkeypatch.setenv("GROQ_API_KEY", key)
    (tmp_path / "notes.txt").write_text("old line\n")
    person = Person()
    person.answered.set()
    monkeypatch.setattr(sys, "stdin", person)
    approve = approval.terminal_approver(in_a_run_at(tmp_path))
    with approval.running():
        approve("run_shell", {"command": f"curl -H 'Authorization: Bearer {key}' example.com"})
        approve("write_file", {"path": "new.txt", "content": f"KEY={key}\n"})
        approve(
            "edit_file", {"path": "notes.txt", "old_text": "old line", "new_text": f"key {key}"}
        )

    asked = capsys.readouterr().err
    assert (
        asked.count("wants to") == 3 and asked.count("[redacted API key]") == 3 and key not in asked
    )
