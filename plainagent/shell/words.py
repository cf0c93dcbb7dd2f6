"""A command's words as the shell reads them (phase 2): parse() reads a command once into a Command,
its parts of plain words or what in it is not plain (lex()); misread_bytes() says what this
locale's shell could read otherwise."""

import dataclasses
import locale
import re
import shlex
import sys
import typing

SEPARATORS = ("&&", "||", ";", "|", "\n")


WINDOWS = sys.platform == "win32"


# Unquoted, a word may hold letters, digits and these. cmd.exe splits words on , = and ; and escapes
# with ^.
PLAIN = "_./\\:@+-" if WINDOWS else "_./:@+=,-^%"  # % is nothing to /bin/sh


QUOTES = '"' if WINDOWS else "'\""


NOT_IN_DOUBLE_QUOTES = "%!\\" if WINDOWS else "$`\\!"


# Where a command may send its output unasked: only /dev/null, or one of stdout and stderr to the
# other (2>&1). Nothing else is ever opened for writing by the shell.
DISCARD = "/dev/null"
REDIRECTED_FDS = ("1", "2")


class Redirection(str):
    """A redirection lex() read (2>/dev/null, >>/dev/null, 2>&1), set apart from the words: it is
    never an argument, a path or an option, and is written back as it is."""


# Unquoted, these make a word a pattern /bin/sh matches against file names (not on Windows: cmd.exe
# leaves them to the program). Quoted, each is itself: GLOB_ESCAPED marks it so in the pattern.
GLOB = "" if WINDOWS else "*?[]"
GLOB_ESCAPED = GLOB + "\\"


class Glob(str):
    """A word with an unquoted * ? or [...] (lex()): the shell replaces it with the names it
    matches (expansion.py). The text is the word as the program gets it where nothing matches;
    `pattern` is the same with each quoted * ? [ ] \\ escaped by a backslash."""

    pattern: str

    def __new__(cls, text: str, pattern: str) -> "Glob":
        word = super().__new__(cls, text)
        word.pattern = pattern
        return word


def glob_word(text: str, pattern: str) -> str:
    """The word lex() read: a Glob where its pattern has an unquoted * ? or [; else the text."""
    unquoted = re.sub(r"\\.", "", pattern, flags=re.DOTALL)
    return Glob(text, pattern) if any(c in unquoted for c in "*?[") else text


# Programs the person may name (AGENT_ALLOW) that are also run as `python -m NAME` or from the
# workspace's venv: the same program either way.
MODULE_PROGRAMS = ("pytest",)
PYTHONS = ("python", "python3")
VENV_PROGRAM = re.compile(r"(?:\./)?(\.venv|venv)/bin/([\w.-]+)")


# Longer commands ask: checking one of 200,000 characters took the agent half a minute, several
# times over.
MAX_UNASKED_CHARS = 10_000
# A command's parts: each part's words (its redirections after them), and the separator after it
Parts = list[tuple[list[str], str]]


@dataclasses.dataclass(frozen=True)
class Command:
    """A command read once (parse()): its `text`; its `parts` of plain words, each with the
    separator after it; or, where it is not plain words, the `problem` (what in it the shell would
    expand, redirect or treat as syntax), and no parts."""

    text: str
    parts: Parts
    problem: str | None = None

    @property
    def programs(self) -> set[str]:
        """The programs its parts run (their first words); the whole text where it has no parts."""
        return {self.text} if self.problem else {words[0] for words, _ in self.parts}


def parse(command: str) -> Command:
    """The command read once, as the shell would read it (lex())."""
    parts = lex(command)
    return Command(command, [], parts) if isinstance(parts, str) else Command(command, parts)


