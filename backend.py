"""The model behind the agent: one OpenAI-compatible client per backend, built once and reused.
complete(prompt) is phase 0 (text in, text out); chat(messages, tools) returns the model's reply message.
Run `python backend.py` to check that your key works: the model says hello."""

import contextvars
import functools
import math
import re
import sys
import time
import typing

import openai

try:  # the HTTP library under the SDK: httpx2 from openai 3 on, httpx before
    import httpx2 as httpx
except ImportError:
    import httpx

import settings
from settings import BACKENDS, ConfigError, Settings  # noqa: F401 (ConfigError is part of this module's API)

MAX_RETRIES = 2  # the SDK's own retries for 5xx, dropped connections and timeouts
RATE_LIMIT_RETRIES = 5  # 429s waited out in a row by the harness, which owns 429s (not the SDK)
RATE_LIMIT_MAX_WAIT = 60.0  # seconds; a 429 asking for longer, or a daily limit, stops the run
RATE_LIMIT_DEFAULT_WAIT = 5.0  # seconds, when a 429 says neither retry-after nor "try again in"
LONGEST_RESET = 7 * 24 * 3600.0  # a limit that claims to last longer is taken as lasting a week
# create()'s keyword arguments that are not body fields, and their names in the SDK's request options
REQUEST_OPTIONS = {"extra_headers": "headers", "extra_query": "params", "extra_body": "extra_json",
                   "timeout": "timeout"}


class BadReply(openai.OpenAIError):
    """A 200 reply that holds no chat completion (an HTML page, no choices): its message says what to check."""


def connection(backend: str | None = None) -> Settings:
    """The settings a request goes out with: the run's own, or (outside a run, or for another backend)
    the environment's, with the key required."""
    config = settings.CURRENT.get()
    if config is None or backend and backend != config.backend:
        return settings.resolve(backend=backend)
    return config


# Who hears that the SDK tries a request again (a 5xx, a dropped connection, a timeout): the harness shows it.
RETRIES: contextvars.ContextVar[typing.Callable[[int], None] | None] = contextvars.ContextVar("retries", default=None)
# When the current model request must be over, retries included (time.monotonic()).
DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)


@functools.lru_cache(maxsize=None)
def client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    """One client per backend setting, so a whole run reuses one HTTP connection."""
    http_client = openai.DefaultHttpxClient(event_hooks={"request": [keep_to_the_deadline],
                                                         "response": [leave_rate_limits_to_the_harness]})
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=MAX_RETRIES,
                         http_client=http_client)


def keep_to_the_deadline(request: typing.Any) -> None:
    """The SDK's timeout bounds each read of each try; AGENT_TIMEOUT bounds the whole request: each try gets
    only the time left, and none starts once it is spent (an OpenAIError, which the SDK does not retry)."""
    if (deadline := DEADLINE.get()) is None:
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise openai.APITimeoutError(request=request)
    request.extensions["timeout"] = dict.fromkeys(("connect", "read", "write", "pool"), left)
    if (tries := int(request.headers.get("x-stainless-retry-count") or 0)) > 0 and (on_retry := RETRIES.get()):
        on_retry(tries)


class UntilTheDeadline(httpx.SyncByteStream):
    """A response body that stops arriving at the deadline, however slowly the server trickles it."""

    def __init__(self, stream: typing.Any, end: float, request: typing.Any) -> None:
        self.stream, self.end, self.request = stream, end, request

    def __iter__(self) -> typing.Iterator[bytes]:
        for chunk in self.stream:
            if time.monotonic() > self.end:
                raise openai.APITimeoutError(request=self.request)
            yield chunk

    def close(self) -> None:
        self.stream.close()


def leave_rate_limits_to_the_harness(response: typing.Any) -> None:
    """The SDK would retry a 429 silently; the harness waits it out visibly instead, so only one of them does.
    (And the body is read only until the request's deadline.)"""
    if response.status_code == 429:
        response.headers["x-should-retry"] = "false"  # a header the SDK obeys before its own retry rules
    if (deadline := DEADLINE.get()) is not None:
        response.stream = UntilTheDeadline(response.stream, deadline, response.request)


