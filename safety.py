"""What the agent may do without asking: the workspace its file tools are confined to, the allowlist of
read-only shell commands, and the approval prompt for everything else.
The harness asks needs_approval() before each tool call and, if so, asks the run's approver."""

import difflib
import itertools
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import typing
from pathlib import Path

from settings import DOTENV, current, redactor

# The allowlist: each program that only reads, with the options it may take without asking, spelled the way
# getopt does. Short: a letter alone is a flag, "x:" takes a value, "x/" takes a path, "x?" an optional glued
# value. Long (space-separated): "name" a flag, "name=" a value, "name=/" a path, "name?" an optional =value.
# Left out on purpose: options that write files, follow symlinks, never end, or read a list of more files.
LS = ("aAbBcCdfFghiklmnNopqQrRsStuUvxZ1w:T:I:", "all almost-all author escape block-size= ignore-backups "
      "classify color? directory dired full-time group-directories-first no-group human-readable si hide= "
      "indicator-style= inode ignore= kibibytes literal numeric-uid-gid hide-control-chars show-control-chars "
      "quote-name quoting-style= reverse recursive size sort= time= time-style= tabsize= width= context zero")
HEAD = ("c:n:qvz0123456789", "bytes= lines= quiet silent verbose zero-terminated")
DIFF = ("pusRwbWzM?C?B?U?S:G:", "patch no-patch stat? shortstat numstat name-only name-status summary raw "
        "patch-with-stat color? no-color word-diff? color-words? unified? ignore-all-space ignore-space-change "
        "ignore-blank-lines ignore-space-at-eol minimal patience histogram find-renames? find-copies? no-renames "
        "diff-filter= relative? abbrev? full-index binary function-context exit-code quiet check src-prefix= "
        "dst-prefix= no-prefix no-ext-diff no-textconv dirstat? compact-summary pickaxe-regex pickaxe-all")
LOG = (DIFF[0] + "n:iEF0123456789", DIFF[1] + " oneline graph decorate? no-decorate all branches? tags? remotes? "
       "abbrev-commit no-abbrev-commit reverse first-parent no-merges merges max-count= skip= since= until= after= "
       "before= author= committer= grep= date= pretty? format= follow full-diff relative-date full-history "
       "topo-order date-order cherry-pick left-right boundary ancestry-path simplify-by-decoration invert-grep "
       "regexp-ignore-case extended-regexp fixed-strings basic-regexp all-match log-size source mailmap no-mailmap")
PROGRAMS: dict[str, tuple[str, str]] = {
    "ls": LS, "dir": LS, "type": ("", ""), "pwd": ("LP", ""), "which": ("a", ""),
    "cat": ("AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting"),
    "head": HEAD, "tail": HEAD,
    "wc": ("clmwL", "bytes chars lines words max-line-length total="),
    "grep": ("EFGPiywxvcLloqsbHhnTZzUraIe:f/m:A:B:C:d:D:", "extended-regexp fixed-strings basic-regexp "
             "perl-regexp regexp= file=/ ignore-case no-ignore-case word-regexp line-regexp null-data no-messages "
             "invert-match max-count= byte-offset line-number with-filename no-filename label= only-matching quiet "
             "silent binary-files= text directories= devices= recursive include= exclude= exclude-from=/ "
             "exclude-dir= files-without-match files-with-matches count initial-tab null before-context= "
             "after-context= context= color? colour?"),
    "file": ("bcEhiknNrsv0e:F:P:", "brief exclude= exclude-quiet= extension mime mime-type mime-encoding "
             "keep-going raw no-pad no-buffer print0 separator= special-files no-dereference"),
    "stat": ("tfc:", "file-system format= printf= terse cached="),
    "du": ("0abchklmsSxPd:B:t:X/", "null all apparent-size block-size= bytes total max-depth= human-readable "
           "inodes si summarize separate-dirs threshold= time? time-style= exclude= exclude-from=/ "
           "one-file-system no-dereference count-links"),
    "tree": ("adfFgpsuDhQNiACSvrtcUxqJXL:P:I:", "noreport charset= filelimit= dirsfirst sort= du prune matchdirs "
             "ignore-case timefmt="),
    "echo": ("", ""), "find": ("", ""), "git": ("", ""), "python": ("", ""), "python3": ("", ""), "py": ("", ""),
}
# find's expression, in the same notation (each primary is a "long" option spelled with one dash).
FIND = ("", "name= iname= path= ipath= wholename= iwholename= regex= iregex= regextype= type= xtype= maxdepth= "
        "mindepth= size= mtime= mmin= atime= amin= ctime= cmin= newer=/ anewer=/ cnewer=/ samefile=/ perm= user= "
        "group= uid= gid= links= inum= empty print print0 printf= ls prune quit true false depth xdev mount "
        "noleaf readable writable executable nouser nogroup daystart not a o and or")
