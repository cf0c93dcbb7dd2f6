"""The kernel sandbox (a later addition to the tutorial's phases): run_shell's command starts in its own process
group under a sandbox mode, applied in named steps in the child just before it starts (no_new_privs, then
Landlock for the file system, then a seccomp filter for sockets and files' metadata); and nothing a command
started outlives it, not even what called setsid() or forked twice (the agent is a child subreaper and sweeps
up leftovers)."""

import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import typing
from pathlib import Path

import seccomp
from landlock import (READ_ONLY, SYS_LANDLOCK_RESTRICT_SELF, WORKSPACE_WRITE, build_ruleset,  # noqa: F401
                      hidden_inside, hidden_readable, landlock_status, libc,  # the modes are this module's API
                      python_installations)

STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} if sys.platform != "win32" else set()

BLOCKED_NOTE = ("(the sandbox may have blocked this: commands that run without asking can only read, "
                "cannot write outside their private temporary folder and cannot use the network; "
                "if the task needs that, ask the user to approve the command)")
OFFLINE_NOTE = ("(the sandbox may have blocked this: programs the user allowed (AGENT_ALLOW) run without asking "
                "but cannot use the network or write outside the workspace and their private temporary folder; "
                "if the task needs that, ask the user to approve the command)")

PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38
CAPABILITY_VERSION_3 = 0x20080522  # include/uapi/linux/capability.h: capset() takes a header and two data rows


class CapabilityHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapabilityData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

# One lock for the ruleset cache, the registry of running command roots and the sweep: a root is registered
# before any other thread can look for leftovers, so a command that has just started is never taken for one.
lock = threading.Lock()
rulesets: dict[tuple[str, str, str, tuple[str, ...]], int] = {}
roots: dict[int, subprocess.Popen] = {}
subreaper = False


def unavailable() -> str | None:
    """Why commands cannot be confined by Landlock here, in a few words; None when they can."""
    return landlock_status()[1]


def unfiltered() -> str | None:
    """Why commands cannot get a seccomp filter here (so unasked ones keep UDP, Unix sockets and chmod), in a
    few words; None when they can."""
    return seccomp.unavailable()


def popen(command: str | bytes, *, mode: str | None, workspace: Path, tmp: Path, hidden: tuple[Path, ...] = (),
          policy: str | None = None, unprivileged: bool = False, **popen_kwargs) -> subprocess.Popen:
    """Start `command` with the shell in a new session (its own process group), under the sandbox `mode`
    (READ_ONLY, WORKSPACE_WRITE, or None for none) and the seccomp `policy` (seccomp.NO_NETWORK or
    seccomp.READ_ONLY, or None for no filter); popen_kwargs (stdin, stdout, stderr, cwd, env) pass through.
    The `hidden` files inside the workspace (the agent's own .env) cannot be read either, in every mode.
    `unprivileged` (Linux): the command and all it starts have no capabilities, even when the agent runs as
    root. Call finish() when it is done. Raises RuntimeError if `mode` or `policy` is set but what it needs is not
    available here."""
    if mode is not None and unavailable():
        raise RuntimeError(f"cannot sandbox the command: {unavailable()}")
    if policy is not None and unfiltered():
        raise RuntimeError(f"cannot filter the command's system calls: {unfiltered()}")
    if sys.platform == "win32":
        return subprocess.Popen(command, shell=True, creationflags=subprocess.CREATE_NEW_PROCESS_GROUP,
                                **popen_kwargs)
    if sys.platform != "linux":
        return subprocess.Popen(command, shell=True, start_new_session=True, **popen_kwargs)
    install = None if policy is None else seccomp.installer(policy)  # built here, never in the child
    path = (popen_kwargs.get("env") or os.environ).get("PATH")  # where the command finds its python3
    pythons = () if mode is None else python_installations(workspace, path)
    # A Ctrl-C (or SIGTERM) that lands while Python forks is raised in its at-fork callbacks, which drop it:
    # the run would go on. So those signals wait until the command is started and known, then stop it.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        with lock:
            become_subreaper()
            ruleset, own = (-1, False) if mode is None else cached_ruleset(mode, workspace, tmp, hidden, pythons)
            try:
                process = subprocess.Popen(command, shell=True, start_new_session=True,
                                           preexec_fn=child_setup(ruleset, install, unprivileged), **popen_kwargs)
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


def child_setup(ruleset: int, install: typing.Callable[[], int] | None = None, unprivileged: bool = False):
    """What runs in the forked child before exec, kept to five system calls because other threads may hold
    locks at fork time. The command's root is a subreaper too, so what it orphans stays its own while it runs
    (and cannot be taken for another command's leftover); no_new_privs marks every process of the command, and
    lets the seccomp filter (`install`, from seccomp.installer) go on last, so it filters none of these calls.
    `unprivileged` empties the capability sets: with no_new_privs, exec then gives back none, even to root
    (whose unasked commands could otherwise reboot the machine, set its clock or load kernel modules)."""
    prctl, syscall, capset = libc().prctl, libc().syscall, libc().capset  # looked up here: dlsym in the child
    args = (ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))  # could wait on a lock
    restrict = (ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_long(ruleset), ctypes.c_long(0))
    header, nothing = CapabilityHeader(CAPABILITY_VERSION_3, 0), (CapabilityData * 2)()

    def setup() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)  # popen() held them in the agent, not for the command
        if (prctl(PR_SET_NO_NEW_PRIVS, *args) != 0 or prctl(PR_SET_CHILD_SUBREAPER, *args) != 0
                or ruleset >= 0 and syscall(*restrict) != 0
                or unprivileged and capset(ctypes.byref(header), nothing) != 0
                or install is not None and install() != 0):
            raise OSError(ctypes.get_errno(), "could not sandbox the command")
    return setup


def cached_ruleset(mode: str, workspace: Path, tmp: Path, hidden: tuple[Path, ...] = (),
                   pythons: tuple[str, ...] = ()) -> tuple[int, bool]:
    """The ruleset's file descriptor for this command, and whether it is the command's own, for the caller to
    close once the child has started. With files to hide in the workspace or in a folder commands may read
    (the agent in /opt), it is built anew each time, since the entries around them may have changed; otherwise
    it is built once per (mode, workspace, tmp, Python installations: a venv made since needs its own) and kept
    until remove_tmp(). Call with `lock`."""
    if hidden_inside(mode, workspace, hidden) or hidden_readable(hidden, pythons):
        return build_ruleset(mode, workspace, tmp, hidden, pythons), True
    key = (mode, str(workspace), str(tmp), pythons)
    if key not in rulesets:
        rulesets[key] = build_ruleset(mode, workspace, tmp, pythons=pythons)
    return rulesets[key], False


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
