"""A run stopped from outside its own thread (beyond the tutorial, for arun()): the stop a cancelled
task sets, and where a run looks at it: before and after each model request, before each tool
call, while a command runs and while a rate limit is waited out. There it raises Interrupted, a
KeyboardInterrupt, so the run ends the way Ctrl-C ends it: every call answered."""

import contextvars
import threading
import time

# The stop of the run in this thread (arun() sets it in the run's own thread); None: nothing can
# stop the run but Ctrl-C. A context variable, not a parameter: arun() calls run() as a script
# does, and the stop must reach where a run looks at it (a command's wait loop, a rate limit's
# wait) several layers below run(), as Ctrl-C does, through signatures that are the tutorial's.
STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("stop", default=None)


class Interrupted(KeyboardInterrupt):
    """The task awaiting the run was cancelled: the run stops where it is, as on Ctrl-C."""

    reason = "interrupted"


def check() -> None:
    """Raise Interrupted if this run has been told to stop."""
    stop = STOP.get()
    if stop is not None and stop.is_set():
        raise Interrupted()


def pause(seconds: float) -> None:
    """time.sleep(seconds), cut short by a stop (raising Interrupted)."""
    stop = STOP.get()
    if stop is None:
        time.sleep(seconds)
    elif stop.wait(seconds):
        raise Interrupted()
