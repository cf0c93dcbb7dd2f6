"""The workspace on disk (phase 2, the guardrails): every path the file tools take is confined to
the workspace, and every file is opened through one routine that refuses what is not a regular file
in it. Plus how names and bytes that are not UTF-8 are shown to the model, and read back from what
it was shown."""

import codecs
import contextlib
import errno
import os
import re
import stat
import typing
from pathlib import Path

from plainagent.core import settings as agent_settings
from plainagent.core.ownfiles import (
    CODE,
    INSTALLED,
    KEYS,
    LAUNCHER,
    MCP_CONFIG,
    PYTHON,
    SERVERS,
    STARTER,
    STATE,
    below,
    in_own_place,
    launcher_folders,
    launcher_names,
    own_places,
    read_only_entries,
    real,
)
from plainagent.core.screen import escape
from plainagent.core.settings import Settings
from plainagent.sandbox.readable import dotenv_files

SAMPLE_BYTES = 8192  # the start of a file that decides whether it is text
UNDECODABLE_SHARE = 0.3  # more undecodable bytes than this in the sample, and the file is binary
KINDS = {
    stat.S_IFDIR: "folder",
    stat.S_IFIFO: "named pipe",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
}
# What writable() tells the model of a path in each of the agent's own places (ownfiles.own_places)
REFUSALS = {
    STATE: "{path} is protected (.env or the transcripts folder); write somewhere else",
    KEYS: "{path} holds the agent's own API keys; no tool reads or writes it",
    SERVERS: (
        "{path} holds the agent's own MCP servers and their tokens; no tool reads or writes it"
    ),
    CODE: (
        "{path} is in the agent's own folder, whose top level, __pycache__ and virtual "
        "environments no tool changes (Python would run them in the agent); to work on the "
        "agent's code, copy its folder and run the agent on the copy"
    ),
    PYTHON: (
        "{path} is in the Python installation the agent runs on, which no tool changes "
        "(Python would run what is put there in the agent); write somewhere else"
    ),
    INSTALLED: (
        f"{{path}} is in the Python installation that {LAUNCHER}, the program the person types "
        "to start the agent, runs on: no tool changes it (Python would run what is put there in "
        "the agent, outside the sandbox, at the next start); write somewhere else"
    ),
    STARTER: (
        f"{{path}} is {LAUNCHER}, the program the person types to start the agent, or would be "
        "found in its place on PATH: no tool changes or makes it (it would run outside the "
        "sandbox at the next start); write somewhere else"
    ),
}
# How a byte that is not text is shown to the model: \xe9
ESCAPED = re.compile(r"\\x([0-9a-fA-F]{2})")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SHOWN_AS_REPLACEMENT = {code: "\ufffd" for code in range(0xDC80, 0xDD00)}  # surrogate-escaped bytes
# O_NONBLOCK: a FIFO put in place after the check cannot block the open; O_NOFOLLOW: confine()
# resolved every link, so a link there at open time was swapped in. (Windows has neither; O_BINARY
# keeps its bytes as they are.)
OPEN_FLAGS = sum(
    getattr(os, flag, 0)
    for flag in ("O_NONBLOCK", "O_NOFOLLOW", "O_NOCTTY", "O_CLOEXEC", "O_BINARY")
)


def confine(path: str, settings: Settings) -> Path:
    """Resolve a path against the workspace; refuse one that ends up outside it (.., absolute,
    symlink), and the agent's own .env, which holds its keys, and the mcp.json beside it, by any
    name that reaches them (a link, another hard link)."""
    root = settings.workspace
    resolved = followed(root / Path(path).expanduser())
    if resolved != root and root not in resolved.parents:
        raise PermissionError(f"{path} is outside the workspace {root}; use a path inside it")
    # Its target too when it is a link, even to a file not there yet: a write would create it
    for own in (agent_settings.DOTENV, agent_settings.DOTENV.with_name(MCP_CONFIG)):
        if resolved in (own, real(own)) or same_file(resolved, own):
            kind = KEYS if own == agent_settings.DOTENV else SERVERS
            raise PermissionError(REFUSALS[kind].format(path=path))
    return resolved


