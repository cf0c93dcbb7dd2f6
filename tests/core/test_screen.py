"""What a person is shown: screen.shown() escapes every control, format, separator, surrogate,
private-use, unassigned and default-ignorable character, and stray or piled-up combining
marks; all else shows as itself."""

import re
import subprocess
import sys
import unicodedata

import pytest
from helpers import ROOT

from plainagent.core import redaction, screen
from plainagent.core.screen import shown

# Default_Ignorable_Code_Point, as DerivedCoreProperties.txt (Unicode 14.0) lists it: written out
# here rather than derived, so the test does not share the module's derivation.
DEFAULT_IGNORABLE = [
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
IGNORABLE = {chr(code) for first, last in DEFAULT_IGNORABLE for code in range(first, last + 1)}
# Characters of a visible category that draw nothing, as their names say: BRAILLE PATTERN BLANK,
# OBJECT REPLACEMENT CHARACTER, KHITAN SMALL SCRIPT FILLER, MUSICAL SYMBOL NULL NOTEHEAD. White
# space is not here: it shows as a blank, and the approval prompt's short form counts it.
BLANK = {"\u2800", "\ufffc", "\U00016fe4", "\U0001d159"}
ESCAPE = re.compile(r"\\(?:x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[ntr])")
KEY = "gsk_" + "0123456789abcdefghijABCDEFGHIJklmnopqrst"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # clear the screen, cursor home
        ("\x1b]0;owned\x07", "\\x1b]0;owned\\x07"),  # the window title, ended by BEL
        ("\x1b]2;owned\x1b\\", "\\x1b]2;owned\\x1b\\"),  # ... ended by ST (ESC \)
        ("\x9b2J\x9d0;owned\x9c", "\\x9b2J\\x9d0;owned\\x9c"),  # the same as 8-bit C1 controls
        ("\x1b[8mhidden\x1b[0m", "\\x1b[8mhidden\\x1b[0m"),  # concealed text
        # a carriage return would print over "all good"
        (
            "all good\rrm -rf ~",
            "all good\\rrm -rf ~",
        ),
        (
            # a newline in a tool name: a fake prompt
            "read_file\nrun_shell wants to run:\n  rm -rf ~\nApprove? [y/N] ",
            "read_file\\nrun_shell wants to run:\\n  rm -rf ~\\nApprove? [y/N] ",
        ),
        ("a\tb", "a\\tb"),
        ("\x00\x07\x08\x0b\x0c\x7f", "\\x00\\x07\\x08\\x0b\\x0c\\x7f"),
    ],
)
def test_controls_are_shown_as_escapes_on_one_line(text, expected):
    assert shown(text) == expected


