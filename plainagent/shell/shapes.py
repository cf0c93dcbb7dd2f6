"""What 'always' covers (phase 2): a command's shape, its programs with the words the person was
shown, where only a word its program is known to read as a file or folder of the workspace may stand
for another; a command of another shape asks again."""

import contextlib
import os
import re
import shutil
import stat
from pathlib import Path

from plainagent.core.ownfiles import below, in_own_place, real
from plainagent.core.settings import Settings
from plainagent.shell.expansion import as_run, matches
from plainagent.shell.option_tables import PROGRAMS, read_words
from plainagent.shell.pythons import for_project
from plainagent.shell.words import WINDOWS, Command, Glob, Redirection, parse
from plainagent.workspace.files import confine, in_a_repository, own_of

# A part's program and words (WORKSPACE_PATHS where paths may stand); a pipeline's parts in order
Part = tuple[str | None, ...]
Shape = tuple[Part, ...]
# The files of the workspace a shape's words name, each with its state when it was shown
Pins = frozenset[tuple[str, tuple | None]]

# What 'always' may let another file or folder stand for: the programs known to read each
# operand, and each "/" option's value, as a path, with their options as option_tables.py has them.
# The allowlist's that read files, and these that change them. An interpreter's script, make's
# target or git clone's repository is no path here: any other program's words, and the words of a
# part with an option its table does not hold, are remembered as they are.
PATH_OPERANDS: dict[str, tuple[str, str]] = {
    **{
        name: PROGRAMS[name]
        for name in ("ls", "dir", "cat", "head", "tail", "wc", "file", "stat", "du", "tree")
    },
    "rm": (
        "fiIrRdv",
        "force interactive? one-file-system no-preserve-root preserve-root? recursive dir verbose",
    ),
    "rmdir": ("pv", "ignore-fail-on-non-empty parents verbose"),
    "mkdir": ("pvZm:", "mode= parents verbose context?"),
    "touch": ("acfhmd:r/t:", "time= date= reference=/ no-create no-dereference"),
    "cp": (
        "abdfHilLnPpRrsuvxTZS:t/",
        "archive attributes-only backup? copy-contents dereference force interactive link "
        "no-dereference no-clobber preserve? no-preserve= parents recursive reflink? "
        "remove-destination sparse= strip-trailing-slashes suffix= symbolic-link "
        "target-directory=/ no-target-directory update? verbose one-file-system context?",
    ),
    "mv": (
        "bfinuvTZS:t/",
        "backup? force interactive no-clobber strip-trailing-slashes suffix= target-directory=/ "
        "no-target-directory update? verbose context?",
    ),
    "git add": (
        "nvipefuNA",
        "dry-run verbose interactive patch edit force update renormalize intent-to-add all "
        "no-all ignore-removal no-ignore-removal refresh ignore-errors ignore-missing sparse "
        "chmod=",
    ),
}


# In a Shape: one or more words, each naming a file or folder of the workspace
WORKSPACE_PATHS = None


# the plain word's characters but =, which would make it a variable or an option's value
PATH_CHARS = "_./:@+,^-"
# How a path that may stand in starts: never -, + or : (an option, tail's +N, git's :/ magic)
PATH_STARTS = "_./"
# Entries looked through in a folder (and where its links lead) before it may stand in for others;
# a bigger one is kept as shown
WALK_LIMIT = 10_000


