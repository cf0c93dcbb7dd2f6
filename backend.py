"""The model behind the agent: one OpenAI-compatible client per backend, built once and reused.
complete(prompt) is phase 0 (text in, text out); chat(messages, tools) returns the model's reply message.
Run `python backend.py` to check that your key works: the model says hello."""

import functools
import os
import sys

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


class ConfigError(ValueError):
    """A setting only the person running the agent can fix (a missing key, an unknown backend)."""


def settings(backend: str | None = None) -> dict:
    """Resolve one backend's base URL, key, model and timeout from the environment."""
    name = backend or os.environ.get("AGENT_BACKEND") or DEFAULT_BACKEND
    if name not in BACKENDS:
        raise ConfigError(f"unknown backend {name!r}; known backends: {', '.join(BACKENDS)}")
    preset = BACKENDS[name]
    key = os.environ.get(preset["key"]) if preset["key"] else "no-key-needed"
    if not key:
        raise ConfigError(f"{preset['key']} is not set: copy .env.example to .env and put your key in it "
                          f"(or export {preset['key']}=...)")
    return {
        "backend": name,
        "base_url": os.environ.get(preset["url_variable"]) or preset["url"],
        "api_key": key,
        "model": os.environ.get("AGENT_MODEL") or preset["model"],
        "timeout": float(os.environ.get("AGENT_TIMEOUT") or TIMEOUT),
    }


@functools.lru_cache(maxsize=None)
def client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    """One client per backend setting, so a whole run reuses one HTTP connection."""
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=MAX_RETRIES)


def chat_completion(messages: list[dict], tools: list[dict] | None = None, backend: str | None = None,
                    **options) -> openai.types.chat.ChatCompletion:
    """Send the history (and tool schemas, if any) and return the whole completion, usage included."""
    s = settings(backend)
    request = {"model": s["model"], "messages": messages, **options}
    if tools:
        request["tools"] = tools
    return client(s["base_url"], s["api_key"], s["timeout"]).chat.completions.create(**request)


def chat(messages: list[dict], tools: list[dict] | None = None, backend: str | None = None,
         **options) -> openai.types.chat.ChatCompletionMessage:
    """Send the history and tool schemas; return the model's reply message."""
    return chat_completion(messages, tools, backend, **options).choices[0].message


def complete(prompt: str, backend: str | None = None) -> str:
    """Phase 0: one prompt in, the model's text out."""
    return chat([{"role": "user", "content": prompt}], backend=backend).content or ""


def explain(error: BaseException, backend: str | None = None) -> str | None:
    """One line a person can act on for errors only they can fix; None for anything else."""
    preset = BACKENDS.get(backend or os.environ.get("AGENT_BACKEND") or DEFAULT_BACKEND, BACKENDS[DEFAULT_BACKEND])
    key, url = preset["key"] or "the key", preset["url_variable"]
    if isinstance(error, ConfigError):
        return str(error)
    if isinstance(error, openai.AuthenticationError):
        return f"the server rejected the API key (401): check {key} in your .env or environment"
    if isinstance(error, openai.NotFoundError):
        return f"the model or URL was not found (404): {server_message(error)}; check AGENT_MODEL and {url}"
    if isinstance(error, openai.APITimeoutError):
        return f"the model did not answer within the timeout: try again, or raise AGENT_TIMEOUT (now {os.environ.get('AGENT_TIMEOUT') or TIMEOUT:g} s)"
    if isinstance(error, openai.APIConnectionError):
        return f"could not reach the model server at {error.request.url.copy_with(path='/')}: check your network and {url}"
    if isinstance(error, openai.BadRequestError) and error.code == "tool_use_failed":
        return ("the model kept writing malformed tool calls (Groq's tool_use_failed): "
                "try again, rephrase the task, or choose another model with AGENT_MODEL")
    if isinstance(error, openai.APIStatusError) and error.status_code == 413:
        return f"the request was too large for the model (413): {server_message(error)}; use fewer steps or a smaller task"
    if isinstance(error, openai.APIStatusError):
        return f"the model server answered {error.status_code}: {server_message(error)}"
    return None


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
