"""git hardening (gitguard.py): no repository, config, hook, filter or program
outside the workspace's control."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import git, posix_only, results, run_script

import tools
from plainagent.shell import allowlist, gitguard, words


@posix_only
def test_a_repository_that_sets_signature_programs_and_formats_runs_nothing(
    tmp_path, monkeypatch, as_a_run
):
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "MARKER"
    (tmp_path / "evil.sh").write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    (tmp_path / "evil.sh").chmod(0o755)
    git("init", "-q", cwd=ws)
    (ws / "f.txt").write_text("a\n")
    git("add", "f.txt", cwd=ws)
    tree = git("write-tree", cwd=ws).strip()
    signed = (
        f"tree {tree}\nauthor t <t@t> 0 +0000\ncommitter t <t@t> 0 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    commit = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=ws,
        input=signed,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git("update-ref", "HEAD", commit, cwd=ws)
    for key, value in (
        ("gpg.program", str(tmp_path / "evil.sh")),
        ("format.pretty", "%G?"),
        ("pretty.x", "%G? %s"),
        ("core.sshCommand", str(tmp_path / "evil.sh")),
    ):
        git("config", key, value, cwd=ws)
    subprocess.run(["git", "log", "-n1"], cwd=ws, capture_output=True)
    assert marker.exists()  # a plain git runs the repository's program
    marker.unlink()
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    config = as_a_run()

    results = [
        tools.run_shell(command, settings=config)
        for command in ("git log -n1", "git show", "git log --format=x:y.z")
    ]

    assert not marker.exists(), results
    assert results[0].startswith("exit code: 0") and "signed" in results[0]


@posix_only
def test_git_reads_no_repository_outside_the_workspace_and_runs_no_hook_even_without_the_sandbox(
    tmp_path, monkeypatch, as_a_run
):
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    for folder in (outside, ws):
        folder.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    (outside / "secret.txt").write_text("REPO SECRET\n")
    (ws / "a.txt").write_text("a\n")
    git("add", "a.txt", cwd=ws)
    git("commit", "-qm", "a", cwd=ws)
    hook = ws / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/HOOK_RAN\n")
    hook.chmod(0o755)
    git("config", "core.worktree", str(outside), cwd=ws)
    # stale stat data: git diff would refresh the index and fire the hook
    os.utime(ws / "a.txt", (1, 1))
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    monkeypatch.setenv("AGENT_SANDBOX", "off")  # the allowlist's own layer, as on macOS or Windows
    config = as_a_run()

    results = [
        tools.run_shell(command, settings=config)
        for command in ("git diff", "git status", "git diff --stat")
    ]

    assert not (tmp_path / "HOOK_RAN").exists()
    assert not any("REPO SECRET" in result or "secret.txt" in result for result in results), results
    (ws / ".git" / "objects" / "info" / "alternates").write_text(
        str(outside / ".git" / "objects") + "\n"
    )
    assert "borrows objects" in allowlist.reason_to_ask("git log", config)


@posix_only
def test_a_dot_git_file_pointing_elsewhere_makes_git_ask(tmp_path, monkeypatch, as_a_run):
    (tmp_path / ".git").write_text("gitdir: /somewhere/else/.git\n")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path))
    config = as_a_run()
    assert "is not a folder of its own" in allowlist.reason_to_ask("git log -p", config)
    assert allowlist.reason_to_ask("ls", config) is None


def use_environment(monkeypatch, env: dict) -> None:
    """Make os.environ exactly `env`, as the harness would hand it to a command."""
    for name in list(os.environ):
        if name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("sandbox", ["off", "auto"])  # off: git's own settings alone must hold
def test_git_never_uses_a_repository_above_the_workspace(tmp_path, monkeypatch, as_a_run, sandbox):
    (tmp_path / "outer.txt").write_text("outer")
    git("init", "-q", cwd=tmp_path)
    git("add", "outer.txt", cwd=tmp_path)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "untracked-inner.txt").write_text("inner")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    config = as_a_run(sandbox=sandbox)
    use_environment(monkeypatch, gitguard.git_environment(config, dict(os.environ)))

    result = tools.run_shell(allowlist.prepare(words.parse("git status"), config), settings=config)

    assert "not a git repository" in result and "outer" not in result and "inner" not in result


@posix_only
@pytest.mark.parametrize("sandbox", ["off", "auto"])  # off: git's own settings alone must hold
def test_a_hostile_repository_config_runs_nothing_and_git_status_leaves_the_index_alone(
    tmp_path, monkeypatch, sandbox, as_a_run
):
    monkeypatch.setenv("AGENT_SANDBOX", sandbox)
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "evil.sh").write_text(f'#!/bin/sh\ntouch "{tmp_path}/MARKER-$1"\ncat\n')
    (tmp_path / "evil.sh").chmod(0o755)
    (ws / "f.txt").write_text("a\n")
    (ws / ".gitattributes").write_text("*.txt diff=evil filter=evil\n")
    git("init", "-q", cwd=ws)
    git("add", "-A", cwd=ws)
    git("commit", "-qm", "first", cwd=ws)
    for key in (
        "core.fsmonitor",
        "diff.evil.textconv",
        "diff.evil.command",
        "filter.evil.clean",
        "filter.evil.process",
        "gpg.program",
    ):
        git("config", key, f"{tmp_path}/evil.sh {key.replace('.', '-')}", cwd=ws)
    git("config", "log.showSignature", "true", cwd=ws)
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    config = as_a_run()
    subprocess.run(["git", "status"], cwd=ws, capture_output=True, check=True)
    # the repository really is hostile to a plain git
    assert (tmp_path / "MARKER-core-fsmonitor").exists()
    for marker in tmp_path.glob("MARKER-*"):
        marker.unlink()

    (ws / "f.txt").write_text("a\nb\n")
    # stale stat data: a plain git status would refresh and rewrite the index
    os.utime(ws / "f.txt", (1, 1))
    index = (ws / ".git" / "index").stat().st_mtime_ns
    results = {}
    for command in (
        "git status",
        "git diff",
        "git log -p",
        "git show",
        "git diff --stat",
        "git log --stat",
    ):
        assert allowlist.reason_to_ask(command, config) is None
        # run_shell itself applies git_environment and prepare
        results[command] = tools.run_shell(command, settings=config)
        if command == "git status":
            assert (ws / ".git" / "index").stat().st_mtime_ns == index

    assert all(result.startswith("exit code: 0") for result in results.values()), results
    assert "+b" in results["git diff"] and "modified:   f.txt" in results["git status"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.sh", "ws"]


def a_repository_whose_text_files_name_a_filter(ws: Path, env) -> None:
    """ws made a git repository (git run with env) holding f.txt, committed, whose
    .gitattributes names the filter "evil" for *.txt; evil.sh there says FILTER-RAN: a config
    that defines the filter makes git run it."""
    ws.mkdir()
    (ws / "evil.sh").write_text("#!/bin/sh\ncat >/dev/null\necho FILTER-RAN\n")
    (ws / "evil.sh").chmod(0o755)
    (ws / "f.txt").write_text("a\n")
    (ws / ".gitattributes").write_text("*.txt filter=evil\n")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "1"],
    ):
        subprocess.run(["git", *args], cwd=ws, capture_output=True, check=True, env=env)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script as the filter")
def test_a_filter_defined_in_the_worktree_config_runs_on_no_read_only_git_command(
    tmp_path, monkeypatch, as_a_run
):
    import tools

    ws = tmp_path / "ws"
    # evil.sh in the workspace: the sandbox lets it run
    a_repository_whose_text_files_name_a_filter(ws, os.environ)
    git("config", "extensions.worktreeConfig", "true", cwd=ws)
    git("config", "--worktree", "filter.evil.clean", f"{ws}/evil.sh", cwd=ws)
    (ws / "f.txt").write_text("a\nb\n")
    assert "FILTER-RAN" in git("diff", cwd=ws)  # a plain git runs the worktree's filter
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    config = as_a_run()

    result = tools.run_shell("git diff", settings=config)

    assert result.startswith("exit code: 0") and "+b" in result and "FILTER-RAN" not in result


@posix_only
def test_a_dot_git_that_links_to_a_repository_elsewhere_makes_git_ask(
    tmp_path, monkeypatch, as_a_run
):
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    outside.mkdir()
    ws.mkdir()
    git("init", "-q", cwd=outside)
    # a folder, but not the workspace's own
    (ws / ".git").symlink_to(outside / ".git", target_is_directory=True)
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    config = as_a_run()

    assert "is not a folder of its own" in allowlist.reason_to_ask("git status", config)
    assert allowlist.reason_to_ask("ls", config) is None


@posix_only
@pytest.mark.parametrize("repository", [True, False], ids=["workspace-repository", "no-repository"])
def test_git_variables_in_the_agents_environment_never_reach_an_unasked_git(
    tmp_path, monkeypatch, as_a_run, repository
):
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    outside.mkdir()
    ws.mkdir()
    git("init", "-q", cwd=outside)
    (outside / "secret.txt").write_text("REPO SECRET\n")
    git("add", "secret.txt", cwd=outside)
    git("commit", "-qm", "secret", cwd=outside)
    if repository:
        git("init", "-q", cwd=ws)
    (ws / "new.txt").write_text("new\n")
    for name, value in {
        "GIT_DIR": str(outside / ".git"),
        "GIT_WORK_TREE": str(outside),
        "GIT_INDEX_FILE": str(outside / ".git" / "index"),
        "GIT_CONFIG_PARAMETERS": "'status.short'='true' 'core.pager'='touch PAGER-RAN'",
    }.items():
        # a person's shell, or whatever started the agent, exported these
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    # git's own environment must hold, not only the kernel
    monkeypatch.setenv("AGENT_SANDBOX", "off")
    config = as_a_run()
    assert allowlist.reason_to_ask("git status", config) is None

    result = tools.run_shell("git status", settings=config)

    # neither their repository nor their settings
    assert "secret.txt" not in result and "?? " not in result
    if repository:
        assert (
            result.startswith("exit code: 0")
            and "Untracked files:" in result
            and "new.txt" in result
        )
    else:
        assert "not a git repository" in result
    assert not list(tmp_path.rglob("PAGER-RAN"))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script as the filter")
@pytest.mark.parametrize("config", [".gitconfig", ".config/git/config"])
@pytest.mark.parametrize("allow, beside", [("", ""), ("true", " && true")])
def test_a_filter_in_the_global_config_runs_on_no_read_only_git_command_when_the_workspace_is_home(
    tmp_path, monkeypatch, as_a_run, config, allow, beside
):
    # With the home folder as the workspace, ~/.gitconfig is a file a command (or an
    # approved write) could make. Beside a program the person trusts (AGENT_ALLOW), the
    # command keeps their environment, HOME too.
    ws = tmp_path / "ws"
    a_repository_whose_text_files_name_a_filter(ws, os.environ)
    (ws / config).parent.mkdir(parents=True, exist_ok=True)
    (ws / config).write_text(f'[filter "evil"]\n\tclean = {ws}/evil.sh\n[user]\n\tname = me\n')
    (ws / "f.txt").write_text("a\nb\n")
    monkeypatch.setenv("HOME", str(ws))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert (
        "FILTER-RAN"
        in subprocess.run(["git", "diff"], cwd=ws, capture_output=True, text=True).stdout
    )
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    monkeypatch.setenv("AGENT_ALLOW", allow)
    config = as_a_run()

    results = [
        tools.run_shell(command + beside, settings=config)
        for command in ("git diff", "git status", "git log -n1")
    ]

    assert all(result.startswith("exit code: 0") for result in results), results
    assert (
        "+b" in results[0] and "FILTER-RAN" not in results[0] and "modified:   f.txt" in results[1]
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script as the filter")
@pytest.mark.parametrize("allow, beside", [("", ""), ("true", " && true")])
def test_a_filter_in_the_global_config_under_xdg_config_home_in_the_workspace_never_runs_unasked(
    tmp_path, monkeypatch, as_a_run, allow, beside
):
    # HOME elsewhere, XDG_CONFIG_HOME in the workspace: git reads
    # $XDG_CONFIG_HOME/git/config as its global config.
    ws, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    a_repository_whose_text_files_name_a_filter(ws, {**os.environ, "HOME": str(home)})
    (ws / ".config" / "git").mkdir(parents=True)
    (ws / ".config" / "git" / "config").write_text(f'[filter "evil"]\n\tclean = {ws}/evil.sh\n')
    (ws / "f.txt").write_text("a\nb\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(ws / ".config"))
    assert (
        "FILTER-RAN"
        in subprocess.run(["git", "diff"], cwd=ws, capture_output=True, text=True).stdout
    )
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    monkeypatch.setenv("AGENT_ALLOW", allow)
    config = as_a_run()

    result = tools.run_shell("git diff" + beside, settings=config)

    assert result.startswith("exit code: 0") and "+b" in result and "FILTER-RAN" not in result


@posix_only
def test_with_yes_an_allowlisted_git_status_still_runs_none_of_the_repositorys_programs(
    tmp_path, monkeypatch, as_a_run
):
    # --yes approves what would ask; a command that runs without asking keeps its
    # own, narrower way of running.
    ws = tmp_path / "ws"
    ws.mkdir()
    # where an approved command may write
    (ws / "evil.sh").write_text(f'#!/bin/sh\ntouch "{ws}/MARKER"\n')
    (ws / "evil.sh").chmod(0o755)
    git("init", "-q", cwd=ws)
    git("config", "core.fsmonitor", f"{ws}/evil.sh", cwd=ws)
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    config = as_a_run(approve_all=True)
    subprocess.run(["git", "status"], cwd=ws, capture_output=True, check=True)
    assert (ws / "MARKER").exists()  # the repository really is hostile to a plain git
    (ws / "MARKER").unlink()

    result = tools.run_shell("git status", settings=config)

    assert result.startswith("exit code: 0") and not (ws / "MARKER").exists(), result


def test_git_run_without_asking_can_reach_no_other_repository_for_objects(tmp_path, as_a_run):
    # A partial clone fetches what it lacks from its remote when it is read: no
    # transport, no lazy fetch.
    env = gitguard.git_environment(as_a_run(workspace=str(tmp_path)))

    assert (env["GIT_NO_LAZY_FETCH"], env["GIT_ALLOW_PROTOCOL"]) == ("1", "none")


@posix_only
def test_git_ls_files_reads_no_exclude_file_outside_the_workspace(model, tmp_path):
    """--exclude-per-directory=NAME is read in each folder git walks, as NAME joined to it: with
    ../ it is a file outside the workspace, whose lines then decide which names git lists. Without
    the kernel's sandbox, the allowlist is what keeps it from running unasked."""
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    outside.mkdir()
    (outside / "patterns").write_text("secret-line\n")
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / "secret-line").write_text("")
    command = "git ls-files -i -o --exclude-per-directory=../outside/patterns"
    model.queue(calls(("run_shell", {"command": command})), answer("done"))

    result = run_script("harness.py", "--sandbox", "off", "list", cwd=ws)

    assert result.returncode == 0, result.stderr
    [sent] = results(model, 1)
    assert sent.startswith("denied: nobody is at a terminal"), sent
