"""A command's words as the shell reads them (phase 2): lex() splits a command into plain words and
says what in it is not plain, misread_bytes() what this locale's shell could read otherwise."""

import locale
import shlex
import sys
import typing

SEPARATORS = ("&&", "||", ";", "|", "\n")


WINDOWS = sys.platform == "win32"


# Unquoted, a word may hold letters, digits and these. cmd.exe splits words on , = and ; and escapes
# with ^.
PLAIN = "_./\\:@+-" if WINDOWS else "_./:@+=,-^"


QUOTES = '"' if WINDOWS else "'\""


NOT_IN_DOUBLE_QUOTES = "%!\\" if WINDOWS else "$`\\!"


# Longer commands ask: checking one of 200,000 characters took the agent half a minute, several
# times over.
MAX_UNASKED_CHARS = 10_000


def lex(command: str) -> list[tuple[list[str], str]] | str:
    """The command's parts of plain words, each with the separator after it; or what in it is not
    plain (anything the shell would expand, redirect or treat as syntax)."""
    if not isinstance(command, str):
        return "the command is not text"
    # Each word is checked as a path, and read here char by char
    if len(command) > MAX_UNASKED_CHARS:
        return f"it is longer than {MAX_UNASKED_CHARS:,} characters"
    if problem := misread_bytes(command):
        return problem
    parts: list[tuple[list[str], str]] = []
    words: list[str] = []
    word: str | None = None
    i = 0
    command = command.strip(" \t\n")
    while i < len(command):
        char = command[i]
        separator = next((s for s in SEPARATORS if command.startswith(s, i)), "")
        if separator or char in " \t":
            if word is not None:
                words, word = words + [word], None
            if separator and not words:
                return f"it has an empty command before {separator!r}"
            elif separator:
                parts, words = parts + [(words, separator)], []
            i += len(separator) or 1
        elif char in QUOTES:
            end = command.find(char, i + 1)
            if end < 0:
                return "it has an unclosed quote"
            text = command[i + 1 : end]
            if bad := [
                c for c in text if not c.isprintable() or char == '"' and c in NOT_IN_DOUBLE_QUOTES
            ]:
                return f"it has {bad[0]!r} inside quotes"
            word, i = (word or "") + text, end + 1
        elif char.isalnum() or char in PLAIN or char == "~" and word and word[-1].isalnum():
            word, i = (word or "") + char, i + 1
        else:
            return f"it has {char!r}, which the shell would treat specially"
    words += [] if word is None else [word]
    if not words:
        return "it is empty" if not parts else "it ends with a separator"
    return parts + [(words, "")]


def trusted_programs(
    parts: list[tuple[list[str], str]], trusted: typing.Collection[str]
) -> set[str]:
    return {words[0] for words, _ in parts} & (set(trusted) - {""})


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
                    f"{chr(low[0])!r}, "
                    "which the shell would read as that character"
                )
    return None


def quote(word: str) -> str:
    if WINDOWS:
        return word if word and all(c.isalnum() or c in PLAIN for c in word) else f'"{word}"'
    return shlex.quote(word)


def shell_programs(command: str) -> set[str]:
    parts = lex(command)
    return {command} if isinstance(parts, str) else {words[0] for words, _ in parts}
