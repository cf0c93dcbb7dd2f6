"""The terminal (a later addition): shown() is the one escaper for all the model or a server wrote
(keys redacted, every invisible character a visible escape, so nothing draws a fake prompt or hides
what it says); and what a person types is read so that nothing typed before a question answers
it."""

import functools
import itertools
import os
import re
import select
import sys
import typing
import unicodedata

DISCARDED = "note: discarded input typed before this question"
SHORTEST_SECRET_PIECE = 12  # no run of this many characters of a key is ever written or printed
# a code point's kind; LAYOUT: \n and \t, kept when newlines
SHOWN, HIDDEN, MARK, LAYOUT = 0, 1, 2, 3
# Escaped by general category: controls (Cc) move the cursor or clear the screen, format characters
# (Cf) hide or reorder text (bidi overrides, tags), Zl and Zp break the line; Cs, Co and Cn have no
# agreed glyph. Combining marks (Mn, Me) are drawn on the character before them, in its column.
CATEGORY_KINDS = dict.fromkeys(("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"), HIDDEN) | dict.fromkeys(
    ("Mn", "Me"), MARK
)
# The most combining marks kept on one character. Real writing needs up to four (pointed Hebrew with
# cantillation);
# "Zalgo" text piles tens, to smear over the lines around it.
MOST_MARKS = 4
# The default-ignorables that are not Cf (PropList.txt, Unicode 14.0):
# Other_Default_Ignorable_Code_Point (letters and marks that draw nothing, as the Hangul fillers),
# then Variation_Selector (they can carry hidden data).
IGNORABLE = [
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x2065, 0x2065),
    (0x3164, 0x3164),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0000),
    (0xE0002, 0xE001F),
    (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
    (0x180B, 0x180D),
    (0x180F, 0x180F),
    (0xFE00, 0xFE0F),
    (0xE0100, 0xE01EF),
]
# Escaped, in a run's kinds (a byte a character): hidden characters; marks with no character under
# them (at the start, after an escape, a tab or a line break); and the marks past MOST_MARKS on one
# character.
ESCAPED = re.compile(rb"\x01+|(?<![\x00\x02])\x02+|(?<=\x00\x02{%d})\x02+" % MOST_MARKS)
# Text of ASCII alone has no marks and nothing hidden but its controls: these find them, without and
# with newlines.
ASCII_CONTROLS = {
    False: re.compile(r"[\x00-\x1f\x7f]+"),
    True: re.compile(r"[\x00-\x08\x0b-\x1f\x7f]+"),
}
# code points looked up at a time, the first time one of them is met (shown() needs 256)
BLOCK = 256
UNKNOWN = 4  # the kind of a code point not looked up yet


def redactor(secrets: typing.Iterable[str]) -> typing.Callable[[str], str]:
    """A function that replaces each key, and any run of SHORTEST_SECRET_PIECE or more of its
    characters, with [redacted API key]; a shorter key only where it stands alone."""
    secrets = tuple(secrets)  # read twice
    pieces = {
        secret[i : i + SHORTEST_SECRET_PIECE]: secret[i:]
        for secret in secrets
        if secret
        for i in range(max(1, len(secret) - SHORTEST_SECRET_PIECE + 1))
    }
    if not pieces:
        return lambda text: text
    # a few searches tell a text holding no piece, instead of one for each (45)
    blocks = key_blocks(secrets)
    pattern = re.compile(
        "|".join(
            rf"(?<![\w-]){re.escape(p)}(?![\w-])"
            if len(p) < SHORTEST_SECRET_PIECE
            else re.escape(p)
            for p in sorted(pieces, key=len, reverse=True)
        )
    )

    def redact(text: str) -> str:
        # str's own search is fast; the regex runs only if needed
        if not any(block in text for block in blocks):
            return text
        out, at = [], 0
        while match := pattern.search(text, at):
            rest, end = pieces[match[0]], match.end()
            while (
                end - match.start() < len(rest) and text[end : end + 1] == rest[end - match.start()]
            ):
                end += 1  # the run goes on along the key
            out += [text[at : match.start()], "[redacted API key]"]
            at = end
        return "".join(out) + text[at:]

    return redact


def key_blocks(secrets: typing.Collection[str]) -> set[str]:
    """What any text holding a piece of a key holds: each key's blocks of SHORTEST_SECRET_PIECE // 2
    characters that start at a multiple of that length, as every run of SHORTEST_SECRET_PIECE of its
    characters holds one of them; a shorter key whole."""
    half = SHORTEST_SECRET_PIECE // 2
    return {
        secret[i : i + half] if len(secret) >= SHORTEST_SECRET_PIECE else secret
        for secret in secrets
        if secret
        for i in range(0, max(1, len(secret) - half + 1), half)
    }


def shown(
    text: object, *, redact: typing.Callable[[str], str] | None = None, newlines: bool = False
) -> str:
    """The text (str()'d) as a person is shown it, on one line: keys redacted (on the raw text),
    then every hidden character as a visible escape (\\x1b, \\u202e), and so are marks with no
    character under them or piled past MOST_MARKS. With newlines, line breaks and tabs are kept (\\r
    and the rest still escaped)."""
    text = str(text)
    if redact is not None:
        text = redact(text)
    if text.isascii():  # most of what is shown: str's own checks, no lookups
        if text.isprintable():
            return text
        return ASCII_CONTROLS[newlines].sub(
            lambda run: run[0].encode("unicode_escape").decode("ascii"), text
        )
    # The BMP blocks the text holds (a UTF-16 code unit's high byte is its block) are looked up
    # before it is searched; astral characters are all candidates, and escaped() looks theirs up.
    table = code_point_kinds()
    for number in set(text.encode("utf-16-be", "surrogatepass")[::2]) - LOOKED_UP:
        look_up(table, number)
    return candidates(newlines, len(LOOKED_UP)).sub(escaped, text)


