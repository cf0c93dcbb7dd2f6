"""A command is read once and decided once: the gate decides, and run_shell runs what it decided."""

import sys
import typing

import pytest
from fake_model import answer, calls
from helpers import posix_only, results

import harness
from plainagent.shell import allowlist, words

pytestmark = posix_only


def counted(monkeypatch, function: typing.Callable) -> list:
    """The calls of `function` from now on, by whatever name a module of the agent holds it."""
    made = []

    def counting(*args, **kwargs):
        made.append(args)
        return function(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").split(".")[0] in ("plainagent", "tools", "harness"):
            for name, value in list(vars(module).items()):
                if value is function:
                    monkeypatch.setattr(module, name, counting)
    return made


@pytest.mark.parametrize(
    "command, allow, asked, result",
    [
        ("cat notes.txt", [], [], "exit code: 0\nstdout:\nnotes\n"),  # read-only
        ("cat notes.txt", ["cat"], [], "exit code: 0\nstdout:\nnotes\n"),  # allowed: trusted
        ("cat notes.txt > copy.txt", [], ["cat notes.txt > copy.txt"], "exit code: 0"),  # approved
    ],
)
def test_a_command_is_parsed_once_and_decided_once_through_the_gate_and_run_shell(
    model, tmp_path, monkeypatch, command, allow, asked, result
):
    (tmp_path / "notes.txt").write_text("notes\n")
    parsed = counted(monkeypatch, words.lex)
    decided = counted(monkeypatch, allowlist.command_mode)
    approved = []
    model.queue(calls(("run_shell", {"command": command})), answer("done"))

    harness.run(
        "copy the notes",
        approve=lambda name, arguments: approved.append(arguments["command"]) or True,
        allow=allow,
    )

    assert results(model, 1) == [result] and approved == asked
    assert (len(parsed), len(decided)) == (1, 1)
