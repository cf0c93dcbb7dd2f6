"""What 'always' remembers of a command (shapes.py): its program and words, a run of the workspace's paths as one
stand-in, options as themselves."""

from plainagent.shell.shapes import WORKSPACE_PATHS, command_shapes


def test_a_run_of_workspace_paths_becomes_one_stand_in_and_each_run_keeps_its_place(tmp_path, in_a_run):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()

    assert command_shapes("rm -f a.txt b.txt sub", in_a_run) == {("rm", "-f", WORKSPACE_PATHS)}
    assert command_shapes("cp a.txt -t sub", in_a_run) == {("cp", WORKSPACE_PATHS, "-t", WORKSPACE_PATHS)}
    assert command_shapes("rm -f", in_a_run) == {("rm", "-f")}


def test_an_option_stays_itself_even_where_a_file_has_its_name(tmp_path, in_a_run):
    (tmp_path / "-rf").write_text("")
    (tmp_path / "a.txt").write_text("")

    assert command_shapes("rm -rf a.txt", in_a_run) == {("rm", "-rf", WORKSPACE_PATHS)}
