"""The agent loop: ask the model, run the tools it asks for, send the results back, until it answers.
Run `python harness.py "task"` on the command line, or `from harness import run` in a script."""

import argparse
import collections
import inspect
import json
import math
import os
import platform
import re
import sys
import time
import typing
from pathlib import Path

import openai

from backend import (BACKENDS, RATE_LIMIT_RETRIES, ConfigError, chat_completion, number, rate_limit,
                     rate_limit_wait, report)
from safety import APPROVE_ALL, Approver, default_approver, denial, needs_approval, workspace
from tools import JSON_TYPES, MAX_CHARS, REGISTRY, SHELL_TIMEOUT, TOOLS, cap

MAX_STEPS = 10  # model requests in one run (--max-steps, AGENT_MAX_STEPS)
TOOL_USE_ATTEMPTS = 3  # tries in all when Groq says the model wrote a malformed tool call
CONTEXT_BUDGET = 6000  # estimated tokens per request (AGENT_CONTEXT_BUDGET); fits the free plan's 8,000 TPM
LOW_WATER = 0.6  # once a request is over the budget, it is shortened to this share of it in one go
REPEATS_ALLOWED = 2  # the same tool with the same arguments; the third time the model gets an error instead
RUNS = "runs"  # transcripts go here, in the working folder
ANSWERED = ("answer", "length")  # end reasons whose text goes to stdout; the others are stops (exit 1)
STEP_LIMIT = "stopped: hit the step limit"
EMPTY_ANSWER = "stopped: the model gave an empty answer twice"
ANSWER_NEEDED = "Your last reply was empty. Answer the task now, in words."

Event = dict
Listener = typing.Callable[[Event], None]


def run(task: str, *, max_steps: int = MAX_STEPS, backend: str | None = None, model: str | None = None,
        approve: Approver | None = None, on_event: Listener | None = None, messages: list[dict] | None = None,
        context_budget: int | None = None) -> str:
    """Work on a task with the tools until the model answers; return the answer, or why it stopped.

    approve(name, arguments) decides each call that needs approval: True runs it; False, or a message
    for the model, denies it. By default: ask at the terminal, deny when there is none.
    on_event(event) sees every step as a small dict; messages= continues an earlier conversation.
    """
    emit = on_event or (lambda event: None)
    approve = approve or default_approver()
    budget = context_budget or number("AGENT_CONTEXT_BUDGET", CONTEXT_BUDGET)
    history, seen, sizes = list(messages or []), collections.Counter(), Sizes()

    def add(message: dict) -> None:
        history.append(message)
        emit({"type": "message", "message": message})

    emit({"type": "start", "task": task, "continued": bool(history), "workspace": str(workspace())})
    if not history:
        add({"role": "system", "content": system_prompt()})
    add({"role": "user", "content": task})
    asked_again = False
    for step in range(1, max_steps + 1):
        estimated = fit_to_budget(history, budget, step, emit, sizes)
        completion = ask(history, backend, model, step, emit, estimated)
        reply, finish = completion.choices[0].message, completion.choices[0].finish_reason
        if not reply.tool_calls and not reply.content and not asked_again:
            asked_again = True
            add({"role": "user", "content": ANSWER_NEEDED})
            continue
        if not reply.tool_calls:
            if reply.content:
                add({"role": "assistant", "content": reply.content})
            reason = "length" if finish == "length" else "answer" if reply.content else "empty"
            emit({"type": "end", "reason": reason, "answer": reply.content or EMPTY_ANSWER})
            return reply.content or EMPTY_ANSWER
        add(assistant_message(reply))
        calls = history[-1]["tool_calls"]
        for i, call in enumerate(calls):
            try:
                result = run_tool(call, approve, seen, step, emit)
            except KeyboardInterrupt:  # every call still gets its one result, so the history stays valid
                for unanswered in calls[i:]:
                    add(tool_message(unanswered, "interrupted"))
                emit({"type": "end", "reason": "interrupted", "answer": None})
                raise
            add(tool_message(call, result))
    emit({"type": "end", "reason": "step_limit", "answer": STEP_LIMIT})
    return STEP_LIMIT