def command_shapes(command: str | Command, settings: Settings) -> dict[Shape, Pins]:
    """What 'always' for a command remembers, one shape for each pipeline (a part alone, or parts
    joined by |), whole: each part's program and its words exactly as given, except that a run of
    words its program reads as paths (path_words) that each may stand in (stands_in) becomes
    WORKSPACE_PATHS, where any such words may stand. So 'always' for `rm a.txt` covers `rm b.txt
    c.txt`, but for `make docs` only that: make reads `deploy` as a target, whatever folder has its
    name. A part whose output goes into a pipe keeps its words as shown: what it prints is what the
    next program reads (`cat build.sh | sh` runs build.sh), and a pipeline is remembered whole, so
    its parts are never joined to others' (`cat list.txt | xargs rm` approved says nothing of
    `cat build.sh | xargs rm`). Each word is looked at in the folder its part runs in (after
    `cd sub`, `build` is sub/build). Each shape comes with its pins: the state of each file of the
    workspace a word kept as shown names, the program's own where it is one (pinned()), so 'always'
    for `sh build.sh` covers build.sh as it was shown, not whatever is copied over it later. A
    command that is not plain words has no shapes."""
    shapes: dict[Shape, Pins] = {}
    pipeline: list[Part] = []
    pins: set[tuple[str, tuple | None]] = set()
    parsed = command if isinstance(command, Command) else parse(command)  # read once, at the gate
    for (part, separator), folder in zip(parsed.parts, part_folders(parsed, settings), strict=True):
        # a redirection is only ever to /dev/null: it changes nothing
        words = [word for word in part if not isinstance(word, Redirection)]
        piped = separator == "|"
        paths = path_words(words, settings, folder) if folder is not None and not piped else set()
        shape: list[str | None] = [words[0]]
        for at, word in enumerate(words[1:], 1):
            stands = at in paths and folder is not None and stands_in(word, settings, folder)
            kind = WORKSPACE_PATHS if stands else word
            if kind is not WORKSPACE_PATHS or shape[-1] is not WORKSPACE_PATHS:
                shape.append(kind)
        pipeline.append(tuple(shape))
        pins |= pinned(words, shape, settings, folder)
        if not piped:
            shapes[tuple(pipeline)] = frozenset(pins) | shapes.get(tuple(pipeline), frozenset())
            pipeline, pins = [], set()
    return shapes


def pinned(
    words: list[str], shape: list[str | None], settings: Settings, folder: Path | None
) -> set[tuple[str, tuple | None]]:
    """The files of the workspace a part names by the words its shape keeps as shown, by each name
    a word may give (names_in(): `b.mk` of `-fb.mk` and of `--file=b.mk`, `build.sh` of
    `-c 'sh build.sh'`), and its program where it is one (a planted .venv/bin/pytest), each with
    its state now (states(): a folder's files, and `build.js` for `build`); and the names each of
    its patterns matches now (`rm -rf build*` covers the build1 it matched, not a build2 made
    since), with their states. A file a program finds by itself that no word names (make's
    Makefile, pytest's conftest.py) is not pinned."""
    if folder is None:  # a cd, or after one the agent does not follow: such a part asks
        return set()
    program = program_found(words[0], settings, folder)
    named = {program} if program else set()
    for word in (w for w in shape[1:] if w):
        named |= {os.path.join(folder, name) for name in names_in(word)}
    pins: set[tuple[str, tuple | None]] = set()
    for word in (w for w in words if isinstance(w, Glob)):
        found = matches(word, folder)  # or why it asks, which then asks anyway
        names = tuple(found) if isinstance(found, list) else (found,)
        pins.add((os.path.join(folder, word.pattern), names))
        named |= (
            {os.path.join(folder, name) for name in found} if isinstance(found, list) else set()
        )
    listed: dict[Path, list[str]] = {}  # each folder's names, listed once for all of the part's
    for path in named:  # each once: a word's pieces name the same file again and again
        pins |= states(path, settings, listed)
    return pins


def names_in(word: str) -> set[str]:
    """Each name a word may give a program a file or module by: the word; each piece of it between
    characters a plain path does not hold (the value after an =, a path in `-c 'sh build.sh'`, each
    of `-I.:lib`); what follows each letter of a piece that is options (`b.mk` of `-fb.mk`, a
    short option's value glued to it); and a dotted piece's path (`pkg/tasks` of `-m pkg.tasks`).
    More names than the program reads are pinned, never fewer."""
    names = {word}
    for piece in re.split(r"[^\w./@+^~-]+", word):
        names.add(piece)
        if piece.startswith("-"):
            rest = piece.lstrip("-")
            names |= {rest[at:] for at in range(len(rest))}
        if "/" not in piece:
            names.add(piece.replace(".", "/"))
    return names - {""}


