"""The allowlist's tables (phase 2): each allowlisted program's options that only read; and its
words read as getopt does, so that an option cannot hide behind a cluster, a glued value or an
abbreviation."""

import re
import typing

# Each program that only reads, with the options it may take unasked. Short: a letter alone is a
# flag, "x:" takes a value, "x/" a path, "x?" an optional glued value. Long: "name" a flag, "name="
# a value, "name=/" a path, "name?" an optional =value. Left out: options that write files, follow
# symlinks, never end, or read more file names.
# Never a short option that takes a value here and is a flag elsewhere: macOS's ls reads -w, -T and
# -I alone, and the word after as a folder to list, so only --width=, --tabsize= and --ignore= run.
LS = (
    "aAbBcCdfFghiklmnNopqQrRsStuUvxZ1",
    "all almost-all author escape block-size= ignore-backups "
    "classify color? directory dired full-time group-directories-first no-group human-readable si "
    "hide= indicator-style= inode ignore= kibibytes literal numeric-uid-gid hide-control-chars "
    "show-control-chars "
    "quote-name quoting-style= reverse recursive size sort= time= time-style= tabsize= width= "
    "context zero",
)
HEAD = ("c:n:qvz0123456789", "bytes= lines= quiet silent verbose zero-terminated")
DIFF = (
    "pusRwbWzM?C?B?U?S:G:",
    "patch no-patch stat? shortstat numstat name-only name-status summary raw "
    "patch-with-stat color? no-color word-diff? color-words? unified? ignore-all-space "
    "ignore-space-change ignore-blank-lines ignore-space-at-eol minimal patience histogram "
    "find-renames? find-copies? no-renames diff-filter= relative? abbrev? full-index binary "
    "function-context exit-code quiet check src-prefix= dst-prefix= no-prefix no-ext-diff "
    "no-textconv dirstat? compact-summary pickaxe-regex pickaxe-all",
)
LOG = (
    DIFF[0] + "n:iEF0123456789",
    DIFF[1] + " oneline graph decorate? no-decorate all branches? tags? remotes? "
    "abbrev-commit no-abbrev-commit reverse first-parent no-merges merges max-count= skip= since= "
    "until= after= before= author= committer= grep= date= pretty? format= follow full-diff "
    "relative-date full-history topo-order date-order cherry-pick left-right boundary "
    "ancestry-path simplify-by-decoration invert-grep regexp-ignore-case extended-regexp "
    "fixed-strings basic-regexp all-match log-size source mailmap no-mailmap",
)
PROGRAMS: dict[str, tuple[str, str]] = {
    "ls": LS,
    "dir": LS,
    "type": ("", ""),
    "pwd": ("LP", ""),
    "which": ("a", ""),
    "cat": (
        "AbeEnstTuv",
        "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting",
    ),
    "head": HEAD,
    "tail": HEAD,
    "wc": ("clmwL", "bytes chars lines words max-line-length total="),
    "grep": (
        "EFGPiywxvcLloqsbHhnTZzUraIe:f/m:A:B:C:d:D:",
        "extended-regexp fixed-strings basic-regexp "
        "perl-regexp regexp= file=/ ignore-case no-ignore-case word-regexp line-regexp null-data "
        "no-messages "
        "invert-match max-count= byte-offset line-number with-filename no-filename label= "
        "only-matching quiet "
        "silent binary-files= text directories= devices= recursive include= exclude= "
        "exclude-from=/ exclude-dir= files-without-match files-with-matches count initial-tab null "
        "before-context= after-context= context= color? colour?",
    ),
    "file": (
        "bcEhiknNrsv0e:F:P:",
        "brief exclude= exclude-quiet= extension mime mime-type mime-encoding "
        "keep-going raw no-pad no-buffer print0 separator= special-files no-dereference",
    ),
    "stat": ("tfc:", "file-system format= printf= terse cached="),
    "du": (
        "0abchklmsSxPd:B:t:X/",
        "null all apparent-size block-size= bytes total max-depth= human-readable "
        "inodes si summarize separate-dirs threshold= time? time-style= exclude= exclude-from=/ "
        "one-file-system no-dereference count-links",
    ),
    "tree": (
        "adfFgpsuDhQNiACSvrtcUxqJXL:P:I:",
        "noreport charset= filelimit= dirsfirst sort= du prune matchdirs ignore-case timefmt=",
    ),
    "rg": (
        "A:B:C:bce:E:f/Fg:HIij:lm:M:nNopPqr:sSt:T:uUvVwx0a",
        "after-context= before-context= context= byte-offset count count-matches regexp= "
        "encoding= file=/ fixed-strings glob= iglob= glob-case-insensitive with-filename "
        "no-filename ignore-case threads= files-with-matches files-without-match max-count= "
        "max-columns= max-columns-preview max-depth= max-filesize= line-number no-line-number "
        "only-matching pretty pcre2 no-pcre2 quiet replace= case-sensitive smart-case type= "
        "type-not= type-add= type-clear= type-list unrestricted multiline multiline-dotall "
        "invert-match version word-regexp line-regexp null null-data text no-text binary hidden "
        "no-hidden no-follow no-search-zip files heading no-heading column color= colors= "
        "context-separator= no-context-separator field-context-separator= "
        "field-match-separator= path-separator= sort= sortr= stats json vimgrep trim passthru "
        "include-zero crlf engine= auto-hybrid-regex dfa-size-limit= regex-size-limit= mmap "
        "no-mmap line-buffered block-buffered no-messages no-ignore-messages no-ignore "
        "no-ignore-dot no-ignore-exclude no-ignore-files no-ignore-global no-ignore-parent "
        "no-ignore-vcs no-require-git ignore-file=/ ignore-file-case-insensitive no-unicode "
        "no-pcre2-unicode one-file-system no-config debug trace",
    ),
    # not -l: macOS's sed reads it alone, and the next word as its script: `sed -l 'w x' p` writes x
    "sed": (
        "nEsrzue:",
        "quiet silent expression= regexp-extended separate null-data zero-terminated unbuffered "
        "line-length= posix debug",
    ),
    # never -o/--output (writes a file), --compress-program (runs one), -T (writes there) or
    # --files0-from (more file names)
    "sort": (
        "bdfgiMhnRrVcCmsuzk:t:S:",
        "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort "
        "ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort reverse "
        "version-sort sort= check? merge stable unique zero-terminated key= field-separator= "
        "buffer-size= parallel= debug random-source=/",
    ),
    # a second operand is the file uniq writes: allowlist.read_only_arguments takes one at most
    "uniq": (
        "cdDiuzf:s:w:",
        "count repeated all-repeated? group? ignore-case unique zero-terminated skip-fields= "
        "skip-chars= check-chars=",
    ),
    "nl": (
        "pb:d:f:h:i:l:n:s:v:w:",
        "body-numbering= section-delimiter= footer-numbering= header-numbering= "
        "line-increment= join-blank-lines= number-format= no-renumber number-separator= "
        "starting-line-number= number-width=",
    ),
    "echo": ("", ""),
    "find": ("", ""),
    "date": ("", ""),
    "git": ("", ""),
    "python": ("", ""),
    "python3": ("", ""),
    "py": ("", ""),
}
# find's expression: each primary a "long" option spelled with one dash.
FIND = (
    "",
    "name= iname= path= ipath= wholename= iwholename= regex= iregex= regextype= type= xtype= "
    "maxdepth= "
    "mindepth= size= mtime= mmin= atime= amin= ctime= cmin= newer=/ anewer=/ cnewer=/ samefile=/ "
    "perm= user= "
    "group= uid= gid= links= inum= empty print print0 printf= ls prune quit true false depth xdev "
    "mount noleaf readable writable executable nouser nogroup daystart not a o and or",
)
# date that only prints: never -s/--set (sets the clock); -r names a file. A -d DATE of a date's
# words and signs only: a TZ="PATH" in one (or in a line of -f FILE) is a file date opens, anywhere
DATE = ("uRd:r/I?", "date= reference=/ iso-8601? rfc-email rfc-3339= utc universal debug")
DATE_WORDS = re.compile(r"[A-Za-z0-9 +\-:,./@]*")
GIT = {
    "status": (
        "sbzu?",
        "short branch porcelain? long show-stash ahead-behind no-ahead-behind untracked-files? "
        "ignored? column? no-column renames no-renames find-renames? null",
    ),
    "diff": (DIFF[0], DIFF[1] + " cached staged merge-base"),
    "log": LOG,
    "show": LOG,
    "grep": (
        "EFGPiIwvnlLcohHzqWpa0123456789e:f/A:B:C:m:",
        "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case word-regexp "
        "invert-match line-number column files-with-matches name-only files-without-match count "
        "only-matching no-filename full-name null quiet function-context show-function text "
        "heading break all-match and or not cached untracked exclude-standard "
        "no-exclude-standard no-textconv max-depth= threads= color? no-color regexp= file=/ "
        "after-context= before-context= context= max-count=",
    ),
    "blame": (
        "bltsenfwpcM?C?L:S/",
        "root show-stats show-name show-number show-email porcelain line-porcelain incremental "
        "encoding= contents=/ date= abbrev? ignore-rev= ignore-revs-file=/ color-lines "
        "color-by-age minimal reverse= first-parent since= no-textconv no-progress",
    ),
    "branch": (
        "arvl",
        "all remotes verbose list show-current contains? no-contains? merged? no-merged? sort= "
        "color? no-color column? no-column points-at= ignore-case abbrev? no-abbrev",
    ),
    "ls-files": (
        "cdmoiskuzftvx:X/",
        "cached deleted modified others ignored stage directory no-empty-directory unmerged "
        "killed exclude= exclude-from=/ exclude-standard error-unmatch "
        "full-name abbrev? debug eol deduplicate format=",
    ),
}
# Programs whose first operand is a pattern or script, not a file, unless one of these options is
# there (one that gives the pattern, or says there is none).
PATTERN_FIRST = {
    "grep": {"-e", "-f", "--regexp", "--file"},
    "git grep": {"-e", "-f", "--regexp", "--file"},
    "rg": {"-e", "-f", "--regexp", "--file", "--files", "--type-list"},
    "sed": {"-e", "--expression"},
}
# One sed command that only prints, or stops: an address or two (a line, $, first~step, /regex/ with
# I and M flags; the second also +N or ~N), then ! maybe, then p = l d q or Q. A regex ends at the
# first / with no backslash before it; where GNU sed reads past a / in [ ], the ] left asks.
SED_REGEX = r"/(?:[^/\\]|\\.)*/[IM]*"
SED_ADDRESS = rf"(?:\d+(?:~\d+)?|\$|{SED_REGEX})"
SED_COMMAND = re.compile(
    rf"[ \t]*(?:{SED_ADDRESS}(?:[ \t]*,[ \t]*(?:{SED_ADDRESS}|[+~]\d+))?)?[ \t]*(?:![ \t]*)?"
    r"[p=ldqQ][ \t]*"
)
# head and tail read their values as counts, or as more options
COUNTED = ("-c", "-n", "--bytes", "--lines")
COUNT = re.compile(r"-?\d+(?:[bkKMGTPE]i?B?)?")
FROM_LINE = re.compile(r"\+\d+(?:[bkKMGTPE]i?B?)?")  # tail -n +10: from the 10th line on
GIT_FORMATS = {"", "oneline", "short", "medium", "full", "fuller", "reference", "email", "raw"}
SIGNATURE = re.compile(r"%[-+ ]?G")  # %G?, %GG ... check signatures, and %+GG, %-G?, % GS too


