"""What the model is sent, besides the conversation (beyond the tutorial): the system prompt with
the workspace's AGENTS.md, and the context budget that keeps each request under the plan's tokens
per minute."""

import json
import os
import platform
import sys
import typing

from plainagent.calls.schema import Tool
from plainagent.core.settings import Settings
from plainagent.shell.pythons import project_program
from plainagent.workspace.files import confine, read_regular

LOW_WATER = 0.6  # once a request is over the budget, it is shortened to this share of it in one go
SANDBOXED = (
    "A kernel sandbox holds: commands that run without approval can read the workspace but cannot "
    "write files or use the network (programs the user allowed may write inside the workspace, "
    "still without the network); approved commands can write only inside the workspace. "
)
FILE_TOOLS_FIRST = "Prefer the file tools for changing files. "
OPENING = "You are a helpful agent working in the folder"  # how the agent's own prompt starts
# The built-in tools' names (tools.py's), for the prompt of a run that has them all
BUILT_IN_NAMES = ("read_file", "list_dir", "write_file", "edit_file", "run_shell")
AGENTS_MD = "AGENTS.md"  # the project's instructions for agents, in the workspace
# The most of AGENTS.md the system prompt carries; it is sent on every request
AGENTS_MD_MAX_CHARS = 8000

Listener = typing.Callable[[dict], None]


def system_prompt(
    settings: Settings,
    instructions: str | None = None,
    tools: typing.Mapping[str, Tool] | None = None,
) -> str:
    """What the model is told first: where it works and with what (the run's tools, by name, or
    None for the built-ins: the shell, its sandbox, the approvals), a script's own instructions
    (run()'s instructions=), then the workspace's AGENTS.md."""
    names = list(BUILT_IN_NAMES if tools is None else tools)
    # A tool marked @asks carries the mark as its attribute `asks` (approval/gate.py)
    asking = tools is None or any(getattr(tool.function, "asks", None) for tool in tools.values())
    text = f"{OPENING} {settings.workspace} on {platform.system()}. "
    if "run_shell" in names:
        shell = "cmd.exe" if sys.platform == "win32" else "/bin/sh"
        text += (
            f"Use the tools to look at files and run commands there (run_shell uses {shell}; "
            "commands are non-interactive, have no stdin, and are killed after a timeout). "
        )
        # The project's venv, which an approved command finds first (and python --version answers)
        if python := project_program("python", settings.workspace, os.environ):
            text += f"Their python is {python}. "
    elif names:
        text += f"Use your tools ({', '.join(names)}) where they help. "
    else:
        text += "You have no tools here: answer from what you know and what the user tells you."
    if asking:
        text += "Some calls need the user's approval and may be denied. "
    if "run_shell" in names and settings.confined:
        text += SANDBOXED
        text += FILE_TOOLS_FIRST if {"write_file", "edit_file"} & set(names) else ""
    if names:
        text += "Once you have what you need, answer without calling tools."
    return text + (f"\n\n{instructions}" if instructions else "") + project_instructions(settings)


def made_again(old: dict, prompt: dict, instructions: str | None) -> bool:
    """Whether a continued conversation gets the run's system prompt in place of its first message:
    the script gave instructions= it does not hold, or it is the agent's own prompt describing
    another run (other tools, another folder). A workspace's AGENTS.md changed since is not enough:
    the old prompt keeps the server's prompt cache; and a script's own system message stays."""
    if old == prompt:
        return False
    if instructions is not None:
        return True
    content = old.get("content") if old.get("role") == "system" else None
    if not isinstance(content, str) or not content.startswith(OPENING):
        return False
    return content.split("\n\n", 1)[0] != prompt["content"].split("\n\n", 1)[0]


