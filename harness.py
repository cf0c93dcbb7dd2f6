"""The agent loop: ask the model, run the tools it asks for, send the results back, until it answers.
Run `python harness.py "task"` on the command line, or `from harness import run` in a script."""

import collections
import inspect
import json
import platform
import sys
import time
import typing
import uuid

import openai

import sandbox
from backend import MAX_RETRIES, RATE_LIMIT_RETRIES, RETRIES, chat_completion, rate_limit, rate_limit_wait
from safety import Approver, confine, default_approver, denial, needs_approval
from settings import Settings, current, resolve, use
from tools import JSON_TYPES, REGISTRY, TOOLS, Refused, as_asked, before_asking, cap, read_regular

TOOL_USE_ATTEMPTS = 3  # tries in all when Groq says the model wrote a malformed tool call
LOW_WATER = 0.6  # once a request is over the budget, it is shortened to this share of it in one go
REPEATS_ALLOWED = 2  # the same tool with the same arguments; the third time the model gets an error instead
OUTCOME_CHARS = 100  # the most of an error's first line a tool event's outcome carries
STEP_LIMIT = "stopped: hit the step limit"
EMPTY_ANSWER = "stopped: the model gave an empty answer twice"
SANDBOXED = ("A kernel sandbox holds: commands that run without approval can read the workspace but cannot "
             "write files or use the network; approved commands can write only inside the workspace. Prefer "
             "the file tools for changing files. ")
ANSWER_NEEDED = "Your last reply was empty. Answer the task now, in words."
AGENTS_MD = "AGENTS.md"  # the project's instructions for agents, in the workspace
AGENTS_MD_MAX_CHARS = 8000  # the most of AGENTS.md the system prompt carries; it is sent on every request

Event = dict
Listener = typing.Callable[[Event], None]


def run(task: str, *, approve: Approver | None = None, on_event: Listener | None = None,
        messages: list[dict] | None = None, settings: Settings | None = None, **given: typing.Any) -> str:
    """Work on a task with the tools until the model answers; return the answer, or why it stopped.

    Settings are keyword arguments (workspace=, max_steps=, shell_timeout=, max_chars=, allow=, backend=,
    model=, timeout=, context_budget=, sandbox=, reasoning_effort=, approve_all=); each one left out comes
    from its AGENT_* variable, read once, here. approve(name, arguments) decides each call that needs
    approval: True runs it; False, or a message for the model, denies it. By default: ask at the terminal,
    deny when there is none. on_event(event) sees every step as a small dict; messages= continues an
    earlier conversation.
    """
    config = settings or resolve(**given)
    emit = on_event or (lambda event: None)
    approve = approve or default_approver(config.approve_all)
    history, seen, sizes = list(messages or []), collections.Counter(), Sizes()

    def add(message: dict) -> None:
        history.append(message)
        emit({"type": "message", "message": message})

    emit({"type": "start", "task": task, "continued": bool(history), "workspace": str(config.workspace),
          "notes": list(config.notes)})
    with use(config):  # the tools read this run's settings, whatever other runs in other threads do
        if not history:
            add({"role": "system", "content": system_prompt()})
        add({"role": "user", "content": task})
        asked_again = False
        for step in range(1, config.max_steps + 1):
            estimated = fit_to_budget(history, config.context_budget, step, emit, sizes)
            completion = ask(history, step, emit, estimated)
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
                except KeyboardInterrupt as stop:  # every call still gets its one result: the history stays valid
                    for unanswered in calls[i:]:
                        add(tool_message(unanswered, "interrupted"))
                    emit({"type": "end", "reason": getattr(stop, "reason", "interrupted"), "answer": None})
                    raise
                add(tool_message(call, result))
    emit({"type": "end", "reason": "step_limit", "answer": STEP_LIMIT})
    return STEP_LIMIT


def ask(messages: list[dict], step: int, emit: Listener, estimated: int) -> openai.types.chat.ChatCompletion:
    """One model request. A malformed tool call (Groq's tool_use_failed) is asked again, a few times;
    a short rate limit (429) is waited out, visibly. Other errors propagate."""
    effort = current().reasoning_effort
    options = {"reasoning_effort": effort} if effort else {}
    malformed = waits = 0
    while True:
        emit({"type": "request", "step": step, "messages": len(messages), "estimated_tokens": estimated})
        started = time.perf_counter()
        token = RETRIES.set(lambda tries: emit({"type": "retry", "step": step, "reason": "no_answer",
                                                "attempt": tries + 1, "of": MAX_RETRIES + 1}))
        try:
            completion = chat_completion(messages, TOOLS, **options)
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
        finally:
            RETRIES.reset(token)
        usage, message = completion.usage, completion.choices[0].message
        message.content = plain_text(message.content)  # the SDK does not check it: a list, a lone surrogate
        # gpt-oss on Groq returns its reasoning as an extra field of the message: shown, never sent back.
        reasoning = getattr(message, "reasoning", None)
        emit({"type": "reply", "step": step, "seconds": round(time.perf_counter() - started, 3),
              "finish_reason": completion.choices[0].finish_reason,
              "tool_calls": len(message.tool_calls or []),
              "reasoning": reasoning if isinstance(reasoning, str) and reasoning else None,
              "usage": {"prompt_tokens": usage and usage.prompt_tokens or 0,
                        "completion_tokens": usage and usage.completion_tokens or 0}})
        return completion


def assistant_message(reply: openai.types.chat.ChatCompletionMessage) -> dict:
    """The reply as a plain dict with only the fields the API accepts back (never `reasoning`). A call the
    server sent without an id gets one, so its result answers it: a null id is refused on the next request."""
    return {"role": "assistant", "content": reply.content, "tool_calls": [
        {"id": call.id if isinstance(call.id, str) and call.id else f"call_{uuid.uuid4().hex[:24]}",
         "type": "function",
         "function": {"name": call.function.name, "arguments": json_text(call.function.arguments)}}
        for call in reply.tool_calls]}