def states(
    path: str, settings: Settings, listed: dict[Path, list[str]]
) -> set[tuple[str, tuple | None]]:
    """The state (file_state()) of each file of the workspace a name gives: the file; each file a
    folder holds at any depth, where its links lead too, but in a repository's .git (python3 pkg
    runs pkg/__main__.py, make -C sub sub/Makefile); each file named the name and an ending
    (`node build` runs build.js, `python3 -m tasks` tasks.py). A folder over WALK_LIMIT entries
    gets a pin no later state equals: what it holds is not known, so 'always' never covers it.
    `listed`: the names of each folder listed so far, kept by the caller for its other names."""
    try:
        inside = confine(path, settings)
        parent = confine(os.path.dirname(path), settings)
    except (OSError, RuntimeError, ValueError):
        return set()
    found = [inside]
    if inside.is_dir():
        found = []
        for top, folders, files in os.walk(inside, followlinks=True):
            folders[:] = [name for name in folders if name != ".git"]
            found += [Path(top, name) for name in files]
            if len(found) > WALK_LIMIT:
                return {(str(inside), ("over WALK_LIMIT entries", object()))}
    base = os.path.basename(path)
    if base not in ("", ".", ".."):
        if parent not in listed:
            listed[parent] = []
            with contextlib.suppress(OSError):
                listed[parent] = os.listdir(parent)
        found += [parent / name for name in listed[parent] if name.startswith(base + ".")]
    pins: set[tuple[str, tuple | None]] = set()
    for file in found:
        if (state := file_state(file)) is not None:
            pins.add((str(file), state))
    return pins


def file_state(path: Path) -> tuple | None:
    """What changes when a file's content is changed or another put in its place: its device,
    inode, size, mtime and ctime; None for no file (nothing, a folder, what cannot be read)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def part_folders(command: Command, settings: Settings) -> list[Path | None]:
    """The folder each part of a command runs in, as the shell follows its `cd`s (expansion.as_run:
    the workspace until a cd, then the folder it went to); None for a cd itself, and for every part
    from a cd the agent does not follow (such a command asks anyway): where those run is not known,
    so none of their words may stand in."""
    expanded = as_run(command, settings)
    if not isinstance(expanded, str):
        return expanded[1]
    folders: list[Path | None] = []
    for words, _ in command.parts:
        gone = words[0] == "cd" or bool(folders) and folders[-1] is None
        folders.append(None if gone else settings.workspace)
    return folders


def path_words(words: list[str], settings: Settings, folder: Path) -> set[int]:
    """Where a part's program reads a word as a path, by its table in PATH_OPERANDS: each
    operand, and each value of a path option given as a word of its own. Nowhere for a program
    without a table, one installed in the workspace (a planted .venv/bin/rm reads its words as it
    likes), or a part with an option its table does not hold (the next word could be its value)."""
    name = " ".join(words[:2]) if words[0] == "git" else words[0]
    if name not in PATH_OPERANDS or not installed_outside(words[0], settings, folder):
        return set()
    skip = len(name.split())
    problem, read = read_words(*PATH_OPERANDS[name], words[skip:], glued=name != "tree")
    if problem:
        return set()
    return {r.at + skip for r in read if r.at is not None and r.kind in ("", "/")}


def installed_outside(program: str, settings: Settings, folder: Path) -> bool:
    """Whether the program an approved command finds by this name is installed outside the
    workspace (program_found())."""
    found = program_found(program, settings, folder)
    return found is not None and not real(found).is_relative_to(settings.workspace)


def program_found(program: str, settings: Settings, folder: Path) -> str | None:
    """Where an approved command finds the program by this name: on the person's PATH with the
    project's venv first, relative entries read from the `folder` it runs in; None if nowhere."""
    if "/" in program or WINDOWS and "\\" in program:  # a path, from where the part runs
        program = os.path.join(folder, program)
    entries = for_project(os.environ, settings.workspace).get("PATH", os.defpath).split(os.pathsep)
    searched = [str(folder)] * WINDOWS + [str(folder / entry) for entry in entries]
    return shutil.which(program, path=os.pathsep.join(searched))


