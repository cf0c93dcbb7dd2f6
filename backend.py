"""Phase 0, the model: the SDK's client (client()) and the request to an OpenAI-compatible
server's /chat/completions (Groq's, by default); chat(messages, tools) sends the history and the
tool schemas and returns the model's reply message; complete(prompt) is text in, text out. Run
`python backend.py` to check that your key works: the model says hello."""

import functools
import json
import sys
import threading
import typing

from plainagent.core.screen import shown
from plainagent.core.settings import ConfigError, Settings, resolve
from plainagent.model.errors import BadReply, report, script_arguments, without_packages
from plainagent.model.request import checked, sdk_options
from plainagent.model.retries import MAX_RETRIES

# The SDK is imported where the client is made, not here: importing it takes most of a second, and
# the commands that send no request (--help, --runs, --undo) would wait for it.
if typing.TYPE_CHECKING:
    import openai

USAGE = (
    "usage: python backend.py: the model your .env names (AGENT_BACKEND, AGENT_MODEL) says hello, "
    "which checks your key; python harness.py --help lists the agent's options"
)


def client(base_url: str, api_key: str, timeout: float) -> "openai.OpenAI":
    """One client per backend setting, so a whole run reuses one HTTP connection, and runs going at
    once share one: made by the first that asks while the others wait (twenty runs starting
    together would each make one, taking turns on the GIL for a second)."""
    with MAKING:
        return made_client(base_url, api_key, timeout)


MAKING = threading.Lock()


@functools.cache
def made_client(base_url: str, api_key: str, timeout: float) -> "openai.OpenAI":
    import openai

    from plainagent.model.deadline import deadline_client  # the SDK's HTTP client, subclassed

    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,  # each read of a try; within() bounds the whole request
        max_retries=MAX_RETRIES,  # the SDK's own: 5xx, dropped connections, timeouts
        http_client=deadline_client(),  # the SDK's own, kept to the request's deadline
    )


def chat_completion(
    messages: list[dict],
    tools: list[dict] | None = None,
    settings: Settings | None = None,
    stream: bool = False,
    **options: typing.Any,
) -> typing.Any:
    """Send the history (and tool schemas, if any) and return the whole completion, usage included,
    checked (request.checked()); with stream, the SDK's Stream of its chunks as they arrive
    (plainagent/model/streaming.py puts them together). The settings are the run's; without them,
    the environment's (and the key is required). `options` are more request fields, and create()'s
    extra_headers, ..."""
    settings = settings or resolve()
    sent = sdk_options(options)
    body = {"model": settings.model, "messages": messages, **options}
    if tools:
        body["tools"] = tools
    if stream:  # the usage comes in the last chunk
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    # Made first: making it is not the request's time.
    sdk = client(settings.base_url, settings.api_key, settings.timeout)
    import openai  # loaded by client()

    from plainagent.model.deadline import within

    # client.post is the SDK's documented way to send a body we built: the same client (retries,
    # typed errors, auth, timeouts, event hooks) and the same ChatCompletion back, without
    # create()'s walk over every message's typed parameters, which costs more per step than
    # everything else together on long runs.
    try:
        with within(settings.timeout):  # every try, the SDK's retries included
            completion = sdk.post(  # type: ignore[call-overload]  # options: a plain dict, not the SDK's RequestOptions
                "/chat/completions",
                body=body,
                cast_to=openai.types.chat.ChatCompletion,
                options=sent,
                stream=stream,
                stream_cls=openai.Stream[openai.types.chat.ChatCompletionChunk],
            )
    # A body said to be JSON that is not, or not UTF-8: checked() says so
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        completion = error
    return completion if stream else checked(completion, settings)


def chat(
    messages: list[dict],
    tools: list[dict] | None = None,
    settings: Settings | None = None,
    **options: typing.Any,
) -> "openai.types.chat.ChatCompletionMessage":
    """Send the history and tool schemas; return the model's reply message."""
    return chat_completion(messages, tools, settings, **options).choices[0].message


def complete(prompt: str, settings: Settings | None = None) -> str:
    """Phase 0: one prompt in, the model's text out."""
    return chat([{"role": "user", "content": prompt}], settings=settings).content or ""


if __name__ == "__main__":
    if (code := script_arguments(sys.argv[1:], USAGE, 0)) is not None:
        sys.exit(code)
    if missing := without_packages():  # the agent's venv not active: one line, no traceback
        print(missing, file=sys.stderr)
        sys.exit(2)
    import openai

    try:
        print(shown(complete("Say hello in one short line."), newlines=True))
    except (ConfigError, BadReply, openai.OpenAIError) as error:
        sys.exit(report(error))
    except KeyboardInterrupt:
        sys.exit(130)
