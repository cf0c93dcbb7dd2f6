"""The runs/ folder the agent makes for its transcripts stays out of git: it holds a .gitignore of `*`."""

import shutil
import subprocess

import pytest

from fake_model import answer

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git")


@needs_git
def test_a_git_workspace_shows_no_runs_folder_in_git_status(model, cli, tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    model.queue(answer("done"))

    assert cli("say done").returncode == 0

    assert list((tmp_path / "runs").glob("*.jsonl"))  # the transcript was written
    assert (tmp_path / "runs" / ".gitignore").read_text() == "*\n"
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert status.stdout == ""


def test_a_runs_folder_made_by_someone_else_is_left_as_it_is(model, cli, tmp_path):
    (tmp_path / "runs").mkdir()
    model.queue(answer("done"))

    assert cli("say done").returncode == 0

    assert not (tmp_path / "runs" / ".gitignore").exists()