def chat_completion(messages: list[dict], tools: list[dict] | None = None, backend: str | None = None,
                    **options) -> openai.types.chat.ChatCompletion:
    """Send the history (and tool schemas, if any) and return the whole completion, usage included."""
    config = connection(backend)
    request = {"model": config.model, "messages": messages, **options}
    if tools:
        request["tools"] = tools
    token = DEADLINE.set(time.monotonic() + config.timeout)
    # client.post is the SDK's documented way to send a body we built: the same client (retries, typed errors,
    # auth, timeouts, event hooks) and the same ChatCompletion back, without create()'s walk over every
    # message's typed parameters, which costs more per step than everything else together on long runs.
    sent = {key: request.pop(key) for key in list(request) if key in REQUEST_OPTIONS}
    try:
        completion = client(config.base_url, config.api_key, config.timeout).post(
            "/chat/completions", body=request, cast_to=openai.types.chat.ChatCompletion,
            options={REQUEST_OPTIONS[key]: value for key, value in sent.items()})
    except openai.APIConnectionError as error:  # older SDKs retry our timeout, then call it a connection error
        if isinstance(error, openai.APITimeoutError) or time.monotonic() < DEADLINE.get():
            raise
        raise openai.APITimeoutError(request=error.request) from error
    finally:
        DEADLINE.reset(token)
    if not isinstance(completion, openai.types.chat.ChatCompletion) or not completion.choices:
        raise BadReply(f"the model server at {config.base_url} sent a reply that is not a chat completion "
                       f"({str(completion)[:100]!r}); check {BACKENDS[config.backend]['url_variable']}")
    return completion


def chat(messages: list[dict], tools: list[dict] | None = None, backend: str | None = None,
         **options) -> openai.types.chat.ChatCompletionMessage:
    """Send the history and tool schemas; return the model's reply message."""
    return chat_completion(messages, tools, backend, **options).choices[0].message


def complete(prompt: str, backend: str | None = None) -> str:
    """Phase 0: one prompt in, the model's text out."""
    return chat([{"role": "user", "content": prompt}], backend=backend).content or ""


def explain(error: BaseException, config: Settings | None = None) -> str | None:
    """One line a person can act on for errors only they can fix; None for anything else."""
    if isinstance(error, (ConfigError, BadReply)):
        return str(error)
    config = config or settings.CURRENT.get() or defaults()
    preset = BACKENDS[config.backend] if config else BACKENDS[settings.DEFAULT_BACKEND]
    key, url = preset["key"] or "the key", preset["url_variable"]
    timeout = config.timeout if config else settings.TIMEOUT
    if isinstance(error, openai.AuthenticationError):
        return f"the server rejected the API key (401): check {key} in your .env or environment"
    if isinstance(error, openai.NotFoundError):
        return f"the model or URL was not found (404): {server_message(error)}; check AGENT_MODEL and {url}"
    if isinstance(error, openai.APITimeoutError):
        return (f"the model did not answer within {timeout:g} s: try again, "
                "or raise AGENT_TIMEOUT")
    if isinstance(error, openai.APIConnectionError):
        server = error.request.url.copy_with(path="/")
        return f"could not reach the model server at {server}: check your network and {url}"
    if isinstance(error, openai.BadRequestError) and error.code == "tool_use_failed":
        return ("the model kept writing malformed tool calls (Groq's tool_use_failed): "
                "try again, rephrase the task, or choose another model with AGENT_MODEL")
    if isinstance(error, openai.RateLimitError):
        info = rate_limit(error)
        when = (f"; it resets in about {about(info['resets_in'])} (around "
                f"{time.strftime('%H:%M', time.localtime(time.time() + info['resets_in']))})"
                if info["resets_in"] else "")
        if info["daily"]:
            return f"rate limited: the plan's {info['limit']} are used up{when}; try again then, or use a paid tier"
        return (f"rate limited ({info['limit']}) and waiting would take too long{when}; "
                "try again later, or use a paid tier")
    if isinstance(error, openai.APIStatusError) and error.status_code == 413:
        sizes = re.search(r"Limit (\d+), Requested (\d+)", server_message(error))
        size = f" ({sizes[2]} tokens, the limit is {sizes[1]})" if sizes else ""
        return (f"the request was too large for the plan's tokens per minute{size} (413): "
                "lower AGENT_CONTEXT_BUDGET, use fewer --max-steps, or use a paid tier")
    if isinstance(error, openai.APIStatusError):
        return f"the model server answered {error.status_code}: {server_message(error)}"
    return None