GIT = {"status": ("sbzu?", "short branch porcelain? long show-stash ahead-behind no-ahead-behind untracked-files? "
                  "ignored? column? no-column renames no-renames find-renames? null"),
       "diff": (DIFF[0], DIFF[1] + " cached staged merge-base"), "log": LOG, "show": LOG,
       "branch": ("arvl", "all remotes verbose list show-current contains? no-contains? merged? no-merged? sort= "
                  "color? no-color column? no-column points-at= ignore-case abbrev? no-abbrev")}
COUNTED = ("-c", "-n", "--bytes", "--lines")  # head and tail read their values as counts, or as more options
COUNT = re.compile(r"-?\d+(?:[bkKMGTPE]i?B?)?")
GIT_FORMATS = {"", "oneline", "short", "medium", "full", "fuller", "reference", "email", "raw"}
# Inserted after the subcommand by prepare(): a repository's diff drivers, textconv and submodules run nothing.
GIT_SAFE_FLAGS = {"status": ["--ignore-submodules=all"], "diff": ["--no-ext-diff", "--no-textconv",
                  "--ignore-submodules=all"], "log": ["--no-ext-diff", "--no-textconv"],
                  "show": ["--no-ext-diff", "--no-textconv"]}
# Command-line-scope git config (beats the repository's own): nothing in .git/config may start a program.
GIT_CONFIG = {"core.fsmonitor": "false", "core.pager": "cat", "diff.submodule": "short",
              "status.submoduleSummary": "false", "log.showSignature": "false", "safe.bareRepository": "explicit",
              "diff.ignoreSubmodules": "all", "format.pretty": "medium", "protocol.allow": "never",
              "core.sshCommand": "false", "core.askPass": "false", "core.hooksPath": "/dev/null",
              "diff.autoRefreshIndex": "false",
              "gpg.program": "false", "gpg.ssh.program": "false", "gpg.x509.program": "false"}
# And in the environment, which beats any config: no transport (so no lazy fetch of a partial clone's objects).
GIT_ENVIRONMENT = {"GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1",
                   "GIT_ALLOW_PROTOCOL": "none", "GIT_SSH_COMMAND": "false", "GIT_ASKPASS": "false"}
SHELL_WORDS = {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in",
               "function", "select", "time", "coproc", "{", "}", "!", "[[", "]]"}
SEPARATORS = ("&&", "||", ";", "|", "\n")
WINDOWS = sys.platform == "win32"
# Unquoted, a word may hold letters, digits and these. cmd.exe splits words on , = and ; and escapes with ^.
PLAIN = "_./\\:@+-" if WINDOWS else "_./:@+=,-^"
QUOTES = '"' if WINDOWS else "'\""
NOT_IN_DOUBLE_QUOTES = "%!\\" if WINDOWS else "$`\\!"
ALWAYS_ASK = {"write_file", "edit_file"}
DISCARDED = "note: discarded input typed before this question"

Approver = typing.Callable[[str, dict], "bool | str"]


def workspace() -> Path:
    """The folder this run works in (the workspace setting: --workspace, AGENT_WORKSPACE, else the working folder)."""
    return current().workspace


def confine(path: str) -> Path:
    """Resolve a path against the workspace; refuse one that ends up outside it (.., absolute, symlink), and the
    agent's own .env, which holds its keys, even when the workspace is the agent's folder."""
    root = workspace()
    resolved = (root / Path(path).expanduser()).resolve()
    if resolved != root and root not in resolved.parents:
        raise PermissionError(f"{path} is outside the workspace {root}; use a path inside it")
    if resolved == DOTENV or same_file(resolved, DOTENV):  # another name for it (a hard link) too
        raise PermissionError(f"{path} holds the agent's own API keys; no tool reads or writes it")
    return resolved


def same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def trusted_programs() -> set[str]:
    """The programs the person trusts beyond the read-only checks: the run's allow setting (AGENT_ALLOW)."""
    return set(current().allow)


