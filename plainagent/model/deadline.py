"""The request's deadline (beyond the tutorial): AGENT_TIMEOUT bounds a whole model request, the
SDK's own retries included. The SDK's HTTP client gets the time left before the deadline for each
try (keep_to_the_deadline) and a body that stops arriving at it; its event hooks also tell the
harness of each retry, and leave 429s to the harness (retries.py), which waits them out visibly."""

import contextlib
import contextvars
import dataclasses
import email.utils
import importlib
import time
import typing

import openai


def http_library() -> typing.Any:
    """The HTTP library the SDK's own client is built on: httpx2 from openai 3 on, httpx before.
    Whether httpx2 imports says nothing (a downgrade leaves it, another package may bring it, and an
    httpx body in an httpx2 stream is a connection error to the SDK), so ask DefaultHttpxClient, the
    documented client class, which subclasses that library's Client."""
    for cls in openai.DefaultHttpxClient.__mro__:
        if (package := cls.__module__.partition(".")[0]) != "openai":
            return importlib.import_module(package)
    raise ImportError(
        f"openai {openai.__version__}: DefaultHttpxClient is built on no HTTP library"
    )


httpx = http_library()


@contextlib.contextmanager
def within(seconds: float) -> typing.Iterator[None]:
    """Inside, the model request must be over in `seconds`, every try of it: a try the deadline
    cuts short ends the request as the SDK's APITimeoutError, with no retry after it."""
    token = WATCH.set(dataclasses.replace(WATCH.get(), deadline=time.monotonic() + seconds))
    try:
        yield
    except OutOfTime as spent:
        raise openai.APITimeoutError(request=spent.request) from None
    finally:
        WATCH.reset(token)


def deadline_client() -> openai.DefaultHttpxClient:
    """The SDK's own HTTP client, kept to the deadline of the request it sends (within())."""
    return UntilTheDeadlineClient(
        event_hooks={
            "request": [keep_to_the_deadline],
            "response": [leave_rate_limits_to_the_harness],
        }
    )


@dataclasses.dataclass(frozen=True)
class Watch:
    """What the client's hooks keep to for the model request being sent: when it must be over,
    retries included (time.monotonic(); None: no deadline), and who hears that the SDK tries it
    again (a 5xx, a dropped connection, a timeout; the harness shows it)."""

    deadline: float | None = None
    on_retry: typing.Callable[[int], None] | None = None


# A context variable, not a parameter: the SDK calls the client's hooks with the HTTP request
# alone, and each run's thread has its own. (Watch is frozen: a shared default is never changed.)
WATCH: contextvars.ContextVar[Watch] = contextvars.ContextVar("watch", default=Watch())  # noqa: B039


class OutOfTime(BaseException):
    """The request's AGENT_TIMEOUT is spent. Not an Exception: the SDK tries again, after a backoff
    sleep of up to a second, on a timeout, and older ones (openai 1.66, say) on any Exception, even
    their own errors; this passes through it untouched, and within() makes it an APITimeoutError."""

    def __init__(self, request: typing.Any) -> None:
        super().__init__("the request's time is spent")
        self.request = request


class UntilTheDeadlineClient(openai.DefaultHttpxClient):
    """The SDK's own client, but a timeout of a try is the end of the request: each try's timeouts
    are the time left before the deadline (keep_to_the_deadline), so when one fires there is none
    left for a retry."""

    def send(self, request: typing.Any, **kwargs: typing.Any) -> typing.Any:
        try:
            return super().send(request, **kwargs)
        except httpx.TimeoutException:
            if WATCH.get().deadline is None:
                raise
            raise OutOfTime(request) from None


def keep_to_the_deadline(request: typing.Any) -> None:
    """The SDK's timeout bounds each read of each try; AGENT_TIMEOUT bounds the whole request: each
    try gets only the time left, and none starts once it is spent."""
    if (deadline := WATCH.get().deadline) is None:
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise OutOfTime(request)
    request.extensions["timeout"] = dict.fromkeys(("connect", "read", "write", "pool"), left)
    if (tries := int(request.headers.get("x-stainless-retry-count") or 0)) > 0 and (
        on_retry := WATCH.get().on_retry
    ):
        on_retry(tries)


class UntilTheDeadline(httpx.SyncByteStream):  # type: ignore[name-defined]  # httpx or httpx2, chosen at run time
    """A response body that stops arriving at the deadline, however slowly the server trickles
    it."""

    def __init__(self, stream: typing.Any, end: float, request: typing.Any) -> None:
        self.stream, self.end, self.request = stream, end, request

    def __iter__(self) -> typing.Iterator[bytes]:
        for chunk in self.stream:
            if time.monotonic() > self.end:
                raise OutOfTime(self.request)
            yield chunk

    def close(self) -> None:
        self.stream.close()


def leave_rate_limits_to_the_harness(response: typing.Any) -> None:
    """The SDK would retry a 429 silently; the harness waits it out visibly instead, so only one of
    them does. An error the SDK would try again only after the deadline (a 503 that asks for 20 s)
    is the answer now, not a timeout after the wait. (And the body is read only until the request's
    deadline.)"""
    deadline = WATCH.get().deadline
    too_late = deadline is not None and deadline - time.monotonic() <= pause_before_retry(response)
    if response.status_code == 429 or response.status_code >= 400 and too_late:
        # A header the SDK obeys before its own retry rules.
        response.headers["x-should-retry"] = "false"
    if deadline is not None:
        response.stream = UntilTheDeadline(response.stream, deadline, response.request)


def pause_before_retry(response: typing.Any) -> float:
    """The longest the SDK sleeps before trying this response's request again: the server's
    Retry-After (in ms, seconds or a date), which it obeys up to a minute, else its backoff, 0.5 s
    doubled each retry (at most 8 s)."""
    headers = response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1)):
        try:
            wait = float(headers.get(name, "")) * scale
        except ValueError:
            date = (
                email.utils.parsedate_tz(headers.get(name, "")) if name == "retry-after" else None
            )
            wait = email.utils.mktime_tz(date) - time.time() if date else 0
        if 0 < wait <= 60:
            return wait
    tries = int(response.request.headers.get("x-stainless-retry-count") or 0)
    return min(0.5 * 2**tries, 8)