def option_table(short: str, long: str, dashes: str = "--") -> dict[str, str]:
    """'-x' / '--name' -> '' (flag), ':' (value), '/' (path) or '?' (optional value), from a
    spec."""
    table = {f"-{letter}": kind for letter, kind in re.findall(r"(\w)([:/?]?)", short)}
    return table | {
        dashes + name: {"=": ":", "=/": "/"}.get(kind, kind)
        for name, kind in re.findall(r"([\w-]+)(\?|=?/?)", long)
    }


class Reading(typing.NamedTuple):
    """One thing getopt reads in a program's words: an operand (option ""), or an option with its
    kind in option_table ("" a flag, ":" a value, "/" a path, "?" an optional value) and its value
    ("" for none). `at` is the index of the word that is the value alone; None where there is no
    such word (a flag, or a value glued to its option: -tsub, --file=x)."""

    option: str
    kind: str
    value: str
    at: int | None


def read_words(
    short: str, long: str, args: list[str], dashes: str = "--", glued: bool = True
) -> tuple[str | None, list[Reading]]:
    """Read args as getopt_long does (clusters, glued values, --name=value, options anywhere, --),
    each operand and option value with the word it stands in: (problem, readings). An option not
    in the table is a problem, abbreviated ones too."""
    table = option_table(short, long, dashes)
    read: list[Reading] = []
    words = iter(enumerate(args))
    for at, word in words:
        if word == "--" and dashes == "--":
            read += [Reading("", "", operand, index) for index, operand in words]
        elif word.startswith(dashes) and word != dashes:
            name, equals, glued_value = word.partition("=")
            kind = table.get(name)
            if kind is None or kind == "" and equals:
                return f"{name} is not an option that runs without asking", []
            if equals or kind not in (":", "/"):
                read.append(Reading(name, kind, glued_value, None))
                continue
            index, value = next(words, (None, None))
            if value is None:
                return f"{name} needs a value", []
            read.append(Reading(name, kind, value, index))
        elif word.startswith("-") and word != "-":
            for start, letter in enumerate(word[1:], 2):
                kind = table.get(f"-{letter}")
                if kind is None:
                    return f"-{letter} is not an option that runs without asking", []
                if not kind:
                    read.append(Reading(f"-{letter}", kind, "", None))
                    continue
                # Tree takes the next word and reads on in the cluster
                if word[start:] and not glued:
                    return f"-{letter} takes its value from the next word; write it apart", []
                if word[start:] or kind == "?":
                    read.append(Reading(f"-{letter}", kind, word[start:], None))
                    break
                index, value = next(words, (None, None))
                if value is None:
                    return f"-{letter} needs a value", []
                read.append(Reading(f"-{letter}", kind, value, index))
                break
        else:
            read.append(Reading("", "", word, at))
    return None, read


