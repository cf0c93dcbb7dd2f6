"""Phase 1, the loop: ask the model, run each tool it asks for, append the results, until it answers
or the step limit stops it. `python harness.py "task"` runs it on the command line
(plainagent/cli/); `from harness import run` in a script. A map: docs/read-the-code.md."""

import collections
import dataclasses
import functools
import json
import os
import sys
import time
import typing
import uuid
from pathlib import Path

import backend
import tools
from plainagent.approval.gate import Approver, before_tool_call
from plainagent.approval.prompt import approval, with_the_sandbox
from plainagent.calls.arguments import ArgumentProblem, checked, parsed
from plainagent.calls.results import as_text, call_tool, canonical, cap, outcome, sendable
from plainagent.calls.schema import toolbox
from plainagent.core.awaiting import in_a_thread, synchronous
from plainagent.core.ownmodules import refuse_shadowed
from plainagent.core.redaction import redactor
from plainagent.core.settings import Settings, resolve
from plainagent.mcp.servers import served
from plainagent.model.context import Listener, Sizes, fit_to_budget, made_again, system_prompt
from plainagent.model.output import Output, output_type, structured_answer
from plainagent.model.request import as_dicts, for_request, request_options
from plainagent.model.retries import ask
from plainagent.runs.answer import Answer, Stopped, Totals
from plainagent.workspace.undo_record import next_record
from plainagent.workspace.writes import Refused

# The same tool with the same arguments; the third time the model gets an error instead
REPEATS_ALLOWED = 2
MAX_ID = 40  # the longest tool call id OpenAI takes back
STEP_LIMIT = "stopped: hit the step limit"
EMPTY_ANSWER = "stopped: the model gave an empty answer twice"
ANSWER_NEEDED = "Your last reply was empty. Answer the task now, in words."

# A person's own tools.py beside their script would be imported first
refuse_shadowed(backend, tools)


def run(
    task: str,
    *,
    tools: list[typing.Callable] | None = None,
    approve: Approver | None = None,
    on_event: Listener | None = None,
    messages: list[dict] | None = None,
    instructions: str | None = None,
    options: dict[str, typing.Any] | None = None,
    settings: Settings | None = None,
    output: typing.Any = None,
    undo: str | os.PathLike | None = None,
    **given: typing.Any,
) -> typing.Any:
    """Work on a task with the tools until the model answers; return the answer, or why it stopped:
    an Answer, a str whose .stopped tells the two apart. Each keyword argument is this run's alone
    (docs/from-a-script.md): tools= (by default tools.TOOL_FUNCTIONS); approve(name, arguments)
    decides each call of a tool marked @asks (True runs it; False, or a message for the model,
    denies it; by default a person at the terminal, a denial with none); on_event(event) sees every
    step; messages=, a conversation to continue, is extended in place; instructions= joins the
    system prompt; options= are request fields for every request; output=T returns the answer as T
    (asked for once more, without tools; a stop raises Stopped); undo=FOLDER keeps what the run
    changes there, for plainagent.workspace.undo.take_back(); the settings (workspace=, max_steps=,
    model=, ...) left out are read once, here, from their variables; settings= gives them all."""
    if settings is not None and given:  # the keywords would go unread
        raise TypeError(f"give run() settings= or {'=, '.join(given)}=, not both")
    settings = with_the_sandbox(settings or resolve(**given))
    if undo is not None:  # the run's own record, numbered past the folder's others
        settings = dataclasses.replace(settings, undo=next_record(Path(undo)))
    wanted = None if output is None else output_type(output)  # refused before any request
    with approval(settings, approve) as approver, served(settings) as with_mcp:  # phase 2, mcp/
        state = Run(task, with_mcp, approver, on_event, messages, tools, options)
        state.seed(task, instructions)
        for step in range(1, settings.max_steps + 1):
            reply = state.ask_model(step)
            if not reply.tool_calls:
                if not reply.content and state.ask_again_once():
                    continue
                if wanted and reply.content and state.finish != "length":
                    return state.structured(reply.content, wanted)
                return state.end(reply.content, state.finish, wanted)
            state.answer(assistant_message(reply))
    return state.end(None, "step_limit", wanted)


async def arun(task: str, **keywords: typing.Any) -> typing.Any:
    """run(task, **keywords), awaited: the same loop in a thread of its own, so the caller's loop
    never waits; async tools, approve= and on_event= are awaited on that loop. Cancelling the task
    stops the run as Ctrl-C does (every call answered), then raises CancelledError."""
    return await in_a_thread(run, task, keywords)


class Dispatched(typing.NamedTuple):
    """What became of one call: its result for the model, and what phase 2 made of it."""

    text: str
    decision: bool | str = True  # the approver's; True when nobody had to be asked
    waited: float = 0.0  # the seconds a person took to decide


