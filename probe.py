"""Phase 0: shows the raw tool call the model sends back, before any harness touches it.
Run `python probe.py` (or `python probe.py "your question"`): note that `arguments` arrives as a
JSON string."""

import json
import os
import sys

from backend import chat
from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import ConfigError, resolve
from plainagent.model.errors import BadReply, report, script_arguments, without_packages
from tools import TOOLS

QUESTION = "What files are in the current directory?"
USAGE = (
    'usage: python probe.py ["question"]: the raw reply, with the tool schemas, of the model your '
    ".env names (AGENT_BACKEND, AGENT_MODEL); python harness.py --help lists the agent's options"
)


def main(argv: list[str]) -> int:
    if (code := script_arguments(argv, USAGE, 1)) is not None:
        return code
    if missing := without_packages():  # the agent's venv not active: one line, no traceback
        print(missing, file=sys.stderr)
        return 2
    import openai

    question = argv[0] if argv else QUESTION
    settings = None
    try:
        settings = resolve()
        reply = chat([{"role": "user", "content": question}], TOOLS, settings=settings)
    except (ConfigError, BadReply, openai.OpenAIError) as error:
        return report(error, settings)
    except KeyboardInterrupt:
        return 130
    # Whatever the model wrote stays on its line, escaped, and never shows the key (as in a run)
    redact = redactor(settings.secrets)
    print("content:", shown(reply.content, redact=redact))
    print("tool_calls:", shown(reply.tool_calls, redact=redact))
    # JSON's escapes keep every control character and non-ASCII one off the terminal
    print(redact(json.dumps([call.model_dump() for call in reply.tool_calls or []], indent=2)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # `| head` stopped reading: nothing to fix, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
