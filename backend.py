"""The model behind the agent: one OpenAI-compatible client per backend, built once and reused.
complete(prompt) is phase 0 (text in, text out); chat(messages, tools) returns the model's reply message.
Run `python backend.py` to check that your key works: the model says hello."""

import functools
import os
import re
import sys
import time
import typing

import openai
from dotenv import load_dotenv

load_dotenv(".env")  # the .env in the working folder; variables already set in the environment win

# Presets are data: each backend names its key variable, its base-URL variable and default, and its model.
BACKENDS = {
    "groq": {"key": "GROQ_API_KEY", "url_variable": "GROQ_BASE_URL",
             "url": "https://api.groq.com/openai/v1", "model": "openai/gpt-oss-120b"},
    "openai": {"key": "OPENAI_API_KEY", "url_variable": "OPENAI_BASE_URL",
               "url": "https://api.openai.com/v1", "model": "gpt-4.1-mini"},
    "ollama": {"key": None, "url_variable": "OLLAMA_BASE_URL",
               "url": "http://localhost:11434/v1", "model": "gpt-oss:20b"},
}
DEFAULT_BACKEND = "groq"
TIMEOUT = 60.0  # seconds for one model request (AGENT_TIMEOUT)
MAX_RETRIES = 2  # the SDK's own retries for 5xx, dropped connections and timeouts
RATE_LIMIT_RETRIES = 5  # 429s waited out in a row by the harness, which owns 429s (not the SDK)
RATE_LIMIT_MAX_WAIT = 60.0  # seconds; a 429 asking for longer, or a daily limit, stops the run
RATE_LIMIT_DEFAULT_WAIT = 5.0  # seconds, when a 429 says neither retry-after nor "try again in"
# create()'s keyword arguments that are not body fields, and their names in the SDK's request options
REQUEST_OPTIONS = {"extra_headers": "headers", "extra_query": "params", "extra_body": "extra_json",
                   "timeout": "timeout"}


class ConfigError(ValueError):
    """A setting only the person running the agent can fix (a missing key, an unknown backend)."""


def number(variable: str, default: int | float) -> int | float:
    """A positive numeric setting from the environment, of the default's type, or the default if unset."""
    raw = os.environ.get(variable)
    if not raw:
        return default
    try:
        value = type(default)(raw)
    except ValueError:
        value = 0
    if value <= 0:
        kind = "whole number" if isinstance(default, int) else "number"
        raise ConfigError(f"{variable} must be a positive {kind}, not {raw!r}; fix it in .env or the environment")
    return value


def backend_name(backend: str | None = None) -> str:
    return backend or os.environ.get("AGENT_BACKEND") or DEFAULT_BACKEND


def settings(backend: str | None = None) -> dict:
    """Resolve one backend's base URL, key, model and timeout from the environment."""
    name = backend_name(backend)
    if name not in BACKENDS:
        raise ConfigError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")
    preset = BACKENDS[name]
    key = os.environ.get(preset["key"]) if preset["key"] else "no-key-needed"
    if not key:
        raise ConfigError(f"{preset['key']} is not set: copy .env.example to .env and put your key in it "
                          f"(or export {preset['key']}=...)")
    return {
        "base_url": os.environ.get(preset["url_variable"]) or preset["url"],
        "api_key": key,
        "model": os.environ.get("AGENT_MODEL") or preset["model"],
        "timeout": number("AGENT_TIMEOUT", TIMEOUT),
    }


@functools.lru_cache(maxsize=None)
def client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    """One client per backend setting, so a whole run reuses one HTTP connection."""
    http_client = openai.DefaultHttpxClient(event_hooks={"response": [leave_rate_limits_to_the_harness]})
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=MAX_RETRIES,
                         http_client=http_client)


def leave_rate_limits_to_the_harness(response: typing.Any) -> None:
    """The SDK would retry a 429 silently; the harness waits it out visibly instead, so only one of them does."""
    if response.status_code == 429:
        response.headers["x-should-retry"] = "false"  # a header the SDK obeys before its own retry rules


