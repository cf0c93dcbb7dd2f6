"""A reply that streams, put together (beyond the tutorial): the SDK's chunks read as they arrive,
each piece of the answer and of the reasoning told to the listener as a delta event, and at the end
one ChatCompletion, as a request that does not stream returns it: the text joined, the tool calls
put together by their index (or, where a server leaves it out, their id; id, name and arguments
over any number of chunks), the finish reason, and the usage of the last chunk
(stream_options.include_usage). A piece that is no chunk breaks the stream off, as an error does."""

import typing

from plainagent.core import stop
from plainagent.core.settings import Settings
from plainagent.model.errors import BadReply
from plainagent.model.request import checked

if typing.TYPE_CHECKING:  # loaded where a request is made: ask(), in retries.py
    import openai

Emit = typing.Callable[[dict], None]


class BrokeOff(Exception):
    """The stream stopped before its end: the connection dropped, or the server sent an error in
    place of the next chunk. `error` is the SDK's error for it; the reply is asked for again from
    the start (retries.ask())."""

    def __init__(self, error: Exception, reason: str) -> None:
        super().__init__(str(error))
        self.error, self.reason = error, reason  # reason: "cut", "error" or "malformed"


def streamed(
    stream: typing.Any, settings: Settings, emit: Emit
) -> "openai.types.chat.ChatCompletion":
    """The completion the stream's chunks make, checked as a whole reply is (request.checked()),
    each piece of text told to emit as it comes: {"type": "delta", "kind": "answer" | "reasoning",
    "text": ...}. An error sent before the end, or a piece that is no chunk, is raised as BrokeOff,
    or as the SDK's error when it is a malformed tool call (Groq's tool_use_failed: asked again, as
    ever); on Ctrl-C the KeyboardInterrupt carries the answer's text so far as .shown."""
    import openai

    from plainagent.model.deadline import OutOfTime, httpx

    if not isinstance(stream, openai.Stream):  # a body that was not JSON: checked() says so
        return checked(stream, settings)
    if "text/event-stream" not in stream.response.headers.get("content-type", ""):
        # A server that does not stream sends the whole completion: read as it is without stream
        return checked(whole_body(stream), settings)
    text: list[str] = []
    thought: list[str] = []
    calls: dict[int, dict] = {}
    last: dict[str, typing.Any] = {"finish": None, "usage": None, "id": "", "model": ""}
    try:
        for chunk in stream:
            stop.check()  # a cancelled arun() stops between two pieces, as Ctrl-C does
            gather(chunk, text, thought, calls, last, emit)
    except KeyboardInterrupt as interruption:  # for the history (retries.ask)
        interruption.shown = "".join(text)  # type: ignore[attr-defined]
        raise
    except OutOfTime as spent:  # the request's AGENT_TIMEOUT, as for a reply that does not stream
        raise openai.APITimeoutError(request=spent.request) from None
    except openai.APITimeoutError:
        raise
    # Older SDKs (openai 1.66) let the HTTP library's own errors through a stream
    except httpx.TimeoutException:
        raise openai.APITimeoutError(request=stream.response.request) from None
    except httpx.TransportError:
        cut = openai.APIConnectionError(request=stream.response.request)
        raise BrokeOff(cut, "cut") from None
    except openai.APIConnectionError as error:
        raise BrokeOff(error, "cut") from None
    except openai.APIError as error:
        if error.code == "tool_use_failed":
            raise
        raise BrokeOff(error, "error") from None
    # The SDK reads each chunk without checking it (construct): not JSON, or any field of any kind
    except (ValueError, AttributeError, TypeError) as error:
        said = f"a piece of its reply that is not a chat completion chunk ({error})"
        do = "try again, or ask it for whole replies: --no-stream (AGENT_STREAM=off)"
        bad = BadReply(f"the model server at {settings.base_url} sent {said}; {do}")
        raise BrokeOff(bad, "malformed") from None
    finally:
        stream.close()
    return checked(whole(text, thought, calls, last), settings)


