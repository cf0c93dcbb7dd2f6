"""Landlock (the kernel sandbox, beyond the tutorial): a ruleset that lets a command read the
workspace and the system, and write only where its mode allows; built in the agent, applied by
the command's own process."""

import contextlib
import ctypes
import errno
import functools
import os
import platform
import stat
import sys
from pathlib import Path

from plainagent.core.ownfiles import (
    AGENT_FOLDER,
    interpreter_folders,
    launcher_installations,
    launchers,
    read_only_entries,
)
from plainagent.sandbox.policy import Policy
from plainagent.sandbox.readable import (
    git_config,
    readable_folders,
)

READ_ONLY = "read-only"
WORKSPACE_WRITE = "workspace-write"

# include/uapi/linux/landlock.h. The three syscalls have one number on every architecture we allow
# here.
LANDLOCK_MACHINES = {"x86_64", "aarch64"}
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION, LANDLOCK_RULE_PATH_BENEATH = 1, 1
# The file system's rights, bit 0 upwards; REFER came in ABI 2, TRUNCATE in 3, IOCTL_DEV in 5.
(
    FS_EXECUTE,
    FS_WRITE_FILE,
    FS_READ_FILE,
    FS_READ_DIR,
    FS_REMOVE_DIR,
    FS_REMOVE_FILE,
    FS_MAKE_CHAR,
    FS_MAKE_DIR,
    FS_MAKE_REG,
    FS_MAKE_SOCK,
    FS_MAKE_FIFO,
    FS_MAKE_BLOCK,
    FS_MAKE_SYM,
    FS_REFER,
    FS_TRUNCATE,
    FS_IOCTL_DEV,
) = (1 << bit for bit in range(16))
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2  # ABI 6

FS_V1 = FS_REFER - 1  # EXECUTE .. MAKE_SYM
# What a rule on a file may hold
FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# Writing, but never making device nodes: a block device made in the workspace would open the whole
# disk.
WRITE = FS_V1 & ~(FS_MAKE_CHAR | FS_MAKE_BLOCK) | FS_REFER | FS_TRUNCATE

READABLE_DEVICES = ("/dev/zero", "/dev/urandom", "/dev/random", "/dev/full")
# Often a link to /run (systemd-resolved); the rule lands on the file it points to, not on all of
# /run.
READABLE_FILES = ("/etc/resolv.conf",)


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@functools.cache
def landlock_status() -> tuple[int, str | None]:
    """(Landlock ABI version, None), or (0, why it cannot be used). Asked of the kernel once."""
    if sys.platform != "linux":
        return 0, "not Linux"
    if platform.machine() not in LANDLOCK_MACHINES:
        return 0, f"Landlock is not wired up for {platform.machine()} here"
    version = libc().syscall(
        ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
        None,
        ctypes.c_long(0),
        ctypes.c_long(LANDLOCK_CREATE_RULESET_VERSION),
    )
    if version >= 1:
        return version, None
    error = ctypes.get_errno()
    why = {
        errno.EOPNOTSUPP: "Landlock is turned off in this kernel (it is missing from the lsm= boot "
        "parameter)",
        errno.ENOSYS: "Landlock is not available on this kernel (it needs Linux 5.13 or newer)",
    }
    return 0, why.get(error, f"Landlock is not available here ({os.strerror(error)})")


@functools.cache
def libc() -> ctypes.CDLL:
    """The C library, loaded once, for the kernel's system calls (errno kept for
    ctypes.get_errno)."""
    return ctypes.CDLL(None, use_errno=True)


