"""What 'always' remembers of a command (shapes.py): its program and words, a run of the workspace's paths as one
stand-in, options as themselves."""

import os

from plainagent.shell.shapes import WORKSPACE_PATHS, command_shapes
from helpers import posix_only


def test_a_run_of_workspace_paths_becomes_one_stand_in_and_each_run_keeps_its_place(tmp_path, in_a_run):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()

    assert command_shapes("rm -f a.txt b.txt sub", in_a_run) == {("rm", "-f", WORKSPACE_PATHS)}
    assert command_shapes("cp a.txt -t sub", in_a_run) == {("cp", WORKSPACE_PATHS, "-t", WORKSPACE_PATHS)}
    assert command_shapes("rm -f", in_a_run) == {("rm", "-f")}



def test_a_redirection_to_dev_null_is_no_part_of_a_commands_shape(tmp_path, in_a_run):
    # It changes nothing: 'always' for `make 2>/dev/null` covers `make`, and the other way round.
    assert command_shapes("make test 2>/dev/null", in_a_run) == command_shapes("make test", in_a_run) == {
        ("make", "test")}
    assert command_shapes("make >/dev/null 2>&1", in_a_run) == {("make",)}

def test_an_option_stays_itself_even_where_a_file_has_its_name(tmp_path, in_a_run):
    (tmp_path / "-rf").write_text("")
    (tmp_path / "a.txt").write_text("")

    assert command_shapes("rm -rf a.txt", in_a_run) == {("rm", "-rf", WORKSPACE_PATHS)}


@posix_only
def test_a_word_through_a_link_that_loops_is_kept_as_given_and_breaks_no_question(tmp_path, in_a_run):
    # The prompt works out a command's shapes before it asks; a link the model made to loop must not end the run
    (tmp_path / "loop").symlink_to("loop")

    assert command_shapes("rm -f loop/x", in_a_run) == {("rm", "-f", "loop/x")}


@posix_only
def test_a_relative_path_entry_finds_programs_in_the_workspace_not_where_the_agent_started(
        tmp_path, monkeypatch, as_a_run):
    # An approved command runs in the workspace with the person's PATH: node_modules/.bin is the workspace's, so
    # `build` names that program there, even where a folder of the workspace has its name too
    workspace = tmp_path / "ws"
    (workspace / "build").mkdir(parents=True)
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    (workspace / "node_modules" / ".bin" / "build").write_text("#!/bin/sh\n")
    (workspace / "node_modules" / ".bin" / "build").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join(["node_modules/.bin", os.environ["PATH"]]))
    monkeypatch.chdir(tmp_path)
    config = as_a_run(workspace=str(workspace))

    assert command_shapes("timeout 60 build", config) == {("timeout", "60", "build")}


def test_the_dot_env_and_the_runs_folder_stay_themselves_so_always_for_a_file_never_covers_them(
        tmp_path, monkeypatch, as_a_run):
    # 'always' for `cat a.txt` must not cover `cat .env`, nor a command on the transcripts where the state folder is
    # inside the workspace: those words are not workspace paths a stand-in may take the place of
    for name in ("a.txt", ".env", ".Env"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    config = as_a_run()
    (config.protected[0] / "runs").mkdir(parents=True)

    assert command_shapes("cat a.txt", config) == {("cat", WORKSPACE_PATHS)}
    assert command_shapes("cat .env", config) == {("cat", ".env")}
    assert command_shapes("cat a.txt .Env", config) == {("cat", WORKSPACE_PATHS, ".Env")}
    state = str(config.protected[0].relative_to(tmp_path) / "runs")
    assert command_shapes(f"rm -r {state}", config) == {("rm", "-r", state)}