def parse_options(
    short: str, long: str, args: list[str], dashes: str = "--", glued: bool = True
) -> tuple[str | None, list[str], list[str], list[tuple[str, str]]]:
    """Read args as getopt_long does (read_words): an option not in the table asks, abbreviated ones
    too. Returns (problem, operands, path values, (option, value) pairs)."""
    problem, read = read_words(short, long, args, dashes, glued)
    if problem:
        return problem, [], [], []
    operands = [r.value for r in read if not r.option]
    paths = [r.value for r in read if r.kind == "/"]
    return None, operands, paths, [(r.option, r.value) for r in read if r.option]


def find_arguments(args: list[str]) -> tuple[str | None, list[str], list[str]]:
    """find [-P] PATH... EXPRESSION, with only the tests and actions in FIND (quoted ( ) ! , group
    them)."""
    args = args[1:] if args[:1] == ["-P"] else args
    start = next(
        (i for i, a in enumerate(args) if a.startswith("-") or a in ("(", ")", "!", ",")), len(args)
    )
    # find pairs each option with the next word whatever it is: ( ) ! , are left out only where they
    # are operands
    problem, operands, paths, values = parse_options(*FIND, args[start:], dashes="-")
    operands = [word for word in operands if word not in ("(", ")", "!", ",")]
    if problem or operands:
        return problem or f"find does not take {operands[0]} there", [], []
    return None, args[:start] + paths, [v for _, v in values]


