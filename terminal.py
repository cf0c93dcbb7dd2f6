"""The terminal (a later addition to the tutorial's phases): what a person is shown, and what they type. shown()
is the one escaper for everything the model or a server wrote: keys redacted, and every control, format or
invisible character as a visible escape, so a tool name, a file name or an error line cannot draw a fake prompt,
clear the screen or hide what it says; what they type is read so that nothing typed before a question answers it."""

import functools
import os
import re
import select
import sys
import typing
import unicodedata

DISCARDED = "note: discarded input typed before this question"
SHORTEST_SECRET_PIECE = 12  # no run of this many characters of a key is ever written or printed
# Shown escaped, by general category: controls (Cc) move the cursor, clear the screen or set the window title;
# format characters (Cf) are invisible or reorder what is drawn (bidi overrides, tags); line and paragraph
# separators (Zl, Zp) break the line; a lone surrogate (Cs), private use (Co) or unassigned (Cn) code point has
# no glyph anyone agreed on.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
MARK_CATEGORIES = frozenset({"Mn", "Me"})  # combining marks: drawn on the character before them, in its column
# The most combining marks kept on one character; the rest of a pile is escaped. Real writing needs up to four:
# polytonic Greek in NFD has three (Ω + dasia + perispomeni + ypogegrammeni), pointed Hebrew with cantillation
# four (shin + shin dot + dagesh + vowel + accent). "Zalgo" text piles tens, to smear over the lines around it.
MOST_MARKS = 4

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt; UAX #44) is Other_Default_Ignorable_Code_Point + Cf +
# Variation_Selector, less White_Space and a few visible Cf. Every Cf is escaped anyway, so these two lists, from
# PropList.txt of Unicode 14.0 (Python 3.11's unicodedata), add the rest: letters and marks that draw nothing
# (the Hangul fillers, the combining grapheme joiner) and the variation selectors, which can carry hidden data.
OTHER_DEFAULT_IGNORABLE = [(0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x2065, 0x2065),
                           (0x3164, 0x3164), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0xE0000, 0xE0000),
                           (0xE0002, 0xE001F), (0xE0080, 0xE00FF), (0xE01F0, 0xE0FFF)]
VARIATION_SELECTOR = [(0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF)]

SHOWN, HIDDEN, MARK, LAYOUT = 0, 1, 2, 3  # a code point's kind; LAYOUT: \n and \t, kept when newlines
# What is escaped, in a run's kinds (a byte a character: \x00 SHOWN, \x01 HIDDEN, \x02 MARK, \x03 LAYOUT): hidden
# characters; combining marks with no character under them (at the start, after an escape, a tab or a line
# break); and the marks past MOST_MARKS on one character.
ESCAPED = re.compile(rb"\x01+|(?<![\x00\x02])\x02+|(?<=\x00\x02{%d})\x02+" % MOST_MARKS)
BLOCK = 256  # code points classified at a time
WHITESPACE = re.compile(r"\s")
ASTRAL = "\U00010000-\U0010ffff"  # the code points past the BMP, as the inside of a regex class


def redactor(secrets: typing.Iterable[str]) -> typing.Callable[[str], str]:
    """A function that replaces each key, and any run of SHORTEST_SECRET_PIECE or more of its characters,
    with [redacted API key]. A key shorter than that is replaced only where it stands alone."""
    secrets = [secret for secret in secrets if secret]
    pieces = {secret[i:i + SHORTEST_SECRET_PIECE]: secret[i:] for secret in secrets
              for i in range(max(1, len(secret) - SHORTEST_SECRET_PIECE + 1))}
    if not pieces:
        return lambda text: text
    pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(p)}(?![\w-])" if len(p) < SHORTEST_SECRET_PIECE
                                  else re.escape(p) for p in sorted(pieces, key=len, reverse=True)))

    def redact(text: str) -> str:
        if not any(piece in text for piece in pieces):  # str's own search is fast; the regex runs only if needed
            return text
        out, at = [], 0
        while match := pattern.search(text, at):
            rest, end = pieces[match[0]], match.end()
            while end - match.start() < len(rest) and text[end:end + 1] == rest[end - match.start()]:
                end += 1  # the run goes on along the key
            out += [text[at:match.start()], "[redacted API key]"]
            at = end
        return "".join(out) + text[at:]

    return redact


def shown(text: object, *, redact: typing.Callable[[str], str] | None = None, newlines: bool = False) -> str:
    """The text as a person is shown it, on one line: keys redacted first (by redact, on the raw text), then
    every control, format, separator, surrogate, private-use, unassigned or default-ignorable character as a
    visible escape (\\x1b, \\n, \\t, \\u202e, \\U000e0041), and so are combining marks with no character under
    them or piled more than MOST_MARKS deep. With newlines, line breaks and tabs are kept (each line shown as a
    line; \\r and the rest still escaped). Anything but a str is str()'d first."""
    text = text if isinstance(text, str) else str(text)
    if redact is not None:
        text = redact(text)
    return candidates().sub(lambda run: escaped(run, newlines), text)


def escaped(run: re.Match[str], newlines: bool) -> str:
    """A run of candidates() as shown: what ESCAPED finds in it as Python writes it in a string literal
    (\\x1b, \\u202e), the rest as it is."""
    characters = run[0]
    before = SHOWN if run.start() else HIDDEN  # a run starts the text, or follows a character shown as it is
    kinds = bytes([before]) + bytes(map(code_point_kinds(newlines).__getitem__, map(ord, characters)))
    pieces, at = [], 0
    for span in ESCAPED.finditer(kinds, 1):
        start, end = span.start() - 1, span.end() - 1
        pieces += [characters[at:start], characters[start:end].encode("unicode_escape").decode("ascii")]
        at = end
    return "".join(pieces) + characters[at:]


