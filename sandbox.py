"""The kernel's side of run_shell: on Linux each command runs under Landlock (read-only and offline, or writing
only in the workspace), applied in the child just before it starts; and nothing a command started outlives it,
not even what called setsid() or forked twice (the agent is a child subreaper and sweeps up leftovers)."""

import ctypes
import errno
import functools
import os
import platform
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} if sys.platform != "win32" else set()
READ_ONLY = "read-only"
WORKSPACE_WRITE = "workspace-write"

BLOCKED_NOTE = ("(the sandbox may have blocked this: commands that run without asking can only read, "
                "cannot write outside their private temporary folder and cannot use the network; "
                "if the task needs that, ask the user to approve the command)")

# include/uapi/linux/landlock.h. The three syscalls have one number on every architecture we allow here.
LANDLOCK_MACHINES = {"x86_64", "aarch64"}
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3 and 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38

FS_V1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV  # what a rule on a file may hold
READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# Writing, but never making device nodes: a block device made in the workspace would open the whole disk.
WRITE = FS_V1 & ~(FS_MAKE_CHAR | FS_MAKE_BLOCK) | FS_REFER | FS_TRUNCATE

SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
READABLE_DEVICES = ("/dev/zero", "/dev/urandom", "/dev/random", "/dev/full")
# Often a link to /run (systemd-resolved); the rule lands on the file it points to, not on all of /run.
READABLE_FILES = ("/etc/resolv.conf",)


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


# One lock for the ruleset cache, the registry of running command roots and the sweep: a root is registered
# before any other thread can look for leftovers, so a command that has just started is never taken for one.
lock = threading.Lock()
rulesets: dict[tuple[str, str, str], int] = {}
roots: dict[int, subprocess.Popen] = {}
subreaper = False


def available() -> str | None:
    """None if commands can be sandboxed here, else a short reason why not."""
    return landlock_status()[1]


@functools.cache
def landlock_status() -> tuple[int, str | None]:
    """(Landlock ABI version, None), or (0, why it cannot be used). Asked of the kernel once."""
    if sys.platform != "linux":
        return 0, "not Linux"
    if platform.machine() not in LANDLOCK_MACHINES:
        return 0, f"Landlock is not wired up for {platform.machine()} here"
    version = libc().syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_long(0),
                             ctypes.c_long(LANDLOCK_CREATE_RULESET_VERSION))
    if version >= 1:
        return version, None
    error = ctypes.get_errno()
    if error == errno.EOPNOTSUPP:
        return 0, "Landlock is turned off in this kernel (it is missing from the lsm= boot parameter)"
    if error == errno.ENOSYS:
        return 0, "Landlock is not available on this kernel (it needs Linux 5.13 or newer)"
    return 0, f"Landlock is not available here ({os.strerror(error)})"


@functools.cache
def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def popen(command: str, *, mode: str | None, workspace: Path, tmp: Path, hidden: tuple[Path, ...] = (),
          **popen_kwargs) -> subprocess.Popen:
    """Start `command` with the shell in a new session (its own process group), under the sandbox `mode`
    (READ_ONLY, WORKSPACE_WRITE, or None for none); popen_kwargs (stdin, stdout, stderr, cwd, env) pass through.
    In READ_ONLY mode the `hidden` files inside the workspace (the agent's own .env) cannot be read either.
    Call finish() when it is done. Raises RuntimeError if `mode` is set but the sandbox is not available."""
    if mode is not None and available():
        raise RuntimeError(f"cannot sandbox the command: {available()}")
    if sys.platform == "win32":
        return subprocess.Popen(command, shell=True, creationflags=subprocess.CREATE_NEW_PROCESS_GROUP,
                                **popen_kwargs)
    if sys.platform != "linux":
        return subprocess.Popen(command, shell=True, start_new_session=True, **popen_kwargs)
    # A Ctrl-C (or SIGTERM) that lands while Python forks is raised in its at-fork callbacks, which drop it:
    # the run would go on. So those signals wait until the command is started and known, then stop it.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        with lock:
            become_subreaper()
            ruleset, own = (-1, False) if mode is None else cached_ruleset(mode, workspace, tmp, hidden)
            try:
                process = subprocess.Popen(command, shell=True, start_new_session=True,
                                           preexec_fn=child_setup(ruleset), **popen_kwargs)
            finally:
                if own:  # the child has applied it (or failed to start): one per command would pile up
                    os.close(ruleset)
            roots[process.pid] = process
    finally:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a signal that waited is raised here
        except BaseException:
            if "process" in locals():
                finish(process)
            raise
    return process


