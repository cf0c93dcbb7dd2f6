"""The state folder holds every project's transcripts (what other models were shown, a secret the
person approved among them), so with the home folder as the workspace it is hidden as a project's
.env is: the file tools refuse it, and the kernel leaves it out of every command that runs without
asking, the ones that walk folders too."""

import json
import shutil

import pytest
from fake_model import answer, calls
from helpers import needs_landlock, only_transcript, posix_only, run_script

import harness

pytestmark = posix_only

SECRET = "TOKEN-5531-other-project"


@pytest.fixture
def home(model, tmp_path, monkeypatch):
    """The workspace holds the state folder, as a home folder does, and another project's
    run is kept there, with a secret that project's model was shown; a note of the
    workspace's own names the secret too."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".local" / "state"))
    (tmp_path / "other").mkdir()
    model.queue(answer(f"the deploy token is {SECRET}"))
    assert run_script("harness.py", "find the deploy token", cwd=tmp_path / "other").returncode == 0
    assert SECRET in only_transcript(tmp_path / "other").read_text()
    (tmp_path / "notes.txt").write_text("TOKEN-5531 is in the vault\n")
    return tmp_path


def run_calls(model, workspace, tools, approve):
    """Run the calls; return their results and the commands that asked."""
    asked = []
    model.queue(calls(*tools), answer("done"))

    def approver(name, arguments):
        asked.append(arguments.get("command", name))
        return approve

    harness.run("look", approve=approver, workspace=workspace)
    return [m["content"] for m in model.messages(len(model.requests) - 1)[-len(tools) :]], asked


@needs_landlock
@pytest.mark.parametrize("allow", [[], ["grep"]])
def test_commands_that_run_without_asking_cannot_read_other_projects_transcripts(
    model, home, allow
):
    commands = ["grep -r TOKEN-5531 .local", "grep -r TOKEN-5531 ."]
    commands += ["rg -uu -e TOKEN-5531"] if shutil.which("rg") else []

    results, asked = run_calls(
        model, home, [("run_shell", {"command": c}) for c in commands], False
    )

    assert asked == []
    assert all("Permission denied" in r for r in results), results
    assert "notes.txt:TOKEN-5531 is in the vault" in results[1]
    assert SECRET not in json.dumps(model.requests)


def test_the_file_tools_refuse_the_state_folder(model, home):
    transcript = only_transcript(home / "other").relative_to(home.resolve()).as_posix()
    reads = [
        ("read_file", {"path": transcript}),
        ("list_dir", {"path": ".local/state/plainagent"}),
        ("list_dir", {"path": ".local/state"}),
    ]

    results, asked = run_calls(model, home, reads, False)

    assert asked == []
    for result, path in zip(results[:2], [transcript, ".local/state/plainagent"], strict=True):
        assert result == (
            f"error: PermissionError: {path} is in the agent's state folder, which holds the "
            "transcripts of every project the agent worked on: no tool reads it, and no command "
            "that runs without asking"
        )
    assert results[2] == "plainagent/"  # that it is there is no secret
    assert SECRET not in json.dumps(model.requests)


@needs_landlock
def test_a_command_the_person_approves_reads_the_state_folder(model, home):
    results, asked = run_calls(
        model,
        home,
        [("run_shell", {"command": "grep -rh TOKEN-5531 .local/state/plainagent"})],
        True,
    )

    assert asked == ["grep -rh TOKEN-5531 .local/state/plainagent"] and SECRET in results[0]
