"""Git without surprises (phase 2): the read-only git commands the allowlist lets run are pinned to the
workspace's own repository, and nothing in that repository's configuration may start a program, fetch, or
write its index."""

import os
import shutil
import subprocess
import typing
from pathlib import Path

# Inserted after the subcommand by prepare(): a repository's diff drivers, textconv and submodules run nothing.
GIT_SAFE_FLAGS = {"status": ["--ignore-submodules=all"], "diff": ["--no-ext-diff", "--no-textconv",
                  "--ignore-submodules=all"], "log": ["--no-ext-diff", "--no-textconv"],
                  "show": ["--no-ext-diff", "--no-textconv"]}
# Command-line-scope git config (beats the repository's own): nothing in .git/config may start a program.
GIT_CONFIG = {"core.fsmonitor": "false", "core.pager": "cat", "diff.submodule": "short",
              "status.submoduleSummary": "false", "log.showSignature": "false", "safe.bareRepository": "explicit",
              "diff.ignoreSubmodules": "all", "format.pretty": "medium", "protocol.allow": "never",
              "core.sshCommand": "false", "core.askPass": "false", "core.hooksPath": "/dev/null",
              "diff.autoRefreshIndex": "false",
              "gpg.program": "false", "gpg.ssh.program": "false", "gpg.x509.program": "false"}
# And in the environment, which beats any config: no transport (so no lazy fetch of a partial clone's objects).
GIT_ENVIRONMENT = {"GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1",
                   "GIT_ALLOW_PROTOCOL": "none", "GIT_SSH_COMMAND": "false", "GIT_ASKPASS": "false"}


def git_environment(root: Path, inherited: typing.Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a command that runs without asking: `inherited` without its GIT_* variables, plus
    git settings that keep git in the workspace (no repository above it) and stop the repository's own
    configuration from starting programs (fsmonitor, filters, signatures) or writing the index."""
    env = {k: v for k, v in (inherited or {}).items() if not k.upper().startswith("GIT_")}
    env |= {**GIT_ENVIRONMENT, "GIT_CEILING_DIRECTORIES": str(root.parent)}
    if (root / ".git").is_dir():  # the work tree is the workspace, whatever core.worktree says
        env |= {"GIT_DIR": str(root / ".git"), "GIT_WORK_TREE": str(root)}
    config = dict(GIT_CONFIG)
    for name in repository_filters(root, env):  # an empty command turns a filter driver off
        config |= {f"filter.{name}.clean": "", f"filter.{name}.smudge": "", f"filter.{name}.process": "",
                   f"filter.{name}.required": "false"}
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for i, (key, value) in enumerate(config.items()):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


def repository_elsewhere(root: Path) -> str | None:
    """Why git in the workspace could read a repository outside it: a .git file pointing elsewhere, borrowed
    objects (alternates), a shared common folder. (git_environment pins the work tree to the workspace.)"""
    dot_git = root / ".git"
    if os.path.lexists(dot_git) and (os.path.islink(dot_git) or not dot_git.is_dir()):
        return "the workspace's .git is not a folder of its own (it may point to a repository elsewhere)"
    if any((dot_git / name).exists() for name in ("commondir", "objects/info/alternates")):
        return "the repository borrows objects or settings from elsewhere (alternates, commondir)"
    return None


def repository_filters(root: Path, env: dict[str, str]) -> set[str]:
    """The filter drivers the repository's own config defines (its clean filter runs on git status/diff)."""
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        return set()
    try:
        listed = subprocess.run([git, "config", "--show-scope", "--name-only", "--get-regexp", r"^filter\."],
                                cwd=root, env=env, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {name.split(".", 1)[1].rsplit(".", 1)[0] for scope, _, name in
            (line.partition("\t") for line in listed.splitlines()) if scope in ("local", "worktree")}