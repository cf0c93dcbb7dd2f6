"""The terminal (a later addition to the tutorial's phases): what a person is shown, with API keys redacted and
every control or invisible character escaped, so nothing the model or a server wrote can hide or rewrite what is
on the screen; and what they type, read so that nothing typed before a question can answer it."""

import os
import re
import select
import sys
import typing

DISCARDED = "note: discarded input typed before this question"
SHORTEST_SECRET_PIECE = 12  # no run of this many characters of a key is ever written or printed
# Control characters and invisible or reordering marks: on a terminal they could hide or rewrite what is shown.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\n\t]")


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


def shown(text: typing.Any, *, redact: typing.Callable[[str], str] | None = None, newlines: bool = False) -> str:
    """Text as a person is shown it: keys redacted, then every control or invisible character as a visible
    escape (\\x1b, \\u202e), so it is one line; with newlines=True a line break stays a line break."""
    text = (redact or str)(text if isinstance(text, str) else str(text))
    return CONTROLS.sub(lambda m: m[0] if newlines and m[0] in "\n\t" else escape(m[0]), text)


def escape(char: str) -> str:
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