class Run:
    """One run's state: its settings, tools, request options, history, approver and listener, its
    totals, the loop guard and the budget's sizes."""

    def __init__(
        self,
        task: str,
        settings: Settings,
        approve: Approver,
        on_event: Listener | None,
        messages: list[dict] | None,
        functions: list[typing.Callable] | None,
        options: dict[str, typing.Any] | None,
    ) -> None:
        self.settings, self.approve = settings, approve
        self.listener = synchronous(on_event or (lambda event: None))  # an async one awaited
        # Read once, here: a hint no schema can express, or a field the loop owns, stops the run now
        chosen = tools.TOOL_FUNCTIONS if functions is None else functions
        self.tools = toolbox([*chosen, *settings.mcp_tools], tools.TOOL_FUNCTIONS)
        self.schemas = [tool.schema for tool in self.tools.values()]
        self.options = request_options(options or {})
        self.redact = redactor(settings.secrets)  # a tool result never carries the key to the model
        self.history = [] if messages is None else as_dicts(messages)  # extended in place
        self.totals, self.sizes = Totals(), Sizes()
        self.seen: collections.Counter = collections.Counter()  # (tool, arguments) -> calls so far
        self.step, self.asked_again = 0, False  # asked again: after an empty reply
        self.finish: str | None = None  # the last reply's finish_reason
        where = {"workspace": str(settings.workspace), "notes": list(settings.notes)}
        self.emit({"type": "start", "task": task, "continued": bool(self.history), **where})

    def emit(self, event: dict) -> None:
        self.totals.count(event)
        self.listener(event)

    def add(self, message: dict) -> None:
        self.history.append(message)
        self.emit({"type": "message", "message": message})

    def seed(self, task: str, instructions: str | None) -> None:
        """The history's start: the system prompt (a continued conversation's made again where
        instructions= or the run's tools changed it), then the task."""
        # A folder's name may hold bytes that are not UTF-8, a task (sys.argv) too
        prompt = {
            "role": "system",
            "content": sendable(system_prompt(self.settings, instructions, self.tools)),
        }
        if not self.history:
            self.add(prompt)
        elif made_again(self.history[0], prompt, instructions):
            old = 1 if self.history[0].get("role") == "system" else 0  # a script's may have none
            self.history[:old] = [prompt]
            self.emit({"type": "system", "message": prompt})
        self.add({"role": "user", "content": sendable(task)})

    def ask_model(self, step: int, schemas: list | None = None, **fields: typing.Any) -> typing.Any:
        """The model's reply to the history at this step, kept within the context budget; schemas:
        the tools offered (the run's if None); fields: more of the request's body."""
        self.step = step
        offered = self.schemas if schemas is None else schemas
        budget = self.settings.context_budget
        estimated = fit_to_budget(self.history, budget, step, self.emit, self.sizes)
        options = for_request(self.options, bool(offered), self.totals.tool_calls > 0)
        send = functools.partial(backend.chat_completion, **options)
        completion = ask(
            send, self.history, offered, self.settings, self.emit, step, estimated, **fields
        )
        self.finish = completion.choices[0].finish_reason
        return completion.choices[0].message

    def ask_again_once(self) -> bool:
        """After the first empty reply, ask for an answer in words (True); after the second, give up
        (False)."""
        if self.asked_again:
            return False
        self.asked_again = True
        self.add({"role": "user", "content": ANSWER_NEEDED})
        return True

    def end(self, answer: str | None, finish: str | None, wanted: Output | None = None) -> Answer:
        """Record how the run ended, with its totals, and return its answer, or why it stopped
        (raised as Stopped when output= wanted an answer)."""
        if answer:
            self.add({"role": "assistant", "content": answer})
        reason = finish if finish in ("step_limit", "length") else "answer" if answer else "empty"
        text = answer or (STEP_LIMIT if reason == "step_limit" else EMPTY_ANSWER)
        totals = self.totals.now()
        self.emit({"type": "end", "reason": reason, "answer": text, **totals})
        if wanted is not None:
            raise Stopped(Answer(text, reason, totals))
        return Answer(text, reason, totals)

    def structured(self, answer: str, wanted: Output) -> typing.Any:
        """The model's answer as output= asked: once more, without tools, in the output's JSON."""
        self.add({"role": "assistant", "content": answer})
        value, text = structured_answer(
            wanted,
            self.settings,
            lambda shape: self.ask_model(self.step, [], response_format=shape).content,
            self.add,
        )
        self.emit({"type": "end", "reason": "answer", "answer": text, **self.totals.now()})
        return value

    def answer(self, turn: dict) -> None:
        """Record the assistant's turn, then one result per call, in order. Whatever stops the run
        in between (Ctrl-C, SIGTERM, an on_event= that raises), the calls not yet answered get
        "interrupted", so the history stays valid for the API and --continue."""
        self.history.append(turn)
        first = len(self.history)
        try:
            self.emit({"type": "message", "message": turn})
            for call in turn["tool_calls"]:
                self.add(tool_message(call, self.execute(call)))
        except BaseException as stop:
            interrupted = isinstance(stop, KeyboardInterrupt)  # else on_event= may have raised
            record = self.add if interrupted else self.history.append
            for call in turn["tool_calls"][len(self.history) - first :]:
                record(tool_message(call, "interrupted"))
            if interrupted:
                reason = getattr(stop, "reason", "interrupted")
                self.emit({"type": "end", "reason": reason, "answer": None, **self.totals.now()})
            raise

    def execute(self, call: dict) -> str:
        """One call's result, timed and reported with how it ended; the same call a third time in a
        run is refused instead. The seconds leave out the time a person took to answer the approval
        prompt."""
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        which = {"step": self.step, "id": call["id"], "name": name, "arguments": arguments}
        self.emit({"type": "call", **which})
        started = time.perf_counter()
        key = name, canonical(arguments)
        self.seen[key] += 1
        if self.seen[key] > REPEATS_ALLOWED:
            done = Dispatched(
                f"error: you already called {name} with these arguments {REPEATS_ALLOWED} times in "
                "this run and have the result above; use it, try something else, or answer"
            )
            ended = "refused: repeated call"
        else:
            done = self.dispatch(name, arguments)
            # An approver may deny with any words, so a denial is known by its decision, not by the
            # result's text.
            ended = "denied" if done.decision is not True else outcome(name, done.text)
        self.emit(
            {
                "type": "tool",
                **which,  # the id is the one the result answers in the history
                "result": done.text,
                "seconds": round(time.perf_counter() - started - done.waited, 3),
                "outcome": ended,
                "error": ended.startswith(("error", "denied", "refused")),
            }
        )
        return done.text

    def dispatch(self, name: str, raw: str) -> Dispatched:
        """Run one tool call. The one place failures become data: every failure comes back as text
        starting 'error:' that names the problem and what to do, for the model to act on."""
        if (tool := self.tools.get(name)) is None:
            return Dispatched(
                f"error: unknown tool {name!r}; available: {', '.join(self.tools) or 'none'}"
            )
        try:
            arguments = parsed(raw)  # phase 5: one JSON object, or what to send instead
        except ArgumentProblem as problem:
            return Dispatched(f"error: {problem}")
        try:
            values = checked(tool, arguments)  # as the hints say: an Enum's member, a dataclass
        except ArgumentProblem as problem:
            return Dispatched(f"error: {problem}; expected {name}{tool.signature}")
        decision: bool | str = True  # nobody asked, until the gate says otherwise
        waited = 0.0
        try:
            passage = before_tool_call(tool.function, arguments, self.approve, self.settings)
            decision, waited = passage.decision, passage.waited  # phase 2
            if passage.refusal is not None:
                return Dispatched(passage.refusal, decision, waited)
            text = self.for_model(as_text(call_tool(tool, values, self.settings, passage.decided)))
        except Refused as refusal:  # already worded for the model
            text = self.for_model(f"error: {refusal}")
        except Exception as error:
            # A path may hold odd bytes
            text = self.for_model(f"error: {type(error).__name__}: {error}")
        return Dispatched(text, decision, waited)

    def for_model(self, result: str) -> str:
        """A tool result as the model gets it: the key redacted (any run of 12 of its characters;
        not the key in other shapes, split or reversed, which no redactor can know), then capped."""
        return cap(self.redact(result), self.settings)