def stands_in(word: str, settings: Settings, folder: Path) -> bool:
    """Whether a word a program reads as a path may stand for any other such word, and they for it:
    a plain word (PATH_CHARS, starting with a letter, a digit or PATH_STARTS) naming, from the
    `folder` its part runs in, a file or folder of the workspace that exists, never the workspace
    itself (., or its own path), nor a dot file (dotted), nor anything kept (kept) by the word's
    name, where it leads, or anywhere in a folder."""
    if not (word[:1].isalnum() or word[:1] in PATH_STARTS):
        return False
    if not all(c.isalnum() or c in PATH_CHARS for c in word):
        return False
    try:
        path = confine(os.path.join(folder, word), settings)
        if path == settings.workspace or not os.path.lexists(path):
            return False
        guarded, named = guarded_places(settings), path.relative_to(settings.workspace)
        if dotted(Path(word), named) or kept(path, guarded):  # a .env is dotted
            return False
        return not path.is_dir() or holds_nothing_kept(path, guarded, settings.workspace)
    except (OSError, RuntimeError, ValueError):
        return False


def guarded_places(settings: Settings) -> list[tuple[Path, str]]:
    """The places no word in them or holding them stands in: the agent's own places
    (files.own_of: the state folder, with every workspace's transcripts and undo data and a
    --transcript elsewhere, its .env and mcp.json, its folder, the Python installation it runs on
    and the program a person types to start it), links resolved."""
    return [(real(place), kind) for place, kind in own_of(settings)]


def kept(path: Path, guarded: list[tuple[Path, str]]) -> bool:
    """Whether 'always' keeps a resolved path as shown: a .env (by name); a repository's .git or
    anything in one (history is not a file like the others: `rm -rf .git` was never shown), in any
    case, as .env (on macOS and Windows .GIT/hooks is .git/hooks); in one of the guarded places
    (ownfiles.in_own_place: of the agent's folder, its read-only part) or holding one; a file with
    more than one name (several_names)."""
    if path.name.lower() == ".env" or in_a_repository(path) or several_names(path):
        return True
    return any(
        bool(below(place, path)) or in_own_place(path, place, kind) for place, kind in guarded
    )


def several_names(path: Path) -> bool:
    """A file that is not a folder and has other names: a hard link, maybe to a .env or a
    transcript, which its name does not show. Not a file that is not there."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    return not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1


def file_tool_covers(path: str, settings: Settings) -> bool:
    """Whether 'always' for a file tool covers a call on `path` (from the workspace): any file of
    it but those no word stands in for either (kept(): a .git, a .env, the agent's own places, a
    file with other names; dotted(): a dot file or one in a dot folder)."""
    try:
        target = confine(os.path.join(settings.workspace, path), settings)
        shown = dotted(Path(path), target.relative_to(settings.workspace))
        return not shown and not kept(target, guarded_places(settings))
    except (OSError, RuntimeError, ValueError):
        return False


def dotted(*paths: Path) -> bool:
    """Whether a name on any of the paths (a path as given, and as it resolves) starts with a dot
    (not . or ..): programs' settings (.bashrc, .envrc, .vscode/), which they run at their start,
    outside the sandbox: 'always' never covers them."""
    return any(p.startswith(".") and p not in (".", "..") for path in paths for p in path.parts)


def holds_nothing_kept(folder: Path, guarded: list[tuple[Path, str]], root: Path) -> bool:
    """Whether nothing in a folder, at any depth and where its links lead, is kept, within
    WALK_LIMIT entries: a program given the folder may remove, copy or stage all of it (cp -L
    follows its links, and copies what a link outside the workspace `root` leads to into it). A
    folder that cannot be looked through whole is kept as shown. (What is not a link is in the
    folder: kept() of the folder said it is in no guarded place and holds none, so only its name
    and other names are left to look at.)"""
    looked_at = 0
    unreadable: list[OSError] = []
    for top, folders, files in os.walk(folder, onerror=unreadable.append, followlinks=True):
        for name in folders + files:
            looked_at += 1
            path = Path(top, name)
            if looked_at > WALK_LIMIT or name.lower() in (".env", ".git"):
                return False
            if path.is_symlink():
                target = real(path)
                if not target.is_relative_to(root) or kept(target, guarded):
                    return False
            elif several_names(path):
                return False
    return not unreadable
