"""What a person is shown (beyond the tutorial): shown() is the one escaper for all the model or a
server wrote (keys redacted by the caller's redactor, every invisible character a visible escape),
so nothing draws a fake prompt or hides what it says; escape() writes one character by number."""

import functools
import itertools
import re
import typing
import unicodedata

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
# Characters that draw nothing and are not white space (which shows as the blank it is, and which
# the approval prompt's short form counts with these): escaped whatever their category.
# Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 14.0: most are Cf; the rest are
# letters and marks that draw nothing, as the Hangul fillers, variation selectors, which can carry
# hidden data, and code points kept for more of them)...
IGNORABLE = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]
# ... and the symbols, letters and marks that Unicode defines as an empty glyph, as their names
# say: BRAILLE PATTERN BLANK (an empty cell, the width of a letter), OBJECT REPLACEMENT CHARACTER (a
# place held for something that is not text), KHITAN SMALL SCRIPT FILLER, MUSICAL SYMBOL NULL
# NOTEHEAD.
BLANK = [(0x2800, 0x2800), (0xFFFC, 0xFFFC), (0x16FE4, 0x16FE4), (0x1D159, 0x1D159)]
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
    # Copied: runs going at once may look up a block meanwhile.
    bmp_blocks = [number for number in LOOKED_UP.copy() if number < 0x10000 // BLOCK]
    for first in sorted(number * BLOCK for number in bmp_blocks):
        kinds = bytearray(table[first : first + BLOCK])
        if newlines and first == 0:
            kinds[ord("\n")] = kinds[ord("\t")] = SHOWN
        for run in re.finditer(b"[%c%c]+" % (HIDDEN, MARK), kinds):
            low, high = chr(first + run.start()), chr(first + run.end() - 1)
            ranges.append(f"{re.escape(low)}-{re.escape(high)}")
    return re.compile(f"[{''.join(ranges)}\U00010000-\U0010ffff]+")


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
    """The kinds of the BLOCK code points from number * BLOCK, by this Python's Unicode categories,
    IGNORABLE and BLANK."""
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
    for low, high in IGNORABLE + BLANK:
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


class InPieces:
    """shown(text, redact=..., newlines=True) of a text that comes in pieces: piece() returns what
    can be shown of it now, end() the rest, and joined they are what shown() makes of the whole.
    Held back: what `redact` holds back (redaction.piecewise: a key still forming), the last
    character with the marks on it (whether a mark still to come is escaped depends on what it
    stands on), and the first half of a surrogate pair (JSON may send a character's halves in two
    pieces)."""

    def __init__(self, redact: typing.Callable[[str | None], str] | None = None) -> None:
        self.redact = redact or (lambda piece: piece or "")
        self.held = ""

    def piece(self, text: str) -> str:
        return self.take(self.redact(text), last=False)

    def end(self) -> str:
        return self.take(self.redact(None), last=True)

    def take(self, text: str, last: bool) -> str:
        text = self.held + text
        if not text.isascii():  # a pair's halves, as one character again
            text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        cut = len(text) if last else base(text)
        self.held = text[cut:]
        return shown(text[:cut], newlines=True)


def base(text: str) -> int:
    """Where the text's last character that is not a combining mark starts (0 if there is none);
    before a lone first half of a surrogate pair at its end."""
    if text and "\ud800" <= text[-1] <= "\udbff":
        return len(text) - 1
    if text.isascii():
        return max(len(text) - 1, 0)
    kinds = kinds_of(text)
    for at in range(len(text) - 1, -1, -1):
        if kinds[at] != MARK:
            return at
    return 0
