"""What run() gives back: an answer a script can tell from a stop, the run's totals in its
end event and on the answer, and the conversation in the list passed as messages=,
extended in place and continued."""

import pytest
from fake_model import answer, calls, completion
from helpers import assert_well_formed

import harness
from plainagent import Answer, Stopped


def test_an_answer_says_it_answered_and_compares_as_its_text(model):
    model.queue(answer("four"))

    result = harness.run("2 + 2?")

    assert result == "four" and isinstance(result, str) and print(result) is None
    assert (result.stopped, result.reason) == (False, "answer")


@pytest.mark.parametrize(
    "replies, max_steps, text, reason",
    [
        ([calls(("list_dir", {}))] * 2, 2, harness.STEP_LIMIT, "step_limit"),
        ([answer(""), answer(None)], 5, harness.EMPTY_ANSWER, "empty"),
        ([answer("the first half", finish_reason="length")], 5, "the first half", "length"),
    ],
)
def test_a_stop_is_told_apart_from_an_answer_without_watching_events(
    model, replies, max_steps, text, reason
):
    model.queue(*replies)

    result = harness.run("go", max_steps=max_steps)

    assert result == text  # print(run(task)) still says what happened
    assert (result.stopped, result.reason) == (True, reason)


def test_the_package_gives_the_names_a_script_needs():
    import plainagent
    from plainagent import Answer, ConfigError, Stopped, ToolError, arun, asks, run  # noqa: F401

    stop = Stopped(Answer(harness.STEP_LIMIT, "step_limit"))
    assert (stop.reason, stop.answer, str(stop)) == (
        "step_limit",
        harness.STEP_LIMIT,
        f"the run stopped without an answer (step_limit): {harness.STEP_LIMIT}",
    )
    assert set(plainagent.__all__) <= set(dir(plainagent))
    assert (run, arun) == (harness.run, harness.arun)


def test_the_end_event_and_the_answer_carry_the_runs_totals(model):
    reported = {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    model.queue(
        calls(("list_dir", {}), ("list_dir", {"path": "."}), usage=reported),
        {"body": completion({"content": "two"}, usage=reported)},
    )
    events = []

    result = harness.run("list", on_event=events.append)

    end = events[-1]
    assert {
        k: end[k]
        for k in (
            "type",
            "reason",
            "steps",
            "tool_calls",
            "tokens_in",
            "tokens_out",
            "tokens_cached",
            "tokens_reasoning",
        )
    } == {
        "type": "end",
        "reason": "answer",
        "steps": 2,
        "tool_calls": 2,
        "tokens_in": 240,
        "tokens_out": 60,
        "tokens_cached": 200,
        "tokens_reasoning": 24,
    }
    assert 0 <= end["seconds"] < 10
    assert result.totals == {k: v for k, v in end.items() if k not in ("type", "reason", "answer")}


def test_the_list_given_as_messages_holds_the_whole_conversation_and_continues_it(model, tmp_path):
    (tmp_path / "a.txt").write_text("A")
    model.queue(calls(("read_file", {"path": "a.txt"})), answer("it says A"), answer("it was A"))
    history: list[dict] = []

    harness.run("read a.txt", messages=history)

    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "assistant"]
    assert history[1:] == [
        {"role": "user", "content": "read a.txt"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "A"},
        {"role": "assistant", "content": "it says A"},
    ]
    first = list(history)

    assert harness.run("what did it say?", messages=history) == "it was A"

    assert model.messages(2) == first + [{"role": "user", "content": "what did it say?"}]
    assert history == model.messages(2) + [{"role": "assistant", "content": "it was A"}]
    assert_well_formed(history)


def test_a_conversation_holding_the_openai_sdks_replies_is_continued_as_plain_dicts(model):
    import openai

    client = openai.OpenAI(base_url=model.url, api_key="test-key-not-real")
    model.queue(calls(("lookup", {"word": "ok"})), answer("it means yes"), answer("yes"))
    history: list = [{"role": "user", "content": "what does ok mean?"}]
    turn = client.chat.completions.create(model="m", messages=history).choices[0].message
    history.append(turn)  # as the openai SDK's documentation does
    history.append({"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": "yes"})
    history.append(client.chat.completions.create(model="m", messages=history).choices[0].message)

    assert harness.run("so?", tools=[], messages=history) == "yes"

    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"word": "ok"}'},
    }
    expected = [
        {"role": "user", "content": "what does ok mean?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "yes"},
        {"role": "assistant", "content": "it means yes"},  # no reasoning, which Groq refuses
        {"role": "user", "content": "so?"},
    ]
    assert model.messages(2) == expected
    assert history == expected + [{"role": "assistant", "content": "yes"}]


def test_a_tool_call_of_the_sdk_in_a_dicts_tool_calls_is_sent_as_a_dict(model):
    import openai

    client = openai.OpenAI(base_url=model.url, api_key="test-key-not-real")
    model.queue(calls(("lookup", {"word": "ok"})), answer("done"))
    history: list = [{"role": "user", "content": "look it up"}]
    turn = client.chat.completions.create(model="m", messages=history).choices[0].message
    history.append({"role": "assistant", "content": None, "tool_calls": turn.tool_calls})
    history.append({"role": "tool", "tool_call_id": "call_1", "content": "yes"})

    harness.run("so?", tools=[], messages=history)

    assert model.messages(1)[1]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"word": "ok"}'},
        }
    ]


@pytest.mark.parametrize("given", [(), ({"role": "user", "content": "hi"},)])
def test_a_conversation_that_is_no_list_is_a_type_error_before_any_request(model, given):
    with pytest.raises(
        TypeError, match="^messages= must be a list, which the run extends, not tuple$"
    ):
        harness.run("so?", tools=[], messages=given)

    assert model.requests == []


def test_a_message_that_is_neither_a_dict_nor_the_sdks_is_a_type_error_before_any_request(model):
    with pytest.raises(TypeError, match="messages= holds a str of role None, which is not a Chat"):
        harness.run("so?", tools=[], messages=["hello"])

    assert model.requests[:] == []


def stopped_in_a_worker(task: str) -> None:
    harness.run(task, tools=[], output=int, max_steps=1)


def test_a_stop_raised_in_a_process_pools_worker_reaches_the_script_whole(model):
    import concurrent.futures
    import multiprocessing

    model.queue(calls(("look", {})))
    pool = concurrent.futures.ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context("spawn")
    )
    with pool, pytest.raises(Stopped) as raised:  # where the pool broke, unable to unpickle it
        pool.submit(stopped_in_a_worker, "look once").result(timeout=30)

    assert raised.value.reason == "step_limit" and raised.value.answer.totals["steps"] == 1


def test_the_errors_a_run_raises_for_output_pickle_whole():
    import pickle

    from plainagent import OutputError

    stop = Stopped(Answer("stopped: hit the step limit", "step_limit", {"steps": 3}))
    unfit = OutputError("the model's answer does not fit", '{"x": 1}')

    again = pickle.loads(pickle.dumps(stop))
    assert (str(again), again.reason, again.answer.totals) == (
        str(stop),
        "step_limit",
        {"steps": 3},
    )
    again = pickle.loads(pickle.dumps(unfit))
    assert (type(again), str(again), again.raw) == (OutputError, str(unfit), '{"x": 1}')