def protected_paths() -> list[Path]:
    """What no command that runs without asking may name and no file tool may write: the transcripts
    folder and this run's transcript (the agent's own .env confine() refuses outright)."""
    return list(current().protected)


def is_protected(path: Path) -> bool:
    """A .env file (which holds the API key) or anything in the transcripts."""
    return path.name.lower() == ".env" or any(p == path or p in path.parents for p in protected_paths())


def writable(path: str) -> Path:
    """Resolve a path the file tools may write: inside the workspace, and not .env or a transcript."""
    target = confine(path)
    if is_protected(Path(path)) or is_protected(target):
        raise PermissionError(f"{path} is protected (.env or the transcripts folder); write somewhere else")
    return target


def shell_verdict(command: str, also_allowed: typing.Collection[str] = ()) -> str | None:
    """None if every part of the command only reads, inside the workspace; otherwise why a person must approve.
    Programs the person trusts (AGENT_ALLOW, or 'always' at the prompt) skip the option checks only."""
    parts = lex(command)
    if isinstance(parts, str):
        return parts
    trusted = (set(also_allowed) | trusted_programs()) - {""}
    for words, _ in parts:
        program, args = words[0], words[1:]
        if "=" in program:
            return "it sets environment variables"
        if program in SHELL_WORDS or program not in PROGRAMS.keys() | trusted:
            return f"{program} is not on the allowlist"
        if program in trusted:
            paths, values = [c for word in args for c in loose_paths(word)], []
        else:
            problem, paths, values = read_only_arguments(program, args)
            if problem:
                return problem
        for text in paths + values + args:  # HEAD:.env and --file=.env name it too
            if re.split(r"[/\\:=]", text)[-1].lower() == ".env":
                return f"it names {text}, which is protected (.env or the transcripts)"
        for text in paths:
            try:
                if is_protected(confine(text)):
                    return f"{text} is protected (.env or the transcripts)"
            except (PermissionError, OSError, RuntimeError, ValueError):
                return "it names a path outside the workspace"
    return None


def lex(command: str) -> list[tuple[list[str], str]] | str:
    """Split a command line into parts of plain words, each with the separator after it; or say what in it
    is not plain (anything the shell would expand, redirect or treat as syntax)."""
    if not isinstance(command, str):
        return "the command is not text"
    parts, words, word, i = [], [], None, 0
    command = command.strip(" \t\n")
    while i < len(command):
        char = command[i]
        separator = next((s for s in SEPARATORS if command.startswith(s, i)), "")
        if separator or char in " \t":
            if word is not None:
                words, word = words + [word], None
            if separator and not words:
                return f"it has an empty command before {separator!r}"
            if separator:
                parts, words = parts + [(words, separator)], []
            i += len(separator) or 1
        elif char in QUOTES:
            end = command.find(char, i + 1)
            if end < 0:
                return "it has an unclosed quote"
            text = command[i + 1:end]
            if bad := [c for c in text if not c.isprintable() or char == '"' and c in NOT_IN_DOUBLE_QUOTES]:
                return f"it has {bad[0]!r} inside quotes"
            word, i = (word or "") + text, end + 1
        elif char.isalnum() or char in PLAIN or char == "~" and word and word[-1].isalnum():
            word, i = (word or "") + char, i + 1
        else:
            return f"it has {char!r}, which the shell would treat specially"
    words += [] if word is None else [word]
    if not words:
        return "it is empty" if not parts else "it ends with a separator"
    return parts + [(words, "")]


