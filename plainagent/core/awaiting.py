"""run() awaited (beyond the tutorial): arun()'s machinery. The same loop runs in a thread of its
own, so the caller's event loop never waits for it; what a script passes as async functions
(tools, approve=, on_event=) is awaited on the caller's loop; cancelling the task stops the run
the way Ctrl-C does (stop.py), and the task ends once the run has. Under run(), those async
functions are awaited on a loop of their own (awaited())."""

import _thread
import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import threading
import typing

from plainagent.core.stop import STOP, Interrupted

Runner = typing.Callable[..., typing.Any]  # harness.run, which the package never imports
LOOK_AGAIN = 0.1  # seconds between looks at whether the caller's loop still runs, while awaiting


async def in_a_thread(run: Runner, task: str, keywords: dict[str, typing.Any]) -> typing.Any:
    """What run(task, **keywords) returns or raises, from a thread of its own (one per run, so any
    number go at once, whatever the loop's default executor allows). If the awaiting task is
    cancelled, the run is stopped and waited for, then CancelledError raised."""
    loop = asyncio.get_running_loop()
    bridge = Bridge(loop)
    keywords = bridge.wrapped(keywords)
    done: asyncio.Future = loop.create_future()

    def work() -> None:
        STOP.set(bridge.stop)
        outcome: tuple[typing.Any, BaseException | None]
        try:
            outcome = (run(task, **keywords), None)
        except BaseException as error:  # raised to the caller, in its own thread
            if isinstance(error, KeyboardInterrupt) and not bridge.ended:
                bridge.watch({"type": "end", "reason": "interrupted", "answer": None})
            outcome = (None, error)
        try:
            loop.call_soon_threadsafe(settle, done, outcome)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    # Not a daemon: a run still going when the program ends is let finish, its files whole
    runner = threading.Thread(target=contextvars.copy_context().run, args=(work,), name="arun")

    def launch() -> None:
        try:
            runner.start()
        except BaseException as error:  # no thread to be had
            loop.call_soon_threadsafe(settle, done, (None, error))

    # Thread.start() waits until the new thread runs, a turn of the GIL (up to 5 ms) while other
    # runs work: twenty started from the caller's loop kept it waiting 40 ms. A bare thread waits.
    _thread.start_new_thread(launch, ())
    try:
        result, error = await asyncio.shield(done)
    except asyncio.CancelledError:
        bridge.stop_run()
        await done  # the run ends at its next check; cancelled again, this wait is given up
        raise
    if error is not None:
        raise error
    return result


def settle(done: asyncio.Future, outcome: tuple[typing.Any, BaseException | None]) -> None:
    if not done.done():
        done.set_result(outcome)


def awaited(awaitable: typing.Awaitable) -> typing.Any:
    """What an async tool returned: awaited on an event loop of its own in this thread, or, where
    this thread runs one already (run() called from a coroutine, or a notebook's cell), on a loop
    in a helper thread, so it never fails for want of one (the caller's loop waits meanwhile)."""

    async def result() -> typing.Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(result())
    with concurrent.futures.ThreadPoolExecutor(1) as helper:
        # The call's context goes with it, as it would to a task on this thread's loop
        return helper.submit(contextvars.copy_context().run, asyncio.run, result()).result()


def synchronous(function: typing.Callable) -> typing.Callable:
    """The function as run() calls it (approve=, on_event=): what it returns, awaited if it is
    awaitable (an async def's coroutine)."""

    @functools.wraps(function)
    def called(*args: typing.Any) -> typing.Any:
        result = function(*args)
        return awaited(result) if inspect.isawaitable(result) else result

    return called


class Bridge:
    """Between the caller's event loop and the run's thread: the run's stop, the async calls it is
    waiting for (cancelled with it), and whether the run's events have ended."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop, self.stop, self.lock = loop, threading.Event(), threading.Lock()
        self.waiting: set[concurrent.futures.Future] = set()
        self.listener: typing.Callable[[dict], None] | None = None
        self.ended = False

    def wrapped(self, keywords: dict[str, typing.Any]) -> dict[str, typing.Any]:
        """run()'s keyword arguments with each async function made one run() can call (tools=,
        approve=, on_event=), and on_event watched for the run's end."""
        keywords = dict(keywords)
        if keywords.get("tools") is not None:
            keywords["tools"] = [self.callable(tool) for tool in keywords["tools"]]
        if keywords.get("approve") is not None:
            keywords["approve"] = self.callable(keywords["approve"])
        if keywords.get("on_event") is not None:
            # Events still reach it while the run stops: the last ones say how it ended
            self.listener = self.callable(keywords["on_event"], stoppable=False)
        keywords["on_event"] = self.watch
        return keywords

    def callable(self, function: typing.Any, stoppable: bool = True) -> typing.Any:
        """The function as the run's thread calls it: an async one is awaited on the caller's loop
        (its name, signature and docstring kept, so a tool's schema is the same; a partial's
        function, bound again as it was); any other is itself."""
        if isinstance(function, functools.partial) and inspect.iscoroutinefunction(function):
            inner = self.callable(function.func, stoppable)
            return functools.partial(inner, *function.args, **function.keywords)
        if not inspect.iscoroutinefunction(function):
            return function

        @functools.wraps(function)
        def awaited(*args: typing.Any, **kwargs: typing.Any) -> typing.Any:
            future = asyncio.run_coroutine_threadsafe(function(*args, **kwargs), self.loop)
            return self.result(future) if stoppable else self.awaited(future)

        return awaited

    def result(self, future: concurrent.futures.Future) -> typing.Any:
        """The future's result, or Interrupted once the run is stopped (the future cancelled)."""
        with self.lock:
            if self.stop.is_set():
                future.cancel()
                raise Interrupted()
            self.waiting.add(future)
        try:
            return self.awaited(future)
        except concurrent.futures.CancelledError:
            if self.stop.is_set():
                raise Interrupted() from None
            raise
        finally:
            with self.lock:
                self.waiting.discard(future)

    def awaited(self, future: concurrent.futures.Future) -> typing.Any:
        """The future's result, once the caller's loop has run it; RuntimeError if that loop stops
        running first (its tasks left behind, not cancelled), where waiting would never end."""
        while True:
            try:
                return future.result(timeout=LOOK_AGAIN)
            except concurrent.futures.TimeoutError:
                if not self.loop.is_running():
                    future.cancel()
                    raise RuntimeError(
                        "the event loop awaiting this run stopped; await arun() to its end"
                    ) from None

    def stop_run(self) -> None:
        """Stop the run: at its next check (stop.py), and now in any async call it waits for."""
        with self.lock:
            self.stop.set()
            for future in self.waiting:
                future.cancel()

    def watch(self, event: dict) -> None:
        self.ended = event.get("type") == "end"
        if self.listener is not None:
            self.listener(event)
