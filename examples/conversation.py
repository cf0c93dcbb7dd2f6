"""A conversation saved and continued: run() extends the list passed as messages= with every message
of the run, and that list, saved as JSON, is the whole conversation; the next question continues it.

    python examples/conversation.py "What does this project do?"
    python examples/conversation.py "And how is it tested?"
    python examples/conversation.py --new "Start over: what is in docs/?"
"""

import json
import os
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # the agent's folder, after yours
from plainagent import run  # noqa: E402

SAVED = Path(os.environ.get("CONVERSATION", "conversation.json"))


def main(words: list[str]) -> None:
    if words[:1] == ["--new"]:
        SAVED.unlink(missing_ok=True)
        words = words[1:]
    history = json.loads(SAVED.read_text(encoding="utf-8")) if SAVED.exists() else []
    print(run(" ".join(words), messages=history, max_steps=8))
    # Whole or not at all: written beside it, then put in its place
    SAVED.with_suffix(".tmp").write_text(json.dumps(history, indent=1), encoding="utf-8")
    SAVED.with_suffix(".tmp").replace(SAVED)


if __name__ == "__main__":
    main(sys.argv[1:])
