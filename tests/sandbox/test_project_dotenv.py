"""A project's own .env reaches the model only through a command the person approves: the file
tools refuse it by any name, a command naming it asks, and the kernel hides it from every
command that runs without asking, the ones that walk folders (grep -r, rg) and the programs
the person allowed included."""

import json
import shutil

import pytest
from fake_model import answer, calls
from helpers import needs_landlock, posix_only

import harness

pytestmark = posix_only

SECRETS = ("SECRET=top-dotenv-4417", "SECRET=deeper-dotenv-5521")


@pytest.fixture
def project(tmp_path):
    """A workspace with a .env at its top, another (.ENV) in a subfolder, a link to each, and a
    note that mentions SECRET too."""
    (tmp_path / ".env").write_text(SECRETS[0] + "\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".ENV").write_text(SECRETS[1] + "\n")
    (tmp_path / "envlink").symlink_to(".env")
    # a harmless name, a .env in capitals where it leads
    (tmp_path / "notes-link").symlink_to("sub/.ENV")
    (tmp_path / "notes.txt").write_text("SECRET goes in .env\n")
    return tmp_path


def unasked_run(model, project, commands, tools=(), **settings):
    """Run the calls, denying whatever asks; return the results and the commands that asked."""
    asked = []
    model.queue(calls(*tools, *[("run_shell", {"command": c}) for c in commands]), answer("done"))
    harness.run(
        "look",
        approve=lambda name, arguments: asked.append(arguments.get("command", name)) or False,
        workspace=project,
        **settings,
    )
    return [m["content"] for m in model.messages(1)[-len(tools) - len(commands) :]], asked


def test_the_file_tools_refuse_a_projects_dot_env_by_any_name(model, project):
    reads = [
        ("read_file", {"path": p})
        for p in (".env", "sub/.ENV", "envlink", "./sub/../.env", "notes-link")
    ]

    results, asked = unasked_run(model, project, [], tools=[*reads, ("list_dir", {"path": "."})])

    assert asked == []
    assert all(
        r.startswith("error:") and "is a .env file, which may hold the project's secrets" in r
        for r in results[:5]
    ), results
    assert ".env  23 bytes" in results[5]  # that it is there is no secret
    assert not any(secret in json.dumps(model.requests) for secret in SECRETS)


@needs_landlock
@pytest.mark.parametrize("allow", [[], ["grep"]])
def test_commands_that_run_without_asking_cannot_read_a_projects_dot_env_even_walking_folders(
    model, project, allow
):
    commands = [
        "grep -r SECRET .",
        "grep -ri secret sub",
        "cat .env",
        "cat envlink",
        "cat sub/.ENV",
    ]
    commands += ["rg -uu SECRET"] if shutil.which("rg") else []

    results, asked = unasked_run(model, project, commands, allow=allow)

    assert asked == ["cat .env", "cat envlink", "cat sub/.ENV"]
    assert "notes.txt:SECRET goes in .env" in results[0] and "Permission denied" in results[0]
    assert "Permission denied" in results[1]
    assert not any(secret in json.dumps(model.requests) for secret in SECRETS)


@needs_landlock
def test_a_command_the_person_approves_reads_a_projects_dot_env(model, project):
    model.queue(calls(("run_shell", {"command": "cat .env sub/.ENV"})), answer("done"))

    harness.run("look", approve=lambda name, arguments: True, workspace=project)

    assert all(secret in model.messages(1)[-1]["content"] for secret in SECRETS)


def test_a_folder_named_dot_env_is_no_secret(model, tmp_path):
    # a virtual environment, as some projects name theirs
    (tmp_path / ".env" / "bin").mkdir(parents=True)
    (tmp_path / ".env" / "pyvenv.cfg").write_text("home = /usr/bin\n")

    results, asked = unasked_run(
        model, tmp_path, ["cat .env/pyvenv.cfg"], tools=[("list_dir", {"path": ".env"})]
    )

    assert results[0] == "bin/\npyvenv.cfg  16 bytes"
    assert results[1] == "exit code: 0\nstdout:\nhome = /usr/bin\n" and asked == []


@pytest.fixture
def linked_project(tmp_path):
    """A workspace whose .env is a link to the file that holds the secrets,
    under a name of its own."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "prod.txt").write_text(SECRETS[0] + "\n")
    (tmp_path / ".env").symlink_to("conf/prod.txt")
    return tmp_path


def test_the_file_tools_refuse_the_file_a_link_named_dot_env_leads_to(model, linked_project):
    # A link *to* a .env is refused by where it leads; a link *named* .env leads the secrets
    # elsewhere, and that file was read by its own name.
    results, asked = unasked_run(
        model,
        linked_project,
        [],
        tools=[
            ("read_file", {"path": "conf/prod.txt"}),
            ("read_file", {"path": "./conf/../conf/prod.txt"}),
            ("list_dir", {"path": "conf"}),
        ],
    )

    assert asked == []
    assert results[0] == (
        "error: PermissionError: conf/prod.txt is the file a link named .env leads to, which may "
        "hold the project's secrets: no tool reads it, and no command that runs without asking; if "
        "the task needs it, ask the user to approve a command that reads it"
    )
    assert results[1].startswith(
        "error: PermissionError: ./conf/../conf/prod.txt is the file a link named .env"
    )
    assert results[2] == "prod.txt  23 bytes"  # that it is there is no secret
    assert not any(secret in json.dumps(model.requests) for secret in SECRETS)


@needs_landlock
@pytest.mark.parametrize("allow", [[], ["grep"]])
def test_commands_that_run_without_asking_cannot_read_the_file_a_link_named_dot_env_leads_to(
    model, linked_project, allow
):
    results, asked = unasked_run(
        model, linked_project, ["cat conf/prod.txt", "grep -r SECRET conf", "cat .env"], allow=allow
    )

    assert asked == ["cat .env"]
    assert "Permission denied" in results[0] and "Permission denied" in results[1]
    assert not any(secret in json.dumps(model.requests) for secret in SECRETS)
