"""What the shell makes of a command's words before its programs see them (phase 2, for the
allowlist): a glob's matches (matches()), found as /bin/sh finds them, and the folder a `cd` leaves
the rest of the line in (as_run()), each checked as a path is; the command runs with those words."""

import os
import re
from pathlib import Path

from plainagent.core.settings import Settings
from plainagent.shell.words import WINDOWS, Command, Glob, Parts
from plainagent.workspace.files import confine, is_protected

# What a [...] in a pattern may hold: letters, digits, . _ and ranges (a-z); [!x], [^x], [[:alpha:]]
# and a quoted character in one ask
BRACKET = re.compile(r"\[[\w.-]+\]")
# Names looked at for one pattern, and matches taken, before it asks
MAX_LOOKED_AT = 20_000
MAX_MATCHES = 1_000
# The separators a `cd` may stand between: it runs in the shell itself (not in a pipe, whose parts
# each run in a subshell of their own: `cd sub | cat x` reads x where it started) and always (not
# after ||); what follows it runs only where it went (&&), and what follows that, only there too
# (&&, or a pipe of those)
BEFORE_CD = ("", "&&", ";", "\n")
RIGHT_AFTER_CD = ("", "&&")
AFTER_CD = ("", "&&", "|")


def component(pattern: str) -> re.Pattern[str]:
    """One component of a pattern (no /) as a regex: * any text, ? one character, [...] one of
    BRACKET's, a backslash's character itself. ValueError for a [...] BRACKET does not allow."""
    regex, at = "", 0
    while at < len(pattern):
        char, close = pattern[at], pattern.find("]", at + 1)
        if char == "\\":
            regex, at = regex + re.escape(pattern[at + 1 : at + 2]), at + 2
            continue
        if char == "[" and close > 0:  # with no ] after it, a [ is itself
            if not BRACKET.fullmatch(pattern, at, close + 1):
                raise ValueError(f"a [...] the agent does not read ({pattern[at : close + 1]})")
            inner = pattern[at + 1 : close]
            regex += "[" + "".join(c if c == "-" else re.escape(c) for c in inner) + "]"
            at = close + 1
            continue
        regex += {"*": ".*", "?": "."}.get(char, re.escape(char))
        at += 1
    try:
        return re.compile(regex, re.DOTALL)
    except re.error:  # a range the wrong way round: [z-a]
        raise ValueError(f"a [...] the agent does not read ({pattern})") from None


def active(pattern: str) -> bool:
    """Whether a component has a character that matches names (* ? or a [ with its ])."""
    unquoted = re.sub(r"\\.", "", pattern, flags=re.DOTALL)
    return "*" in unquoted or "?" in unquoted or bool(re.search(r"\[.*\]", unquoted))


def matches(word: Glob, folder: Path) -> list[str] | str:
    """The names a glob stands for, run in `folder`, as /bin/sh (dash) finds them: component by
    component, a name starting with . only where its component starts with one (. and .. then
    too), in code point order; none where nothing matches (the word then stays as it is). Or why
    it must ask: a [...] it does not read, over MAX_LOOKED_AT names or MAX_MATCHES matches."""
    pattern, looked_at = word.pattern, 0
    found = [("/", Path("/"))] if pattern.startswith("/") else [("", folder)]
    parts = pattern.lstrip("/").split("/")
    for index, part in enumerate(parts):
        last, step = index == len(parts) - 1, []
        for text, place in found:
            if part == "":  # a / at the end: folders only
                step += [(text, place)] if place.is_dir() else []
                continue
            if not active(part):
                name = re.sub(r"\\(.)", r"\1", part, flags=re.DOTALL)
                step.append((text + name, place / name))
                continue
            try:
                regex = component(part)
            except ValueError as error:
                return f"its pattern {str(word)!r} has {error}"
            try:
                names = os.listdir(place) if place.is_dir() else []
            except OSError:  # the shell finds nothing in a folder it cannot read
                names = []
            looked_at += len(names)
            if looked_at > MAX_LOOKED_AT:
                return f"its pattern {str(word)!r} looks through over {MAX_LOOKED_AT:,} names"
            dotted = part.lstrip("\\").startswith(".")
            names += [".", ".."] if dotted else []
            step += [
                (text + name, place / name)
                for name in names
                if (dotted or not name.startswith(".")) and regex.fullmatch(name)
            ]
        found = [
            (text + ("/" if not last else ""), place)
            for text, place in step
            if last or place.is_dir()
        ]
    named = sorted(text for text, place in found if os.path.lexists(place))
    if len(named) > MAX_MATCHES:
        return f"its pattern {str(word)!r} matches over {MAX_MATCHES:,} names"
    return named


