"""The allowlist (phase 2): which shell commands run without asking, and how. A command runs unasked, read-only,
only if it is plain words the lexer understands, each part is a program in PROGRAMS using only the options in
its table, and every path it names resolves inside the workspace; with a program the person trusts (AGENT_ALLOW)
among its parts it runs unasked too, able to write the workspace but offline. Anything else, or anything this
module cannot parse, asks."""

import locale
import os
import re
import shlex
import shutil
import sys
import typing
from pathlib import Path

from files import confine, is_protected
from gitguard import GIT_SAFE_FLAGS, repository_elsewhere
from settings import current

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
SIGNATURE = re.compile(r"%[-+ ]?G")  # %G?, %GG ... check signatures, and %+GG, %-G?, % GS too
SHELL_WORDS = {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in",
               "function", "select", "time", "coproc", "{", "}", "!", "[[", "]]"}
SEPARATORS = ("&&", "||", ";", "|", "\n")
WINDOWS = sys.platform == "win32"
# Unquoted, a word may hold letters, digits and these. cmd.exe splits words on , = and ; and escapes with ^.
PLAIN = "_./\\:@+-" if WINDOWS else "_./:@+=,-^"
QUOTES = '"' if WINDOWS else "'\""
NOT_IN_DOUBLE_QUOTES = "%!\\" if WINDOWS else "$`\\!"
SHELL_BUILTINS = {"echo", "pwd", "type"}  # sh runs its own, whatever PATH holds
# Longer commands ask: checking one of 200,000 characters took the agent half a minute, several times over.
MAX_UNASKED_CHARS = 10_000


READ_ONLY, ALLOWED = "read-only", "allowed"  # how a command that needs no approval runs


class Verdict(typing.NamedTuple):
    """How a command may run: `mode` READ_ONLY (every part only reads), ALLOWED (a trusted program from
    AGENT_ALLOW is among its parts: it may write the workspace, without the network), or None with the
    `reason` a person must approve it."""
    mode: str | None
    reason: str | None = None


def command_mode(command: str, also_allowed: typing.Collection[str] = ()) -> Verdict:
    """The one decision on a command: read-only if every part is an allowlisted program that only reads, inside
    the workspace; allowed if the parts are allowlisted or trusted (AGENT_ALLOW, or `also_allowed`, the
    programs a person said 'always' to) and at least one is trusted; else it asks, and says why. Trusted
    programs skip the option tables only: every path they name is checked like any other."""
    parts = lex(command)
    if isinstance(parts, str):
        return Verdict(None, parts)
    trusted = (set(also_allowed) | current().allow) - {""}
    mode = READ_ONLY
    for words, _ in parts:
        program, args = words[0], words[1:]
        if "=" in program:
            return Verdict(None, "it sets environment variables")
        if program in SHELL_WORDS or program not in PROGRAMS.keys() | trusted:
            return Verdict(None, f"{program} is not on the allowlist")
        if program in trusted:
            paths, values, mode = [c for word in args for c in loose_paths(word)], [], ALLOWED
        elif problem := resolution_problem(program, bool(trusted_programs(parts, trusted))):
            return Verdict(None, problem)
        else:
            problem, paths, values = read_only_arguments(program, args)
            if problem:
                return Verdict(None, problem)
        for text in paths + values + args:  # HEAD:.env and --file=.env name it too
            if re.split(r"[/\\:=]", text)[-1].lower() == ".env":
                return Verdict(None, f"it names {text}, which is protected (.env or the transcripts)")
        for text in paths:
            try:
                if is_protected(confine(text)):
                    return Verdict(None, f"{text} is protected (.env or the transcripts)")
            except (PermissionError, OSError, RuntimeError, ValueError):
                return Verdict(None, "it names a path outside the workspace")
    return Verdict(mode)


def reason_to_ask(command: str, also_allowed: typing.Collection[str] = ()) -> str | None:
    """Why a person must approve the command; None when it runs without asking (see command_mode)."""
    return command_mode(command, also_allowed).reason