@pytest.mark.parametrize(
    "character, escape",
    [
        ("\U000e0001", "\\U000e0001"),
        ("\U000e0020", "\\U000e0020"),
        ("\U000e0041", "\\U000e0041"),  # tags
        ("\U000e007f", "\\U000e007f"),
        ("\u202a", "\\u202a"),
        ("\u202b", "\\u202b"),
        ("\u202c", "\\u202c"),
        ("\u202d", "\\u202d"),  # LRE RLE PDF LRO
        ("\u202e", "\\u202e"),  # RLO
        ("\u2066", "\\u2066"),
        ("\u2067", "\\u2067"),
        ("\u2068", "\\u2068"),
        ("\u2069", "\\u2069"),  # LRI RLI FSI PDI
        ("\u200e", "\\u200e"),
        ("\u200f", "\\u200f"),
        ("\u061c", "\\u061c"),  # LRM RLM ALM
        ("\u115f", "\\u115f"),
        ("\u1160", "\\u1160"),
        ("\u3164", "\\u3164"),
        ("\uffa0", "\\uffa0"),  # Hangul fillers
        ("\u00ad", "\\xad"),  # soft hyphen
        ("\ufe00", "\\ufe00"),
        ("\ufe0f", "\\ufe0f"),
        ("\U000e0100", "\\U000e0100"),  # variation selectors
        ("\U000e01ef", "\\U000e01ef"),
        ("\u180b", "\\u180b"),
        ("\u180f", "\\u180f"),
        ("\u200b", "\\u200b"),
        ("\u200c", "\\u200c"),
        ("\u200d", "\\u200d"),  # ZWSP ZWNJ ZWJ
        ("\u2060", "\\u2060"),
        ("\u2062", "\\u2062"),
        ("\ufeff", "\\ufeff"),  # word joiner, invisible times, BOM
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
        ("\x85", "\\x85"),  # line and paragraph separators, NEL
        ("\ufff9", "\\ufff9"),
        ("\ufffa", "\\ufffa"),
        ("\ufffb", "\\ufffb"),  # interlinear annotation
        ("\u034f", "\\u034f"),
        ("\u17b4", "\\u17b4"),
        ("\u180e", "\\u180e"),  # CGJ, Khmer inherent vowel, MVS
        ("\ud800", "\\ud800"),
        ("\udc80", "\\udc80"),
        ("\udfff", "\\udfff"),  # lone surrogates
        ("\ue000", "\\ue000"),
        ("\uf8ff", "\\uf8ff"),
        ("\U000f0000", "\\U000f0000"),  # private use
        ("\U0010fffd", "\\U0010fffd"),
        ("\ufffe", "\\ufffe"),
        ("\U0010ffff", "\\U0010ffff"),
        ("\U00040000", "\\U00040000"),  # unassigned
        ("\u2065", "\\u2065"),
        ("\U000e0080", "\\U000e0080"),
        ("\u2800", "\\u2800"),
        ("\ufffc", "\\ufffc"),
        ("\U00016fe4", "\\U00016fe4"),  # drawn as nothing
        ("\U0001d159", "\\U0001d159"),
    ],
)
def test_invisible_characters_are_shown_as_escapes(character, escape):
    for newlines in (False, True):
        assert shown(f"ok{character}ok", newlines=newlines) == f"ok{escape}ok"
        assert shown(character * 3, newlines=newlines) == escape * 3


@pytest.mark.parametrize(
    "text",
    [
        "café, naïve, Ünïcödé",
        "日本語のテキスト",
        "한국어",
        "Привет",
        "Ελληνικά",
        "שָׁלוֹם",
        "مَرْحَبًا",
        "नमस्ते दुनिया",
        "ภาษาไทย",
        "e\u0301",
        "😀",
        "👍🏽",
        "🇫🇷",
        "𝒂\u0301",
        "x = {'a': [1, 2]}  # ok \\ / ~ ` $",
        "«\u00a0bonjour\u202f»",
        "src/main.rs:12:5",
        unicodedata.normalize("NFD", "ᾯ ệ"),
        # shin + shin dot + dagesh + qamats + etnahta: four marks, kept
        "\u05e9\u05c1\u05bc\u05b8\u0591",
    ],
)
def test_ordinary_text_is_shown_as_it_is(text):
    assert shown(text) == text
    assert shown(text, newlines=True) == text


@pytest.mark.parametrize(
    "text, expected",
    [
        # an emoji ZWJ sequence shows as its parts: the joiner is a format character
        (
            "👩\u200d💻",
            "👩\\u200d💻",
        ),
        # so does an emoji presentation selector: every variation selector is escaped
        (
            "⚠\ufe0f",
            "⚠\\ufe0f",
        ),
        # a keycap's enclosing mark then stands on an escape: escaped too
        (
            "1\ufe0f\u20e3",
            "1\\ufe0f\\u20e3",
        ),
        # tag flag
        (
            "\U0001f3f4\U000e0067\U000e0062\U000e007f",
            "\U0001f3f4\\U000e0067\\U000e0062\\U000e007f",
        ),
    ],
)
def test_emoji_sequences_show_their_invisible_parts(text, expected):
    assert shown(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\u0301abc", "\\u0301abc"),  # nothing to stand on at the start
        ("\u20ddx", "\\u20ddx"),  # an enclosing mark (Me) too
        ("a\u20dd", "a\u20dd"),
        ("\x1b\u0301", "\\x1b\\u0301"),  # nor on an escape
        (" \u0301", " \u0301"),  # a space is how a lone accent is written
        ("a" + "\u0301" * 4, "a" + "\u0301" * 4),
        ("a" + "\u0301" * 5, "a" + "\u0301" * 4 + "\\u0301"),
        (
            # Zalgo: a pile past four is escaped
            "Z\u0336\u0315\u0358\u0321\u0322\u0327\u0328\u031bo",
            "Z\u0336\u0315\u0358\u0321\\u0322\\u0327\\u0328\\u031bo",
        ),
        (
            "ab" + "\u0301" * 6 + "c" + "\u0300" * 2,
            "ab" + "\u0301" * 4 + "\\u0301" * 2 + "c" + "\u0300" * 2,
        ),
    ],
)
def test_combining_marks_need_a_character_and_pile_at_most_four(text, expected):
    assert shown(text) == expected