def build_ruleset(policy: Policy, pythons: tuple[str, ...] = ()) -> int:
    """A close-on-exec Landlock ruleset (the child applies it before exec) that handles every access
    right this kernel knows, and allows back only what the policy's mode needs, and reading the
    `pythons` (python_installations()); the policy's protected paths (the run's transcripts and undo
    data) are only read, never written, in every mode, and its hidden files never read."""
    mode, workspace = policy.mode, policy.workspace
    if mode is None or mode not in (READ_ONLY, WORKSPACE_WRITE):
        raise ValueError(
            f"unknown sandbox mode {mode!r}; use {READ_ONLY!r}, {WORKSPACE_WRITE!r} or None"
        )
    version = landlock_status()[0]
    handled = FS_V1 | (FS_REFER if version >= 2 else 0) | (FS_TRUNCATE if version >= 3 else 0)
    handled |= FS_IOCTL_DEV if version >= 5 else 0
    attr = RulesetAttr(handled_access_fs=handled)
    if version >= 4 and mode == READ_ONLY and not policy.network:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # and no rule allows any port back
    if version >= 6:
        attr.scoped = SCOPE_SIGNAL | (SCOPE_ABSTRACT_UNIX_SOCKET if mode == READ_ONLY else 0)
    # Older kernels refuse fields they do not know
    size = 8 if version < 4 else 16 if version < 6 else 24
    fd = libc().syscall(
        ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
        ctypes.byref(attr),
        ctypes.c_long(size),
        ctypes.c_long(0),
    )
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        os.set_inheritable(fd, False)
        # A settings file in the workspace is readable there; a link put in its place must lend
        # nothing else.
        files = [
            f for f in (*READABLE_FILES, *git_config()) if not inside(real_name(Path(f)), workspace)
        ]
        readable = [*readable_folders(), *pythons, *files]
        exceptions = left_out(mode, workspace, policy.hidden, policy.protected)
        # Only READ in the workspace, too, when it is inside the agent's own __pycache__ or virtual
        # environment.
        writable = READ if exceptions.pop(workspace, 0) == READ or mode == READ_ONLY else WRITE
        rules: list[tuple[str | Path, int]] = [
            *(rule for p in readable for rule in readable_but_hidden(p, policy.hidden)),
            *beneath_all_but(workspace, exceptions, writable),
            (policy.tmp, READ | WRITE),
            ("/dev/null", FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV),
            *((p, FS_READ_FILE | FS_IOCTL_DEV) for p in READABLE_DEVICES),
        ]
        for path, access in rules:
            add_rule(fd, path, access & handled)
    except BaseException:
        os.close(fd)
        raise
    return fd


def readable_but_hidden(path: str, hidden: tuple[Path, ...]) -> list[tuple[Path, int]]:
    """Rules to read beneath `path` (a system folder, a Python installation...), all but the hidden
    files in it: the agent's .env is as secret in /opt/agent as in the workspace."""
    # /bin may be a link to /usr/bin
    root, names = (Path(os.path.realpath(path)), [real_name(h) for h in hidden])
    return (
        []
        if root in names
        else beneath_all_but(root, {n: 0 for n in names if root in n.parents}, READ)
    )


def inside(path: Path, folder: Path) -> bool:
    """Whether the path is the folder or beneath it (by name)."""
    return path == folder or folder in path.parents


def real_name(path: Path) -> Path:
    """The path with the links in its folders resolved, but not a link at its end (hidden files are
    named both
    ways: .env and, when it is a link, the file it points to)."""
    return Path(os.path.realpath(path.parent)) / path.name


def hidden_readable(hidden: tuple[Path, ...], pythons: tuple[str, ...]) -> bool:
    """Whether a hidden file is in a folder every command may read (readable_but_hidden leaves it
    out)."""
    roots = [Path(os.path.realpath(p)) for p in (*readable_folders(), *pythons)]
    return any(root in real_name(h).parents for h in hidden for root in roots)


def hidden_inside(workspace: Path, hidden: tuple[Path, ...]) -> list[Path]:
    """The hidden files in the workspace, which no command may read in any mode, or, where one is
    missing, make. Where its folder is missing too (an installed copy's configuration folder not
    made yet, the target of a hidden link), no folder on its way is made either: the rules for the
    workspace stop at the nearest folder of its path that is there (beneath_all_but)."""
    return [h for h in hidden if workspace in h.parents]