def gather(
    chunk: typing.Any,
    text: list[str],
    thought: list[str],
    calls: dict[int, dict],
    last: dict[str, typing.Any],
    emit: Emit,
) -> None:
    """Add one chunk to what the stream has said so far, and tell emit its pieces of text."""
    last["id"], last["model"] = chunk.id or last["id"], chunk.model or last["model"]
    # Groq's older streams give the usage in x_groq, not in the chunk's own field
    extra = getattr(chunk, "x_groq", None)
    usage = chunk.usage or (extra.get("usage") if isinstance(extra, dict) else None)
    last["usage"] = usage or last["usage"]
    for choice in chunk.choices or []:
        if choice.index not in (0, None):  # one reply is asked for (n=1); some servers leave it out
            continue
        delta = choice.delta
        last["finish"] = choice.finish_reason or last["finish"]
        if delta is None:  # a chunk with the finish reason alone
            continue
        # gpt-oss on Groq sends its reasoning as a field of the delta the SDK does not declare
        reasoning = getattr(delta, "reasoning", None)
        if isinstance(reasoning, str) and reasoning:
            thought.append(reasoning)
            emit({"type": "delta", "kind": "reasoning", "text": reasoning})
        if isinstance(delta.content, str) and delta.content:
            text.append(delta.content)
            emit({"type": "delta", "kind": "answer", "text": delta.content})
        for call in delta.tool_calls or []:
            at = call.index if isinstance(call.index, int) else unindexed(calls, call.id)
            part = calls.setdefault(at, {"id": None, "name": "", "arguments": ""})
            part["id"] = call.id or part["id"]  # sent whole, with the call's first piece
            if call.function is not None:
                part["name"] = call.function.name or part["name"]
                part["arguments"] += call.function.arguments or ""


def unindexed(calls: dict[int, dict], call_id: typing.Any) -> int:
    """Where a piece of a call without an index goes (a server that leaves it out): to the call
    with its id, else to a new call if it has one, else to the last call."""
    same = [at for at, part in calls.items() if call_id and part["id"] == call_id]
    newest = max(calls, default=-1)
    return same[0] if same else newest + bool(call_id)


def whole(
    text: list[str], thought: list[str], calls: dict[int, dict], last: dict[str, typing.Any]
) -> typing.Any:
    """The chunks' reply as the ChatCompletion a request that does not stream gets."""
    import openai

    message: dict[str, typing.Any] = {"role": "assistant", "content": joined(text)}
    if thought:
        message["reasoning"] = joined(thought)
    if calls:
        message["tool_calls"] = [
            {
                "id": part["id"],
                "type": "function",
                "function": {"name": part["name"], "arguments": part["arguments"]},
            }
            for _, part in sorted(calls.items())
        ]
    usage = last["usage"]
    # construct(), as the SDK reads a reply: a server's odd finish_reason is kept, not refused
    return openai.types.chat.ChatCompletion.construct(
        **{
            "id": last["id"] or "streamed",
            "object": "chat.completion",
            "created": 0,
            "model": last["model"] or "",
            "choices": [
                {"index": 0, "message": message, "finish_reason": last["finish"] or "stop"}
            ],
            "usage": usage.model_dump() if hasattr(usage, "model_dump") else usage,
        }
    )


def joined(pieces: list[str]) -> str | None:
    """The pieces as one text (None for none), a character JSON sent as two halves of a surrogate
    pair in two pieces made one again."""
    if not pieces:
        return None
    text = "".join(pieces)
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def whole_body(stream: "openai.Stream") -> typing.Any:
    """The completion a server sent whole, in JSON, to a request that asked it to stream; what it
    holds if it is not JSON, for checked() to word."""
    import openai

    try:
        stream.response.read()
        body = stream.response.json()
    except ValueError:
        return stream.response.text
    finally:
        stream.close()
    return openai.types.chat.ChatCompletion.construct(**body) if isinstance(body, dict) else body