def path_problem(text: str, folder: Path, settings: Settings) -> str | None:
    """Why a path, read from `folder`, may not be named unasked: as for a path argument, it is
    outside the workspace, a .env or in the state folder (is_protected)."""
    if re.split(r"[/\\:=]", text)[-1].lower() == ".env":
        return f"it names {text}, which is protected (.env or the transcripts)"
    try:
        if is_protected(confine(os.path.join(folder, text), settings), settings):
            return f"{text} is protected (.env or the transcripts)"
    except (OSError, RuntimeError, ValueError):
        return "it names a path outside the workspace"
    return None


def as_run(command: Command, settings: Settings) -> tuple[Command, list[Path | None]] | str:
    """The command as the shell runs it: each glob replaced by its matches (matches()), each
    checked as a path; and the folder each part runs in, which a `cd DIR` before it changed (None
    for the cd, written as `cd -P FOLDER`, its folder resolved). Or why it must ask: a match that
    may not be named, a program named by a pattern, or a cd it does not follow (cd_problem())."""
    folder, moved = settings.workspace, False
    parts: Parts = []
    folders: list[Path | None] = []
    for index, (words, separator) in enumerate(command.parts):
        if isinstance(words[0], Glob):
            return f"its program {words[0]!r} is a pattern"
        # git from a subfolder: the workspace's repository only where the agent pins it (GIT_DIR)
        pinned = (settings.workspace / ".git").is_dir()
        if moved and ("/" in words[0] or words[0] == "git" and not pinned):
            return f"after cd, {words[0]} asks (a program by its path; git with no .git folder)"
        run: list[str] = []
        for word in words:
            found = matches(word, folder) if isinstance(word, Glob) else [word]
            if isinstance(found, str):
                return found
            for text in found if isinstance(word, Glob) else ():
                if not text.isprintable():
                    return f"its pattern {str(word)!r} matches a name that is not plain text"
                if problem := path_problem(text, folder, settings):
                    return problem
            run += found or [str(word)]
        if run[0] == "cd" and not WINDOWS:
            before = command.parts[index - 1][1] if index else ""
            after = [s for _, s in command.parts[index:]]
            target = cd_target(run[1:], folder, before, after, settings)
            if isinstance(target, str):
                return target
            folder, moved, run = target, True, ["cd", "-P", str(target)]
        parts.append((run, separator))
        folders.append(None if run[0] == "cd" and not WINDOWS else folder)
    return Command(command.text, parts), folders


def cd_target(
    args: list[str], folder: Path, before: str, after: list[str], settings: Settings
) -> Path | str:
    """Where `cd ARG` goes from `folder`, links followed (cd -P): a folder of the workspace, which
    the path checks let a command name (path_problem()). Or why it asks: cd alone (the home
    folder), `cd -`, an option, more than one folder; a separator before it or after it under which
    the rest could run where it did not go (BEFORE_CD, RIGHT_AFTER_CD, AFTER_CD: `after` holds its
    own separator first)."""
    if len(args) != 1 or args[0].startswith("-") or not args[0]:
        return "cd runs without asking only as cd FOLDER (not alone, cd - or with an option)"
    if (
        before not in BEFORE_CD
        or after[0] not in RIGHT_AFTER_CD
        or any(separator not in AFTER_CD for separator in after)
    ):
        return (
            "cd runs without asking only at the start of a line, followed by && and then parts "
            "joined by && and | (after || or ; or in a pipe, the rest could run where it did not "
            "go)"
        )
    if problem := path_problem(args[0], folder, settings):
        return problem
    try:
        target = confine(os.path.join(folder, args[0]), settings)
    except (OSError, RuntimeError, ValueError):
        return "it names a path outside the workspace"
    return target if target.is_dir() else f"{args[0]} is not a folder of the workspace"
