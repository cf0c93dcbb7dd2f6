"""SIGTERM and SIGHUP stop a run the way Ctrl-C does (beyond the tutorial): raised where the run
is, as Terminated, with the exit code a shell gives a process those signals end."""

import contextlib
import signal
import typing

SIGNALS = {
    "SIGTERM": 143,
    "SIGHUP": 129,
}  # the terminal closed, `timeout`, a cancelled job: like Ctrl-C


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the run is, so it stops the way Ctrl-C does."""

    reason = "terminated"

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def signals_stop_the_run() -> typing.Iterator[None]:
    """While the run goes on, SIGTERM and SIGHUP raise Terminated; afterwards the handlers before
    are back (main() may run inside a program with its own). A signal the caller ignored (nohup
    ignores SIGHUP) stays ignored."""
    previous = {}
    for name in SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, stop)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def stop(signum: int, frame: object) -> None:
    raise Terminated(SIGNALS[signal.Signals(signum).name])