def ask(messages: list[dict], backend: str | None, model: str | None, step: int, emit: Listener,
        estimated: int) -> openai.types.chat.ChatCompletion:
    """One model request. A malformed tool call (Groq's tool_use_failed) is asked again, a few times;
    a short rate limit (429) is waited out, visibly. Other errors propagate."""
    options = {"model": model} if model else {}
    malformed = waits = 0
    while True:
        emit({"type": "request", "step": step, "messages": len(messages), "estimated_tokens": estimated})
        started = time.perf_counter()
        try:
            completion = chat_completion(messages, TOOLS, backend, **options)
        except openai.RateLimitError as error:
            info, waits = rate_limit(error), waits + 1
            wait = rate_limit_wait(info)
            if wait is None or waits > RATE_LIMIT_RETRIES:
                raise
            emit({"type": "wait", "step": step, "limit": info["limit"], "seconds": wait,
                  "retry": waits, "of": RATE_LIMIT_RETRIES})
            time.sleep(wait)
            continue
        except openai.BadRequestError as error:
            malformed += 1
            if error.code != "tool_use_failed" or malformed == TOOL_USE_ATTEMPTS:
                raise
            emit({"type": "retry", "step": step, "reason": "tool_use_failed", "attempt": malformed + 1,
                  "of": TOOL_USE_ATTEMPTS})
            continue
        usage = completion.usage
        emit({"type": "reply", "step": step, "seconds": round(time.perf_counter() - started, 3),
              "finish_reason": completion.choices[0].finish_reason,
              "tool_calls": len(completion.choices[0].message.tool_calls or []),
              "usage": {"prompt_tokens": usage.prompt_tokens if usage else 0,
                        "completion_tokens": usage.completion_tokens if usage else 0}})
        return completion


def assistant_message(reply: openai.types.chat.ChatCompletionMessage) -> dict:
    """The reply as a plain dict with only the fields the API accepts back (never `reasoning`)."""
    return {"role": "assistant", "content": reply.content, "tool_calls": [
        {"id": call.id, "type": "function",
         "function": {"name": call.function.name, "arguments": call.function.arguments}}
        for call in reply.tool_calls]}


def tool_message(call: dict, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call["id"], "content": content}


def run_tool(call: dict, approve: Approver, seen: collections.Counter, step: int, emit: Listener) -> str:
    """Execute one call, timed and reported; the same call a third time in a run is refused instead."""
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    emit({"type": "call", "step": step, "name": name, "arguments": arguments})
    started = time.perf_counter()
    key = name, canonical(arguments)
    seen[key] += 1
    if seen[key] > REPEATS_ALLOWED:
        result = (f"error: you already called {name} with these arguments {REPEATS_ALLOWED} times in this run "
                  "and have the result above; use it, try something else, or answer")
    else:
        result = execute(call, approve)
    emit({"type": "tool", "step": step, "name": name, "arguments": arguments, "result": result,
          "seconds": round(time.perf_counter() - started, 3), "error": result.startswith(("error:", "denied"))})
    return result


def canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except json.JSONDecodeError:
        return arguments


def estimate(messages: list[dict]) -> int:
    """Tokens in a request's messages, roughly: their compact JSON / 4, so roles, ids and calls count too."""
    return len(compact(messages)) // 4


