"""Which program a command that runs without asking really starts: the allowlist's programs
are found outside the workspace, whatever PATH says first; programs the person trusts are
found as their own shell would."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import needs_landlock, results

import harness
from plainagent.core.settings import resolve
from plainagent.shell import allowlist
from plainagent.shell.words import parse

pytestmark = pytest.mark.skipif(
    sys.platform == "win32", reason="POSIX shell scripts planted on PATH"
)


def plant(path: Path, marker: Path, output: str = "") -> None:
    """An executable that leaves a marker when it runs (and prints output)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\necho "{output}"\n')
    path.chmod(0o755)


def test_git_status_and_ls_run_the_real_programs_when_a_workspace_venv_comes_first_on_path(
    model, tmp_path, monkeypatch
):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "notes.txt").write_text("hello\n")
    # outside the workspace: ls must not list it
    marker = tmp_path.parent / f"{tmp_path.name}-PLANTED-RAN"
    plant(tmp_path / ".venv" / "bin" / "git", marker, "PLANTED GIT")
    plant(tmp_path / "bin" / "ls", marker, "PLANTED LS")
    # an activated venv, and worse
    monkeypatch.setenv("PATH", f"{tmp_path}/.venv/bin:bin::.:{os.environ['PATH']}")
    # so a planted program could leave its marker, were it run
    monkeypatch.setenv("AGENT_SANDBOX", "off")
    model.queue(
        calls(("run_shell", {"command": "git status"}), ("run_shell", {"command": "ls"})),
        answer("done"),
    )

    assert harness.run("look") == "done"

    status, listing = results(model, 1, 2)
    assert not marker.exists(), marker.read_text()
    assert (
        status.startswith("exit code: 0") and "No commits yet" in status and "PLANTED" not in status
    )
    assert (
        listing.startswith("exit code: 0") and "notes.txt" in listing and "PLANTED" not in listing
    )


def test_a_trusted_program_is_found_on_the_full_path_and_the_allowlisted_one_beside_it_outside(
    model, tmp_path, monkeypatch
):
    marker = tmp_path.parent / f"{tmp_path.name}-PLANTED-RAN"
    plant(tmp_path / "bin" / "ls", marker, "PLANTED LS")
    # what the person chose
    plant(tmp_path / "bin" / "projecttool", tmp_path / "tool-ran", "THE PROJECT'S TOOL")
    (tmp_path / "notes.txt").write_text("hello\n")
    monkeypatch.setenv("PATH", f"{tmp_path}/bin:{os.environ['PATH']}")
    monkeypatch.setenv("AGENT_SANDBOX", "off")
    model.queue(calls(("run_shell", {"command": "ls && projecttool"})), answer("done"))

    assert harness.run("look", allow=["projecttool"]) == "done"

    [result] = results(model, 1, 1)
    assert not marker.exists() and (tmp_path / "tool-ran").exists()
    assert (
        result.startswith("exit code: 0")
        and "notes.txt" in result
        and "THE PROJECT'S TOOL" in result
    )


def test_the_path_for_unasked_commands_leaves_out_the_workspace_and_relative_entries(
    tmp_path, monkeypatch, in_a_run
):
    (tmp_path / "inside").mkdir()
    link = tmp_path.parent / f"{tmp_path.name}-link-in"
    link.symlink_to(tmp_path / "inside")
    path = os.pathsep.join(
        ["/usr/bin", "", ".", "bin", str(tmp_path), f"{tmp_path}/inside", str(link), "/bin"]
    )

    assert allowlist.outside_path(path, in_a_run.workspace) == "/usr/bin:/bin"


def test_an_allowlisted_program_that_path_finds_as_a_link_into_the_workspace_asks(
    tmp_path, monkeypatch
):
    from plainagent.core import settings

    ws, outside = tmp_path / "ws", tmp_path / "outside-bin"
    outside.mkdir()
    plant(ws / "tools" / "cat", tmp_path / "marker")
    (outside / "cat").symlink_to(ws / "tools" / "cat")
    monkeypatch.setenv("PATH", f"{outside}:{os.environ['PATH']}")
    monkeypatch.chdir(ws)

    config = settings.resolve(require_key=False)
    assert (
        allowlist.reason_to_ask("cat notes.txt", config)
        == "the cat found on PATH is a link into the workspace"
    )
    assert allowlist.reason_to_ask("ls", config) is None


def test_beside_a_trusted_program_an_allowlisted_one_found_nowhere_outside_asks(
    tmp_path, monkeypatch, as_a_run
):
    plant(tmp_path / "bin" / "tree", tmp_path / "marker")
    monkeypatch.setenv("PATH", f"{tmp_path}/bin:/nonexistent")
    monkeypatch.chdir(tmp_path)
    config = as_a_run(allow=["make"])

    assert (
        allowlist.reason_to_ask("tree && make", config)
        == "no tree is found on PATH outside the workspace"
    )
    # alone it runs on a PATH where the shell finds no tree at all
    assert allowlist.reason_to_ask("tree", config) is None
    unasked = allowlist.unasked_environment({}, parse("tree"), ["make"], config)
    assert unasked["PATH"] == "/nonexistent"