@functools.cache
def candidates() -> re.Pattern[str]:
    """Runs of what shown() may escape: hidden characters, combining marks, and every astral character."""
    # re checks a class's BMP part in a bitmap but its astral ranges one by one, hundreds of steps for each
    # character the bitmap misses; so the class takes every astral character and escaped() looks up its kind.
    kinds = code_point_kinds()
    return re.compile(f"[{char_class(kinds[:0x10000], {HIDDEN, MARK})}{ASTRAL}]+")


def char_class(kinds: bytes, wanted: set[int]) -> str:
    """The inside of a regex character class matching the code points whose kind is in wanted."""
    runs = re.finditer(b"[" + bytes(sorted(wanted)) + b"]+", kinds)
    return "".join(f"{re.escape(chr(run.start()))}-{re.escape(chr(run.end() - 1))}" for run in runs)


@functools.cache
def code_point_kinds(newlines: bool = False) -> bytes:
    """One byte per code point, U+0000 to U+10FFFF: HIDDEN (shown escaped), MARK (a combining mark, kept on a
    character) or SHOWN, by the general categories of this Python's Unicode and the default-ignorables; with
    newlines, the line break and the tab are LAYOUT."""
    if newlines:
        kinds = bytearray(code_point_kinds())
        kinds[ord("\n")] = kinds[ord("\t")] = LAYOUT  # a tab only moves right, to a stop no escape can set
        return bytes(kinds)
    every = every_code_point()
    kinds = bytearray(len(every))
    for start in range(0, len(every), BLOCK):
        block = every[start:start + BLOCK]
        if block.isalpha():  # letters only (most of CJK and Hangul): nothing to escape, no marks
            continue
        # repr() escapes exactly what str.isprintable() refuses (the C* and Z* categories), an astral character
        # in ten characters (\U and eight hex digits): if it escaped them all and none is a space (Zs), the block
        # is all C* (the unassigned planes, private use), found by one call in C instead of BLOCK lookups.
        if start >= 0x10000 and len(repr(block)) == 2 + 10 * BLOCK and not WHITESPACE.search(block):
            kinds[start:start + BLOCK] = bytes([HIDDEN]) * BLOCK
            continue
        for at, character in enumerate(block, start):
            category = unicodedata.category(character)
            if category in HIDDEN_CATEGORIES:
                kinds[at] = HIDDEN
            elif category in MARK_CATEGORIES:
                kinds[at] = MARK
    for first, last in OTHER_DEFAULT_IGNORABLE + VARIATION_SELECTOR:
        kinds[first:last + 1] = bytes([HIDDEN]) * (last + 1 - first)
    return bytes(kinds)


def every_code_point() -> str:
    """All of Unicode in order, U+0000 to U+10FFFF, as one string (lone surrogates included)."""
    # Written as UTF-32 a byte column at a time: a tenth of the time of joining a million chr() calls.
    utf32 = bytearray(4 * 0x110000)
    utf32[0::4] = bytes(range(256)) * 0x1100  # the low byte counts up
    utf32[1::4] = b"".join(bytes([byte]) * 0x100 for byte in range(256)) * 0x11  # the middle byte, every 256
    utf32[2::4] = b"".join(bytes([plane]) * 0x10000 for plane in range(0x11))  # the plane, every 65,536
    return utf32.decode("utf-32-le", "surrogatepass")


def escape(char: str) -> str:
    """One character as Python writes it in a string literal with a number (\\x0a, \\u202e): for files.shown_name,
    whose \\xNN escapes of a name's bytes the model can write back."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_input() -> int | None:
    """The file descriptor of stdin where it is a terminal that can be read unbuffered (POSIX), else None."""
    if sys.platform == "win32" or sys.stdin is None:
        return None
    try:
        fd = sys.stdin.fileno()
    except (ValueError, OSError):  # closed, or not a file at all
        return None
    return fd if os.isatty(fd) else None


def read_line(fd: int) -> str:
    """One line from the terminal, its newline included; '' at the end of input or once the terminal has gone.
    Read a byte at a time, so nothing after the line is taken: Python's buffered sys.stdin may read on into
    the rest of a paste and keep it, where no flush can reach it, for the next question."""
    line = bytearray()
    while not line.endswith(b"\n"):
        try:
            byte = os.read(fd, 1)
        except OSError:  # EIO: the terminal hung up
            break
        if not byte:
            break
        line += byte
    return line.decode(sys.stdin.encoding or "utf-8", "replace")


def discard_typed_ahead() -> bool:
    """Throw away what was typed at the terminal and not read yet; return whether that held a whole line (a
    line still being typed, without its Enter, is thrown away too, but the terminal does not show it as
    waiting)."""
    if sys.platform == "win32":
        if sys.stdin is None or not sys.stdin.isatty():
            return False
        import msvcrt  # each system has only its own: msvcrt here, termios below
        pending = False
        while msvcrt.kbhit():
            msvcrt.getwch()
            pending = True
        return pending
    fd = terminal_input()
    if fd is None:
        return False
    import termios
    pending = bool(select.select([fd], [], [], 0)[0])
    termios.tcflush(fd, termios.TCIFLUSH)
    return pending


def tell(line: str = "") -> None:
    """A line on stderr, unless the terminal has gone (SIGHUP after a hangup): then nobody is left to tell."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass
