"""The program a person types to start the agent, `plainagent` as PATH finds it, is the agent's own:
with the home folder as the workspace no command and no file tool replaces ~/.local/bin/plainagent
(a pipx link or a pip --user script) or what it leads to; and a `plainagent` a command puts in a
folder of PATH in the workspace (the project's activated .venv/bin) is removed once the command has
ended, and the person is told."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import needs_landlock, posix_only, run_script

from plainagent.core import ownfiles

pytestmark = posix_only

REAL = "#!/bin/sh\necho the real launcher\n"
PLANT = "printf '#!/bin/sh\\necho planted\\n' > {0} && chmod +x {0}"


def launcher(home: Path, kind: str) -> Path:
    """~/.local/bin/plainagent as pipx makes it (a link into its venv) or pip
    --user (the script itself)."""
    (home / ".local" / "bin").mkdir(parents=True)
    script = home / ".local" / "bin" / "plainagent"
    if kind == "link":
        script = home / ".local" / "share" / "pipx" / "venvs" / "plainagent" / "bin" / "plainagent"
        script.parent.mkdir(parents=True)
        (home / ".local" / "bin" / "plainagent").symlink_to(script)
    script.write_text(REAL)
    script.chmod(0o755)
    return script


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of its own, the workspace, its ~/.local/bin first on PATH."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("PATH", f"{folder / '.local' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return folder


def typed(path: str | None = None) -> str:
    """What the person's next `plainagent` prints."""
    found = shutil.which("plainagent", path=path or os.environ["PATH"])
    return (
        subprocess.run([found], capture_output=True, text=True, timeout=10).stdout
        if found
        else "not found"
    )


@needs_landlock
@pytest.mark.parametrize("kind", ["link", "script"])
def test_no_command_replaces_the_launcher_with_home_as_the_workspace(model, home, kind):
    script = launcher(home, kind)
    commands = [
        "echo 'echo planted' >> .local/bin/plainagent",
        "rm -f .local/bin/plainagent",
        "mv .local/bin/plainagent .local/bin/old",
        "ln -sf /bin/echo .local/bin/plainagent",
        f"echo x > {script}",
    ]
    model.queue(calls(*[("run_shell", {"command": c}) for c in commands]), answer("done"))

    result = run_script("harness.py", "replace it", "--yes", "--no-transcript", cwd=home)

    assert result.returncode == 0, result.stderr
    told = [m["content"] for m in model.messages(1)[-len(commands) :]]
    assert all(not t.startswith("exit code: 0") and "Permission denied" in t for t in told), told
    assert script.read_text() == REAL and typed() == "the real launcher\n"
    assert kind == "script" or os.readlink(home / ".local" / "bin" / "plainagent") == str(script)


@pytest.mark.parametrize("kind", ["link", "script"])
def test_no_file_tool_replaces_the_launcher_with_home_as_the_workspace(model, home, kind):
    script = launcher(home, kind)
    writes = [
        ("write_file", {"path": ".local/bin/plainagent", "content": "echo planted\n"}),
        ("edit_file", {"path": ".local/bin/plainagent", "old_text": "real", "new_text": "planted"}),
        ("write_file", {"path": str(script.relative_to(home)), "content": "echo planted\n"}),
    ]
    model.queue(calls(*writes), answer("done"))

    result = run_script("harness.py", "replace it", "--yes", "--no-transcript", cwd=home)

    assert result.returncode == 0, result.stderr
    for told in [m["content"] for m in model.messages(1)[-len(writes) :]]:
        assert (
            told.startswith("error: PermissionError: ")
            and "is plainagent, the program the person types" in told
        )
    assert script.read_text() == REAL and typed() == "the real launcher\n"