def plain_text(content: typing.Any) -> str | None:
    """A reply's text as valid UTF-8, whatever the server sent: a list of text parts as their text, joined;
    JSON for anything else that is not a string."""
    if content is None or isinstance(content, str) and content.isascii():
        return content
    if isinstance(content, list) and all(isinstance(part, dict) and part.get("type") == "text"
                                         and isinstance(part.get("text"), str) for part in content):
        content = "".join(part["text"] for part in content)
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_text(arguments: typing.Any) -> str:
    """Arguments as the API sends them, a JSON string, even from a server that sent a JSON object."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def tool_message(call: dict, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call["id"], "content": content}


def run_tool(call: dict, approve: Approver, seen: collections.Counter, step: int, emit: Listener) -> str:
    """Execute one call, timed and reported with how it ended; the same call a third time in a run is refused
    instead. The seconds leave out the time a person took to answer the approval prompt."""
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    emit({"type": "call", "step": step, "name": name, "arguments": arguments})
    decisions: list[bool | str] = []
    waited = 0.0

    def asked(tool: str, args: dict) -> bool | str:
        nonlocal waited
        asking = time.perf_counter()
        try:
            decisions.append(approve(tool, args))
            return decisions[-1]
        finally:
            waited += time.perf_counter() - asking

    started = time.perf_counter()
    key = name, canonical(arguments)
    seen[key] += 1
    if seen[key] > REPEATS_ALLOWED:
        result = (f"error: you already called {name} with these arguments {REPEATS_ALLOWED} times in this run "
                  "and have the result above; use it, try something else, or answer")
        ended = "refused: repeated call"
    else:
        result = execute(call, asked)
        # An approver may deny with any words, so a denial is known by its decision, not by the result's text.
        ended = "denied" if decisions and decisions[-1] is not True else outcome(name, result)
    emit({"type": "tool", "step": step, "name": name, "arguments": arguments, "result": result,
          "seconds": round(time.perf_counter() - started - waited, 3), "outcome": ended,
          "error": ended.startswith(("error", "denied", "refused"))})
    return result


def outcome(name: str, result: str) -> str:
    """How a call ended, in a few words: ok, exit N, timed out after N s, stopped after N MB, denied, or the
    first line of its error, shortened."""
    first = result.split("\n", 1)[0]
    if first.startswith("error:"):
        return first if len(first) <= OUTCOME_CHARS else first[:OUTCOME_CHARS - 1] + "…"
    if first.startswith("denied"):
        return "denied"
    if name == "run_shell":  # its result opens with its status: exit code: N, timed out after..., stopped after...
        status = first.split(";", 1)[0]
        if status.startswith("exit code: "):
            code = status.removeprefix("exit code: ")
            return "ok" if code == "0" else f"exit {code}"
        if status.startswith(("timed out after ", "stopped after ")):
            return status
    return "ok"


def canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (json.JSONDecodeError, RecursionError):
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
    except RecursionError:
        return "error: the arguments are nested too deeply; send one flat JSON object, e.g. {\"path\": \"x\"}"
    if not isinstance(arguments, dict):
        return f"error: the arguments must be a JSON object, not {type(arguments).__name__}"
    problem = argument_problem(function, arguments)
    if problem:
        return f"error: {problem}; expected {name}{signature(function)}"
    try:
        seen = before_asking(name, arguments)  # a read-only file is refused before anyone is asked
        if needs_approval(name, arguments) and (decision := approve(name, arguments)) is not True:
            return denial(decision)
        with as_asked(seen):  # write_file refuses a file that changed while the person was asked
            return cap(str(function(**arguments)), name, arguments)
    except Refused as refusal:  # already worded for the model
        return cap(f"error: {refusal}", name, arguments)
    except Exception as error:
        return cap(f"error: {type(error).__name__}: {error}", name, arguments)  # a path may hold odd bytes


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
    config = current()
    shell = "cmd.exe" if sys.platform == "win32" else "/bin/sh"
    sandboxed = config.sandbox != "off" and not sandbox.available()
    return (f"You are a helpful agent working in the folder {config.workspace} on {platform.system()}. "
            f"Use the tools to look at files and run commands there (run_shell uses {shell}; commands are "
            "non-interactive, have no stdin, and are killed after a timeout). Some calls need the user's "
            "approval and may be denied. "
            + (SANDBOXED if sandboxed else "")
            + "Once you have what you need, answer without calling tools." + project_instructions())


def project_instructions() -> str:
    """The workspace's AGENTS.md under a heading, clipped to AGENTS_MD_MAX_CHARS; '' when there is none.
    Only a regular file inside the workspace is read, and only as much of it as the limit can use."""
    try:
        # A UTF-8 character is at most 4 bytes, so this many bytes always hold the characters shown.
        data, size = read_regular(confine(AGENTS_MD), AGENTS_MD_MAX_CHARS * 4)
    except (OSError, ValueError):  # none, a folder or FIFO, or a link out of the workspace
        return ""
    # One character per undecodable byte, so the bytes shown (and left out) are counted exactly.
    shown = data.decode("utf-8", "surrogateescape")[:AGENTS_MD_MAX_CHARS].encode("utf-8", "surrogateescape")
    text = shown.decode("utf-8", "replace")
    if not text.strip():
        return ""
    left_out = size - len(shown)
    cut = f"\n[AGENTS.md was cut here: {left_out:,} more bytes were left out]" if left_out > 0 else ""
    return f"\n\nProject instructions from AGENTS.md:\n{text}{cut}"


if __name__ == "__main__":
    from cli import main
    sys.exit(main())