def lex(command: str) -> list[tuple[list[str], str]] | str:
    """Split a command line into parts of plain words, each with the separator after it; or say what in it
    is not plain (anything the shell would expand, redirect or treat as syntax), or that it is too long."""
    if not isinstance(command, str):
        return "the command is not text"
    if len(command) > MAX_UNASKED_CHARS:  # each word is checked as a path, and read here char by char
        return f"it is longer than {MAX_UNASKED_CHARS:,} characters"
    if problem := misread_bytes(command):
        return problem
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
        if problem := repository_elsewhere(current().workspace):
            return problem, [], []
        spec, args = GIT[subcommand], args[1:]
    problem, operands, paths, values = parse_options(*spec, args, glued=program != "tree")
    if problem:
        return problem, [], []
    if program == "grep" and not {"-e", "-f", "--regexp", "--file"} & {o for o, _ in values} and operands:
        values, operands = values + [("", operands[0])], operands[1:]  # the first word is the pattern
    if program == "git" and not all(v in GIT_FORMATS or ("%" in v or ":" in v) and not SIGNATURE.search(v)
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
    """Every reading of a trusted program's word as a path: itself, after each =, glued to a short option
    anywhere in a cluster (make -sC.. is make -s -C ..)."""
    cluster = word.startswith("-") and not word.startswith("--")
    glued = [word[i:] for i in range(2, len(word) + 1)] if cluster else []
    return ([] if word.startswith("-") else [word]) + glued + [word[i + 1:] for i, c in enumerate(word) if c == "="]


def prepare(command: str, trusted: typing.Collection[str] = ()) -> str:
    """The command to run for one that command_mode() let run without asking: git status, diff, log and show
    get GIT_SAFE_FLAGS right after the subcommand (a repository's diff drivers and textconv run nothing); and
    when it also runs a program the person trusts, so that the shell keeps the full PATH (unasked_path), each
    program of the allowlist is named by where it is outside the workspace."""
    parts = lex(command)
    if isinstance(parts, str):
        return command
    runs_trusted, rebuilt = trusted_programs(parts, trusted), []
    for words, separator in parts:
        if words[0] == "git" and words[1:2] and words[1] in GIT_SAFE_FLAGS:
            words = words[:2] + GIT_SAFE_FLAGS[words[1]] + words[2:]
        if runs_trusted and words[0] not in runs_trusted | SHELL_BUILTINS and not WINDOWS:
            words = [outside_program(words[0]) or words[0]] + words[1:]
        rebuilt.append(" ".join(map(quote, words)) + (f" {separator}" if separator else ""))
    return " ".join(rebuilt)


def trusted_programs(parts: list[tuple[list[str], str]], trusted: typing.Collection[str]) -> set[str]:
    """The programs of the parts that the person trusts (AGENT_ALLOW) rather than the allowlist's tables."""
    return {words[0] for words, _ in parts} & (set(trusted) - {""})


def unasked_path(command: str, trusted: typing.Collection[str]) -> str:
    """The PATH for a command that runs without asking: without the workspace (outside_path), unless a part
    runs a program the person trusts, which is found as their own shell would find it (a project's .venv
    included: they chose it); prepare() then names the allowlist's programs by their full paths."""
    parts = lex(command)
    if WINDOWS or isinstance(parts, str) or trusted_programs(parts, trusted):  # cmd.exe looks here first anyway
        return full_path()
    return outside_path(full_path(), current().workspace)


def full_path() -> str:
    return os.environ.get("PATH", os.defpath)  # what commands inherit: shell.py hands them this environment


def outside_path(path: str, root: Path) -> str:
    """PATH without its empty and relative entries (the shell reads them from the working folder, the
    workspace) and without entries inside the workspace: a planted .venv/bin/git never stands in for git."""
    kept = []
    for entry in path.split(os.pathsep):
        where = Path(os.path.realpath(entry)) if os.path.isabs(entry) else root
        if where != root and root not in where.parents:
            kept.append(entry)
    return os.pathsep.join(kept)


def outside_program(program: str) -> str | None:
    """Where the shell finds a program on the PATH without the workspace (outside_path); None if nowhere."""
    return shutil.which(program, path=outside_path(full_path(), current().workspace))


def resolution_problem(program: str, beside_trusted: bool) -> str | None:
    """Why an allowlisted program could turn out to be one from the workspace: what PATH finds outside it is a
    link into it; or, beside a trusted program (run on the full PATH), none is found outside it at all."""
    if WINDOWS or program in SHELL_BUILTINS:
        return None
    found, root = outside_program(program), current().workspace
    if found is None:
        return f"no {program} is found on PATH outside the workspace" if beside_trusted else None
    where = Path(os.path.realpath(found))
    return f"the {program} found on PATH is a link into the workspace" if root in (where, *where.parents) else None


def misread_bytes(command: str, encodings: typing.Iterable[str] | None = None) -> str | None:
    """Why the shell might not read the command's bytes as the command checked here: in Big5, GBK or Shift_JIS
    the second byte of a character can be | ` or \\, so a character must be written without ASCII bytes both
    in the encoding the bytes are made in and in the one the shell and programs read them in (the locale's)."""
    if WINDOWS or command.isascii():
        return None
    if encodings is None:  # the bytes are made in the first, and read in the second
        encodings = dict.fromkeys((sys.getfilesystemencoding(), locale.nl_langinfo(locale.CODESET)))
    data = None
    for encoding in encodings:
        try:
            data = command.encode(encoding, "surrogateescape") if data is None else data
            text = data.decode(encoding)
        except (UnicodeError, LookupError):
            return f"it has characters this locale's encoding ({encoding}) cannot write or read back exactly"
        for char in text:
            if not char.isascii() and (low := [b for b in char.encode(encoding) if b < 0x80]):
                return (f"in this locale's encoding ({encoding}) {char!r} is written with the byte {chr(low[0])!r}, "
                        "which the shell would read as that character")
    return None


def quote(word: str) -> str:
    if WINDOWS:
        return word if word and all(c.isalnum() or c in PLAIN for c in word) else f'"{word}"'
    return shlex.quote(word)


def shell_programs(command: str) -> set[str]:
    parts = lex(command)
    return {command} if isinstance(parts, str) else {words[0] for words, _ in parts}