@needs_landlock
def test_an_allowed_program_does_not_replace_the_launcher_either(model, home):
    script = launcher(home, "script")
    model.queue(
        calls(
            (
                "run_shell",
                {"command": "python3 -c \"open('.local/bin/plainagent', 'a').write('x')\""},
            )
        ),
        answer("done"),
    )

    result = run_script(
        "harness.py", "replace it", "--allow", "python3", "--no-transcript", cwd=home
    )

    assert result.returncode == 0, result.stderr
    told = model.messages(1)[-1]["content"]
    assert told.startswith("exit code: 1") and "PermissionError" in told, told
    assert script.read_text() == REAL


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The README's project flow: the agent installed as a command
    (~/.local/bin/plainagent), the project's .venv activated (its bin first on PATH), and a
    bin/ of the project on PATH that is not there yet."""
    home = tmp_path / "home"
    launcher(home, "link")
    folder = tmp_path / "project"
    (folder / ".venv" / "bin").mkdir(parents=True)
    (folder / ".venv" / "pyvenv.cfg").write_text(f"home = {Path(sys.base_prefix) / 'bin'}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("VIRTUAL_ENV", str(folder / ".venv"))
    monkeypatch.setenv(
        "PATH",
        os.pathsep.join(
            [
                str(folder / ".venv" / "bin"),
                str(folder / "bin"),
                str(home / ".local" / "bin"),
                os.environ["PATH"],
            ]
        ),
    )
    return folder


@pytest.mark.parametrize("where", [".venv/bin", "bin"])
def test_a_launcher_an_approved_command_puts_in_a_folder_of_path_in_the_workspace_is_removed(
    model, project, where
):
    plant = f"mkdir -p {where} && {PLANT.format(where + '/plainagent')} && touch {where}/other-tool"
    model.queue(calls(("run_shell", {"command": plant})), answer("done"))

    result = run_script("harness.py", "install it", "--yes", "--no-transcript", cwd=project)

    assert result.returncode == 0, result.stderr
    assert typed() == "the real launcher\n" and not (project / where / "plainagent").exists()
    # the folder is not read-only: pip may install there
    assert (project / where / "other-tool").exists()
    told = model.messages(1)[-1]["content"]
    assert told.startswith("exit code: 0") and told.endswith(
        f"\nnote: {where}/plainagent was removed: nothing the agent runs may put a file of that "
        "name in a folder of PATH, where it would run in place of the agent (plainagent) at its "
        "next start"
    )
    assert (
        f"warning: removed {project / where / 'plainagent'}, which a command made: a plainagent in "
        "a folder of PATH would run in place of the agent the next time you type plainagent"
    ) in result.stderr


def test_a_launcher_put_in_the_projects_venv_before_it_is_activated_is_removed_too(
    model, project, monkeypatch
):
    monkeypatch.delenv("VIRTUAL_ENV")
    # .venv/bin is on it once activated
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])
    model.queue(
        calls(
            ("run_shell", {"command": PLANT.format(".venv/bin/plainagent")}),
            ("write_file", {"path": "venv/bin/plainagent", "content": "echo planted\n"}),
        ),
        answer("done"),
    )

    result = run_script("harness.py", "install it", "--yes", "--no-transcript", cwd=project)

    assert result.returncode == 0, result.stderr
    assert (
        not (project / ".venv" / "bin" / "plainagent").exists()
        and "warning: removed" in result.stderr
    )
    assert model.messages(1)[-1]["content"].startswith(
        "error: PermissionError: venv/bin/plainagent is plainagent"
    )
    assert (
        typed(os.pathsep.join([str(project / ".venv" / "bin"), os.environ["PATH"]]))
        == "the real launcher\n"
    )


def test_a_launcher_put_there_by_a_command_that_was_interrupted_is_removed_too(
    model, project, start_cli
):
    from helpers import wait_for

    plant = f"{PLANT.format('.venv/bin/plainagent')} && sleep 60"
    model.queue(calls(("run_shell", {"command": plant})))
    running = start_cli(project, "install it", "--yes", "--no-transcript")
    wait_for(lambda: (project / ".venv" / "bin" / "plainagent").exists())

    running.send_signal(2)
    _, stderr = running.communicate(timeout=30)

    assert running.returncode == 130, stderr
    assert (
        not (project / ".venv" / "bin" / "plainagent").exists() and typed() == "the real launcher\n"
    )
    assert "warning: removed " in stderr


def test_no_file_tool_makes_a_launcher_in_a_folder_of_path(model, project):
    model.queue(
        calls(
            ("write_file", {"path": ".venv/bin/plainagent", "content": "echo planted\n"}),
            ("write_file", {"path": ".venv/bin/other-tool", "content": "echo fine\n"}),
        ),
        answer("done"),
    )

    result = run_script("harness.py", "install it", "--yes", "--no-transcript", cwd=project)

    assert result.returncode == 0, result.stderr
    refused, written = [m["content"] for m in model.messages(1)[-2:]]
    assert refused.startswith(
        "error: PermissionError: .venv/bin/plainagent is plainagent, the program the person "
        "types to start the agent, or would be found in its place on PATH"
    )
    assert written.startswith("created .venv/bin/other-tool")
    assert not (project / ".venv" / "bin" / "plainagent").exists()


def test_a_launcher_left_on_path_in_the_workspace_is_named_at_the_start(model, project):
    stray = project / ".venv" / "bin" / "plainagent"
    stray.write_text("#!/bin/sh\necho left\n")
    model.queue(answer("done"))

    result = run_script("harness.py", "look", "--no-transcript", cwd=project)

    assert result.returncode == 0, result.stderr
    assert (
        f"note: {stray} is a plainagent on PATH, in the workspace, that did not start this run: "
        "typing plainagent may run it, outside the sandbox; if you did not put it there, remove it"
    ) in result.stderr


def test_the_launchers_are_each_plainagent_on_path_what_it_links_to_and_the_script_that_started(
    tmp_path, monkeypatch
):
    first, second = tmp_path / "first", tmp_path / "second"
    (second / "venv" / "bin").mkdir(parents=True)
    first.mkdir()
    (second / "venv" / "bin" / "plainagent").write_text(REAL)
    (second / "plainagent").symlink_to("venv/bin/plainagent")
    (first / "plainagent").symlink_to(second / "plainagent")
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "plainagent").mkdir()  # a folder is not run
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "started" / "plainagent"), "task"])

    found = ownfiles.launchers(
        os.pathsep.join(str(p) for p in (first, tmp_path / "nothing", second))
    )

    assert found == sorted(
        [
            first / "plainagent",
            second / "plainagent",
            second / "venv" / "bin" / "plainagent",
            tmp_path / "started" / "plainagent",
        ]
    )


@needs_landlock
def test_a_launcher_a_writing_mcp_server_puts_in_a_folder_of_path_in_the_workspace_is_removed(
    model, project, tmp_path
):
    server = project / "script_server.py"
    shutil.copyfile(Path(__file__).parents[1] / "mcp" / "script_server.py", server)
    mcp = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [str(server)], "writes": True, "trust": True}
    mcp.write_text(json.dumps({"mcpServers": {"files": entry}}))
    model.queue(
        calls(
            ("files__write", {"path": ".venv/bin/plainagent"}),
            ("files__write", {"path": ".venv/bin/other-tool"}),
        ),
        answer("done"),
    )

    result = run_script("harness.py", "--mcp", str(mcp), "install it", cwd=project)

    assert result.returncode == 0, result.stderr
    assert not (project / ".venv" / "bin" / "plainagent").exists()
    assert (project / ".venv" / "bin" / "other-tool").exists()
    assert typed() == "the real launcher\n"
    planted, other = [m["content"] for m in model.messages(1)[-2:]]
    assert planted == (
        "written\nnote: .venv/bin/plainagent was removed: nothing the agent runs may put a file "
        "of that name in a folder of PATH, where it would run in place of the agent (plainagent) "
        "at its next start"
    )
    assert other == "written"
    assert (
        f"warning: removed {project / '.venv' / 'bin' / 'plainagent'}, which MCP tool "
        "files__write made: a plainagent in a folder of PATH would run in place of the agent"
    ) in result.stderr


def installed_elsewhere(home: Path, kind: str) -> Path:
    """A plainagent installed in the home folder apart from the agent that runs: by pipx (a venv of
    its own, ~/.local/bin/plainagent a link to its script) or pip --user (the script runs a Python
    that is no venv, and imports from the user site-packages); the site-packages it imports from."""
    (home / ".local" / "bin").mkdir(parents=True)
    if kind == "pipx":
        venv = home / ".local" / "share" / "pipx" / "venvs" / "plainagent"
        (venv / "bin").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.base_prefix) / 'bin'}\n")
        (venv / "bin" / "python").symlink_to(sys.executable)
        script, python = venv / "bin" / "plainagent", venv / "bin" / "python"
        (home / ".local" / "bin" / "plainagent").symlink_to(script)
        packages = venv / "lib" / "python3.11" / "site-packages"
    else:
        script, python = (
            home / ".local" / "bin" / "plainagent",
            Path(sys.base_prefix) / "bin" / "python3",
        )
        packages = home / ".local" / "lib" / "python3.11" / "site-packages"
    packages.mkdir(parents=True)
    (packages / "harness.py").write_text("def main(): print('the real agent')\n")
    script.write_text(f"#!{python}\nimport sys\nfrom harness import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return packages


@needs_landlock
@pytest.mark.parametrize("kind", ["pipx", "user"])
def test_no_command_or_file_tool_changes_the_code_the_installed_launcher_runs(model, home, kind):
    # The agent runs from its clone; the plainagent the person types runs another installation's
    # code, outside the sandbox and with the key, at its next start
    packages = installed_elsewhere(home, kind)
    where = packages.relative_to(home)
    model.queue(
        calls(
            ("run_shell", {"command": f"echo 'import os' > {where}/planted.pth"}),
            ("run_shell", {"command": f"echo 'main = print' >> {where}/harness.py"}),
            ("write_file", {"path": f"{where}/sitecustomize.py", "content": "import os\n"}),
        ),
        answer("done"),
    )

    result = run_script("harness.py", "plant it", "--yes", "--no-transcript", cwd=home)

    assert result.returncode == 0, result.stderr
    pth, harness, written = [m["content"] for m in model.messages(1)[-3:]]
    assert pth.startswith("exit code: 2") and "planted.pth: Permission denied" in pth
    assert harness.startswith("exit code: 2") and "harness.py: Permission denied" in harness
    assert written.startswith("error: PermissionError: ") and "plainagent, the program" in written
    assert sorted(p.name for p in packages.iterdir()) == ["harness.py"]
    assert (packages / "harness.py").read_text() == "def main(): print('the real agent')\n"


def test_the_installation_of_a_launcher_whose_python_has_a_space_in_its_path_is_found(
    tmp_path, monkeypatch
):
    # pip writes such a script as a shell script that execs its Python
    venv = tmp_path / "my tools" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.base_prefix) / 'bin'}\n")
    (venv / "bin" / "python").symlink_to(sys.executable)
    script = venv / "bin" / "plainagent"
    script.write_text(
        f"#!/bin/sh\n'''exec' \"{venv / 'bin' / 'python'}\" \"$0\" \"$@\"\n' '''\nimport harness\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")

    assert ownfiles.real(venv) in ownfiles.launcher_installations()


def test_a_python_a_command_puts_first_on_path_in_the_workspace_is_removed(model, project):
    # `python3 harness.py` would run it, outside the sandbox, with the .env beside harness.py
    plant = f"mkdir -p bin && {PLANT.format('bin/python3')} && touch bin/other-tool"
    model.queue(calls(("run_shell", {"command": plant})), answer("done"))

    result = run_script("harness.py", "install it", "--yes", "--no-transcript", cwd=project)

    assert result.returncode == 0, result.stderr
    assert not (project / "bin" / "python3").exists() and (project / "bin" / "other-tool").exists()
    assert model.messages(1)[-1]["content"].endswith(
        "\nnote: bin/python3 was removed: nothing the agent runs may put a file of that name in a "
        "folder of PATH, where it would run in place of the agent (python3 harness.py) at its "
        "next start"
    )
    assert (
        f"warning: removed {project / 'bin' / 'python3'}, which a command made: a python3 in a "
        "folder of PATH would run in place of the agent the next time you type python3 harness.py"
    ) in result.stderr


def test_the_python_of_the_projects_activated_venv_made_anew_stays(model, project):
    python = project / ".venv" / "bin" / "python3"
    python.symlink_to(sys.executable)
    again = f"rm .venv/bin/python3 && ln -s {sys.executable} .venv/bin/python3"
    model.queue(calls(("run_shell", {"command": again})), answer("done"))

    result = run_script("harness.py", "make it again", "--yes", "--no-transcript", cwd=project)

    assert result.returncode == 0, result.stderr
    assert python.is_symlink() and "warning: removed" not in result.stderr