def read_only_arguments(program: str, args: list[str]) -> tuple[str | None, list[str], list[str]]:
    """Check an allowlisted program's arguments against its option table: (problem, paths, other values)."""
    if program in ("python", "python3", "py"):
        return (None if args in (["--version"], ["-V"]) else "only python --version runs without asking"), [], []
    if program == "echo":
        return None, [], []  # the lexer let nothing through that expands, so echo prints its words as they are
    if program == "find":
        return find_arguments(args)
    spec, subcommand = PROGRAMS[program], args[0] if program == "git" and args else ""
    if program == "git":
        if subcommand not in GIT:
            return "only git status, log, diff, show and branch run without asking", [], []
        if problem := repository_elsewhere(workspace()):
            return problem, [], []
        spec, args = GIT[subcommand], args[1:]
    problem, operands, paths, values = parse_options(*spec, args, glued=program != "tree")
    if problem:
        return problem, [], []
    if program == "grep" and not {"-e", "-f", "--regexp", "--file"} & {o for o, _ in values} and operands:
        values, operands = values + [("", operands[0])], operands[1:]  # the first word is the pattern
    if program == "git" and not all(v in GIT_FORMATS or ("%" in v or ":" in v) and "%G" not in v
                                     for o, v in values if o in ("--format", "--pretty")):
        return "git formats may not check signatures or use configured aliases", [], []
    if subcommand == "branch" and operands and not {"-l", "--list"} & {o for o, _ in values}:
        return "git branch NAME creates a branch", [], []
    if any(word.startswith("+") for word in operands):
        return f"{program} may read a word starting with + as an option", [], []
    if program in ("head", "tail") and any(re.fullmatch(r"-\d+[a-zA-Z].*", arg) for arg in args):
        return f"{program} reads -99c as a count and the next word as a file (the old form)", [], []
    if program in ("head", "tail") and not all(COUNT.fullmatch(v) for o, v in values if o in COUNTED):
        return f"{program} counts must be numbers (tail reads -cf as -c with follow)", [], []
    return None, operands + paths, [v for _, v in values]


def option_table(short: str, long: str, dashes: str = "--") -> dict[str, str]:
    """'-x' / '--name' -> '' (flag), ':' (value), '/' (path) or '?' (optional value), from a spec."""
    table = {f"-{letter}": kind.strip() for letter, kind in re.findall(r"(\w)([:/?]?)", short)}
    for name in long.split():
        spelled, kind = re.fullmatch(r"([\w-]+)(=?/?|\?)", name).groups()
        table[dashes + spelled] = kind.replace("=", ":") if kind != "=/" else "/"
    return table


def parse_options(short: str, long: str, args: list[str], dashes: str = "--", glued: bool = True
                  ) -> tuple[str | None, list[str], list[str], list[tuple[str, str]]]:
    """Read args the way getopt_long does (clusters, glued values, --name=value, options anywhere, --);
    any option not in the table asks. Abbreviated long options ask too: the table cannot know what else the
    program would read them as. Returns (problem, operands, path values, (option, value) pairs)."""
    table = option_table(short, long, dashes)
    operands, paths, values = [], [], []
    words = iter(args)
    for word in words:
        if word == "--" and dashes == "--":
            operands += list(words)
        elif word.startswith(dashes) and word != dashes:
            name, equals, value = word.partition("=")
            kind = table.get(name)
            if kind is None or kind == "" and equals:
                return f"{name} is not an option that runs without asking", [], [], []
            if kind in (":", "/") and not equals:
                value = next(words, None)
            if value is None:
                return f"{name} needs a value", [], [], []
            paths += [value] if kind == "/" else []
            values.append((name, value))
        elif word.startswith("-") and word != "-":
            for at, letter in enumerate(word[1:], 2):
                kind = table.get(f"-{letter}")
                if kind is None:
                    return f"-{letter} is not an option that runs without asking", [], [], []
                if kind:
                    if word[at:] and not glued:  # tree takes the next word and reads on in the cluster
                        return f"-{letter} takes its value from the next word; write it apart", [], [], []
                    value = word[at:] or (next(words, None) if kind in ":/" else "")
                    if value is None:
                        return f"-{letter} needs a value", [], [], []
                    paths += [value] if kind == "/" else []
                    values.append((f"-{letter}", value))
                    break
                values.append((f"-{letter}", ""))
        else:
            operands.append(word)
    return None, operands, paths, values


def find_arguments(args: list[str]) -> tuple[str | None, list[str], list[str]]:
    """find [-P] PATH... EXPRESSION, with only the tests and actions in FIND (quoted ( ) ! , group them)."""
    args = args[1:] if args[:1] == ["-P"] else args
    start = next((i for i, a in enumerate(args) if a.startswith("-") or a in ("(", ")", "!", ",")), len(args))
    # ( ) ! , group the expression; find pairs each option with the next word whatever it is, so they are
    # only left out where they stand as operands, after the pairing.
    problem, operands, paths, values = parse_options(*FIND, args[start:], dashes="-")
    operands = [word for word in operands if word not in ("(", ")", "!", ",")]
    if problem or operands:
        return problem or f"find does not take {operands[0]} there", [], []
    return None, args[:start] + paths, [v for _, v in values]


