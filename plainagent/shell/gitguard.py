"""Git without surprises (phase 2): the read-only git commands the allowlist lets run are pinned to
the workspace's own repository, and nothing in that repository's configuration may start a program,
fetch, or write its index."""

import os
import re
import typing
from pathlib import Path

from plainagent.core.settings import Settings
from plainagent.workspace.files import read_regular

# Inserted after the subcommand by prepare(): a repository's diff drivers, textconv and submodules
# run nothing.
NO_DRIVERS = ["--no-ext-diff", "--no-textconv"]
GIT_SAFE_FLAGS = {
    "status": ["--ignore-submodules=all"],
    "diff": NO_DRIVERS + ["--ignore-submodules=all"],
    "log": NO_DRIVERS,
    "show": NO_DRIVERS,
    "grep": ["--no-textconv"],
    "blame": ["--no-textconv"],
}
# Command-line-scope git config (beats the repository's own): nothing in .git/config may start a
# program.
GIT_CONFIG = {
    "core.fsmonitor": "false",
    "core.pager": "cat",
    "diff.submodule": "short",
    "status.submoduleSummary": "false",
    "log.showSignature": "false",
    "safe.bareRepository": "explicit",
    "diff.ignoreSubmodules": "all",
    "format.pretty": "medium",
    "protocol.allow": "never",
    "core.sshCommand": "false",
    "core.askPass": "false",
    "core.hooksPath": "/dev/null",
    "diff.autoRefreshIndex": "false",
    "gpg.program": "false",
    "gpg.ssh.program": "false",
    "gpg.x509.program": "false",
}
# What in .git git reads for the commands that run without asking: a link here could lend it another
# repository.
READ_BY_GIT = (
    "HEAD",
    "config",
    "config.worktree",
    "index",
    "packed-refs",
    "shallow",
    "objects",
    "refs",
    "info",
    "logs",
    "commondir",
    "gitdir",
)
MAX_CONFIG_BYTES = 1_000_000  # a repository config larger than this is not read: git asks instead
# A config section header: [name] or [name "subsection"] (a name may hold dots: [filter.x] is filter
# "x").
HEADER = re.compile(r'\[\s*([\w.-]+)\s*(?:"((?:[^"\\\n]|\\.)*)"\s*)?\]')
# And in the environment, which beats any config: no transport (so no lazy fetch of a partial
# clone's objects).
GIT_ENVIRONMENT = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_ALLOW_PROTOCOL": "none",
    "GIT_SSH_COMMAND": "false",
    "GIT_ASKPASS": "false",
}


def git_environment(
    settings: Settings, inherited: typing.Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment for a command that runs without asking: `inherited` without its GIT_*
    variables, plus git settings that keep git in the workspace and its repository's config from
    starting programs or writing. A global config in the workspace (HOME there: the home folder as
    the workspace) is not read: a command could write it, and its filter drivers would run."""
    root = settings.workspace
    env = {k: v for k, v in (inherited or {}).items() if not k.upper().startswith("GIT_")}
    env |= {**GIT_ENVIRONMENT, "GIT_CEILING_DIRECTORIES": str(root.parent)}
    if any(
        Path(os.path.realpath(root / env[name])).is_relative_to(root)
        for name in ("HOME", "XDG_CONFIG_HOME")
        if name in env
    ):
        env["GIT_CONFIG_GLOBAL"] = os.devnull
    if (root / ".git").is_dir():  # the work tree is the workspace, whatever core.worktree says
        env |= {"GIT_DIR": str(root / ".git"), "GIT_WORK_TREE": str(root)}
    pinned = dict(GIT_CONFIG)
    for name in repository_filters(settings):  # an empty command turns a filter driver off
        pinned |= {
            f"filter.{name}.clean": "",
            f"filter.{name}.smudge": "",
            f"filter.{name}.process": "",
            f"filter.{name}.required": "false",
        }
    env["GIT_CONFIG_COUNT"] = str(len(pinned))
    for i, (key, value) in enumerate(pinned.items()):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


def repository_elsewhere(settings: Settings) -> str | None:
    """Why git in the workspace could read a repository outside it: a .git file, a link in .git,
    borrowed objects (alternates), a shared common folder, a config that includes other files."""
    dot_git = settings.workspace / ".git"
    if os.path.lexists(dot_git) and (os.path.islink(dot_git) or not dot_git.is_dir()):
        return (
            "the workspace's .git is not a folder of its own (it may point to a repository "
            "elsewhere)"
        )
    if any(
        (dot_git / name).exists()
        for name in ("commondir", "objects/info/alternates", "objects/info/http-alternates")
    ):
        return "the repository borrows objects or settings from elsewhere (alternates, commondir)"
    if link := next(linked_entries(dot_git), None):
        return f"{link} in the repository is a link (it may lend git another repository's files)"
    sections = config_sections(settings)
    if sections is None:
        return (
            "the repository's config is not a regular file of at most "
            f"{MAX_CONFIG_BYTES // 1_000_000} MB, which the agent could check"
        )
    if any(name.split(".")[0] in ("include", "includeif") for name in sections):
        return "the repository's config includes other files (include, includeIf)"
    return None


def linked_entries(dot_git: Path) -> typing.Iterator[str]:
    """The links among what git reads in .git (READ_BY_GIT), down through its folders (not hooks:
    they never run here, and linking them is common)."""
    pending = [dot_git / name for name in READ_BY_GIT]
    while pending:
        path = pending.pop()
        if os.path.islink(path):
            yield str(path.relative_to(dot_git.parent))
        elif path.is_dir():
            with os.scandir(path) as entries:
                pending += [
                    Path(entry.path)
                    for entry in entries
                    if entry.is_dir(follow_symlinks=False) or entry.is_symlink()
                ]


def repository_filters(settings: Settings) -> set[str]:
    """The filter drivers the repository's config defines, read from its files (git config would run
    whatever `git` PATH finds, outside the sandbox). More names than git sees do no harm: each is
    only turned off."""
    return {
        name.split(".", 1)[1]
        for name in config_sections(settings) or ()
        if name.startswith("filter.")
    }


def config_sections(settings: Settings) -> list[str] | None:
    """Every section header in .git/config and config.worktree as section.subsection (section
    lower-cased), even one inside a value; None if a config is not a regular file or is too
    large."""
    names = []
    for name in ("config", "config.worktree"):
        path = settings.workspace / ".git" / name
        if not os.path.lexists(path):
            continue
        try:
            data, size = read_regular(path, settings, MAX_CONFIG_BYTES + 1)
        except (OSError, RuntimeError, ValueError):
            return None
        if size > MAX_CONFIG_BYTES:
            return None
        text = data.decode("utf-8", "surrogateescape")
        for header in filter(
            None, (HEADER.match(text, at.start()) for at in re.finditer(r"\[", text))
        ):
            # Every [ is tried: no match can hide a header inside it
            section, subsection = header.groups()
            names.append(
                section.lower() + ("." + re.sub(r"\\(.)", r"\1", subsection) if subsection else "")
            )
    return names
