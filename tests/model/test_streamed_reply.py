"""A reply that streams (model/streaming.py), from a script: run(stream=True) asks for the events
and the usage in the last chunk, tells each piece as a delta event, puts tool calls together by
their index, and returns what a reply that does not stream would; run() streams only when asked."""

import openai
import pytest
from fake_model import CUT, answer, call_pieces, chunk, error, stream

import harness
from plainagent.model.errors import BadReply

USAGE = {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}


def test_run_streams_only_when_asked(model):
    model.queue(answer("whole"))
    assert harness.run("say") == "whole"
    assert "stream" not in model.requests[0]["body"]


def test_pieces_are_delta_events_and_the_reply_is_whole(model):
    model.queue(stream({"reasoning": "I think"}, "An ", "answer", usage=USAGE))
    events = []

    result = harness.run("say", stream=True, on_event=events.append)

    assert result == "An answer" and result.reason == "answer"
    body = model.requests[0]["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    deltas = [(e["kind"], e["text"]) for e in events if e["type"] == "delta"]
    assert deltas == [("reasoning", "I think"), ("answer", "An "), ("answer", "answer")]
    [reply] = [e for e in events if e["type"] == "reply"]
    assert reply["reasoning"] == "I think"
    assert reply["usage"]["prompt_tokens"] == 321 and reply["usage"]["completion_tokens"] == 45
    # one message per reply, never the pieces
    assert [e["message"]["content"] for e in events if e["type"] == "message"][-1] == "An answer"


def test_tool_calls_are_put_together_by_their_index(model, tmp_path):
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.txt").write_text("beta")
    pieces_a = call_pieces(0, "call_a", "read_file", '{"path": "a.txt"}', 5)
    pieces_b = call_pieces(1, "call_b", "read_file", '{"path": "b.txt"}', 5)
    # the two calls' pieces interleaved, as a server may send them
    mixed = [piece for pair in zip(pieces_a, pieces_b, strict=True) for piece in pair]
    model.queue(stream(*mixed, finish_reason="tool_calls"), stream("read both"))

    assert harness.run("read", stream=True) == "read both"

    sent = model.messages(1)
    assert [c["function"]["arguments"] for c in sent[-3]["tool_calls"]] == [
        '{"path": "a.txt"}',
        '{"path": "b.txt"}',
    ]
    assert [(m["tool_call_id"], m["content"]) for m in sent[-2:]] == [
        ("call_a", "alpha"),
        ("call_b", "beta"),
    ]


def test_a_cut_stream_is_asked_again_once_then_is_the_error(model):
    events = []
    model.queue(stream("Half", CUT), stream("Whole"))
    assert harness.run("say", stream=True, on_event=events.append) == "Whole"
    [retry] = [e for e in events if e["type"] == "retry"]
    assert (retry["reason"], retry["attempt"], retry["of"]) == ("cut", 2, 2)

    model.queue(stream("Half", CUT), stream("Half again", CUT))
    with pytest.raises(openai.APIConnectionError):
        harness.run("say", stream=True)


def events_of(*events) -> dict:
    """A stream of these events as they are (chunks, or what is none), then [DONE]."""
    return {"stream": [*events, "[DONE]"], "pause": 0.0}


NOT_CHUNKS = {
    "not JSON": "{not json",
    "a list": [1, 2],
    "a choice that is a number": {**chunk({}), "choices": [5]},
    "a call's arguments a number": chunk(
        {"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": 5}}]}
    ),
}


@pytest.mark.parametrize("piece", NOT_CHUNKS.values(), ids=NOT_CHUNKS.keys())
def test_a_piece_that_is_not_a_chunk_is_asked_again_once_then_is_one_error(model, piece):
    broken = events_of(chunk({"content": "Half "}), piece, chunk({}, "stop"))
    events = []
    model.queue(broken, stream("Whole"))
    assert harness.run("say", stream=True, on_event=events.append) == "Whole"
    [retry] = [e for e in events if e["type"] == "retry"]
    assert (retry["reason"], retry["attempt"]) == ("malformed", 2)

    model.queue(broken, broken)
    with pytest.raises(
        BadReply, match="sent a piece of its reply that is not a chat completion chunk"
    ):
        harness.run("say", stream=True)


def test_call_pieces_without_an_index_are_put_together_by_their_id(model, tmp_path):
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.txt").write_text("beta")
    first = {"id": "call_a", "type": "function", "function": {"name": "read_file"}}
    second = {"index": 1, "id": "call_b", "type": "function", "function": {"name": "read_file"}}
    pieces = [
        {"tool_calls": [first]},
        {"tool_calls": [{"id": "call_a", "function": {"arguments": '{"path": '}}]},
        {"tool_calls": [second]},
        {"tool_calls": [{"id": "call_a", "function": {"arguments": '"a.txt"}'}}]},
        {"tool_calls": [{"index": 1, "function": {"arguments": '{"path": "b.txt"}'}}]},
    ]
    # and a chunk whose delta is null, with the finish reason alone
    finish = {**chunk({}), "choices": [{"index": 0, "delta": None, "finish_reason": "tool_calls"}]}
    model.queue(events_of(*map(chunk, pieces), finish), stream("read both"))

    assert harness.run("read", stream=True) == "read both"

    sent = model.messages(1)
    assert [c["function"]["arguments"] for c in sent[-3]["tool_calls"]] == [
        '{"path": "a.txt"}',
        '{"path": "b.txt"}',
    ]
    assert [m["content"] for m in sent[-2:]] == ["alpha", "beta"]


def test_choices_without_an_index_are_the_reply(model):
    pieces = [
        {**chunk({"content": text}), "choices": [{"delta": {"content": text}}]}
        for text in ("An ", "answer")
    ]
    model.queue(events_of(*pieces, chunk({}, "stop")))

    assert harness.run("say", stream=True) == "An answer"


def test_a_rate_limit_before_the_stream_is_waited_out_as_ever(model):
    limited = error(
        429, "Rate limit reached on requests per minute (RPM)", headers={"retry-after": "0.1"}
    )
    model.queue(limited, stream("after the wait"))
    events = []
    assert harness.run("say", stream=True, on_event=events.append) == "after the wait"
    assert [e["type"] for e in events].count("wait") == 1


def test_a_server_that_sends_the_whole_reply_instead_is_read_as_one(model):
    model.queue(answer("not streamed"))
    assert harness.run("say", stream=True) == "not streamed"
