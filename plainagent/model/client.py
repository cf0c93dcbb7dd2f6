"""The SDK client for the model (phase 0's plumbing): one client per backend setting, whose retries
are the SDK's own, and a deadline over each request, retries included, kept by the client's event
hooks; a reply is checked for what the loop needs before anyone uses it."""

import contextvars
import email.utils
import functools
import importlib
import json
import threading
import time
import typing

import openai

from plainagent.core.settings import BACKENDS, ConfigError, Settings
from plainagent.model.errors import BadReply


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

MAX_RETRIES = 2  # the SDK's own retries for 5xx, dropped connections and timeouts
# create()'s keyword arguments that are not body fields, and their names in the SDK's request
# options
REQUEST_OPTIONS = {
    "extra_headers": "headers",
    "extra_query": "params",
    "extra_body": "extra_json",
    "timeout": "timeout",
}


# Request fields a run's options= may not set: the loop sets them for every request, or run() has a
# keyword argument of its own for them (a setting)
LOOP_OWNED = ("messages", "tools", "stream")
SETTINGS_OWNED = ("model", "reasoning_effort", "timeout")


def request_options(options: typing.Mapping[str, typing.Any]) -> dict[str, typing.Any]:
    """A run's options=: request fields (temperature, tool_choice, extra_headers, ...) sent with
    each of its requests. ConfigError, in one line, for a field the loop owns."""
    for name in options:
        if not isinstance(name, str):
            raise ConfigError(f"options= names request fields, and {name!r} is not one")
        if name in LOOP_OWNED:
            raise ConfigError(f"options= cannot set {name!r}: the loop sets it for every request")
        if name in SETTINGS_OWNED:
            raise ConfigError(f"options= cannot set {name!r}: give it as run()'s {name}= instead")
        if name == "response_format":  # sent with tools, which Groq refuses; output= asks apart
            raise ConfigError(
                "options= cannot set 'response_format': give run() output= a type or a JSON "
                "Schema instead, which asks for the answer in a request of its own, after the tools"
            )
    return dict(options)


def send(config: Settings, body: dict, options: dict) -> openai.types.chat.ChatCompletion:
    """POST the body to the backend's /chat/completions, all tries within config.timeout; return the
    completion, checked. `options` are create()'s keyword arguments that are not body fields
    (extra_headers, ...)."""
    sent = {REQUEST_OPTIONS[key]: value for key, value in options.items()}
    # Built first: making it is not the request's time.
    sdk = client(config.base_url, config.api_key, config.timeout)
    token = DEADLINE.set(time.monotonic() + config.timeout)
    # client.post is the SDK's documented way to send a body we built: the same client (retries,
    # typed errors, auth, timeouts, event hooks) and the same ChatCompletion back, without
    # create()'s walk over every message's typed parameters, which costs more per step than
    # everything else together on long runs.
    try:
        completion = sdk.post(  # type: ignore[call-overload]  # options: a plain dict, not the SDK's RequestOptions
            "/chat/completions", body=body, cast_to=openai.types.chat.ChatCompletion, options=sent
        )
    # A body said to be JSON that is not, or not UTF-8
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        completion = error
    except OutOfTime as spent:
        raise openai.APITimeoutError(request=spent.request) from None
    finally:
        DEADLINE.reset(token)
    return checked(completion, config)


def checked(completion: typing.Any, config: Settings) -> openai.types.chat.ChatCompletion:
    """The completion, if it is one the loop can use; else BadReply, saying what to check."""
    if (
        not isinstance(completion, openai.types.chat.ChatCompletion)
        or not isinstance(completion.choices, list)
        or not completion.choices
    ):
        raise BadReply(
            f"the model server at {config.base_url} sent a reply that is not a chat completion "
            f"({str(completion)[:100]!r}); check {BACKENDS[config.backend]['url_variable']}"
        )
    if problem := unusable(completion):
        raise BadReply(
            f"the model server at {config.base_url} sent a reply with {problem}; try again, or "
            "choose another model with AGENT_MODEL"
        )
    return completion


def unusable(completion: openai.types.chat.ChatCompletion) -> str | None:
    """What in a completion the harness cannot use (the SDK does not check the shape of a reply), or
    None."""
    message = getattr(completion.choices[0], "message", None)
    if not isinstance(message, openai.types.chat.ChatCompletionMessage):
        return "no message"
    calls = message.tool_calls
    if calls is None:
        return None
    if not isinstance(calls, list) or not all(isinstance(call, openai.BaseModel) for call in calls):
        return "a tool call that has no function name"
    # Only a function call runs. openai 1.99.2 and later read a call of another type ("custom") as
    # one that has no function; older ones read any call as a function call, so the type is checked
    # here, on every SDK.
    for call in calls:
        if (kind := getattr(call, "type", None)) != "function":
            return (
                "a tool call that has no type"
                if kind is None
                else f"a tool call of type {str(kind)[:40]!r}, which is not a function call"
            )
    if not all(
        isinstance(name := getattr(getattr(call, "function", None), "name", None), str) and name
        for call in calls
    ):
        return "a tool call that has no function name"
    return None


def client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    """One client per backend setting, so a whole run reuses one HTTP connection, and runs going at
    once share one: made by the first that asks while the others wait (twenty runs starting
    together would each make one, taking turns on the GIL for a second)."""
    with MAKING:
        return made_client(base_url, api_key, timeout)


MAKING = threading.Lock()


@functools.cache
def made_client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    http_client = UntilTheDeadlineClient(
        event_hooks={
            "request": [keep_to_the_deadline],
            "response": [leave_rate_limits_to_the_harness],
        }
    )
    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
        max_retries=MAX_RETRIES,
        http_client=http_client,
    )


# Who hears that the SDK tries a request again (a 5xx, a dropped connection, a timeout): the harness
# shows it.
RETRIES: contextvars.ContextVar[typing.Callable[[int], None] | None] = contextvars.ContextVar(
    "retries", default=None
)
# When the current model request must be over, retries included (time.monotonic()).
DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


class OutOfTime(BaseException):
    """The request's AGENT_TIMEOUT is spent. Not an Exception: the SDK tries again, after a backoff
    sleep of up to a second, on a timeout, and older ones (openai 1.66, say) on any Exception, even
    their own errors; this passes through it untouched, and send() makes it an APITimeoutError."""

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
            if DEADLINE.get() is None:
                raise
            raise OutOfTime(request) from None


def keep_to_the_deadline(request: typing.Any) -> None:
    """The SDK's timeout bounds each read of each try; AGENT_TIMEOUT bounds the whole request: each
    try gets only the time left, and none starts once it is spent."""
    if (deadline := DEADLINE.get()) is None:
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise OutOfTime(request)
    request.extensions["timeout"] = dict.fromkeys(("connect", "read", "write", "pool"), left)
    if (tries := int(request.headers.get("x-stainless-retry-count") or 0)) > 0 and (
        on_retry := RETRIES.get()
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
    deadline = DEADLINE.get()
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