def compact(value: typing.Any) -> str:
    """JSON as the SDK sends it: no spaces, non-ASCII as it is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Sizes:
    """Each message's length in compact JSON, measured once, so keeping to the budget costs a step only
    what is new in it. `tokens` is estimate() of the whole list, brackets and commas included."""

    def __init__(self) -> None:
        self.each: list[int] = []
        self.characters = 1  # "]"; each message adds itself and the "[" or "," before it
        self.dropped_turns = 0  # turns dropped in this run, so later stubs still name the right step
        self.warned = False  # said once that nothing more could be shortened

    @property
    def tokens(self) -> int:
        return (self.characters if self.each else 2) // 4

    def measure(self, messages: list[dict]) -> int:
        """Measure the messages added since the last call; return the estimate for the whole list."""
        for message in messages[len(self.each):]:
            self.each.append(len(compact(message)))
            self.characters += self.each[-1] + 1
        return self.tokens

    def replace(self, messages: list[dict], i: int, message: dict) -> None:
        messages[i] = message
        size = len(compact(message))
        self.characters += size - self.each[i]
        self.each[i] = size

    def delete(self, messages: list[dict], start: int, stop: int) -> None:
        del messages[start:stop]
        self.characters -= sum(self.each[start:stop]) + stop - start
        del self.each[start:stop]


def fit_to_budget(messages: list[dict], budget: int, step: int, emit: Listener, sizes: Sizes | None = None) -> int:
    """Keep the request within the budget; return its estimated tokens.

    Groq caches the longest prefix a request shares with the one before, and cached tokens do not count
    against the free plan's tokens per minute. So nothing changes while the request fits, and once it does
    not, it is shortened in one go to LOW_WATER of the budget, after which the next steps only append.
    Oldest first, tool results become one-line stubs; if that is not enough, whole old turns (a call and its
    results) go. The system prompt, the user's messages and the newest turn are never touched.
    """
    sizes = sizes or Sizes()  # a run passes its own, kept from step to step
    if sizes.measure(messages) <= budget:
        return sizes.tokens
    target = int(budget * LOW_WATER)
    newest_turn = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("tool_calls")), 0)
    turn, names = sizes.dropped_turns, {}
    for i, message in enumerate(messages[:newest_turn]):
        if sizes.tokens <= target:
            return sizes.tokens
        if message.get("tool_calls"):
            turn += 1
            names.update({c["id"]: c["function"]["name"] for c in message["tool_calls"]})
        if message["role"] != "tool" or message["content"].startswith("[elided: "):
            continue
        content, tool = message["content"], names.get(message["tool_call_id"], "tool")
        stub = f"[elided: {len(content):,} characters of {tool} output from step {turn}]"
        if len(stub) < len(content):
            sizes.replace(messages, i, {**message, "content": stub})
            emit({"type": "elided", "step": step, "index": i, "characters": len(content), "content": stub,
                  "budget": budget})
    while sizes.tokens > target and (old := oldest_turn(messages, newest_turn)):
        start, stop = old
        sizes.delete(messages, start, stop)
        sizes.dropped_turns += 1
        newest_turn -= stop - start
        emit({"type": "dropped", "step": step, "index": start, "count": stop - start, "budget": budget})
    if sizes.tokens > budget and not sizes.warned:
        sizes.warned = True
        emit({"type": "over_budget", "step": step, "estimated_tokens": sizes.tokens, "budget": budget})
    return sizes.tokens


def oldest_turn(messages: list[dict], newest_turn: int) -> tuple[int, int] | None:
    """Where the oldest turn before the newest one starts and stops: a call and the results that follow it."""
    start = next((i for i in range(newest_turn) if messages[i].get("tool_calls")), None)
    if start is None:
        return None
    stop = start + 1
    while messages[stop]["role"] == "tool":
        stop += 1
    return start, stop


def execute(call: dict, approve: Approver) -> str:
    """Run one tool call; every failure comes back as text starting 'error:' for the model to act on."""
    name, raw = call["function"]["name"], call["function"]["arguments"]
    if name not in REGISTRY:
        return f"error: unknown tool {name!r}; available: {', '.join(REGISTRY)}"
    function = REGISTRY[name]
    try:
        arguments = json.loads(raw or "{}")
    except json.JSONDecodeError as error:
        return f"error: the arguments are not valid JSON ({error}); send one JSON object, e.g. {{\"path\": \"x\"}}"
    if not isinstance(arguments, dict):
        return f"error: the arguments must be a JSON object, not {type(arguments).__name__}"
    problem = argument_problem(function, arguments)
    if problem:
        return f"error: {problem}; expected {name}{signature(function)}"
    try:
        if needs_approval(name, arguments) and (decision := approve(name, arguments)) is not True:
            return denial(decision)
        return cap(str(function(**arguments)), name, arguments)
    except Exception as error:
        return f"error: {type(error).__name__}: {error}"


def argument_problem(function: typing.Callable, arguments: dict) -> str | None:
    """What is wrong with the arguments: missing, unexpected, or not of the JSON type the schema names."""
    hints = typing.get_type_hints(function)
    parameters = inspect.signature(function).parameters
    if missing := [name for name, p in parameters.items() if p.default is p.empty and name not in arguments]:
        return f"missing argument {', '.join(map(repr, missing))}"
    if unexpected := [name for name in arguments if name not in parameters]:
        return f"unexpected argument {', '.join(map(repr, unexpected))}"
    for name, value in arguments.items():
        expected = hints[name]
        # JSON has no int/bool distinction the way Python does: true is not an integer, 3 is a number.
        fits = isinstance(value, expected) and (expected is bool or not isinstance(value, bool))
        if not fits and not (expected is float and type(value) is int):
            return f"argument {name!r} must be a JSON {JSON_TYPES[expected]}, not {json.dumps(value)}"
    return None


def signature(function: typing.Callable) -> str:
    return str(inspect.signature(function)).replace("'", "")


def system_prompt() -> str:
    shell = "cmd.exe" if sys.platform == "win32" else "/bin/sh"
    return (f"You are a helpful agent working in the folder {workspace()} on {platform.system()}. "
            f"Use the tools to look at files and run commands there (run_shell uses {shell}; commands are "
            "non-interactive, have no stdin, and are killed after a timeout). Some calls need the user's "
            "approval and may be denied. Once you have what you need, answer without calling tools.")


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    # The flags are the same settings as the variables; the tools read them from there.
    for variable, value in (("AGENT_WORKSPACE", args.workspace), ("AGENT_SHELL_TIMEOUT", args.timeout),
                            ("AGENT_APPROVE", APPROVE_ALL if args.yes else None)):
        if value is not None:
            os.environ[variable] = str(value)
    if not os.path.isdir(workspace()):
        print(f"error: the workspace {workspace()} is not a folder; check --workspace or AGENT_WORKSPACE",
              file=sys.stderr)
        return 2
    path = Path(args.transcript) if args.transcript else None
    messages = None
    if args.resume:
        path = path or newest_transcript()
        try:
            messages = restore(path)
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"error: cannot continue from {path or 'runs/'}: {error}; start a new run without --continue",
                  file=sys.stderr)
            return 2
    path = None if args.no_transcript else path or transcript_path(args.task)
    events: list[Event] = []
    listeners = [events.append] + ([] if args.quiet else [progress]) + ([write_transcript(path)] if path else [])
    emit = lambda event: [listen(event) for listen in listeners]
    try:
        for variable, default in (("AGENT_SHELL_TIMEOUT", SHELL_TIMEOUT), ("AGENT_MAX_CHARS", MAX_CHARS)):
            number(variable, default)  # a bad value fails here, not in the middle of the run
        answer = run(args.task, max_steps=args.max_steps or number("AGENT_MAX_STEPS", MAX_STEPS),
                     backend=args.backend, model=args.model, on_event=emit, messages=messages)
    except KeyboardInterrupt:
        if not events or events[-1]["type"] != "end":  # interrupted outside a tool call
            emit({"type": "end", "reason": "interrupted", "answer": None})
        print("interrupted", file=sys.stderr)
        if not args.quiet:
            print(summary(events, path), file=sys.stderr)
        return 130
    except Exception as error:
        emit({"type": "end", "reason": "error", "error": f"{type(error).__name__}: {error}"})
        if isinstance(error, (ConfigError, openai.OpenAIError)):
            return report(error, args.backend)
        # A bug, or a reply no model should send: still one line, and the transcript keeps the rest.
        where = f"; the run so far is in {path.as_posix()}" if path else ""
        print(f"error: unexpected {type(error).__name__}: {error}{where}", file=sys.stderr)
        return 1
    answered = events[-1]["reason"] in ANSWERED
    print(answer, file=sys.stdout if answered else sys.stderr)
    if not args.quiet:
        print(summary(events, path), file=sys.stderr)
    return 0 if answered else 1


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run the agent on a task in the current folder.")
    parser.add_argument("task", help="what you want the agent to do, in quotes")
    parser.add_argument("--max-steps", type=positive(int), help=f"most model requests in one run "
                        f"(default {MAX_STEPS}, AGENT_MAX_STEPS)")
    parser.add_argument("--backend", help="groq, openai or ollama (default groq, AGENT_BACKEND)")
    parser.add_argument("--model", help="the model name (default: the backend's, AGENT_MODEL)")
    parser.add_argument("--workspace", metavar="DIR", help="the folder the agent may work in "
                        "(default: the current folder, AGENT_WORKSPACE)")
    parser.add_argument("--timeout", type=positive(float), metavar="SECONDS", help="seconds before a shell command is "
                        "killed (default 30, AGENT_SHELL_TIMEOUT)")
    parser.add_argument("--yes", action="store_true", help="approve every command and write without asking "
                        "(AGENT_APPROVE=all); only for a folder and task you trust")
    parser.add_argument("--continue", dest="resume", action="store_true", help="continue the newest "
                        f"conversation in {RUNS}/ (or the --transcript one) with the task as a follow-up")
    parser.add_argument("--transcript", metavar="PATH", help=f"the transcript to write (default: a new file "
                        f"in {RUNS}/ named by time and task)")
    parser.add_argument("--no-transcript", action="store_true", help="write no transcript")
    parser.add_argument("--quiet", action="store_true", help="no progress lines and no summary; only the answer")
    return parser.parse_args(argv)


def positive(kind: type) -> typing.Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        value = kind(text)
        if value <= 0:
            raise ValueError(text)
        return value
    parse.__name__ = f"positive {kind.__name__}"  # argparse names the type in its error
    return parse


def transcript_path(task: str) -> Path:
    slug = "-".join(re.findall(r"[a-z0-9]+", task.lower())[:5])[:40] or "task"
    return Path(RUNS) / f"{time.strftime('%Y-%m-%dT%H-%M-%S')}-{slug}.jsonl"


def newest_transcript() -> Path | None:
    return max(Path(RUNS).glob("*.jsonl"), key=lambda p: p.stat().st_mtime, default=None)


def write_transcript(path: Path) -> Listener:
    """A listener that appends each event as one JSON line, flushed at once, so a crash loses nothing
    written so far. API keys are replaced wherever they appear (a tool may have read .env)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    file = open(path, "a", encoding="utf-8")
    secrets = [os.environ[p["key"]] for p in BACKENDS.values() if p["key"] and os.environ.get(p["key"])]

    def write(event: Event) -> None:
        line = json.dumps({"time": round(time.time(), 3), **event}, ensure_ascii=False)
        for secret in secrets:
            line = line.replace(secret, "[redacted API key]")
        file.write(line + "\n")
        file.flush()

    return write


