"""Git without surprises: the repository's filter drivers are read from its config files
(no program runs to find them), and a repository whose .git lends git another
repository's files makes git ask."""

import json
import os
import subprocess

import pytest
from fake_model import answer, calls
from helpers import git, posix_only

import harness
from plainagent.shell import allowlist, gitguard


def test_filter_drivers_are_read_from_the_config_files_in_every_spelling(tmp_path, in_a_run):
    (tmp_path / ".git").mkdir()
    # counted too: turning off a name git lacks is harmless
    (tmp_path / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[filter "lfs"]\n\tclean = x\n[Filter.Old]\n\tsmudge = y\n'
        '[filter "a\\"b"] clean = same-line\n[FILTER  "Case.Kept"]\n'
        '[alias]\n\tx = !echo [filter "in-a-value"]\n'
    )
    (tmp_path / ".git" / "config.worktree").write_text('[filter "worktree"]\n\tprocess = z\n')

    assert gitguard.repository_filters(in_a_run) == {
        "lfs",
        "old",
        'a"b',
        "Case.Kept",
        "in-a-value",
        "worktree",
    }
    assert allowlist.reason_to_ask("git status", in_a_run) is None


@pytest.mark.parametrize(
    "section",
    [
        "[include]\n\tpath = /elsewhere/config",
        '[includeIf "gitdir:/x/"]\n\tpath = c',
        '[core]\n\tbare = false\n[IncludeIf "onbranch:main"]',
    ],
)
def test_a_config_that_includes_other_files_makes_git_ask(tmp_path, in_a_run, section):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(section + "\n")

    assert (
        allowlist.reason_to_ask("git status", in_a_run)
        == "the repository's config includes other files (include, includeIf)"
    )
    assert allowlist.reason_to_ask("ls", in_a_run) is None


@posix_only
def test_a_config_that_is_not_a_regular_file_makes_git_ask(tmp_path, in_a_run):
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / ".git" / "config")  # reading it must not wait

    assert "not a regular file" in allowlist.reason_to_ask("git log", in_a_run)


@posix_only
@pytest.mark.parametrize(
    "entry",
    [
        "objects",
        "refs",
        "HEAD",
        "packed-refs",
        "config",
        "info",
        "index",
        "objects/pack",
        "refs/heads/main",
        "objects/info/http-alternates",
    ],
)
def test_a_link_in_dot_git_makes_git_ask(tmp_path, monkeypatch, as_a_run, entry):
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    for folder in (outside, ws):
        folder.mkdir()
        git("init", "-q", cwd=folder)
        (folder / "f.txt").write_text("f\n")
        git("add", "f.txt", cwd=folder)
        git("commit", "-qm", "f", cwd=folder)
        git("pack-refs", "--all", cwd=folder)
    target = ws / ".git" / entry
    if entry == "objects/info/http-alternates":
        target.write_text("https://example.com/objects\n")
    else:
        subprocess.run(["rm", "-rf", str(target)], check=True)
        target.symlink_to(outside / ".git" / entry)
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    config = as_a_run()

    reason = allowlist.reason_to_ask("git log -p", config)

    assert reason is not None and (
        f".git/{entry} in the repository is a link" in reason or "borrows" in reason
    )
    assert allowlist.reason_to_ask("cat f.txt", config) is None


@posix_only
def test_without_the_sandbox_git_log_asks_before_reading_objects_linked_from_another_repository(
    model, tmp_path, monkeypatch
):
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    for folder in (outside, ws):
        folder.mkdir()
        git("init", "-q", cwd=folder)
    (outside / "secret.txt").write_text("OTHER-REPO-SECRET-4417\n")
    git("add", "secret.txt", cwd=outside)
    git("commit", "-qm", "secret", cwd=outside)
    for entry in ("objects", "refs"):
        subprocess.run(["rm", "-rf", str(ws / ".git" / entry)], check=True)
        (ws / ".git" / entry).symlink_to(outside / ".git" / entry)
    shown = subprocess.run(["git", "log", "-p"], cwd=ws, capture_output=True, text=True).stdout
    assert "OTHER-REPO-SECRET-4417" in shown  # a plain git reads the other repository
    monkeypatch.chdir(ws)
    model.queue(calls(("run_shell", {"command": "git log -p"})), answer("done"))

    assert harness.run("show the history", sandbox="off") == "done"

    assert model.messages(1)[-1]["content"].startswith("denied: nobody is at a terminal")
    assert "OTHER-REPO-SECRET-4417" not in json.dumps(model.requests)