def lex(command: str) -> Parts | str:
    """The command's parts of plain words, each with the separator after it; or what in it is not
    plain (anything the shell would expand, redirect or treat as syntax)."""
    if not isinstance(command, str):
        return "the command is not text"
    # Each word is checked as a path, and read here char by char
    if len(command) > MAX_UNASKED_CHARS:
        return f"it is longer than {MAX_UNASKED_CHARS:,} characters"
    if problem := misread_bytes(command):
        return problem
    parts: Parts = []
    words: list[str] = []
    redirections: list[str] = []  # each part's, after its words: where they stand changes nothing
    word: str | None = None
    pattern = ""  # the word as a glob (glob_word())
    i = start = 0
    command = command.strip(" \t\n")
    while i < len(command):
        char = command[i]
        separator = next((s for s in SEPARATORS if command.startswith(s, i)), "")
        if separator or char in " \t":
            if word is not None:
                words, word = words + [glob_word(word, pattern)], None
            if separator and not words:
                return f"it has an empty command before {separator!r}"
            elif separator:
                parts, words, redirections = parts + [(words + redirections, separator)], [], []
            i += len(separator) or 1
        elif char == ">" and not WINDOWS:
            fd = command[start:i] if word is not None and command[start:i].isdigit() else ""
            if fd and fd not in REDIRECTED_FDS:
                return f"it redirects file descriptor {fd}; only 1 and 2 may be redirected"
            if word is not None and not fd:
                words.append(glob_word(word, pattern))
            word = None
            redirection = redirection_at(command, i)
            if isinstance(redirection, str):
                return redirection
            text, i = redirection
            redirections.append(Redirection(fd + text))
        elif char in QUOTES:
            end = command.find(char, i + 1)
            if end < 0:
                return "it has an unclosed quote"
            text = command[i + 1 : end]
            if bad := [
                c for c in text if not c.isprintable() or char == '"' and c in NOT_IN_DOUBLE_QUOTES
            ]:
                return f"it has {bad[0]!r} inside quotes"
            start, pattern = (i, "") if word is None else (start, pattern)
            pattern += "".join("\\" + c if c in GLOB_ESCAPED else c for c in text)
            word, i = (word or "") + text, end + 1
        elif char.isalnum() or char in PLAIN + GLOB or char == "~" and word and word[-1].isalnum():
            start, pattern = (i, "") if word is None else (start, pattern)
            pattern += char
            word, i = (word or "") + char, i + 1
        else:
            return f"it has {char!r}, which the shell would treat specially"
    words += [] if word is None else [glob_word(word, pattern)]
    if not words:
        return "it is empty" if not parts else "it ends with a separator"
    return parts + [(words + redirections, "")]


def redirection_at(command: str, at: int) -> tuple[str, int] | str:
    """The redirection starting with the > at `at` and where the command goes on after it: output
    to /dev/null (>, >>) or to the other output stream (>&1, >&2); or why it must ask. The target
    must end where the shell's word ends: at a blank, a separator or the end."""
    operator = (
        ">>" if command.startswith(">>", at) else ">&" if command.startswith(">&", at) else ">"
    )
    end = at + len(operator)
    while operator != ">&" and command[end : end + 1] in (" ", "\t"):
        end += 1
    target = command[end:]
    for stop in (" ", "\t", *SEPARATORS, "&"):
        target = target.split(stop, 1)[0]
    allowed = REDIRECTED_FDS if operator == ">&" else (DISCARD,)
    if target not in allowed:
        return (
            f"it redirects output to {target or 'nothing'} ({operator}); only 2>/dev/null, "
            ">/dev/null, >>/dev/null and 2>&1 run without asking"
        )
    return operator + target, end + len(target)


def trusted_programs(parts: Parts, trusted: typing.Collection[str]) -> set[str]:
    """The programs the person trusts that the command's parts run (trusted_program)."""
    return {name for words, _ in parts if (name := trusted_program(words, trusted))}


def trusted_program(words: list[str], trusted: typing.Collection[str]) -> str | None:
    """The trusted program a part runs: its first word, if trusted; or a program of MODULE_PROGRAMS
    the person named, run as `python -m NAME` (the python their shell finds) or from a workspace
    venv (VENV_PROGRAM: .venv/bin/NAME, .venv/bin/python -m NAME), which is that program too."""
    trusted = set(trusted) - {""}
    if words[0] in trusted:
        return words[0]
    venv = VENV_PROGRAM.fullmatch(words[0])
    program = venv[2] if venv else words[0]
    if program in PYTHONS and words[1:2] == ["-m"] and words[2:3]:
        program = words[2]
    named = program in trusted & set(MODULE_PROGRAMS)
    return program if named and (venv or program != words[0]) else None


def misread_bytes(command: str, encodings: typing.Iterable[str] | None = None) -> str | None:
    """Why the shell might not read the command's bytes as checked here: in Big5, GBK or Shift_JIS a
    character's second byte can be | ` or \\, so each must be written without ASCII bytes in the
    encoding the bytes are made in and in the one the shell reads them in (the locale's)."""
    if WINDOWS or command.isascii():
        return None
    if encodings is None:  # the bytes are made in the first, and read in the second
        encodings = dict.fromkeys((sys.getfilesystemencoding(), locale.nl_langinfo(locale.CODESET)))
    data = None
    for encoding in encodings:
        try:
            data = command.encode(encoding, "surrogateescape") if data is None else data
            text = data.decode(encoding)
        except (UnicodeError, LookupError):
            return (
                f"it has characters this locale's encoding ({encoding}) cannot write or read "
                "back exactly"
            )
        for char in text:
            if not char.isascii() and (low := [b for b in char.encode(encoding) if b < 0x80]):
                return (
                    f"in this locale's encoding ({encoding}) {char!r} is written with the byte "
                    f"{chr(low[0])!r}, which the shell would read as that character"
                )
    return None


def quote(word: str) -> str:
    if WINDOWS:
        return word if word and all(c.isalnum() or c in PLAIN for c in word) else f'"{word}"'
    return shlex.quote(word)