def chat_completion(messages: list[dict], tools: list[dict] | None = None, backend: str | None = None,
                    **options) -> openai.types.chat.ChatCompletion:
    """Send the history (and tool schemas, if any) and return the whole completion, usage included."""
    config = settings(backend)
    request = {"model": config["model"], "messages": messages, **options}
    if tools:
        request["tools"] = tools
    # client.post is the SDK's documented way to send a body we built: the same client (retries, typed errors,
    # auth, timeouts, event hooks) and the same ChatCompletion back, without create()'s walk over every
    # message's typed parameters, which costs more per step than everything else together on long runs.
    sent = {key: request.pop(key) for key in list(request) if key in REQUEST_OPTIONS}
    return client(config["base_url"], config["api_key"], config["timeout"]).post(
        "/chat/completions", body=request, cast_to=openai.types.chat.ChatCompletion,
        options={REQUEST_OPTIONS[key]: value for key, value in sent.items()})


def chat(messages: list[dict], tools: list[dict] | None = None, backend: str | None = None,
         **options) -> openai.types.chat.ChatCompletionMessage:
    """Send the history and tool schemas; return the model's reply message."""
    return chat_completion(messages, tools, backend, **options).choices[0].message


def complete(prompt: str, backend: str | None = None) -> str:
    """Phase 0: one prompt in, the model's text out."""
    return chat([{"role": "user", "content": prompt}], backend=backend).content or ""


def explain(error: BaseException, backend: str | None = None) -> str | None:
    """One line a person can act on for errors only they can fix; None for anything else."""
    preset = BACKENDS.get(backend_name(backend), BACKENDS[DEFAULT_BACKEND])
    key, url = preset["key"] or "the key", preset["url_variable"]
    if isinstance(error, ConfigError):
        return str(error)
    if isinstance(error, openai.AuthenticationError):
        return f"the server rejected the API key (401): check {key} in your .env or environment"
    if isinstance(error, openai.NotFoundError):
        return f"the model or URL was not found (404): {server_message(error)}; check AGENT_MODEL and {url}"
    if isinstance(error, openai.APITimeoutError):
        return (f"the model did not answer within {number('AGENT_TIMEOUT', TIMEOUT):g} s: try again, "
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
    wait = seconds(headers.get("retry-after", "")) or (seconds(asked[1]) if asked else None)
    resets = [seconds(headers.get(f"x-ratelimit-reset-{kind}") or "") for kind in ("requests", "tokens")]
    return {"limit": limit[1] if limit else "requests or tokens", "daily": "per day" in message,
            "wait": wait, "resets_in": wait or max(filter(None, resets), default=None)}


def rate_limit_wait(info: dict) -> float | None:
    """Seconds to wait before asking again, or None when the limit will not lift soon (daily, or a long wait)."""
    wait = info["wait"] if info["wait"] is not None else RATE_LIMIT_DEFAULT_WAIT
    return None if info["daily"] or wait > RATE_LIMIT_MAX_WAIT else wait


def seconds(duration: str) -> float | None:
    """Parse '4', '4.77s', '7m12.5s', '2h3m', '250ms' (Groq's headers and messages) into seconds."""
    duration = duration.strip()
    if re.fullmatch(r"[\d.]+", duration):
        return float(duration)
    parts = re.findall(r"([\d.]+)(ms|h|m|s)", duration)
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(amount) * scale[unit] for amount, unit in parts) if parts else None


def about(duration: float) -> str:
    return f"{duration / 3600:.1f} h" if duration > 5400 else f"{max(1, round(duration / 60))} min"


def report(error: BaseException, backend: str | None = None) -> int:
    """Print the one-line error for a person, no traceback; return the exit code (2: a setting to fix)."""
    print(f"error: {explain(error, backend) or f'{type(error).__name__}: {error}'}", file=sys.stderr)
    return 2 if isinstance(error, ConfigError) else 1


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
