"""Keys kept out of sight (beyond the tutorial): redactor() makes the function that replaces each
key, and any long enough run of its characters, wherever text is written or shown; key_blocks()
is what any text holding a piece of a key holds, for a quick look before the search."""

import functools
import re
import typing

SHORTEST_SECRET_PIECE = 12  # no run of this many characters of a key is ever written or printed


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

    @functools.cache
    def pattern() -> re.Pattern[str]:
        """Compiled when a text first holds a block of a key: a millisecond saved at every start."""
        return re.compile(
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
        while match := pattern().search(text, at):
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


def piecewise(secrets: typing.Iterable[str]) -> typing.Callable[[str | None], str]:
    """redactor(secrets) for text that comes in pieces: given each piece, what of the text so far
    can be written now, redacted; given None, the rest. Joined, what it returns is what redactor()
    makes of the whole text. Held back: the longest end of the text that is part of a key, which
    the next piece could go on into a key's run, and no more."""
    secrets = tuple(secret for secret in secrets if secret)
    redact, held = redactor(secrets), ""
    longest = max(map(len, secrets), default=0)

    def take(piece: str | None) -> str:
        nonlocal held
        text = held + (piece or "")
        keep = 0
        if piece is not None:
            keep = next(
                (
                    size
                    for size in range(min(len(text), longest), 0, -1)
                    if any(text[-size:] in secret for secret in secrets)
                ),
                0,
            )
        cut = len(text) - keep
        # A run of the key that ends before the text does may still cross the cut (a key that
        # repeats some of its characters): cut before it
        while cut and redact(text[:cut]) + redact(text[cut:]) != redact(text):
            cut -= 1
        held = text[cut:]
        return redact(text[:cut])

    return take