def test_every_combining_mark_is_kept_on_a_character_and_escaped_alone():
    hidden = IGNORABLE | BLANK
    marks = [
        chr(code)
        for code in range(0x110000)
        if unicodedata.category(chr(code)) in ("Mn", "Me") and chr(code) not in hidden
    ]
    # an accent, an enclosing circle, a music mark
    assert {"\u0301", "\u20dd", "\U0001d167"} <= set(marks)
    for mark in marks:
        escape = mark.encode("unicode_escape").decode()
        assert shown(mark) == escape
        assert shown("a" + mark) == "a" + mark
        assert shown("a" + mark * 6) == "a" + mark * 4 + escape * 2


@pytest.mark.parametrize(
    "text, expected",
    [
        ("line one\nline two\n", "line one\nline two\n"),
        # tabs only move the cursor right: kept in a multi-line text
        (
            "\tindented\n\t\tmore",
            "\tindented\n\t\tmore",
        ),
        ("a\r\nb", "a\\r\nb"),  # a carriage return is still escaped
        # only \n breaks a line
        (
            "a\u2028b\u2029c\x85d\x0be\x0cf",
            "a\\u2028b\\u2029c\\x85d\\x0be\\x0cf",
        ),
        ("\x1b[31mred\x1b[0m\n", "\\x1b[31mred\\x1b[0m\n"),
        ("a\n\u0301b", "a\n\\u0301b"),  # a mark at the start of a line stands on nothing
        ("a\t\u0301b", "a\t\\u0301b"),
    ],
)
def test_with_newlines_each_line_is_shown_as_a_line(text, expected):
    assert shown(text, newlines=True) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (42, "42"),
        (None, "None"),
        (ValueError("bad\nline"), "bad\\nline"),
        (b"\x1b", "b'\\x1b'"),
    ],
)
def test_anything_but_a_str_is_shown_as_its_str(value, expected):
    assert shown(value) == expected


def test_keys_are_redacted_on_the_raw_text_before_escaping():
    redact = redaction.redactor([KEY])
    assert (
        shown(f"error: bad key {KEY}\x1b[2J", redact=redact)
        == "error: bad key [redacted API key]\\x1b[2J"
    )
    # a control or invisible character inside a key leaves two long pieces of
    # it: each is still redacted
    assert (
        shown(f"{KEY[:20]}\x00{KEY[20:]}", redact=redact)
        == "[redacted API key]\\x00[redacted API key]"
    )
    assert (
        shown(f"{KEY[:20]}\u200b{KEY[20:]}\n", redact=redact, newlines=True)
        == "[redacted API key]\\u200b[redacted API key]\n"
    )
    # the redactor sees the raw text, and what it returns is escaped
    assert shown("a\x1bb", redact=lambda text: text.replace("\x1b", "<ESC>")) == "a<ESC>b"
    assert shown("a", redact=lambda text: text + "\x07") == "a\\x07"


class Searched(str):
    """A text that counts the searches made in it."""

    searches = 0

    def __contains__(self, piece: object) -> bool:
        Searched.searches += 1
        return super().__contains__(piece)