def followed(path: Path) -> Path:
    """The path with every link on it followed. A loop of links raises RuntimeError on every Python,
    as 3.10-3.12's resolve() does (3.13's returns the path as it is, as if it were not a link)."""
    try:
        return path.resolve(strict=True)
    except OSError as error:  # not there yet (or ELOOP, from 3.13 on)
        if error.errno == errno.ELOOP:
            raise RuntimeError(f"Symlink loop from {str(path)!r}") from None
        return real(path)


def same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def in_a_repository(path: Path) -> bool:
    """Whether a resolved path is a repository's .git or in one: by name, in any case, or by what
    the file system says a folder on its way is (another name for the .git beside it, as .GIT is on
    macOS and Windows, or through a bind mount), where a hook put would run at the next commit."""
    for folder in (path, *path.parents):
        if folder.name.lower() == ".git":
            return True
        with contextlib.suppress(OSError):
            if os.path.samestat(os.lstat(folder), os.lstat(folder.parent / ".git")):
                return True
    return False


def is_protected(path: Path, settings: Settings) -> bool:
    """A .env file (which holds the API key), or anything in the run's protected paths (the
    transcripts)."""
    return path.name.lower() == ".env" or any(
        below(path, p) is not None for p in settings.protected
    )


def writable(path: str, settings: Settings, own: list[tuple[Path, str]] | None = None) -> Path:
    """Resolve a path the file tools may write: inside the workspace, not .env or a transcript (by
    any name, hard links too), not one of the agent's own files (`own`, where the caller worked them
    out once for many paths: own_of()), not in the Python installation it runs on, not its launcher
    on PATH nor a file of that name where one would run (launcher_folders)."""
    target = confine(path, settings)
    if is_protected(Path(path), settings) or is_protected(target, settings):
        raise PermissionError(REFUSALS[STATE].format(path=path))
    own = own_of(settings) if own is None else own
    for place, kind in own:
        if in_own_place(target, place, kind):
            raise PermissionError(REFUSALS[kind].format(path=path))
    if target.name.lower() in launcher_names() and any(
        below(target.parent, folder) == () for folder in launcher_folders(settings.workspace)
    ):
        raise PermissionError(REFUSALS[STARTER].format(path=path))
    try:
        info = os.stat(target)
    except OSError:
        return target
    # A hard link to a protected file, found by inode: only a file with another name can be one.
    if info.st_nlink < 2 or not stat.S_ISREG(info.st_mode):
        return target
    if (info.st_dev, info.st_ino) in inodes_under(place for place, kind in own if kind == STATE):
        raise PermissionError(
            f"{path} is another name (a hard link) for a transcript, which no tool writes; "
            "write a new file instead"
        )
    # The agent's own files (its folder's read-only entries), not the Python installation's
    files = [
        file
        for place, kind in own
        if kind in (KEYS, SERVERS, CODE, STARTER)
        for file in (read_only_entries(place) if kind == CODE else [place])
    ]
    if (info.st_dev, info.st_ino) in inodes_under(files):
        raise PermissionError(
            f"{path} is another name (a hard link) for one of the agent's own files, which no "
            "tool changes; write a new file instead"
        )
    return target


def own_of(settings: Settings) -> list[tuple[Path, str]]:
    """The agent's own places (ownfiles.own_places) for a run of these settings: its launchers on
    PATH are looked for again each time (one a person installs meanwhile counts)."""
    return own_places(settings.protected, agent_settings.DOTENV)


def inodes_under(paths: typing.Iterable[Path]) -> set[tuple[int, int]]:
    """(device, inode) of each regular file among the paths and in the folders among them, at any
    depth."""
    found = set()
    for top in paths:
        for folder, _, names in os.walk(top) if os.path.isdir(top) else [("", [], [str(top)])]:
            for name in names:
                with contextlib.suppress(OSError):
                    info = os.stat(os.path.join(folder, name))
                    if stat.S_ISREG(info.st_mode):
                        found.add((info.st_dev, info.st_ino))
    return found


