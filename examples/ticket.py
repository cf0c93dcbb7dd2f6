"""A ticket tool: the agent looks into a bug report in the project it is started in, with its tools,
then answers as a Ticket (run's output=), which is printed as one line of JSON.

    python examples/ticket.py "Saving a file whose name has a space in it crashes the editor"
"""

import dataclasses
import json
import sys
from pathlib import Path
from typing import Literal

sys.path.append(str(Path(__file__).resolve().parent.parent))  # the agent's folder, after yours
from plainagent import OutputError, Stopped, run  # noqa: E402


@dataclasses.dataclass
class Ticket:
    title: str
    severity: Literal["low", "medium", "high"]
    files: list[str]  # where the bug most likely is
    steps_to_reproduce: list[str]
    suspected_cause: str | None = None


def main(report: str) -> int:
    task = f"Find where this bug is in the project, then file a ticket for it. The report: {report}"
    try:
        ticket = run(task, output=Ticket, max_steps=8)
    except (Stopped, OutputError) as error:  # the step limit, or an answer that never fit
        print(f"no ticket: {error}", file=sys.stderr)
        return 1
    print(json.dumps(dataclasses.asdict(ticket)))
    return 0


if __name__ == "__main__":
    sys.exit(main(" ".join(sys.argv[1:]) or sys.stdin.read()))