def date_arguments(args: list[str]) -> tuple[str | None, list[str], list[str]]:
    """date [OPTION]... [+FORMAT], within DATE: one operand at most, a +FORMAT (date MMDDhhmm
    sets the clock)."""
    problem, operands, paths, values = parse_options(*DATE, args)
    if not problem and (len(operands) > 1 or operands and not operands[0].startswith("+")):
        problem = "date takes one operand at most, a +FORMAT (any other sets the clock)"
    if not problem and not all(DATE_WORDS.fullmatch(v) for o, v in values if o in ("-d", "--date")):
        problem = 'a date -d of more than letters, digits, blanks and + - : , . / @ (TZ="FILE")'
    return (problem, [], []) if problem else (None, paths, [v for _, v in values] + operands)


# Programs whose arguments are not options and operands alone (read_only_arguments)
FORMS = {"find": find_arguments, "date": date_arguments}


def loose_paths(word: str) -> list[str]:
    """Every reading of a trusted program's word as a path: itself, after each =, glued to a short
    option anywhere in a cluster (make -sC.. is make -s -C ..)."""
    cluster = word.startswith("-") and not word.startswith("--")
    glued = [word[i:] for i in range(2, len(word) + 1)] if cluster else []
    return (
        ([] if word.startswith("-") else [word])
        + glued
        + [word[i + 1 :] for i, c in enumerate(word) if c == "="]
    )


def sed_problem(script: str) -> str | None:
    """Why a sed script may do more than print: anything but commands of SED_COMMAND, each ended by
    ; or the script's end (so never w, W, r, e, s, a, i, c, y or a { } block)."""
    at = 0
    while at < len(script):
        command = SED_COMMAND.match(script, at)
        if command is None or command.end() < len(script) and script[command.end()] != ";":
            return (
                f"sed scripts run without asking only with the commands p = l d q Q after "
                f"addresses (not {script!r})"
            )
        at = command.end() + 1
    return None