def loose_paths(word: str) -> list[str]:
    """Every reading of a trusted program's word as a path: itself, after each =, glued to a short option."""
    glued = [word[2:]] if word.startswith("-") and not word.startswith("--") else []
    return ([] if word.startswith("-") else [word]) + glued + [word[i + 1:] for i, c in enumerate(word) if c == "="]


def prepare(command: str) -> str:
    """The command to run for one that shell_verdict() let run without asking: git status, diff, log and show
    get GIT_SAFE_FLAGS right after the subcommand (a repository's diff drivers and textconv run nothing)."""
    parts = lex(command)
    if isinstance(parts, str):
        return command
    rebuilt = []
    for words, separator in parts:
        if words[0] == "git" and words[1:2] and words[1] in GIT_SAFE_FLAGS:
            words = words[:2] + GIT_SAFE_FLAGS[words[1]] + words[2:]
        rebuilt.append(" ".join(map(quote, words)) + (f" {separator}" if separator else ""))
    return " ".join(rebuilt)


def quote(word: str) -> str:
    if WINDOWS:
        return word if word and all(c.isalnum() or c in PLAIN for c in word) else f'"{word}"'
    return shlex.quote(word)


def git_environment(root: Path, inherited: typing.Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a command that runs without asking: `inherited` without its GIT_* variables, plus
    git settings that keep git in the workspace (no repository above it) and stop the repository's own
    configuration from starting programs (fsmonitor, filters, signatures) or writing the index."""
    env = {k: v for k, v in (inherited or {}).items() if not k.upper().startswith("GIT_")}
    env |= {**GIT_ENVIRONMENT, "GIT_CEILING_DIRECTORIES": str(root.parent)}
    if (root / ".git").is_dir():  # the work tree is the workspace, whatever core.worktree says
        env |= {"GIT_DIR": str(root / ".git"), "GIT_WORK_TREE": str(root)}
    config = dict(GIT_CONFIG)
    for name in repository_filters(root, env):  # an empty command turns a filter driver off
        config |= {f"filter.{name}.clean": "", f"filter.{name}.smudge": "", f"filter.{name}.process": "",
                   f"filter.{name}.required": "false"}
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for i, (key, value) in enumerate(config.items()):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


def repository_elsewhere(root: Path) -> str | None:
    """Why git in the workspace could read a repository outside it: a .git file pointing elsewhere, borrowed
    objects (alternates), a shared common folder. (git_environment pins the work tree to the workspace.)"""
    dot_git = root / ".git"
    if os.path.lexists(dot_git) and (os.path.islink(dot_git) or not dot_git.is_dir()):
        return "the workspace's .git is not a folder of its own (it may point to a repository elsewhere)"
    if any((dot_git / name).exists() for name in ("commondir", "objects/info/alternates")):
        return "the repository borrows objects or settings from elsewhere (alternates, commondir)"
    return None


def repository_filters(root: Path, env: dict[str, str]) -> set[str]:
    """The filter drivers the repository's own config defines (its clean filter runs on git status/diff)."""
    git = shutil.which("git", path=env.get("PATH"))
    if git is None:
        return set()
    try:
        listed = subprocess.run([git, "config", "--show-scope", "--name-only", "--get-regexp", r"^filter\."],
                                cwd=root, env=env, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {name.split(".", 1)[1].rsplit(".", 1)[0] for scope, _, name in
            (line.partition("\t") for line in listed.splitlines()) if scope in ("local", "worktree")}


def needs_approval(name: str, arguments: dict) -> bool:
    if name == "run_shell":
        return shell_verdict(arguments["command"]) is not None
    return name in ALWAYS_ASK


# Control characters and invisible or reordering marks: on a terminal they could hide or rewrite what is shown.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def for_the_terminal(text: str, redact: typing.Callable[[str], str] | None = None, newlines: bool = True) -> str:
    """Text as a person is shown it: keys redacted, control characters as visible escapes (\\x1b, \\u202e);
    newlines kept unless newlines=False, where they are shown as \\n too."""
    text = (redact or redactor(current().secrets))(text if isinstance(text, str) else str(text))
    pattern = CONTROLS if newlines else re.compile(CONTROLS.pattern[:-1] + "\n\t]")
    return pattern.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


def describe(name: str, arguments: dict) -> str:
    """What a person is asked to approve: the exact command (every character visible), or the file and the
    size of the change."""
    if name == "run_shell":
        command = for_the_terminal(arguments["command"], newlines=False)
        return f"run_shell wants to run:\n  {command}\n  ({shell_verdict(arguments['command'])})"
    if name == "write_file":
        return describe_write(arguments["path"], arguments["content"])
    if name == "edit_file":
        return describe_edit(arguments["path"], arguments["old_text"], arguments["new_text"])
    return f"{name} wants to run with {arguments}"


def describe_write(path: str, content: str) -> str:
    """What write_file will do: a new file with its first lines; an overwrite with a diff where both texts are
    small, else the sizes and the new text's first lines (a whole diff of big files would keep the person
    waiting). A folder, pipe or read-only file raises before anyone is asked."""
    from tools import SMALL_FILE, existing, links_note, read_regular  # tools imports this module, so not at the top
    target = writable(path)
    info = existing(path, target)
    new = content.encode("utf-8")
    if info is None:
        return "\n".join(filter(None, [f"write_file wants to create {path} (new file, {len(new)} bytes)",
                                        first_lines(content)]))
    question = f"write_file wants to overwrite {path} (exists, {info.st_size} -> {len(new)} bytes{links_note(info)})"
    if info.st_size < SMALL_FILE and len(new) < SMALL_FILE:
        old, _ = read_regular(target, SMALL_FILE)  # a named pipe is refused, not waited on
        return f"{question}\n{diff_preview(path, old, new)}"
    return "\n".join(filter(None, [question, "  too big to compare; the new text starts:", first_lines(content)]))


def describe_edit(path: str, old_text: str, new_text: str) -> str:
    """The edit exactly as edit_file will make it, as a diff of the lines around it (never the whole file); an
    edit that cannot be made raises before anyone is asked."""
    from tools import edit_excerpt, links_note, planned_edit  # tools imports this module, so not at the top
    edit = planned_edit(path, old_text, new_text)
    size = len(edit.data) - (edit.end - edit.start) + len(edit.new)
    old, new, first = edit_excerpt(edit)
    return (f"edit_file wants to edit {path} ({len(edit.data)} -> {size} bytes{links_note(edit.info)})\n"
            f"{diff_preview(path, old, new, first)}")


def diff_preview(path: str, old: bytes, new: bytes, first: int = 1) -> str:
    """The start of a unified diff from old to new, indented under the question. old and new may be an excerpt
    that starts at line `first` of the file: the hunks are numbered as in the whole file."""
    from tools import PREVIEW_LINES  # tools imports this module, so not at the top
    lines = difflib.unified_diff(text_lines(old), text_lines(new), f"{path} (now)", f"{path} (new)", lineterm="")
    shown = itertools.islice(lines, PREVIEW_LINES)
    return "\n".join(f"  {clipped(renumbered(line, first - 1) if line.startswith('@@') else line)}"
                     for line in shown)


def text_lines(data: bytes) -> list[str]:
    """Lines split at \\n only, as they are numbered, without their line break (\\n or \\r\\n)."""
    lines = data.decode("utf-8", "replace").split("\n")
    return [line.removesuffix("\r") for line in (lines[:-1] if lines[-1] == "" else lines)]


def renumbered(hunk: str, offset: int) -> str:
    """A hunk header '@@ -a,b +c,d @@' with offset added to a and c."""
    return re.sub(r"([-+])(\d+)", lambda m: f"{m[1]}{int(m[2]) + offset}", hunk)


def first_lines(text: str) -> str:
    """The start of a new text as a preview: its first lines, each as a diff shows an added line."""
    from tools import PREVIEW_LINES  # tools imports this module, so not at the top
    total = text.count("\n") + (text[-1:] not in ("", "\n"))  # a last line without its \n counts too
    shown = [line.removesuffix("\r") for line in text.split("\n", PREVIEW_LINES)[:min(total, PREVIEW_LINES)]]
    lines = [f"  {clipped('+' + line)}" for line in shown]
    if total > len(shown):
        left = total - len(shown)
        lines.append(f"  ... and {left} more line{'s' if left > 1 else ''}")
    return "\n".join(lines)


def clipped(line: str) -> str:
    """A line of a preview, cut at PREVIEW_WIDTH characters with a note of how many more there were."""
    from tools import PREVIEW_WIDTH  # tools imports this module, so not at the top
    cut = len(line) - PREVIEW_WIDTH
    return line if cut <= 0 else f"{line[:PREVIEW_WIDTH]}... ({cut} more characters)"


def terminal_approver() -> Approver:
    """Ask at the terminal; 'always' remembers a program (or a file tool) for the rest of this run only."""
    programs: set[str] = set()
    tools: set[str] = set()  # kept apart: 'always' for a program named edit_file does not trust the tool

    def approve(name: str, arguments: dict) -> bool | str:
        if name in tools or name == "run_shell" and shell_verdict(arguments["command"], programs) is None:
            return True
        print(for_the_terminal(describe(name, arguments)), file=sys.stderr)  # no key, nothing hidden
        what = ", ".join(sorted(shell_programs(arguments["command"]))) if name == "run_shell" else name
        what = for_the_terminal(what, newlines=False)
        while True:
            answer = typed(f"[y]es / [N]o / [a]lways allow {what} for this run: ").lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("a", "always"):
                if name == "run_shell":
                    programs.update(shell_programs(arguments["command"]))
                else:
                    tools.add(name)
                return True
            if answer in ("n", "no", ""):  # Enter, or no terminal left, is a no
                reason = typed("why not? (optional, Enter to skip): ")
                return f"denied by the user: {reason}" if reason else False
            print("please answer y, n or a", file=sys.stderr)

    return approve


def typed(question: str) -> str:
    """The line typed in answer to the question, after it was shown: what was typed before (the rest of a paste,
    keys pressed while the model worked) is thrown away first, and said to be. Ctrl-C first ends the question's
    line, so "interrupted" gets its own."""
    try:
        if discard_typed_ahead():
            print(DISCARDED, file=sys.stderr)
        print(question, end="", file=sys.stderr, flush=True)
        fd = terminal_input()
        return (read_line(fd) if fd is not None else sys.stdin.readline()).strip()
    except KeyboardInterrupt:
        try:
            print(file=sys.stderr)
        except OSError:  # the terminal has gone (SIGHUP): nobody is left to see it
            pass
        raise


def terminal_input() -> int | None:
    """The file descriptor of stdin where it is a terminal that can be read unbuffered (POSIX), else None."""
    if sys.platform == "win32" or sys.stdin is None:
        return None
    try:
        fd = sys.stdin.fileno()
    except (ValueError, OSError):  # closed, or not a file at all
        return None
    return fd if os.isatty(fd) else None


def read_line(fd: int) -> str:
    """One line from the terminal, its newline included; '' at the end of input or once the terminal has gone.
    Read a byte at a time, so nothing after the line is taken: Python's buffered sys.stdin may read on into
    the rest of a paste and keep it, where no flush can reach it, for the next question."""
    line = bytearray()
    while not line.endswith(b"\n"):
        try:
            byte = os.read(fd, 1)
        except OSError:  # EIO: the terminal hung up
            break
        if not byte:
            break
        line += byte
    return line.decode(sys.stdin.encoding or "utf-8", "replace")


def discard_typed_ahead() -> bool:
    """Throw away what was typed at the terminal and not read yet; return whether that held a whole line (a
    line still being typed, without its Enter, is thrown away too, but the terminal does not show it as
    waiting)."""
    if sys.platform == "win32":
        if sys.stdin is None or not sys.stdin.isatty():
            return False
        import msvcrt  # each system has only its own: msvcrt here, termios below
        pending = False
        while msvcrt.kbhit():
            msvcrt.getwch()
            pending = True
        return pending
    fd = terminal_input()
    if fd is None:
        return False
    import termios
    pending = bool(select.select([fd], [], [], 0)[0])
    termios.tcflush(fd, termios.TCIFLUSH)
    return pending


def shell_programs(command: str) -> set[str]:
    parts = lex(command)
    return {command} if isinstance(parts, str) else {words[0] for words, _ in parts}


def approve_all(name: str, arguments: dict) -> bool:
    return True


def no_terminal(name: str, arguments: dict) -> str:
    return ("denied: nobody is at a terminal to approve it; run read-only commands instead, "
            "or the user can rerun with --yes to approve everything")


def default_approver(approve_everything: bool) -> Approver:
    """--yes or AGENT_APPROVE=all approves everything; else ask at a terminal; with no terminal, deny."""
    if approve_everything:
        return approve_all
    return terminal_approver() if sys.stdin is not None and sys.stdin.isatty() else no_terminal


def denial(decision: bool | str) -> str:
    """The tool result for a denied call: the approver's own words, or plainly 'denied by the user'."""
    return decision if isinstance(decision, str) else "denied by the user"