def test_every_run_of_twelve_characters_of_a_key_is_redacted_wherever_it_starts():
    redact = redaction.redactor([KEY, "short-key"])
    for start in range(len(KEY) - 11):
        assert redact(f"a {KEY[start : start + 12]}!") == "a [redacted API key]!"
    assert redact("a short-key b, my-short-key") == "a [redacted API key] b, my-short-key"


def test_a_text_without_the_key_costs_a_few_searches_not_one_for_each_run_of_it():
    # Every tool result is redacted several times a step (for the model, the
    # transcript, the progress line)
    redact = redaction.redactor([KEY])
    Searched.searches = 0
    assert redact(Searched("x" * 4000)) == "x" * 4000
    # one for each 6 characters of it; a search each of its 33 runs before
    assert Searched.searches <= len(KEY) // 6


def test_every_code_point_is_shown_as_itself_or_escaped():
    """Over all of Unicode at once: every character with a visible category (L, N, P, S, Zs) that is
    not default-ignorable shows as itself; of the rest only some combining marks do (M*, checked one
    by one above); nothing else is left unescaped; the escapes read back to exactly the text; with
    newlines, so do \\n and \\t."""
    # a backslash would read as an escape
    text = "".join(map(chr, range(0x110000))).replace("\\", "")
    assert len(text) == 0x110000 - 1 and text[:3] == "\x00\x01\x02" and text[-1] == "\U0010ffff"
    hidden = IGNORABLE | BLANK
    visible = {
        character
        for character in text
        if character not in hidden
        and unicodedata.category(character).startswith(("L", "N", "P", "S", "Zs"))
    }
    kept = {}
    for newlines in (False, True):
        out = shown(text, newlines=newlines)
        assert out.encode("ascii", "backslashreplace").decode("unicode_escape") == text
        kept[newlines] = set(ESCAPE.sub("", out))
    assert visible <= kept[False]
    for character in kept[False] - visible:
        assert unicodedata.category(character).startswith("M") and character not in hidden, hex(
            ord(character)
        )
    assert kept[True] == kept[False] | {"\n", "\t"}