def project_instructions(settings: Settings) -> str:
    """The workspace's AGENTS.md under a heading, clipped to AGENTS_MD_MAX_CHARS; '' when there is
    none. Only a regular file inside the workspace is read, and only as much of it as the limit can
    use."""
    try:
        # A UTF-8 character is at most 4 bytes, so this many bytes always hold the characters shown.
        data, size = read_regular(confine(AGENTS_MD, settings), settings, AGENTS_MD_MAX_CHARS * 4)
    except (OSError, ValueError):  # none, a folder or FIFO, or a link out of the workspace
        return ""
    # One character per undecodable byte, so the bytes shown (and left out) are counted exactly.
    shown = data.decode("utf-8", "surrogateescape")[:AGENTS_MD_MAX_CHARS].encode(
        "utf-8", "surrogateescape"
    )
    text = shown.decode("utf-8", "replace")
    if not text.strip():
        return ""
    left_out = size - len(shown)
    cut = (
        f"\n[AGENTS.md was cut here: {left_out:,} more bytes were left out]" if left_out > 0 else ""
    )
    return f"\n\nProject instructions from AGENTS.md:\n{text}{cut}"


def compact(value: typing.Any) -> str:
    """JSON as the SDK sends it: no spaces, non-ASCII as it is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Sizes:
    """Each message's length in compact JSON, measured once, so keeping to the budget costs a step
    only what is new in it. `tokens` estimates the whole list's: its compact JSON / 4, so roles, ids
    and calls count too."""

    def __init__(self) -> None:
        self.each: list[int] = []
        # Turns dropped in this run, so later stubs still name the right step
        self.dropped_turns = 0
        self.warned = False  # said once that nothing more could be shortened

    @property
    def tokens(self) -> int:
        # "[", ",", "]" count too
        return (sum(self.each) + len(self.each) + 1 if self.each else 2) // 4

    def measure(self, messages: list[dict]) -> int:
        """Measure the messages added since the last call; return the estimate for the whole
        list."""
        self.each += [len(compact(message)) for message in messages[len(self.each) :]]
        return self.tokens


def fit_to_budget(
    messages: list[dict], budget: int, step: int, emit: Listener, sizes: Sizes | None = None
) -> int:
    """Keep the request within the budget; return its estimated tokens.

    Groq caches the longest prefix a request shares with the one before, and cached tokens do not
    count against the free plan's tokens per minute. So nothing changes while the request fits, and
    once it does not, it is shortened in one go to LOW_WATER of the budget, after which the next
    steps only append. Oldest first, tool results become one-line stubs; if that is not enough,
    whole old turns (a call and its results) go. The system prompt, the user's messages and the
    newest turn are never touched.
    """
    sizes = sizes or Sizes()  # a run passes its own, kept from step to step
    if sizes.measure(messages) <= budget:
        return sizes.tokens
    target = int(budget * LOW_WATER)
    newest_turn = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("tool_calls")), 0
    )
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
            messages[i] = {**message, "content": stub}
            sizes.each[i] = len(compact(messages[i]))
            emit(
                {
                    "type": "elided",
                    "step": step,
                    "index": i,
                    "characters": len(content),
                    "content": stub,
                    "budget": budget,
                }
            )
    while sizes.tokens > target and (old := oldest_turn(messages, newest_turn)):
        start, stop = old
        del messages[start:stop], sizes.each[start:stop]
        sizes.dropped_turns += 1
        newest_turn -= stop - start
        emit(
            {
                "type": "dropped",
                "step": step,
                "index": start,
                "count": stop - start,
                "budget": budget,
            }
        )
    if sizes.tokens > budget and not sizes.warned:
        sizes.warned = True
        emit(
            {
                "type": "over_budget",
                "step": step,
                "estimated_tokens": sizes.tokens,
                "budget": budget,
            }
        )
    return sizes.tokens


def oldest_turn(messages: list[dict], newest_turn: int) -> tuple[int, int] | None:
    """Where the oldest turn before the newest one starts and stops: a call and the results that
    follow it."""
    start = next((i for i in range(newest_turn) if messages[i].get("tool_calls")), None)
    if start is None:
        return None
    return start, next(
        i for i in range(start + 1, newest_turn + 1) if messages[i]["role"] != "tool"
    )