def test_a_path_with_nothing_outside_the_workspace_finds_no_program_in_it(
    model, tmp_path, monkeypatch
):
    marker = tmp_path.parent / f"{tmp_path.name}-PLANTED-RAN"
    # sh reads an empty PATH as the working folder: the workspace
    plant(tmp_path / "ls", marker, "PLANTED LS")
    monkeypatch.setenv("PATH", f"{tmp_path}/bin:.")
    monkeypatch.setenv("AGENT_SANDBOX", "off")
    model.queue(calls(("run_shell", {"command": "ls"})), answer("done"))

    assert harness.run("look") == "done"

    [result] = results(model, 1, 1)
    assert (
        not marker.exists() and "PLANTED" not in result and not result.startswith("exit code: 0")
    ), result


def test_a_command_beside_a_program_allowed_always_asks_again(model, tmp_path, monkeypatch, capsys):
    # It would run as an approved command, on the full PATH: the workspace's bin/ls in place of ls.
    from helpers import Typed

    marker = tmp_path.parent / f"{tmp_path.name}-PLANTED-RAN"
    plant(tmp_path / "bin" / "ls", marker, "PLANTED LS")
    monkeypatch.setenv("PATH", f"{tmp_path}/bin:{os.environ['PATH']}")
    monkeypatch.setenv("AGENT_SANDBOX", "off")
    monkeypatch.setattr(sys, "stdin", Typed("a\nn\n\n"))  # 'always' for touch, then no
    # 'always' covers touch with other files of the workspace
    for name in (
        "y.txt",
        "w.txt",
        "v.txt",
    ):
        (tmp_path / name).write_text(name)
    model.queue(
        calls(
            ("run_shell", {"command": "touch y.txt"}),
            ("run_shell", {"command": "ls && touch z.txt"}),
            ("run_shell", {"command": "touch w.txt && touch v.txt"}),
        ),
        answer("done"),
    )

    assert harness.run("look") == "done"

    assert results(model, 1, 3) == ["exit code: 0", "denied by the user", "exit code: 0"]
    assert capsys.readouterr().err.count("run_shell wants to run:") == 2
    assert not marker.exists() and not (tmp_path / "z.txt").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's dynamic loader")
def test_the_loader_finds_no_library_in_the_workspace_for_an_unasked_command(
    model, tmp_path, monkeypatch
):
    # As with PATH, the loader reads an empty LD_LIBRARY_PATH entry (a common
    # `$LD_LIBRARY_PATH:/opt/lib` when it was unset) as the working folder, and LD_PRELOAD a
    # relative path from it: a planted libc.so.6 would run in ls.
    (tmp_path / "libc.so.6").write_text(
        "not a library: the loader says 'file too short' if it opens this\n"
    )
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "preload.so").write_text("not a library either\n")
    monkeypatch.setenv("LD_LIBRARY_PATH", f":/usr/local/lib:lib:{tmp_path}")
    monkeypatch.setenv("LD_PRELOAD", f"lib/preload.so {tmp_path}/lib/preload.so")
    monkeypatch.setenv("LD_AUDIT", "lib/preload.so")
    model.queue(calls(("run_shell", {"command": "ls"})), answer("done"))

    assert harness.run("look") == "done"

    [result] = results(model, 1, 1)
    assert (
        result.startswith("exit code: 0") and "libc.so.6" in result and "too short" not in result
    ), result


@pytest.mark.parametrize("separator", [" ", ":", ";", "  "])
def test_a_loader_list_is_checked_entry_by_entry_however_it_is_split(in_a_run, separator):
    # glibc splits LD_PRELOAD at spaces, colons and semicolons: a library outside first must not
    # carry one from the workspace through with it.
    planted = f"{in_a_run.workspace}/evil.so"
    inherited = {
        "PATH": "/usr/bin:/bin",
        "LD_PRELOAD": f"/usr/lib/libfine.so{separator}{planted}",
        "LD_LIBRARY_PATH": f"/usr/local/lib{separator}{in_a_run.workspace}",
    }

    unasked = allowlist.unasked_environment(inherited, parse("ls -la"), (), in_a_run)

    assert unasked["LD_PRELOAD"] == "/usr/lib/libfine.so"
    assert unasked["LD_LIBRARY_PATH"] == "/usr/local/lib"


def test_an_unasked_command_gets_only_the_variables_its_programs_need(in_a_run, monkeypatch):
    # Any other variable could point a read-only program at code or data in the workspace:
    # GCONV_PATH (iconv modules, loaded by git log on a commit with an encoding), LOCPATH, a plugin
    # path nobody here has heard of.
    inherited = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm",
        "LC_MESSAGES": "../../workspace/locale",
        "LANGUAGE": "./x",
        "GCONV_PATH": ".",
        "LOCPATH": ".",
        "SOME_TOOL_PLUGIN_PATH": ".",
        "DYLD_INSERT_LIBRARIES": "./x.dylib",
        "TMPDIR": "/tmp/private",
    }

    unasked = allowlist.unasked_environment(inherited, parse("ls -la"), (), in_a_run)
    trusting = allowlist.unasked_environment(inherited, parse("ls && make"), ("make",), in_a_run)

    assert sorted(unasked) == ["HOME", "LANG", "LC_ALL", "PATH", "TERM", "TMPDIR"]
    assert unasked["LANG"] == "C.UTF-8" and unasked["HOME"] == "/home/me"
    # a program the person trusts gets their environment, as in their shell
    assert trusting.keys() == inherited.keys()


