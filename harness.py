"""The agent loop: ask the model, run the tools it asks for, send the results back, until it answers.
Run `python harness.py "task"` on the command line, or `from harness import run` in a script."""

import argparse
import inspect
import json
import os
import platform
import sys
import typing

import openai

from backend import ConfigError, chat, report
from safety import APPROVE_ALL, Approver, default_approver, denial, needs_approval, workspace
from tools import JSON_TYPES, REGISTRY, TOOLS, cap

MAX_STEPS = 10  # model requests in one run (--max-steps, AGENT_MAX_STEPS)
TOOL_USE_ATTEMPTS = 3  # tries in all when Groq says the model wrote a malformed tool call
STEP_LIMIT = "stopped: hit the step limit"


def run(task: str, *, max_steps: int = MAX_STEPS, backend: str | None = None, model: str | None = None,
        approve: Approver | None = None, on_event: typing.Callable[[dict], None] | None = None) -> str:
    """Work on a task with the tools until the model answers; return the answer (or STEP_LIMIT).

    approve(name, arguments) decides each call that needs approval: True runs it; False, or a message
    for the model, denies it. By default: ask at the terminal, deny when there is none.
    """
    emit = on_event or (lambda event: None)
    approve = approve or default_approver()
    messages = [{"role": "system", "content": system_prompt()}, {"role": "user", "content": task}]
    for step in range(1, max_steps + 1):
        reply = ask(messages, backend, model)
        if not reply.tool_calls:
            return reply.content or ""
        messages.append(assistant_message(reply))
        for call in messages[-1]["tool_calls"]:
            emit({"type": "tool", "step": step, "name": call["function"]["name"],
                  "arguments": call["function"]["arguments"]})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": execute(call, approve)})
    return STEP_LIMIT


def ask(messages: list[dict], backend: str | None, model: str | None) -> openai.types.chat.ChatCompletionMessage:
    """One model request; a malformed tool call (Groq's tool_use_failed) is asked again, a few times."""
    options = {"model": model} if model else {}
    for attempt in range(1, TOOL_USE_ATTEMPTS + 1):
        try:
            return chat(messages, TOOLS, backend, **options)
        except openai.BadRequestError as error:
            if error.code != "tool_use_failed" or attempt == TOOL_USE_ATTEMPTS:
                raise


def assistant_message(reply: openai.types.chat.ChatCompletionMessage) -> dict:
    """The reply as a plain dict with only the fields the API accepts back (never `reasoning`)."""
    return {"role": "assistant", "content": reply.content, "tool_calls": [
        {"id": call.id, "type": "function",
         "function": {"name": call.function.name, "arguments": call.function.arguments}}
        for call in reply.tool_calls]}


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
    parser = argparse.ArgumentParser(description="Run the agent on a task in the current folder.")
    parser.add_argument("task", help="what you want the agent to do, in quotes")
    parser.add_argument("--max-steps", type=int, default=int(os.environ.get("AGENT_MAX_STEPS") or MAX_STEPS),
                        help=f"most model requests in one run (default {MAX_STEPS}, AGENT_MAX_STEPS)")
    parser.add_argument("--backend", help="groq, openai or ollama (default groq, AGENT_BACKEND)")
    parser.add_argument("--model", help="the model name (default: the backend's, AGENT_MODEL)")
    parser.add_argument("--workspace", metavar="DIR", help="the folder the agent may work in "
                        "(default: the current folder, AGENT_WORKSPACE)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="seconds before a shell command is "
                        "killed (default 30, AGENT_SHELL_TIMEOUT)")
    parser.add_argument("--yes", action="store_true", help="approve every command and write without asking "
                        "(AGENT_APPROVE=all); only for a folder and task you trust")
    args = parser.parse_args(argv)
    # The flags are the same settings as the variables; the tools read them from there.
    for variable, value in (("AGENT_WORKSPACE", args.workspace), ("AGENT_SHELL_TIMEOUT", args.timeout),
                            ("AGENT_APPROVE", APPROVE_ALL if args.yes else None)):
        if value is not None:
            os.environ[variable] = str(value)
    if not os.path.isdir(workspace()):
        print(f"error: the workspace {workspace()} is not a folder; check --workspace or AGENT_WORKSPACE",
              file=sys.stderr)
        return 2
    progress = lambda event: print(f"[{event['step']}] {event['name']} {event['arguments']}", file=sys.stderr)
    try:
        answer = run(args.task, max_steps=args.max_steps, backend=args.backend, model=args.model, on_event=progress)
    except (ConfigError, openai.OpenAIError) as error:
        return report(error, args.backend)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(answer)
    return 1 if answer == STEP_LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
