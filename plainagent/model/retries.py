"""One model request with all its retries (beyond the tutorial, for the free plan): a malformed tool
call (Groq's tool_use_failed) is asked again, a short rate limit (429) is waited out, and the SDK's
own retries (5xx, dropped connections, timeouts) are shown; a reply that streams (streaming.py) and
breaks off is asked for again once. Other errors propagate to the edge, which words them."""

import dataclasses
import functools
import json
import time
import typing

from plainagent.core import stop
from plainagent.core.settings import Settings
from plainagent.model.errors import rate_limit

if typing.TYPE_CHECKING:  # loaded where a request is made: ask(), below
    import openai

MAX_RETRIES = 2  # the SDK's own retries for 5xx, dropped connections and timeouts (backend.py)
TOOL_USE_ATTEMPTS = 3  # tries in all when Groq says the model wrote a malformed tool call
RATE_LIMIT_RETRIES = 5  # 429s waited out in a row by the harness, which owns 429s (not the SDK)
STREAM_RETRIES = 1  # a stream that broke off (a dropped connection, an error chunk), asked again
INTERRUPTED = "\n\n(interrupted)"  # ends what was shown of an answer Ctrl-C stopped


Send = typing.Callable[..., "openai.types.chat.ChatCompletion"]  # backend.chat_completion


def ask(
    send: Send,
    messages: list[dict],
    tools: list[dict],
    settings: Settings,
    emit: typing.Callable[[dict], None],
    step: int,
    estimated: int,
    **fields: typing.Any,
) -> "openai.types.chat.ChatCompletion":
    """The model's completion for this history, sent with `send` (backend.chat_completion), after
    whatever waiting and asking again it took; `fields` go into the request's body as they are
    (response_format, say)."""
    # Here, not at the top: commands that send nothing (--help, --runs, --undo) never load the SDK
    import openai

    from plainagent.model.deadline import WATCH
    from plainagent.model.streaming import BrokeOff, streamed

    options = {"reasoning_effort": settings.reasoning_effort} if settings.reasoning_effort else {}
    options.update(fields)
    malformed = waits = broken = 0
    while True:
        stop.check()
        emit(
            {
                "type": "request",
                "step": step,
                "messages": len(messages),
                "estimated_tokens": estimated,
            }
        )
        started = time.perf_counter()
        shown = functools.partial(shown_retry, emit, step)
        token = WATCH.set(dataclasses.replace(WATCH.get(), on_retry=shown))
        try:
            if settings.stream:  # pieces told to emit as they come, then put together
                completion = streamed(
                    send(messages, tools, settings, stream=True, **options), settings, emit
                )
            else:
                completion = send(messages, tools, settings, **options)
        except KeyboardInterrupt as interruption:
            # What was shown of the answer stays in the history, marked, so --continue has it
            if so_far := getattr(interruption, "shown", ""):
                messages.append({"role": "assistant", "content": so_far + INTERRUPTED})
                emit({"type": "message", "message": messages[-1]})
            raise
        except BrokeOff as stopped:  # from the start, once: the pieces shown are withdrawn
            broken += 1
            if broken > STREAM_RETRIES:
                raise stopped.error from None
            emit(
                {
                    "type": "retry",
                    "step": step,
                    "reason": stopped.reason,
                    "attempt": broken + 1,
                    "of": STREAM_RETRIES + 1,
                }
            )
            continue
        except openai.RateLimitError as error:
            info, waits = rate_limit(error), waits + 1
            if info["wait"] is None or waits > RATE_LIMIT_RETRIES:
                raise
            emit(
                {
                    "type": "wait",
                    "step": step,
                    "limit": info["limit"],
                    "seconds": info["wait"],
                    "retry": waits,
                    "of": RATE_LIMIT_RETRIES,
                }
            )
            stop.pause(info["wait"])
            continue
        # A malformed call: a 400 before a stream, or an error chunk inside one
        except openai.APIError as error:
            malformed += 1
            if error.code != "tool_use_failed" or malformed == TOOL_USE_ATTEMPTS:
                raise
            emit(
                {
                    "type": "retry",
                    "step": step,
                    "reason": "tool_use_failed",
                    "attempt": malformed + 1,
                    "of": TOOL_USE_ATTEMPTS,
                }
            )
            continue
        finally:
            WATCH.reset(token)
        stop.check()  # a reply that came while the run was being stopped is not used
        usage, message = completion.usage, completion.choices[0].message
        # The SDK does not check it: a list, a lone surrogate
        message.content = plain_text(message.content)
        # gpt-oss on Groq returns its reasoning as an extra field of the message: shown, never sent
        # back.
        reasoning = getattr(message, "reasoning", None)
        emit(
            {
                "type": "reply",
                "step": step,
                "seconds": round(time.perf_counter() - started, 3),
                "finish_reason": completion.choices[0].finish_reason,
                "tool_calls": len(message.tool_calls or []),
                "reasoning": reasoning if isinstance(reasoning, str) and reasoning else None,
                "usage": {
                    "prompt_tokens": count(usage, "prompt_tokens"),
                    "completion_tokens": count(usage, "completion_tokens"),
                    # Not every server says; None where it did not
                    "cached_tokens": reported(usage, "prompt_tokens_details", "cached_tokens"),
                    "reasoning_tokens": reported(
                        usage, "completion_tokens_details", "reasoning_tokens"
                    ),
                },
            }
        )
        return completion


def count(usage: typing.Any, name: str) -> int:
    """A token count of the reply's usage, or 0 where the server sent none, or something that is not
    a count."""
    value = getattr(usage, name, None)
    return value if type(value) is int and 0 <= value < 10**12 else 0


def reported(usage: typing.Any, details: str, name: str) -> int | None:
    """A count inside the usage's details (cached prompt tokens, reasoning tokens), or None where
    the server sent none."""
    part = getattr(usage, details, None)
    return count(part, name) if getattr(part, name, None) is not None else None


def plain_text(content: typing.Any) -> str | None:
    """A reply's text as valid UTF-8, whatever the server sent: a list of text parts as their text,
    joined; JSON for anything else that is not a string."""
    if content is None or isinstance(content, str) and content.isascii():
        return content
    if isinstance(content, list) and all(
        isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        for part in content
    ):
        content = "".join(part["text"] for part in content)
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def shown_retry(emit: typing.Callable[[dict], None], step: int, tries: int) -> None:
    """Tell the listener that the SDK tries the step's request again (a 5xx, a dropped connection, a
    timeout), tries times so far."""
    emit(
        {
            "type": "retry",
            "step": step,
            "reason": "no_answer",
            "attempt": tries + 1,
            "of": MAX_RETRIES + 1,
        }
    )
