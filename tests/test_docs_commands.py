"""Every command line the README and the manual show that needs no model (`--help`, `--version`,
`--runs`, `--undo`, `--forget-runs`, ...) runs as written, offline, in a workspace with a run behind
it: it is a command the program takes (no usage error), and it ends in its one line or its list,
never a traceback."""

import re
import shlex

from fake_model import answer, calls
from helpers import ROOT, run_script

from plainagent.cli import flags

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND = re.compile(r"^(?:\$ )?(python harness\.py|plainagent)((?: [^`|]*)?)$")
# Words the pages write for a value of the reader's own, and what stands for each here
PLACEHOLDERS = {"N": "1", "DAYS": "30", "SECONDS": "5"}
ALWAYS_ZERO = {"--help", "--version", "--runs", "--forget-runs"}


def shown_commands() -> dict[str, list[str]]:
    """Each command line the pages show (in inline code, or a line of a code block), by its text:
    the arguments after `python harness.py` or `plainagent`."""
    found = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
        prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE).replace("\n", " ")
        pieces = re.findall(r"`([^`]+)`", prose) + "\n".join(blocks).splitlines()
        for piece in pieces:
            if (match := COMMAND.match(piece.strip())) is None:
                continue
            try:
                found[match[0]] = shlex.split(match[2])
            except ValueError:  # an unfinished quote: part of a sentence, not a command
                continue
    return found


def runnable(args: list[str], workspace) -> list[str] | None:
    """The arguments as they run here, placeholders filled in; None for a command that needs a model
    (a task, --continue, a session) or names a file of the reader's own."""
    filled = [PLACEHOLDERS.get(word, str(workspace) if word == "DIR" else word) for word in args]
    if not filled or any("…" in word or word in ("PATH", "FILE") for word in filled):
        return None  # a session, or a file of the reader's
    if {"--help", "--version"} & set(filled):
        return filled
    try:
        parsed = flags.parse_arguments(filled)
    except SystemExit:
        try:  # --continue with no task starts a session at a terminal (a model's)
            flags.parse_arguments([*filled, "a typed task"])
        except SystemExit:  # a usage error: caught when it runs
            return filled
        return None
    if (
        parsed.task is not None
        or parsed.continue_
        or not (parsed.undo or parsed.list_runs or parsed.forget_runs is not None)
    ):
        return None
    return filled


def test_every_command_the_docs_show_that_needs_no_model_runs_as_written(model, cli, tmp_path):
    model.queue(calls(("write_file", {"path": "notes.txt", "content": "one\n"})), answer("wrote"))
    assert cli("--yes", "write the notes").returncode == 0
    ran = set()

    for text, args in sorted(shown_commands().items()):
        filled = runnable(args, tmp_path)
        if filled is None:
            continue
        result = run_script("harness.py", *filled, cwd=tmp_path)

        said = f"{text!r} ran as {filled}: exit {result.returncode}\n{result.stderr}"
        assert "Traceback" not in result.stderr, said
        assert "--help\n" not in result.stderr, (
            said
        )  # a usage error: the page shows a command it refuses
        assert result.returncode in (0, 1, 2), said
        if ALWAYS_ZERO & set(filled) and not {"--undo"} & set(filled):
            assert result.returncode == 0, said
        ran.add(filled[0] if filled else "")

    assert {"--help", "--version", "--runs", "--undo", "--forget-runs"} <= ran, ran
