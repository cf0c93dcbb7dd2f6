"""One question asked of several projects at once with arun(): at most AT_ONCE runs at a time,
each given SECONDS before it is cancelled (which stops it as Ctrl-C would, its command killed).

    python examples/fan_out.py "Which test framework does this project use?" ../api ../web ../cli
"""

import asyncio
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # the agent's folder, after yours
from plainagent import arun  # noqa: E402

AT_ONCE = 4
SECONDS = 300


async def ask(question: str, folder: str, slots: asyncio.Semaphore) -> str:
    async with slots:
        try:
            return await asyncio.wait_for(arun(question, workspace=folder, max_steps=6), SECONDS)
        except asyncio.TimeoutError:
            return f"(no answer within {SECONDS} s)"


async def main(question: str, folders: list[str]) -> None:
    slots = asyncio.Semaphore(AT_ONCE)
    answers = await asyncio.gather(*(ask(question, folder, slots) for folder in folders))
    for folder, answer in zip(folders, answers, strict=True):
        print(f"{folder}: {answer}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:] or ["."]))
