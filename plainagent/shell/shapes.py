"""What 'always' covers (phase 2): a command's shape, its programs with words of the same kind as
those the person was shown; a command of another shape asks again."""

import os
import shutil

from plainagent.core.settings import Settings
from plainagent.shell.words import WINDOWS, Redirection, lex
from plainagent.workspace.files import confine, is_protected

Shape = tuple[str | None, ...]


# In a Shape: one or more words, each naming a file or folder of the workspace
WORKSPACE_PATHS = None


# the plain word's characters but =, which would make it a variable or an option's value
PATH_CHARS = "_./:@+,^-"


def command_shapes(command: str, config: Settings) -> set[Shape]:
    """What 'always' for a command remembers, one shape for each part: its program and its words
    exactly as given, except that a run of words each naming a file or folder of the workspace
    (workspace_path) becomes WORKSPACE_PATHS, where any such words may stand. So 'always' for `rm
    a.txt` covers `rm b.txt c.txt`, but for `timeout 5 ls` only that: `timeout 5 python3` names
    another program, `make -C /etc` another option and folder. A command that is not plain words has
    no shapes."""
    parts = lex(command)
    if isinstance(parts, str):
        return set()
    shapes = set()
    for words, _ in parts:
        shape: list[str | None] = [words[0]]
        for word in words[1:]:
            if isinstance(word, Redirection):  # only ever to /dev/null: it changes nothing
                continue
            kind = WORKSPACE_PATHS if workspace_path(word, config) else word
            if kind is not WORKSPACE_PATHS or shape[-1] is not WORKSPACE_PATHS:
                shape.append(kind)
        shapes.add(tuple(shape))
    return shapes


def workspace_path(word: str, config: Settings) -> bool:
    """Whether a word can only be read as a file or folder of the workspace that exists now: a plain
    word, no option or value (no leading -, no =), not .env or the transcripts, and, if it has no /,
    not the name of a program the shell would find (with ls or python3 in the workspace, `timeout 5
    ls` must not cover python3)."""
    if word.startswith("-") or not all(c.isalnum() or c in PATH_CHARS for c in word):
        return False
    root = config.workspace
    # An approved command gets the person's own PATH, relative entries read from the workspace
    if "/" not in word:
        entries = [
            str(root / entry) for entry in os.environ.get("PATH", os.defpath).split(os.pathsep)
        ]
        if shutil.which(word, path=os.pathsep.join([str(root)] * WINDOWS + entries)):
            return False
    try:
        path = confine(word, config)
    except (OSError, RuntimeError, ValueError):
        return False
    return os.path.lexists(path) and not is_protected(path, config)