def locate(path: str, settings: Settings) -> Path:
    """confine(path) for the tools that read (read_file, list_dir), where a name the model was shown
    with \\xNN escapes (bytes that are not UTF-8, control characters) also finds the file by those
    bytes, if no file has the name exactly as written; never a .env file, by its name or where a
    link leads, nor the file a link named .env leads to, as the kernel hides them from commands (a
    folder .env, a venv, is no secret), nor anything in the state folder."""
    target = confine(path, settings)
    # A byte 0x80-0xff becomes a surrogate, as in fsdecode
    if not os.path.lexists(target) and ESCAPED.search(path):
        target = confine(
            ESCAPED.sub(lambda m: bytes([int(m[1], 16)]).decode("utf-8", "surrogateescape"), path),
            settings,
        )
    named = ".env" in (Path(path).name.lower(), target.name.lower())
    linked = (same_file(target, f) for f in dotenv_files(settings.workspace))
    if not target.is_dir() and (named or any(linked)):
        what = "a .env file" if named else "the file a link named .env leads to"
        raise PermissionError(
            f"{path} is {what}, which may hold the project's secrets: no tool reads it, and "
            "no command that runs without asking; if the task needs it, ask the user to approve "
            "a command that reads it"
        )
    state = settings.runs_folder.parent  # every workspace's runs (statefolder.agent_state)
    if below(target, state) is not None:
        raise PermissionError(
            f"{path} is in the agent's state folder, which holds the transcripts of every project "
            "the agent worked on: no tool reads it, and no command that runs without asking"
        )
    return target


def shown_name(name: str) -> str:
    """A file name as the model sees it: undecodable bytes and control characters as \\xNN
    escapes."""
    return CONTROL.sub(
        lambda m: escape(m[0]), os.fsencode(name).decode("utf-8", "backslashreplace")
    )


def open_regular(path: str, target: Path, flags: int, settings: Settings) -> int:
    """The one safe open, to a descriptor: a FIFO, device or socket is refused before it can block
    or act, and so is a file that a link swapped in after confine() led outside the workspace."""
    try:
        refuse_unless_regular(path, os.stat(target).st_mode)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    fd = os.open(target, flags | OPEN_FLAGS, 0o666)
    try:
        refuse_unless_regular(path, os.fstat(fd).st_mode)
        refuse_if_escaped(fd, path, target, settings)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_unless_regular(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(
            f"{path} is a folder, not a file; use list_dir to see what is in it"
        )
    if not stat.S_ISREG(mode):
        raise OSError(
            f"{path} is a {KINDS.get(stat.S_IFMT(mode), 'special file')}, not a regular file; only "
            "regular files can be read or written"
        )


def refuse_if_escaped(fd: int, path: str, target: Path, settings: Settings) -> None:
    """Refuse an open file outside the workspace: by the kernel's record of where it is (Linux),
    else by whether it is still the file at the confined path."""
    root, record = settings.workspace, f"/proc/self/fd/{fd}"
    if os.path.islink(record):
        where = Path(os.readlink(record))
        inside = where == root or root in where.parents
    else:
        inside = os.path.samestat(os.fstat(fd), os.stat(target))
    if not inside:
        raise PermissionError(
            f"{path} led outside the workspace {root} when it was opened (a link changed); "
            "use a path inside it"
        )


def read_regular(target: Path, settings: Settings, limit: int = -1) -> tuple[bytes, int]:
    """Up to limit bytes of a regular file in the workspace (all by default) and its size; see
    open_regular."""
    with os.fdopen(open_regular(str(target), target, os.O_RDONLY, settings), "rb") as file:
        return file.read(limit), os.fstat(file.fileno()).st_size


def binary(sample: bytes, complete: bool) -> bool:
    """Binary: a NUL byte, or mostly bytes that are not UTF-8. Latin-1 text, say, is text with odd
    bytes."""
    return b"\0" in sample or (
        sum("\udc80" <= char <= "\udcff" for char in decode(sample, final=complete))
        > UNDECODABLE_SHARE * len(sample)
    )


def decode(data: bytes, final: bool) -> str:
    """UTF-8, each undecodable byte kept as a surrogate (so the text re-encodes to these bytes);
    unless final, a character cut at the end is left out."""
    return codecs.getincrementaldecoder("utf-8")("surrogateescape").decode(data, final)


def readable(text: str) -> str:
    """Decoded text as the model sees it: each undecodable byte a replacement character."""
    return text.translate(SHOWN_AS_REPLACEMENT)
