"""The command line's flags (beyond the tutorial): one for each setting in settings.TABLE that
has one, then the command line's own; --help ends with the settings that have none. An old flag's
name still works, and says what it is called now."""

import argparse
import contextlib
import difflib
import importlib.metadata
import os
import re
import sys
import typing

from plainagent.core import settings as agent_settings
from plainagent.core.ownfiles import AGENT_FOLDER, installed
from plainagent.core.settings import (
    BY_NAME,
    TABLE,
    Setting,
    approval,
    backend,
    folder,
    programs,
    switch,
)
from plainagent.core.values import word

CLOSE_FLAG = 0.75  # how alike an unknown flag must be to one of ours to be named as a misspelling
# Flags renamed, each with the note shown when the old name is used (it still works).
RENAMED = {
    "--timeout": "note: --timeout is now --shell-timeout (seconds a shell command may run); "
    "AGENT_TIMEOUT is the model's timeout"
}


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The arguments, parsed; args.notes says what each old flag's name used is now."""
    unflagged = "\n".join(
        f"  {setting.variable}: {setting.help} (default {default_text(setting)})"
        for setting in TABLE
        if not setting.flag
    )
    parser = OneLineParser(
        description="Run the agent on a task in the current folder.",
        # the agent's own .env, never the workspace's
        epilog="settings without a flag (set them in the environment or in "
        f"{agent_settings.DOTENV}):\n{unflagged}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(notes=[])
    parser.add_argument(
        "--version", action=Version, nargs=0, help="print the agent's version and exit"
    )
    parser.add_argument(
        "task",
        nargs="?",
        help="what you want the agent to do, in quotes; without it, at a "
        "terminal, a session: type one task a line, each continuing the conversation",
    )
    for setting in TABLE:
        about = f"{setting.help} (default {default_text(setting)}, {setting.variable})"
        if setting.parse is approval:
            assert setting.flag is not None  # --yes
            parser.add_argument(
                setting.flag, dest=setting.name, action="store_const", const=True, help=about
            )
        elif setting.parse is switch:  # --stream and --no-stream
            assert setting.flag is not None
            parser.add_argument(
                setting.flag, dest=setting.name, action=argparse.BooleanOptionalAction, help=about
            )
        elif (choices := getattr(setting.parse, "choices", None)) and setting.parse is not backend:
            assert setting.flag is not None  # every setting with choices has a flag
            parser.add_argument(
                setting.flag, dest=setting.name, type=word, choices=choices, help=about
            )
        elif setting.flag:
            # A folder is checked in resolve(), which words the error in one line like every other
            # setting's.
            kind = (
                str if setting.parse in (folder, backend, programs) else flag_value(setting.parse)
            )
            flag, *old_names = setting.flag.split()
            options: dict[str, typing.Any] = {
                "dest": setting.name,
                "type": kind,
                "metavar": getattr(setting.parse, "metavar", setting.name.upper()),
            }
            parser.add_argument(flag, help=about, **options)
            for name in old_names:  # still works, not listed
                parser.add_argument(name, action=Renamed, help=argparse.SUPPRESS, **options)
    parser.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the conversation of this workspace's newest run (or of --run N, or the "
        "--transcript one) with the task as a follow-up",
    )
    parser.add_argument(
        "--transcript",
        metavar="PATH",
        type=os.path.expanduser,  # --transcript=~/x, which no shell expands: not a folder named ~
        help="the transcript to write (default: a new file in this workspace's folder of your "
        "state folder, named by time and task; --runs says where)",
    )
    parser.add_argument("--no-transcript", action="store_true", help="write no transcript")
    parser.add_argument(
        "--undo",
        action="store_true",
        help="take back the file changes of this workspace's newest run (or of --run N, or the "
        "--transcript one): what write_file, edit_file and approved commands changed in the "
        "workspace is put back, files they created are removed, a file changed since is left "
        "alone; .git is git's to undo",
    )
    parser.add_argument(
        "--runs",
        dest="list_runs",
        action="store_true",
        help="list this workspace's runs, newest first: number, start time, whether they changed "
        "files, task",
    )
    parser.add_argument(
        "--forget-runs",
        metavar="DAYS",
        type=flag_value(days),
        help="remove this workspace's runs (transcripts and undo data) that started more than DAYS "
        "days ago from your state folder; 0: every one; a run still going is kept",
    )
    parser.add_argument(
        "--moved-from",
        metavar="DIR",
        help="with --runs, --continue, --undo or --forget-runs: take the runs of DIR, where this "
        "workspace was before it moved; --undo then puts back its files here",
    )
    parser.add_argument(
        "--run",
        metavar="N",
        type=flag_value(run_number),
        help="with --continue or --undo: take run N of the --runs list instead of the newest",
    )
    parser.add_argument(
        "--show-reasoning",
        action="store_true",
        help="print the model's reasoning for each step on stderr, each line marked 'thinking:'",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress lines and no summary; only the answer"
    )
    parser.add_argument(
        "--output-schema",
        metavar="FILE",
        type=os.path.expanduser,
        help="the answer as JSON that fits the JSON Schema in FILE (an object), alone on stdout "
        "in one line, for jq and other programs",
    )
    parser.add_argument(
        "--mcp-list",
        action="store_true",
        help="start the MCP servers (mcp.json beside the .env, or --mcp FILE), list their tools "
        "with their server, and stop them (docs/mcp.md)",
    )
    args = parser.parse_args(argv)
    check_run_flags(parser, args)
    # A session needs stdin to type tasks and stderr to show the prompt at a terminal.
    if (
        args.task is None
        and not args.undo
        and not args.list_runs
        and args.forget_runs is None
        and not args.mcp_list
        and not all(s is not None and s.isatty() for s in (sys.stdin, sys.stderr))
    ):
        parser.error(
            '--continue needs the follow-up in quotes (--continue "and now?"), or start it at a '
            "terminal for a session"
            if args.continue_
            else "the following arguments are required: task (or start it at a terminal for a "
            "session)"
        )
    return args


