"""Started in the wrong folder: a run in /, the home folder or a folder that holds the system's
programs says so at its start, in one note line, and so does a run in a subfolder of a git
repository, naming its top."""

import os
from pathlib import Path

import pytest
from fake_model import answer
from helpers import posix_only, run_script


def notes(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("note:")]


@posix_only
@pytest.mark.parametrize("folder", ["/", "/usr"])
def test_a_run_in_a_folder_that_holds_the_systems_programs_says_so(model, folder):
    model.queue(answer("ok"))

    # Started there, as a person would: the tests' own folders on the agent's path are in / too
    result = run_script("harness.py", "look", cwd=Path(folder))

    assert result.returncode == 0, result.stderr
    assert notes(result) == [
        f"note: the workspace {folder} holds the system's programs: a command that runs without "
        "asking finds none of them, and every file is in the model's reach; start the agent in "
        "your project's folder, or give --workspace DIR"
    ]


def test_a_run_in_the_home_folder_says_so(model, cli, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    model.queue(answer("ok"))

    result = cli("--workspace", str(home), "look")

    assert notes(result) == [
        f"note: the workspace is your home folder, {home}: every file in it is in the model's "
        "reach; start the agent in your project's folder, or give --workspace DIR"
    ]


def test_a_run_in_a_subfolder_of_a_git_repository_names_its_top(model, cli, tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "plain").mkdir()
    model.queue(answer("ok"), answer("ok"), answer("ok"))
    top = tmp_path / "repo"

    inside = cli("--workspace", str(top / "src" / "pkg"), "look")
    at_the_top = cli("--workspace", str(top), "look")
    elsewhere = cli("--workspace", str(tmp_path / "plain"), "look")

    assert notes(inside) == [
        f"note: {top / 'src' / 'pkg'} is a subfolder of the git repository {top}: to work on the "
        f"whole project, start the agent there (or give --workspace {top})"
    ]
    assert notes(at_the_top) == notes(elsewhere) == []


def test_a_repository_of_the_home_folder_is_no_project_to_point_at(
    model, cli, tmp_path, monkeypatch
):
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)  # a person's dotfiles
    (home / "code" / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    model.queue(answer("ok"))

    result = cli("--workspace", str(home / "code" / "proj"), "look", "--quiet")
    said = cli("--workspace", str(home / "code" / "proj"), "--runs")

    assert result.stderr == "" and notes(said) == []
    assert os.path.isdir(home / "code" / "proj")