def finish(process: subprocess.Popen) -> None:
    """Kill the command's process group, reap it, then kill and reap whatever it left running elsewhere
    (setsid'd or double-forked processes). Safe to call twice."""
    if sys.platform == "win32":
        if process.poll() is None:
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(process.pid)], capture_output=True)
        process.wait()
        return
    with lock:
        ours = roots.get(process.pid) is process or sys.platform != "linux"
    if ours:  # a second call must not signal a group whose number may since have been reused
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is already gone
    process.wait()
    if sys.platform != "linux":
        return
    with lock:
        if roots.get(process.pid) is process:
            del roots[process.pid]
            sweep()


def sweep() -> None:
    """Kill and reap the agent's children that are no running command's root, until none is left: a killed
    leftover's own children come back to the agent in turn. Call with `lock` held."""
    everyone_marked = no_new_privs("self")  # then every child of the agent looks like a command's
    while True:
        leftovers = [pid for pid in children() if pid not in roots and (everyone_marked or no_new_privs(pid))]
        if not leftovers:
            return
        for pid in leftovers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in leftovers:  # exactly these: other threads' Popen objects reap their own children
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def children() -> set[int]:
    """The agent's child processes, from the kernel's per-thread lists (an orphan may be handed to any thread)."""
    if not children_listed():
        return children_by_scan()
    found = set()
    for thread in os.listdir("/proc/self/task"):
        try:
            found.update(int(pid) for pid in Path(f"/proc/self/task/{thread}/children").read_text().split())
        except FileNotFoundError:
            continue  # the thread has just ended
    return found


@functools.cache
def children_listed() -> bool:
    """Whether this kernel keeps child lists in /proc (CONFIG_PROC_CHILDREN); scanning all of /proc is slower."""
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def children_by_scan() -> set[int]:
    me, found = os.getpid(), set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == me:  # the name in (...) may hold spaces
                found.add(int(name))
    return found


def no_new_privs(pid: int | str) -> bool:
    """Whether a process has no_new_privs, which every command sets and all it starts inherits for good: it
    tells a command's leftovers from other children of the agent (unless the agent has it set too)."""
    try:
        return "NoNewPrivs:\t1" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False  # gone: leave the pid alone, it may already be someone else's


def become_subreaper() -> None:
    """Orphans of commands come back to the agent instead of init, so finish() can find them. Set once."""
    global subreaper
    if not subreaper:
        if libc().prctl(PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                        ctypes.c_ulong(0)) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
        subreaper = True


def child_setup(ruleset: int):
    """What runs in the forked child before exec, kept to three system calls because other threads may hold
    locks at fork time. The command's root is a subreaper too, so what it orphans stays its own while it runs
    (and cannot be taken for another command's leftover); no_new_privs marks every process of the command."""
    prctl, syscall = libc().prctl, libc().syscall  # looked up here: dlsym in the child could wait on a lock
    args = (ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    restrict = (ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_long(ruleset), ctypes.c_long(0))

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)  # popen() held them in the agent, not for the command
        if (prctl(PR_SET_NO_NEW_PRIVS, *args) != 0 or prctl(PR_SET_CHILD_SUBREAPER, *args) != 0
                or ruleset >= 0 and syscall(*restrict) != 0):
            raise OSError(ctypes.get_errno(), "could not sandbox the command")
    return setup


def cached_ruleset(mode: str, workspace: Path, tmp: Path, hidden: tuple[Path, ...] = ()) -> tuple[int, bool]:
    """The ruleset's file descriptor for this command, and whether it is the command's own, for the caller to
    close once the child has started. Read-only with files to hide in the workspace, it is built anew each
    time, since the workspace's entries may have changed; otherwise it is built once per (mode, workspace, tmp)
    and kept until remove_tmp(). Call with `lock`."""
    if hidden_inside(mode, workspace, hidden):
        return build_ruleset(mode, workspace, tmp, hidden), True
    key = (mode, str(workspace), str(tmp))
    if key not in rulesets:
        rulesets[key] = build_ruleset(mode, workspace, tmp)
    return rulesets[key], False


def hidden_inside(mode: str, workspace: Path, hidden: tuple[Path, ...]) -> list[Path]:
    """The hidden files a ruleset must leave out: those in the workspace, and only in READ_ONLY mode (an
    approved command may read anything in the workspace)."""
    return [h for h in hidden if workspace in h.parents] if mode == READ_ONLY else []