def test_long_text_is_escaped_whole():
    # How long this takes is measured in tests/bench.py (show_long_text).
    line = '    return f"{name}: {value!r}"  # café 日本 😀 ok\n'
    text = line * (2_000_000 // len(line)) + "\x1b[2J"
    out = shown(text)
    assert out.endswith("\\n\\x1b[2J") and out.count("\\n") == text.count("\n")


def test_showing_ordinary_text_builds_no_table_of_unicode():
    """The first progress line of a run is shown at once: its characters are looked up as they
    are met, with no table of every code point looked up (which took 13 MB and 60 ms before the
    first tool call; the kinds it has room for take 1.1 MB). Allocations are counted, not
    timed: tests/bench.py times it."""
    probe = (
        "import tracemalloc; from plainagent.core import screen; tracemalloc.start(); "
        'screen.shown(\'[1] list_dir {"path": "caf\u00e9/\u65e5\u672c"} \u2192 ok\'); '
        "screen.shown('a\\tb\\n', newlines=True); print(tracemalloc.get_traced_memory()[1])"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert int(result.stdout) < 2_000_000, result.stderr


def expected_kind(character: str) -> str:
    """What shown() does with a character, derived here from Unicode's categories, DEFAULT_IGNORABLE
    and BLANK (not the module's own tables): "hidden" is always escaped, "mark" is kept on a
    character, "shown" is itself."""
    if (
        character in IGNORABLE
        or character in BLANK
        or unicodedata.category(character) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")
    ):
        return "hidden"
    return "mark" if unicodedata.category(character) in ("Mn", "Me") else "shown"


EVERY = [chr(code) for code in range(0x110000)]
KINDS = {character: expected_kind(character) for character in EVERY}


def as_escape(character: str) -> str:
    return character.encode("unicode_escape").decode("ascii")


# The code points the context tests below go through one by one: all of the BMP, every mark and
# default-ignorable, and every 97th astral one (all of them, one escape each, would take a minute).
SAMPLE = [
    c for c in EVERY if ord(c) < 0x10000 or KINDS[c] == "mark" or c in IGNORABLE or ord(c) % 97 == 0
]


def test_every_code_point_is_of_the_kind_its_category_and_the_default_ignorables_say():
    """The escaper's own classification of each of the 1,114,112 code points
    against the one derived here."""
    names = {screen.SHOWN: "shown", screen.HIDDEN: "hidden", screen.MARK: "mark"}
    found = screen.kinds_of("".join(EVERY))
    differ = [hex(ord(c)) for c, kind in zip(EVERY, found, strict=True) if names[kind] != KINDS[c]]
    assert not differ


@pytest.mark.parametrize(
    "before, newlines",
    [
        ("a", False),
        ("a", True),
        ("\x00", False),
        ("\n", True),
        ("\t", True),
        ("", False),
        ("", True),
    ],
)
def test_each_code_point_after_a_letter_an_escape_a_line_break_or_nothing_is_shown_as_its_kind_says(
    before, newlines
):
    """A hidden code point is escaped wherever it is; a mark is kept on a letter and escaped
    after an escape, a line break, a tab or at the start; \\n and \\t are kept in newlines
    mode; everything else is itself."""
    kept = {"\n", "\t"} if newlines else set()

    def want(character: str, stands_on: bool) -> str:
        kind = KINDS[character]
        if kind == "shown" or character in kept or kind == "mark" and stands_on:
            return character
        return as_escape(character)

    if before == "":
        for character in SAMPLE:  # alone: at the start of the text
            assert shown(character, newlines=newlines) == want(character, False), hex(
                ord(character)
            )
        return
    text = "".join(before + character for character in SAMPLE)
    prefix = before if before in kept or before == "a" else as_escape(before)
    assert shown(text, newlines=newlines) == "".join(
        prefix + want(c, before == "a") for c in SAMPLE
    )


@pytest.mark.parametrize("category", ["Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn", "Mn", "Me"])
def test_every_character_of_an_escaped_category_is_escaped_in_a_run_and_between_letters(category):
    members = "".join(c for c in EVERY if unicodedata.category(c) == category and c not in "\n\t")
    assert members
    for newlines in (False, True):
        if category in ("Mn", "Me"):  # a run of marks on a letter: four kept, the rest escaped
            for mark in members:
                want = (
                    "a" + mark * 4 + as_escape(mark) * 2
                    if KINDS[mark] == "mark"
                    else "a" + as_escape(mark) * 6
                )
                assert shown("a" + mark * 6, newlines=newlines) == want, hex(ord(mark))
        else:
            assert shown(f"a{members}b", newlines=newlines) == f"a{as_escape(members)}b"


@pytest.mark.parametrize("first, last", DEFAULT_IGNORABLE)
def test_every_default_ignorable_is_escaped_whatever_its_category(first, last):
    run = "".join(map(chr, range(first, last + 1)))
    for newlines in (False, True):
        assert shown(f"a{run}b", newlines=newlines) == f"a{as_escape(run)}b"
        assert shown(f"a{run[0]}", newlines=newlines) == f"a{as_escape(run[0])}"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("\U0001d167", "\\U0001d167"),  # an astral mark at the start
        ("x\U0001d167\U0001d168", "x\U0001d167\U0001d168"),  # ... on a letter
        ("😀\u0301", "😀\u0301"),  # a mark on an astral character
        ("😀" + "\u0301" * 5, "😀" + "\u0301" * 4 + "\\u0301"),
        ("\U000e0001\u0301", "\\U000e0001\\u0301"),  # after an escaped astral character
        # astral unassigned (plane 5), then a mark on it
        (
            "\U00050000\u0301x",
            "\\U00050000\\u0301x",
        ),
        # a variation selector is no character to stand on
        (
            "a\U000e0100\u0301",
            "a\\U000e0100\\u0301",
        ),
        ("a\ufe0f" * 3, "a\\ufe0f" * 3),
        ("\u0301" * 6, "\\u0301" * 6),
    ],
)
def test_astral_characters_and_marks_around_them(text, expected):
    assert shown(text) == expected and shown(text, newlines=True) == expected