@functools.lru_cache(maxsize=2)
def candidates(newlines: bool, looked_up: int) -> re.Pattern[str]:
    """Runs of what shown() may escape, as far as the `looked_up` blocks tell: the hidden characters
    and marks of the BMP, and every astral character (re checks astral ranges one by one, too
    slowly: escaped() looks up their kinds); with newlines, not \\n and \\t (escaped() tells what
    follows them)."""
    table, ranges = code_point_kinds(), []
    for first in sorted(number * BLOCK for number in LOOKED_UP if number < 0x10000 // BLOCK):
        kinds = bytearray(table[first : first + BLOCK])
        if newlines and first == 0:
            kinds[ord("\n")] = kinds[ord("\t")] = SHOWN
        ranges += [
            (first + run.start(), first + run.end() - 1)
            for run in re.finditer(b"[%c%c]+" % (HIDDEN, MARK), kinds)
        ]
    bmp = "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in ranges)
    return re.compile(f"[{bmp}\U00010000-\U0010ffff]+")


def escaped(run: re.Match[str]) -> str:
    """A run of candidates() as shown: what ESCAPED finds in its kinds as a Python string literal
    writes it."""
    characters, start = run[0], run.start()
    # What the run follows: nothing (a mark there stands on nothing), a line break or tab (kept,
    # with newlines), or a character shown as it is (the rest are candidates).
    before = HIDDEN if not start else LAYOUT if run.string[start - 1] in "\n\t" else SHOWN
    pieces, at = [], 0
    for span in ESCAPED.finditer(bytes([before]) + kinds_of(characters), 1):
        start, end = span.start() - 1, span.end() - 1
        pieces += [
            characters[at:start],
            characters[start:end].encode("unicode_escape").decode("ascii"),
        ]
        at = end
    return "".join(pieces) + characters[at:]


def kinds_of(characters: str) -> bytes:
    """Each character's kind, a byte each: HIDDEN, MARK or SHOWN (those of blocks not met before
    looked up first)."""
    table = code_point_kinds()
    kinds = bytes(map(table.__getitem__, map(ord, characters)))
    if UNKNOWN not in kinds:
        return kinds
    for number in {code // BLOCK for code in map(ord, characters)} - LOOKED_UP:
        look_up(table, number)
    return bytes(map(table.__getitem__, map(ord, characters)))


@functools.cache
def code_point_kinds() -> bytearray:
    """One byte per code point, U+0000 to U+10FFFF: its kind, or UNKNOWN until a character of its
    block is met (looking up all of Unicode at once took 60 ms and 13 MB, before a run's first
    progress line)."""
    return bytearray([UNKNOWN]) * 0x110000


LOOKED_UP: set[int] = set()  # the blocks of code_point_kinds() looked up


def look_up(table: bytearray, number: int) -> None:
    """Fill in the kinds of the BLOCK code points from number * BLOCK."""
    table[number * BLOCK : (number + 1) * BLOCK] = block_kinds(number)
    LOOKED_UP.add(number)


def block_kinds(number: int) -> bytes:
    """The kinds of the BLOCK code points from number * BLOCK, by this Python's Unicode categories
    and the default-ignorables."""
    first = number * BLOCK
    block = "".join(map(chr, range(first, first + BLOCK)))
    if block.isalpha():  # letters only (most of CJK and Hangul): nothing to escape, no marks
        kinds = bytearray(BLOCK)
    elif first >= 0x10000 and len(repr(block)) == 2 + 10 * BLOCK:
        # repr() writes each astral C* or Z* character as \U and eight digits, and no astral one is
        # Z*: all are C*
        # (the unassigned planes, private use).
        kinds = bytearray([HIDDEN]) * BLOCK
    else:
        kinds = bytearray(
            map(CATEGORY_KINDS.get, map(unicodedata.category, block), itertools.repeat(SHOWN))
        )
    for low, high in IGNORABLE:
        low, high = max(low, first), min(high, first + BLOCK - 1)
        if low <= high:
            kinds[low - first : high + 1 - first] = bytes([HIDDEN]) * (high + 1 - low)
    return bytes(kinds)


def escape(char: str) -> str:
    """One character as a Python string literal writes it by number (\\x0a, \\u202e), for
    files.shown_name."""
    code = ord(char)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def terminal_input() -> int | None:
    """The file descriptor of stdin where it is a terminal that can be read unbuffered (POSIX), else
    None."""
    if sys.platform == "win32" or sys.stdin is None:
        return None
    try:
        fd = sys.stdin.fileno()
    except (ValueError, OSError):  # closed, or not a file at all
        return None
    return fd if os.isatty(fd) else None


def read_line(fd: int, waiting: bool = False) -> str:
    """One line from the terminal ('' at its end or once it has gone), a byte at a time: a buffered
    sys.stdin may read on into a paste and keep the rest, where no flush can reach it, for the next
    question. With waiting, only what is there already: the end of a paste without a line end is all
    of its last line."""
    line = bytearray()
    while not line.endswith(b"\n") and (not waiting or select.select([fd], [], [], 0)[0]):
        try:
            byte = os.read(fd, 1)
        except OSError:  # EIO: the terminal hung up
            break
        if not byte:
            break
        line += byte
    return line.decode(sys.stdin.encoding or "utf-8", "replace")


def discard_typed_ahead() -> bool:
    """Throw away what was typed at the terminal and not read yet; return whether that held a whole
    line."""
    if sys.platform == "win32":
        if sys.stdin is None or not sys.stdin.isatty():
            return False
        import msvcrt

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
    """A line on stderr, unless the terminal has gone (SIGHUP): then nobody is left to tell."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass
