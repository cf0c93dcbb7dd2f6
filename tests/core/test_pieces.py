"""Text that comes in pieces (a streamed reply) is shown exactly as the whole would be:
screen.InPieces and redaction.piecewise give, joined, what shown() and redactor() give of the
whole text, wherever it is cut, holding back no more than the end still forming."""

import itertools

import pytest
from helpers import KEY

from plainagent.core.redaction import piecewise, redactor
from plainagent.core.screen import InPieces, shown

TEXTS = [
    "clear the screen \x1b[2J and go on",
    "e\u0301\u0301\u0301\u0301\u0301\u0301 piled marks, \u0301 a stray one",
    "\u0301 a mark first",
    "tabs\tand\nlines\n\u0301 and a mark after one",
    f"the key is {KEY}, and its end {KEY[-14:]} too",
    "an emoji 😀, a hidden \u200b, a bidi \u202e override",
    "crlf\r\nand a bell \x07",
]


def every_cut(text: str, pieces: int):
    """Each way of cutting text into `pieces` pieces (at most 300 of them)."""
    cuts = itertools.combinations(range(1, len(text)), pieces - 1)
    for points in itertools.islice(cuts, 0, None, max(1, len(text) ** (pieces - 1) // 300)):
        ends = [0, *points, len(text)]
        yield [text[a:b] for a, b in itertools.pairwise(ends)]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("pieces", [2, 3])
def test_pieces_are_shown_as_the_whole_wherever_the_text_is_cut(text, pieces):
    whole = shown(text, redact=redactor([KEY]), newlines=True)
    for cut in every_cut(text, pieces):
        screen = InPieces(piecewise([KEY]))
        assert "".join(map(screen.piece, cut)) + screen.end() == whole, cut


def test_a_character_sent_as_two_halves_of_a_surrogate_pair_is_one_character():
    screen = InPieces()
    assert screen.piece("a\ud83d") + screen.piece("\ude00b") + screen.end() == "a😀b"


def test_a_key_split_in_three_is_never_given_out_and_little_else_is_held_back():
    take = piecewise([KEY])
    out = [
        take("the key: "),
        take(KEY[:15]),
        take(KEY[15:30]),
        take(KEY[30:] + " done"),
        take(None),
    ]
    assert "".join(out) == "the key: [redacted API key] done"
    assert not any(KEY[i : i + 12] in "".join(out) for i in range(len(KEY) - 11))
    assert out[0] == "the key: "  # nothing of it could be a key: shown at once


def test_the_first_piece_shows_at_once_but_its_last_character():
    screen = InPieces(piecewise([KEY]))
    assert screen.piece("Hello, world.") == "Hello, world"
    assert screen.piece("!") + screen.end() == ".!"


def test_a_key_that_repeats_some_of_its_characters_is_redacted_as_whole_however_cut():
    key = "ABCDEFGHIJKLMNOPMNOPQRSTU"  # MNOP twice: a run of it may end before the text does
    whole = redactor([key])
    cuts = [
        ["IJ", "KLMNOPMNOPMNO", "PQ", "RSTURSTUILOPQR", "STU"],
        ["xBCDEFG", "HIJKLMNOPMNOPQRSTUMNOP", "MNOPQRSTUF", "DEFGHIJKLMNOPMNO", "PMN"],
        ["CDE", "FGHIJKLMN", "OPMNOGHIJKLMNOPMNOPMN", "OPQRSTU", "RSTUNOPQK"],
    ]
    for cut in cuts:
        take = piecewise([key])
        assert "".join(map(take, cut)) + take(None) == whole("".join(cut)), cut
