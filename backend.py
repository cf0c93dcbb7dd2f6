"""Phase 0, the model: complete(prompt) is text in, text out; chat(messages, tools) sends the
history and the tool schemas to an OpenAI-compatible server (Groq's, by default) and returns the
model's reply message. Run `python backend.py` to check that your key works: the model says
hello."""

import sys
import typing

import openai

from plainagent.core.screen import shown
from plainagent.core.settings import ConfigError, Settings, resolve
from plainagent.model.client import REQUEST_OPTIONS, send
from plainagent.model.errors import report


def complete(prompt: str, config: Settings | None = None) -> str:
    """Phase 0: one prompt in, the model's text out."""
    return chat([{"role": "user", "content": prompt}], config=config).content or ""


def chat(
    messages: list[dict],
    tools: list[dict] | None = None,
    config: Settings | None = None,
    **options: typing.Any,
) -> openai.types.chat.ChatCompletionMessage:
    """Send the history and tool schemas; return the model's reply message."""
    return chat_completion(messages, tools, config, **options).choices[0].message


def chat_completion(
    messages: list[dict],
    tools: list[dict] | None = None,
    config: Settings | None = None,
    **options: typing.Any,
) -> openai.types.chat.ChatCompletion:
    """Send the history (and tool schemas, if any) and return the whole completion, usage included.
    The settings are the run's; without them, the environment's (and the key is required)."""
    config = config or resolve()
    sent = {key: options.pop(key) for key in list(options) if key in REQUEST_OPTIONS}
    body = {"model": config.model, "messages": messages, **options}
    if tools:
        body["tools"] = tools
    return send(config, body, sent)  # the SDK's client: its retries, all within config.timeout


if __name__ == "__main__":
    try:
        print(shown(complete("Say hello in one short line."), newlines=True))
    except (ConfigError, openai.OpenAIError) as error:
        sys.exit(report(error))
    except KeyboardInterrupt:
        sys.exit(130)