def restore(path: Path | None) -> list[dict]:
    """The conversation a transcript holds: its messages, with the elisions and dropped turns of the run,
    so a continued run sends the same start the last request did."""
    if path is None:
        raise FileNotFoundError(f"no transcript in {RUNS}/ yet")
    messages: list[dict] = []
    for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            event = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"line {line_number} is not JSON ({error})") from None
        if event["type"] == "message":
            messages.append(event["message"])
        elif event["type"] == "elided":
            messages[event["index"]]["content"] = event["content"]
        elif event["type"] == "dropped":
            del messages[event["index"]:event["index"] + event["count"]]
    if not messages:
        raise ValueError("it holds no messages")
    return messages


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def summary(events: list[Event], path: Path | None) -> str:
    """One line: steps, tool calls, tokens in and out, seconds on the model and on tools, the transcript."""
    replies = [e for e in events if e["type"] == "reply"]
    tools = [e for e in events if e["type"] == "tool"]
    word = "done" if events[-1].get("reason") in ANSWERED else "stopped"
    return (f"{word}: {plural(len(replies), 'step')}, {plural(len(tools), 'tool call')}, "
            f"{sum(e['usage']['prompt_tokens'] for e in replies)} tokens in, "
            f"{sum(e['usage']['completion_tokens'] for e in replies)} out, "
            f"model {sum(e['seconds'] for e in replies):.1f} s, tools {sum(e['seconds'] for e in tools):.1f} s, "
            f"transcript {path.as_posix() if path else 'none'}")



def progress(event: Event) -> None:
    """The CLI's progress lines on stderr, one per tool call, wait, retry or elision."""
    kind = event["type"]
    if kind == "call":
        line = f"[{event['step']}] {event['name']} {event['arguments']}"
    elif kind == "wait":
        line = (f"rate limited ({event['limit']}); waiting {math.ceil(event['seconds'])} s, "
                f"retry {event['retry']} of {event['of']}")
    elif kind == "retry":
        line = f"the model wrote a malformed tool call; asking again (attempt {event['attempt']} of {event['of']})"
    elif kind == "elided":
        line = f"context over {event['budget']:,} tokens: {event['content']}"
    elif kind == "dropped":
        line = f"context over {event['budget']:,} tokens: dropped the oldest turn ({plural(event['count'], 'message')})"
    elif kind == "over_budget":
        line = (f"context still over {event['budget']:,} tokens (about {event['estimated_tokens']:,}): nothing "
                "older is left to shorten; the system prompt, your messages and the newest turn stay whole")
    elif kind == "end" and event["reason"] == "length":
        line = "the answer was cut off: the model hit its output limit (finish_reason: length)"
    else:
        return
    print(line, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
