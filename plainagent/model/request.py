"""A model request's fields and its reply's shape (beyond the tutorial): the request fields a run's
options= may add (and those each request sends), a script's messages= as plain dicts (the openai
SDK's replies among them), and the check that a reply is one the loop can use before anyone uses
it."""

import typing

from plainagent.core.settings import BACKENDS, ConfigError, Settings
from plainagent.model.errors import BadReply

if typing.TYPE_CHECKING:  # loaded by backend.py's request, which alone sends what is checked here
    import openai

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
LOOP_OWNED = ("messages", "tools", "stream", "stream_options")
SETTINGS_OWNED = ("model", "reasoning_effort", "timeout")


# Fields the API takes only beside tools (the request for output='s answer has none), and the
# tool_choice values that leave the model free to answer
TOOL_FIELDS = ("tool_choice", "parallel_tool_calls")
FREE_CHOICES = ("auto", "none")


def for_request(options: dict[str, typing.Any], tools: bool, called: bool) -> dict[str, typing.Any]:
    """A run's options as one request sends them: tool_choice and parallel_tool_calls only where it
    offers tools, as the API requires; and a tool_choice that makes the model call a tool
    ("required", or one function) only until it has called one (called), as the OpenAI Agents SDK
    resets it: sent on every request, the model could never answer."""
    if not tools:
        return {key: value for key, value in options.items() if key not in TOOL_FIELDS}
    if called and options.get("tool_choice", "auto") not in FREE_CHOICES:
        return {key: value for key, value in options.items() if key != "tool_choice"}
    return options


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


# The fields of a message the API takes back, by role: an SDK reply's others (Groq's reasoning, the
# SDK's refusal, annotations, audio) would be refused, or resent for nothing
SENT_BACK = {
    "system": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "name", "tool_calls"),
    "tool": ("role", "content", "tool_call_id"),
}


def as_dicts(messages: list) -> list[dict]:
    """In place, a script's conversation as the loop keeps it, and returned: a message the openai
    SDK returned (`completion.choices[0].message`, which its documentation appends to the list), or
    a tool call of one in a dict's tool_calls, becomes the plain dict the API takes back. TypeError
    for a message that is neither a dict nor such an object, or a conversation that is no list."""
    if not isinstance(messages, list):  # a tuple, or a generator, is not extended for the caller
        raise TypeError(
            f"messages= must be a list, which the run extends, not {type(messages).__name__}"
        )
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            given = dumped(message)
            role = given.get("role")
            if role not in SENT_BACK:
                raise TypeError(
                    f"messages= holds a {type(message).__name__} of role {role!r}, which is not a "
                    "Chat Completions message; give dicts, or the openai SDK's messages"
                )
            # An assistant's content is sent as null beside its tool calls, as the loop's own is
            fields = [key for key in SENT_BACK[role] if key in given or key == "content"]
            message = {key: given.get(key) for key in fields}
        if any(not isinstance(call, dict) for call in message.get("tool_calls") or []):
            message = {**message, "tool_calls": [sent_call(call) for call in message["tool_calls"]]}
        messages[index] = message
    return messages


def dumped(value: typing.Any) -> dict:
    """A pydantic model (the openai SDK's types) as its JSON's dict, the fields it lacks left out;
    an empty dict for anything else."""
    dump = getattr(value, "model_dump", None)
    if isinstance(value, type) or not callable(dump):
        return {}
    given = dump(mode="json", exclude_none=True)
    return given if isinstance(given, dict) else {}


def sent_call(call: typing.Any) -> dict:
    """A tool call as the API takes it back: its id, its type and its function's name and
    arguments."""
    given = call if isinstance(call, dict) else dumped(call)
    function = given.get("function") or {}
    return {
        "id": given.get("id"),
        "type": given.get("type", "function"),
        "function": {"name": function.get("name"), "arguments": function.get("arguments")},
    }


def sdk_options(options: dict[str, typing.Any]) -> dict[str, typing.Any]:
    """Take out of `options` create()'s keyword arguments that are not body fields (extra_headers,
    ...), as the SDK's request options that client.post() takes; the rest are body fields."""
    return {
        REQUEST_OPTIONS[key]: options.pop(key) for key in list(options) if key in REQUEST_OPTIONS
    }


def checked(completion: typing.Any, settings: Settings) -> "openai.types.chat.ChatCompletion":
    """The completion, if it is one the loop can use; else BadReply, saying what to check."""
    import openai  # loaded already: the completion came from its client

    if (
        not isinstance(completion, openai.types.chat.ChatCompletion)
        or not isinstance(completion.choices, list)
        or not completion.choices
    ):
        raise BadReply(
            f"the model server at {settings.base_url} sent a reply that is not a chat completion "
            f"({str(completion)[:100]!r}); check {BACKENDS[settings.backend]['url_variable']}"
        )
    if problem := unusable(completion):
        raise BadReply(
            f"the model server at {settings.base_url} sent a reply with {problem}; try again, or "
            "choose another model with --model or AGENT_MODEL"
        )
    return completion


def unusable(completion: "openai.types.chat.ChatCompletion") -> str | None:
    """What in a completion the harness cannot use (the SDK does not check the shape of a reply), or
    None."""
    import openai  # loaded already: the completion came from its client

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