def assistant_message(reply: typing.Any) -> dict:
    """The reply as a plain dict with only the fields the API accepts back (never `reasoning`). A
    call the server sent without an id, or with one the next request could not send back (not
    printable ASCII, over OpenAI's 40 characters, or another call's), gets one of ours, so its
    result answers it."""
    ids: list[str] = []
    for call in reply.tool_calls:
        given = call.id if isinstance(call.id, str) else ""
        usable = (
            given.isascii()
            and given.isprintable()
            and 0 < len(given) <= MAX_ID
            and given not in ids
        )
        ids.append(given if usable else f"call_{uuid.uuid4().hex[:24]}")
    return {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {  # the model's text may hold a lone surrogate too
                    "name": sendable(call.function.name),
                    "arguments": sendable(json_text(call.function.arguments)),
                },
            }
            for call_id, call in zip(ids, reply.tool_calls, strict=True)
        ],
    }


def json_text(arguments: typing.Any) -> str:
    """Arguments as the API sends them, a JSON string, even from a server that sent a JSON
    object."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def tool_message(call: dict, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call["id"], "content": content}


def main() -> None:
    """`python harness.py`, and the installed command: the command line around run()."""
    # It never imports this file: run() is handed to it
    from plainagent.cli.main import main as command_line

    sys.exit(command_line(run))


if __name__ == "__main__":
    main()
