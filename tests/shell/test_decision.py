"""A command is read once and decided once: the gate decides, and run_shell runs what it decided."""

import dataclasses
import sys
import tempfile
import typing

import pytest
from fake_model import answer, calls
from helpers import Typed, needs_landlock, posix_only, results

import harness
from plainagent.approval.prompt import with_the_sandbox
from plainagent.sandbox import process, readable
from plainagent.shell import allowlist, decision, words

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


def test_at_the_terminal_a_command_is_parsed_once_and_always_weighed_once_more(
    model, tmp_path, monkeypatch, capsys
):
    # The question shows the gate's reason and programs, and remembers the command as the gate
    # read it; the one other verdict is what 'always' would let run (offered, or remembered)
    (tmp_path / "notes.txt").write_text("notes\n")
    (tmp_path / "copy.txt").write_text("")
    parsed = counted(monkeypatch, words.lex)
    decided = counted(monkeypatch, allowlist.command_mode)
    monkeypatch.setattr(sys, "stdin", Typed("a\n"))
    model.queue(
        calls(("run_shell", {"command": "cp notes.txt copy.txt"})),
        calls(("run_shell", {"command": "cp copy.txt notes.txt"})),
        answer("done"),
    )

    harness.run("copy the notes")

    assert capsys.readouterr().err.count("run_shell wants to run:") == 1
    assert (tmp_path / "copy.txt").read_text() == "notes\n"
    # each command: read once; decided at the gate, then weighed against 'always' once
    assert (len(parsed), len(decided)) == (2, 4)


def asked_without_the_kernel(model, commands: list[str]) -> list[str]:
    """Run the commands in one turn with --sandbox off, denying each question: those asked about."""
    asked: list[str] = []
    model.queue(calls(*[("run_shell", {"command": c}) for c in commands]), answer("done"))
    harness.run(
        "find the token",
        sandbox="off",
        approve=lambda name, arguments: asked.append(arguments["command"]) or False,
    )
    return asked


def test_without_the_kernel_a_command_reading_whole_folders_asks_where_there_is_a_dot_env(
    model, tmp_path
):
    # Only Landlock hides a .env from grep -r: without it (--sandbox off, macOS), the model
    # read the agent's own key from its .env in pieces too short to redact (grep -rhoE
    # 'sk_.{8}' .), in the quick start's workspace, the agent's folder
    (tmp_path / "notes.txt").write_text("TOKEN in the notes\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / ".env").write_text("TOKEN=s3cr3t-v4lu3\n")
    walking = [
        "grep -r TOKEN .",
        "grep -rn TOKEN conf",
        "grep -d recurse TOKEN .",
        "ls; git grep x",
    ]

    asked = asked_without_the_kernel(model, [*walking, "grep TOKEN notes.txt"])

    assert asked == walking
    assert results(model, 1)[0] == "exit code: 0\nstdout:\nTOKEN in the notes\n"
    assert "s3cr3t" not in str(model.requests)


def test_without_the_kernel_or_a_dot_env_a_command_reading_whole_folders_runs(model, tmp_path):
    (tmp_path / "notes.txt").write_text("TOKEN in the notes\n")
    model.queue(calls(("run_shell", {"command": "grep -r TOKEN ."})), answer("done"))

    harness.run("find the token", sandbox="off", approve=lambda name, arguments: False)

    assert results(model, 1)[0] == "exit code: 0\nstdout:\n./notes.txt:TOKEN in the notes\n"


def test_without_the_kernel_a_command_reading_whole_folders_asks_where_the_state_folder_is(
    model, tmp_path, monkeypatch
):
    # The home folder as the workspace holds every workspace's transcripts
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".local" / "state"))
    (tmp_path / ".local" / "state" / "plainagent" / "other").mkdir(parents=True)
    (tmp_path / ".local" / "state" / "plainagent" / "other" / "run.jsonl").write_text("TOKEN x\n")

    asked = asked_without_the_kernel(model, ["grep -r TOKEN .local"])

    assert asked == ["grep -r TOKEN .local"]


def test_without_the_kernel_the_file_a_link_named_dot_env_leads_to_asks_by_any_name(
    model, tmp_path
):
    # read_file refuses conf/prod.txt, and Landlock hides it: without the kernel, cat read it
    (tmp_path / "notes.txt").write_text("notes\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "prod.txt").write_text("TOKEN=s3cr3t-v4lu3\n")
    (tmp_path / ".env").symlink_to("conf/prod.txt")
    secret = ["cat conf/prod.txt", "head -n 1 ./conf/../conf/prod.txt", "grep -f conf/prod.txt x"]

    asked = asked_without_the_kernel(model, [*secret, "cat notes.txt"])

    assert asked == secret
    assert results(model, 1)[0] == "exit code: 0\nstdout:\nnotes\n"
    assert "s3cr3t" not in str(model.requests)


@pytest.mark.parametrize("sandbox", ["auto", "off"])
@pytest.mark.parametrize("command", ["grep -r TOKEN .", "cat notes.txt", "ls"])
def test_one_command_looks_through_the_workspace_for_dot_env_files_once(
    model, tmp_path, sandbox, command, monkeypatch
):
    # Without the kernel, the check for a .env only the kernel hides (dotenv_unhidden) and the
    # policy each looked through the whole workspace: a large project's cost twice a command
    for n in range(30):
        (tmp_path / f"d{n}").mkdir()
        (tmp_path / f"d{n}" / "f.txt").write_text("x\n")
    (tmp_path / "notes.txt").write_text("TOKEN in the notes\n")
    looked = counted(monkeypatch, readable.dotenv_files)
    model.queue(calls(("run_shell", {"command": command})), answer("done"))

    harness.run("look", sandbox=sandbox, approve=lambda name, arguments: False)

    assert results(model, 1)[0].startswith("exit code: 0\n")
    assert len(looked) == 1


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_a_workspace_too_large_to_look_through_is_looked_at_once_and_refuses_the_command(
    model, tmp_path, sandbox, monkeypatch
):
    monkeypatch.setattr(readable, "MOST_ENTRIES", 20)
    for n in range(30):
        (tmp_path / f"f{n}.txt").write_text("x\n")
    looked = counted(monkeypatch, readable.dotenv_files)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    model.queue(calls(("run_shell", {"command": "cat f1.txt"})), answer("done"))

    harness.run("look", sandbox=sandbox, approve=lambda name, arguments: False)

    assert results(model, 1)[0].startswith(
        f"error: PermissionError: the workspace {tmp_path} holds over 20 files and folders"
    )
    assert len(looked) == 1
    assert not list((tmp_path / "tmp").glob("agent-tmp-*"))  # the command's folder, removed


@needs_landlock
def test_a_commands_policy_follows_the_sandbox_as_the_run_settled_it(tmp_path, in_a_run):
    # Whether commands run under Landlock is settled once with the settings (with_the_sandbox)
    # and told the model; the decision and the policy read it, not the kernel again
    (tmp_path / ".env").write_text("TOKEN=s3cr3t\n")
    settled = with_the_sandbox(in_a_run)
    told_off = dataclasses.replace(settled, confined=False)

    assert settled.confined is True
    assert decision.decide("cat f.txt", settled).policy(settled, tmp_path).mode == process.READ_ONLY
    assert decision.decide("cat f.txt", told_off).policy(told_off, tmp_path).mode is None
    assert not decision.decide("grep -r TOKEN .", settled).asks
    assert decision.decide("grep -r TOKEN .", told_off).asks
    # settings made without it ask the kernel
    assert (
        decision.decide("cat f.txt", in_a_run).policy(in_a_run, tmp_path).mode == process.READ_ONLY
    )
