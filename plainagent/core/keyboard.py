"""What a person types (beyond the tutorial): read from the terminal a byte at a time, so that
nothing typed before a question answers it (discard_typed_ahead()), and to_stderr() a line on stderr
while the terminal is there."""

import os
import select
import sys

DISCARDED = "note: discarded input typed before this question"


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


def to_stderr(line: str = "") -> None:
    """A line on stderr, unless the terminal has gone (SIGHUP): then nobody is left to tell."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass
