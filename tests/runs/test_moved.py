"""A project that moved: its runs are kept under its old path, so --runs, --continue and --undo in
the new place say whose runs may be its own, and how to reach them; --moved-from OLD takes them, and
--undo then puts back the files of a run at their place in the new folder. Nothing is taken from
another folder unasked."""

import shutil

from fake_model import answer, calls


def a_run_that_changed_files(cli, project) -> None:
    """In project: a run that edited a.txt and created new.txt."""
    (project / "a.txt").write_text("before\n")
    assert cli("--yes", "--workspace", str(project), "change the files").returncode == 0


def test_a_moved_projects_runs_are_named_and_undone_in_the_new_place_when_asked(
    model, cli, tmp_path, monkeypatch
):
    old, new = tmp_path / "proj", tmp_path / "proj-moved"
    old.mkdir()
    model.queue(
        calls(("edit_file", {"path": "a.txt", "old_text": "before", "new_text": "after"})),
        calls(("write_file", {"path": "sub/new.txt", "content": "new\n"})),
        answer("changed"),
    )
    a_run_that_changed_files(cli, old)
    old.rename(new)
    monkeypatch.chdir(new)

    listed, undone = cli("--runs"), cli("--undo")

    assert listed.returncode == 0 and listed.stdout == ""
    assert listed.stderr.startswith(f"no run of {new} yet (its runs are kept in ")
    assert listed.stderr.endswith(
        f"; {old}, which is gone (moved here?), has runs: --runs --moved-from {old}\n"
    )
    assert undone.returncode == 2
    assert undone.stderr.endswith(f"has runs: --undo --moved-from {old}\n"), undone.stderr
    assert (new / "a.txt").read_text() == "after\n"

    listed = cli("--runs", "--moved-from", str(old))
    undone = cli("--undo", "--moved-from", str(old))

    assert listed.stdout.rstrip().endswith("changed files  change the files"), listed.stderr
    assert f"--undo --run N --moved-from {old}" in listed.stderr
    assert (undone.returncode, undone.stdout) == (
        0,
        "restored a.txt\nremoved sub/new.txt (the run created it)\n",
    ), undone.stderr
    assert (new / "a.txt").read_text() == "before\n"
    assert not (new / "sub").exists()
    assert "undone" in cli("--runs", "--moved-from", str(old)).stdout


def test_a_moved_projects_conversation_goes_on_in_the_new_place(model, cli, tmp_path, monkeypatch):
    old, new = tmp_path / "proj", tmp_path / "elsewhere" / "proj"
    old.mkdir()
    model.queue(answer("first"), answer("second"))
    assert cli("--workspace", str(old), "remember 7").returncode == 0
    new.parent.mkdir()
    old.rename(new)
    monkeypatch.chdir(new)

    nothing = cli("--continue", "what was it?")
    went_on = cli("--continue", "--moved-from", str(old), "what was it?")

    assert nothing.returncode == 2 and f"has runs: --continue --moved-from {old}" in nothing.stderr
    assert went_on.returncode == 0, went_on.stderr
    assert [m["content"] for m in model.messages(1) if m["role"] == "user"] == [
        "remember 7",
        "what was it?",
    ]
    assert str(new) in model.messages(1)[0]["content"]  # the system prompt names the new place


def test_runs_of_a_folder_of_the_same_name_elsewhere_are_named_not_taken(
    model, cli, tmp_path, monkeypatch
):
    theirs, mine = tmp_path / "a" / "proj", tmp_path / "b" / "proj"
    theirs.mkdir(parents=True)
    mine.mkdir(parents=True)
    model.queue(answer("theirs"))
    assert cli("--workspace", str(theirs), "look").returncode == 0
    monkeypatch.chdir(mine)

    result = cli("--undo")
    refused = cli("--undo", "--moved-from", str(theirs))

    assert result.returncode == 2
    assert result.stderr.endswith(
        f"; {theirs}, a folder of the same name, has runs: --undo --workspace {theirs}\n"
    )
    assert refused.returncode == 2
    assert refused.stderr == (
        f"error: --moved-from {theirs}: {theirs} is still there, and its runs are its own: take "
        f"them there, or with --workspace {theirs}\n"
    )


def test_a_folder_gone_that_was_not_beside_it_nor_of_its_name_is_not_named(
    model, cli, tmp_path, monkeypatch
):
    other, mine = tmp_path / "x" / "other", tmp_path / "y" / "mine"
    other.mkdir(parents=True)
    mine.mkdir(parents=True)
    model.queue(answer("ok"))
    assert cli("--workspace", str(other), "look").returncode == 0
    shutil.rmtree(other)
    monkeypatch.chdir(mine)

    result = cli("--runs")

    assert result.stderr.startswith(f"no run of {mine} yet (its runs are kept in ")
    assert "has runs" not in result.stderr