def left_out(
    mode: str, workspace: Path, hidden: tuple[Path, ...], protected: tuple[Path, ...] = ()
) -> dict[Path, int]:
    """The paths in the workspace a ruleset grants less than its mode, and what it grants them: the
    hidden files and folders (and the files' other hard links) nothing; in WORKSPACE_WRITE mode,
    the agent's own files (core/ownfiles.py), the Python installation it runs on, its launchers on
    PATH and the protected paths only READ (the workspace itself, when it is inside one of
    them)."""
    read_only, own = {}, {}
    if mode == WORKSPACE_WRITE:
        entries = read_only_entries(AGENT_FOLDER)
        # their other names too: hard links made before the run, from inside
        own = {p: READ for p in entries}
        if inside(AGENT_FOLDER, workspace):
            read_only = dict(own)
        elif any(inside(workspace, p) for p in entries):
            read_only = {workspace: READ}
        # the Python the agent runs on, and the one the program the person types runs on
        starters = launchers()  # PATH looked through once, for both
        for folder in (*interpreter_folders(), *launcher_installations(starters)):
            if inside(workspace, folder):
                read_only = {workspace: READ}
            elif workspace in folder.parents:
                read_only[folder] = READ
        for launcher in starters:  # a link among them: its folder's rule keeps it
            own[launcher] = READ  # its other names in the workspace too
            if workspace in launcher.parents:
                read_only[launcher] = READ
        for path in protected:
            if inside(workspace, path):
                read_only = {workspace: READ}
            elif (kept := protected_inside(workspace, path)) is not None:
                read_only[kept] = own[kept] = READ  # a transcript's other names (hard links) too
        if read_only.get(workspace):  # nothing beneath it is written anyway
            read_only = {workspace: READ}
    named = {
        **read_only,
        **{h: 0 for h in hidden_inside(workspace, hidden)},
    }  # hidden wins: .env is in both
    return {**other_names(workspace, {**own, **{h: 0 for h in hidden}, **named}), **named}


def protected_inside(workspace: Path, path: Path) -> Path | None:
    """What of the workspace keeps a protected path from being written: the path itself, or, while
    it does not exist yet, its nearest folder that does (a command must not make it first, with
    forged runs in it); None when it is outside the workspace, or would make all of it
    read-only."""
    if workspace not in path.parents:
        return None
    while not os.path.lexists(path) and path.parent != workspace:
        path = path.parent
    return path if os.path.lexists(path) else None


def other_names(workspace: Path, paths: dict[Path, int]) -> dict[Path, int]:
    """Other hard links in the workspace to the files among `paths`, each with its file's access
    (the workspace is looked through only when one has them)."""
    linked: dict[tuple[int, int], int] = {}
    for path, access in paths.items():
        with contextlib.suppress(OSError):
            info = os.stat(path, follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                linked[info.st_dev, info.st_ino] = min(
                    access, linked.get((info.st_dev, info.st_ino), access)
                )
    found = {}
    for folder, _, names in os.walk(workspace) if linked else ():
        for name in names:
            if (node := inode(Path(folder, name))) in linked:
                found[Path(folder, name)] = linked[node]
    return found


def beneath_all_but(
    folder: Path, exceptions: dict[Path, int], access: int
) -> list[tuple[Path, int]]:
    """Rules that allow `access` beneath `folder` but only what `exceptions` maps a path to there
    (0: nothing). Landlock only allows, and a right on a folder holds for all beneath it: so a
    folder on the way down to an exception may only be listed, and each of its other entries gets
    `access` one by one."""
    if not exceptions:
        return [(folder, access)]
    rules = [(folder, access & FS_READ_DIR)]
    by_inode = {inode(p): granted for p, granted in exceptions.items()}
    hidden = {inode(p) for p, granted in exceptions.items() if not granted} - {None}
    for entry in os.scandir(folder):
        path = Path(entry.path)
        if entry.is_symlink():
            # a rule would land on its target, wherever that is: a target inside has a rule of its
            # own
            continue
        node = inode(path)
        if path in exceptions or node in by_inode:  # another name (a hard link) for one too
            granted = 0 if node in hidden else exceptions.get(path, by_inode.get(node, 0))
            rules += [(path, granted & access)] if granted else []
        elif not entry.is_dir(follow_symlinks=False):
            # a file where a folder on the way to an exception would be: nothing is beneath it, and
            # its folder's rule keeps it from being replaced by one
            rules.append((path, access))
        else:
            rules += beneath_all_but(
                path, {p: a for p, a in exceptions.items() if path in p.parents}, access
            )
    return rules


def inode(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def add_rule(ruleset: int, path: str | Path, access: int) -> None:
    """Allow `access` beneath `path`; a path that does not exist gets no rule."""
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        if not stat.S_ISDIR(os.fstat(target).st_mode):
            access &= FILE_ONLY  # the kernel refuses directory rights on a file
        rule = PathBeneathAttr(allowed_access=access, parent_fd=target)
        if (
            libc().syscall(
                ctypes.c_long(SYS_LANDLOCK_ADD_RULE),
                ctypes.c_long(ruleset),
                ctypes.c_long(LANDLOCK_RULE_PATH_BENEATH),
                ctypes.byref(rule),
                ctypes.c_long(0),
            )
            != 0
        ):
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(target)