def test_an_unasked_command_reads_no_settings_from_a_home_folder_in_the_workspace(
    model, tmp_path, monkeypatch
):
    # The home folder as the workspace: file read a ~/.magic planted there, and said what it said.
    (tmp_path / ".magic").write_text("0 string HELLO planted magic\n")
    (tmp_path / "t.txt").write_text("HELLO\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TZ", f":{tmp_path}/zone")
    model.queue(calls(("run_shell", {"command": "file t.txt"})), answer("done"))

    assert harness.run("look", workspace=tmp_path) == "done"

    [result] = results(model, 1, 1)
    assert result.startswith("exit code: 0") and "t.txt: " in result and "planted" not in result, (
        result
    )
    config = resolve(require_key=False, workspace=tmp_path)
    unasked = allowlist.unasked_environment(
        {"HOME": str(tmp_path), "TZ": f":{tmp_path}/zone"}, parse("ls"), (), config
    )
    elsewhere = allowlist.unasked_environment(
        {"HOME": "/home/me", "TZ": ":Europe/Paris"}, parse("ls"), (), config
    )
    assert "HOME" not in unasked and "TZ" not in unasked
    assert (elsewhere["HOME"], elsewhere["TZ"]) == ("/home/me", ":Europe/Paris")


def test_started_outside_the_workspace_a_relative_path_entry_never_reaches_an_unasked_command(
    model, tmp_path, monkeypatch
):
    # The agent's working folder has no bin/; the shell, in the workspace, reads the
    # relative entry from there.
    ws, marker = tmp_path / "ws", tmp_path / "PLANTED-RAN"
    plant(ws / "bin" / "ls", marker, "PLANTED LS")
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", f"bin:{os.environ['PATH']}")
    # so a planted program could leave its marker, were it run
    monkeypatch.setenv("AGENT_SANDBOX", "off")
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    model.queue(calls(("run_shell", {"command": "ls"})), answer("done"))

    assert harness.run("look") == "done"

    [listing] = results(model, 1, 1)
    assert not marker.exists() and listing.startswith("exit code: 0") and "PLANTED" not in listing
    assert allowlist.outside_path(f"bin:lib:{tmp_path}/bin", ws) == f"{tmp_path}/bin"


def test_from_outside_the_workspace_a_relative_library_path_entry_never_reaches_an_unasked_command(
    tmp_path, monkeypatch
):
    ws = tmp_path / "ws"
    (ws / "lib").mkdir(parents=True)
    (tmp_path / "lib").mkdir()  # where the agent is: the relative entry names a folder there too
    monkeypatch.chdir(tmp_path)
    config = resolve(workspace=str(ws), require_key=False)
    env = {"PATH": os.environ["PATH"], "LD_LIBRARY_PATH": f"lib:{tmp_path}/lib:./lib"}

    unasked = allowlist.unasked_environment(env, parse("ls"), [], config)

    assert unasked.get("LD_LIBRARY_PATH") == f"{tmp_path}/lib"


@needs_landlock
def test_an_unasked_read_only_command_changes_no_files_metadata_whatever_program_path_finds(
    model, tmp_path, monkeypatch
):
    # The person's PATH finds an `ls` among pyenv's shims (a folder a sandboxed command may
    # run programs from) that chmods and retimes: Landlock refuses neither, so the read-only
    # mode's system-call filter must.
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("mine\n")
    os.chmod(workspace / "a.txt", 0o644)
    os.utime(workspace / "a.txt", (1_000_000_000, 1_000_000_000))
    pyenv = tmp_path / "pyenv"
    (pyenv / "libexec").mkdir(parents=True)
    (pyenv / "libexec" / "pyenv").write_text("#!/bin/sh\n")
    (pyenv / "shims").mkdir()
    (pyenv / "shims" / "ls").write_text("#!/bin/sh\necho tried; chmod 600 a.txt; touch a.txt\n")
    (pyenv / "shims" / "ls").chmod(0o755)
    monkeypatch.setenv("PATH", f"{pyenv}/shims:{os.environ['PATH']}")
    model.queue(calls(("run_shell", {"command": "ls"})), answer("done"))

    assert harness.run("look", workspace=workspace) == "done"

    [result] = results(model, 1, 1)
    assert "tried" in result and "Operation not permitted" in result, result
    assert os.stat(workspace / "a.txt").st_mode & 0o777 == 0o644
    assert os.stat(workspace / "a.txt").st_mtime == 1_000_000_000