def build_ruleset(mode: str, workspace: Path, tmp: Path, hidden: tuple[Path, ...] = ()) -> int:
    """A Landlock ruleset that handles every access right this kernel knows, and allows back only what `mode`
    needs. Close-on-exec: the child has applied it before exec, and no command inherits it."""
    if mode not in (READ_ONLY, WORKSPACE_WRITE):
        raise ValueError(f"unknown sandbox mode {mode!r}; use {READ_ONLY!r}, {WORKSPACE_WRITE!r} or None")
    version = landlock_status()[0]
    handled = FS_V1 | (FS_REFER if version >= 2 else 0) | (FS_TRUNCATE if version >= 3 else 0)
    handled |= FS_IOCTL_DEV if version >= 5 else 0
    attr = RulesetAttr(handled_access_fs=handled)
    if version >= 4 and mode == READ_ONLY:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # and no rule allows any port back
    if version >= 6:
        attr.scoped = SCOPE_SIGNAL | (SCOPE_ABSTRACT_UNIX_SOCKET if mode == READ_ONLY else 0)
    size = 8 if version < 4 else 16 if version < 6 else 24  # older kernels refuse fields they do not know
    fd = libc().syscall(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_long(size),
                        ctypes.c_long(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        os.set_inheritable(fd, False)
        writable = WRITE if mode == WORKSPACE_WRITE else READ
        readable = [*readable_folders(), *READABLE_FILES, *git_config()]
        inside = hidden_inside(mode, workspace, hidden)
        for path, access in [*((p, READ) for p in readable), *beneath_all_but(workspace, inside, writable),
                             (tmp, READ | WRITE),
                             ("/dev/null", FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE | FS_IOCTL_DEV),
                             *((p, FS_READ_FILE | FS_IOCTL_DEV) for p in READABLE_DEVICES)]:
            add_rule(fd, path, access & handled)
    except BaseException:
        os.close(fd)
        raise
    return fd


def beneath_all_but(folder: Path, hidden: list[Path], access: int) -> list[tuple[Path, int]]:
    """Rules that allow `access` beneath `folder` except beneath the hidden paths: a folder on the way down to
    one may only be listed, and each of its other entries gets `access`. (Landlock only allows; so to leave
    one file out, everything beside it is allowed one by one.)"""
    if not hidden:
        return [(folder, access)]
    rules = [(folder, access & FS_READ_DIR)]
    files = {inode(h) for h in hidden} - {None}
    for entry in os.scandir(folder):
        path = Path(entry.path)
        # A link gets no rule (one would land on its target, wherever that is): what it points to inside the
        # workspace has a rule of its own. Nor does another name (a hard link) for a hidden file.
        if path not in hidden and not entry.is_symlink() and inode(path) not in files:
            rules += beneath_all_but(path, [h for h in hidden if path in h.parents], access)
    return rules


def inode(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def readable_folders() -> list[str]:
    """System folders and the Python installation (which may live in a home folder, e.g. under ~/.pyenv)."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable))}
    return [*SYSTEM_FOLDERS, *sorted(python)]


def git_config() -> list[str]:
    """The user's git settings: git stops with "fatal" when it may not read them (and a commit needs the name in
    them). Nothing else in the home folder is readable."""
    home = os.path.expanduser("~")
    return [os.path.join(home, ".gitconfig"), os.path.join(home, ".config", "git")]


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
        if libc().syscall(ctypes.c_long(SYS_LANDLOCK_ADD_RULE), ctypes.c_long(ruleset),
                          ctypes.c_long(LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule), ctypes.c_long(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(target)


def make_tmp() -> Path:
    """A private temporary folder (mode 0700) for one run's commands; their TMPDIR should point at it."""
    return Path(tempfile.mkdtemp(prefix="agent-tmp-"))


def remove_tmp(path: Path) -> None:
    """Remove a folder from make_tmp() and close the rulesets built for it."""
    with lock:
        for key in [key for key in rulesets if key[2] == str(path)]:
            os.close(rulesets.pop(key))
    shutil.rmtree(path, ignore_errors=True)


def blocked(exit_code: int, stderr: str) -> bool:
    """Whether a sandboxed command likely failed because the kernel refused it a file or a connection (EACCES
    or EPERM). A guess from the text, so say "may have": the command may also have failed for its own reasons.
    Warnings are not why a command failed (git warns that it cannot read ~/.gitconfig, then goes on)."""
    return exit_code != 0 and any(sign in line for line in stderr.splitlines() if not line.startswith("warning:")
                                  for sign in ("Permission denied", "Operation not permitted", "EACCES", "EPERM"))