def check_run_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse flags that do not go together: --undo and --runs do one thing each, and a run is named
    one way."""
    if args.task is not None and not args.task.strip():  # "$TASK" unset: a request for nothing
        parser.error(
            'the task is empty: put what you want done in quotes ("fix the tests"), or give no '
            "task at a terminal for a session"
        )
    if args.undo and (args.task is not None or args.continue_ or args.no_transcript):
        parser.error(
            "--undo takes no task, --continue or --no-transcript (only --run N or "
            "--transcript PATH)"
        )
    if args.list_runs and (
        args.task is not None
        or args.continue_
        or args.undo
        or args.run is not None
        or args.transcript
        or args.no_transcript
    ):
        parser.error("--runs takes no task and no other flag of a run; it only lists them")
    forgetting = args.forget_runs is not None
    if forgetting and (
        args.task is not None
        or args.continue_
        or args.undo
        or args.list_runs
        or args.run is not None
        or args.transcript
        or args.no_transcript
    ):
        parser.error("--forget-runs takes no task and no other flag of a run; it only removes them")
    if args.moved_from is not None and not (
        args.list_runs or args.continue_ or args.undo or forgetting
    ):
        parser.error("--moved-from DIR goes with --runs, --continue, --undo or --forget-runs")
    if args.moved_from is not None and args.transcript:
        parser.error("--moved-from DIR and --transcript PATH both say where the run is; give one")
    if args.output_schema is not None and (args.undo or args.list_runs or forgetting):
        parser.error(
            "--output-schema goes with a task; --undo, --runs and --forget-runs give no answer"
        )
    if args.run is not None and not (args.continue_ or args.undo):
        parser.error("--run N goes with --continue or --undo (--runs lists the runs)")
    if args.run is not None and args.transcript:
        parser.error("--run N and --transcript PATH both name a run; give one")


def run_number(text: str) -> int:
    """--run's N: a run's number in the --runs list."""
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"expected a run's number from the --runs list (1, 2, ...), got {text!r}")
    return int(text)


def days(text: str) -> float:
    """--forget-runs's DAYS: a number of days, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ValueError(f"expected a number of days (0, 30, 0.5, ...), got {text!r}")
    return value


def version() -> str:
    """The agent's version: an installed copy's from its package's metadata, a clone's from its
    pyproject.toml (which a git pull changes, and an editable install's metadata does not)."""
    if installed():
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version("plainagent")
    with contextlib.suppress(OSError):
        project = (AGENT_FOLDER / "pyproject.toml").read_text(encoding="utf-8")
        if found := re.search(r'^version\s*=\s*"([^"]+)"', project, re.M):
            return found[1]
    return "unknown"


class Version(argparse.Action):
    """--version: the version on stdout, and nothing else done."""

    def __call__(self, parser: argparse.ArgumentParser, *ignored: typing.Any) -> None:
        print(f"plainagent {version()}")
        parser.exit(0)


class OneLineParser(argparse.ArgumentParser):
    """A usage error as one line, like every other error (argparse would print its usage block
    first), saying what to type: the flag a mistyped one is close to, quotes around a task of
    several words, the value a flag needs."""

    def parse_args(  # type: ignore[override]  # typeshed overloads it for any namespace type
        self, args: typing.Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        parsed, extra = self.parse_known_args(args, namespace)
        if flag := next((word for word in extra if word.startswith("-") and word != "-"), None):
            name = flag.split("=", 1)[0]
            ours = [o for o in self._option_string_actions if o.startswith("--")]
            close = difflib.get_close_matches(name, ours, n=1, cutoff=CLOSE_FLAG)
            self.error(f"unknown flag {name}" + (f" (did you mean {close[0]}?)" if close else ""))
        if extra:  # words after the task: a task of several words, not in quotes
            words = " ".join([*([parsed.task] if parsed.task else []), *extra])
            self.error(f'the task is one argument: put it in quotes, "{words}"')
        return parsed

    def error(self, message: str) -> typing.NoReturn:
        # As the person started it: the installed command, else `python harness.py`
        command = "plainagent" if self.prog.split(".")[0] == "plainagent" else "python harness.py"
        if missing := re.fullmatch(r"argument (\S+?)(?:/\S+)?: expected one argument", message):
            flag = missing[1]
            metavar = self._option_string_actions[flag].metavar or "VALUE"
            message = f"{flag} needs a value: {flag} {metavar}"
        self.exit(2, f"error: {message}; see {command} --help\n")


class Renamed(argparse.Action):
    """An old name of a flag: it still sets the setting, and adds to args.notes what the flag is
    called now."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: typing.Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        flag = BY_NAME[self.dest].flag
        assert flag is not None  # only a flag's old names are Renamed
        note = RENAMED.get(option_string or "", f"note: {option_string} is now {flag.split()[0]}")
        if note not in namespace.notes:
            namespace.notes.append(note)


def default_text(setting: Setting) -> str:
    """A setting's default as --help names it."""
    return setting.default_text or (
        f"{setting.default:g}" if isinstance(setting.default, float) else str(setting.default)
    )


def flag_value(parse: typing.Callable[[str], typing.Any]) -> typing.Callable[[str], typing.Any]:
    """A setting's own parser as an argparse type: its words become argparse's one-line usage
    error."""

    def value(text: str) -> typing.Any:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return value