def rate_limit(error: openai.RateLimitError) -> dict:
    """What a 429 says: which limit (e.g. 'tokens per minute'), whether it is daily, how long to wait."""
    message = server_message(error)
    limit = re.search(r"on (\w+ per \w+)", message)
    headers = error.response.headers
    asked = re.search(r"try again in ([\dhms.]+)", message)
    wait = seconds(headers.get("retry-after", ""))
    wait = seconds(asked[1]) if wait is None and asked else wait
    resets = [seconds(headers.get(f"x-ratelimit-reset-{kind}") or "") for kind in ("requests", "tokens")]
    return {"limit": limit[1] if limit else "requests or tokens", "daily": "per day" in message,
            "wait": wait, "resets_in": wait if wait is not None else max(filter(None, resets), default=None)}


def rate_limit_wait(info: dict) -> float | None:
    """Seconds to wait before asking again, or None when the limit will not lift soon (daily, or a long wait)."""
    wait = info["wait"] if info["wait"] is not None else RATE_LIMIT_DEFAULT_WAIT
    return None if info["daily"] or wait > RATE_LIMIT_MAX_WAIT else wait


def seconds(duration: str) -> float | None:
    """Parse '4', '4.77s', '7m12.5s', '2h3m', '250ms' (Groq's headers and messages) into seconds; a number too
    large to be true (1e400, inf) is a week; anything else unreadable is None."""
    duration = duration.strip()
    try:
        total = float(duration)
    except ValueError:
        parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
        scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
        total = sum(float(amount) * scale[unit] for amount, unit in parts) if parts else None
    if total is None or math.isnan(total) or total < 0:
        return None
    return min(total, LONGEST_RESET)


def about(duration: float) -> str:
    return f"{duration / 3600:.1f} h" if duration > 5400 else f"{max(1, round(duration / 60))} min"


def defaults() -> Settings | None:
    """The environment's settings, for wording an error; None if the environment is what is wrong."""
    try:
        return settings.resolve(require_key=False)
    except ConfigError:
        return None


def report(error: BaseException, config: Settings | None = None) -> int:
    """Print the one-line error for a person, no traceback; return the exit code (2: a setting to fix)."""
    config = config or settings.CURRENT.get() or defaults()  # once, for the wording and the redaction
    line = f"error: {explain(error, config) or f'{type(error).__name__}: {error}'}"
    print(settings.redactor(config.secrets if config else ())(line), file=sys.stderr)
    return 2 if isinstance(error, (ConfigError, openai.AuthenticationError)) else 1


def server_message(error: openai.APIStatusError) -> str:
    """The server's own error text, shortened to one readable line even when the body is an HTML page."""
    body = error.body
    text = body.get("message") if isinstance(body, dict) else None
    text = text or error.response.text or error.message
    if "<html" in text.lower():
        text = error.response.reason_phrase or "an HTML error page"
    return " ".join(str(text).split())[:300]


if __name__ == "__main__":
    try:
        print(complete("Say hello in one short line."))
    except (ConfigError, openai.OpenAIError) as error:
        sys.exit(report(error))
    except KeyboardInterrupt:
        sys.exit(130)
