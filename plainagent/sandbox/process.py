"""The kernel sandbox (beyond the tutorial): run_shell's command starts in its own process group
under no_new_privs, Landlock and a seccomp filter, applied in that order in the child; and
nothing it started outlives it, not even what called setsid() or forked twice (the agent is a
child subreaper and sweeps up leftovers)."""

import contextlib
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

from plainagent.core.settings import Settings
from plainagent.sandbox import seccomp
from plainagent.sandbox.landlock import (
    READ_ONLY as READ_ONLY,  # the modes are this module's API too
)
from plainagent.sandbox.landlock import (
    SYS_LANDLOCK_RESTRICT_SELF,
    build_ruleset,
    hidden_inside,
    hidden_readable,
    landlock_status,
    libc,
)
from plainagent.sandbox.landlock import WORKSPACE_WRITE as WORKSPACE_WRITE
from plainagent.sandbox.policy import Policy as Policy  # the one value popen() takes
from plainagent.sandbox.readable import python_installations

STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} if sys.platform != "win32" else set()

BLOCKED_NOTE = (
    "(the sandbox may have blocked this: commands that run without asking can only read, "
    "cannot write outside their private temporary folder and cannot use the network; "
    "if the task needs that, ask the user to approve the command)"
)
OFFLINE_NOTE = (
    "(the sandbox may have blocked this: programs the user allowed (AGENT_ALLOW) run without "
    "asking but cannot use the network or write outside the workspace and their private temporary "
    "folder; if the task needs that, ask the user to approve the command)"
)

PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38
# Else: CONFIG_PROC_CHILDREN is off
CHILDREN_LISTED = os.path.exists(f"/proc/self/task/{os.getpid()}/children")
# prctl's arguments after those
ON = (ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
# include/uapi/linux/capability.h: capset() takes a header (version, pid) and two rows of data
# (effective, permitted and inheritable sets), all 32-bit.
CAPABILITY_VERSION_3 = 0x20080522

# One lock for the ruleset cache, the registry of running command roots and the sweep: a root is
# registered before any other thread can look for leftovers, so a command that has just started is
# never taken for one.
lock = threading.Lock()
rulesets: dict[tuple[str | None, str, str, tuple[str, ...], tuple[str, ...], bool], int] = {}
roots: dict[int, subprocess.Popen] = {}


def landlock_missing() -> str | None:
    """Why commands cannot be confined by Landlock here, in a few words; None when they can. (Why
    they cannot get a seccomp filter, so that unasked ones keep UDP, Unix sockets and chmod:
    seccomp.filter_missing().)"""
    return landlock_status()[1]


def confines(settings: Settings) -> bool:
    """Whether the run's commands run under Landlock: the sandbox is wanted, and the kernel has
    it, as settled once for the run (settings.confined, approval.prompt.with_the_sandbox(), which
    the system prompt tells the model), else asked now (settings made without it)."""
    if settings.confined is not None:
        return settings.confined and settings.sandbox != "off"
    return settings.sandbox != "off" and landlock_missing() is None


def filters(settings: Settings) -> bool:
    """Whether the run's unasked commands get a seccomp filter: the sandbox is wanted, and the
    kernel has it."""
    return settings.sandbox != "off" and seccomp.filter_missing() is None


UNDO_NOTE = "; --undo takes back what approved commands change in the workspace only"


def kernel_notes(settings: Settings) -> list[str]:
    """What a person should know at the start about the sandbox: off, or what of it this system
    lacks."""
    if settings.sandbox == "off":
        return [
            "commands run without the kernel sandbox (--sandbox off); the allowlist and approval "
            f"still apply{UNDO_NOTE}"
        ]
    missing, unfiltered = landlock_missing(), seccomp.filter_missing()
    return [sandbox_note(missing, unfiltered)] if missing or unfiltered else []


def sandbox_note(missing: str | None, unfiltered: str | None) -> str:
    """The one start note on what of the kernel sandbox is missing here: Landlock (`missing` says
    why), the seccomp filter (`unfiltered` says why), or both."""
    if missing and (not unfiltered or unfiltered == missing):
        without = f"a kernel sandbox here ({missing})"
    elif missing:
        without = f"a kernel sandbox here ({missing}; seccomp: {unfiltered})"
    else:
        without = (
            f"seccomp here ({unfiltered}): those that run without asking can still use UDP and "
            "Unix sockets and change files' modes and times"
        )
    # An approved command may then write outside the workspace, where undo keeps nothing
    said = f"commands run without {without}; the allowlist and approval still apply"
    return said + UNDO_NOTE if missing else said


def popen(command: str | bytes, policy: Policy, **popen_kwargs) -> subprocess.Popen:
    """Start `command` with the shell in a new session (its own process group), under the sandbox
    `policy` (its Landlock mode, its seccomp filter, what it may not read or write, and whether it
    keeps any capabilities); popen_kwargs pass through. Call finish() when it is done. Raises
    RuntimeError if the policy wants a Landlock mode or a filter that is not available here."""
    if policy.mode is not None and landlock_missing():
        raise RuntimeError(f"cannot sandbox the command: {landlock_missing()}")
    if policy.seccomp is not None and seccomp.filter_missing():
        raise RuntimeError(f"cannot filter the command's system calls: {seccomp.filter_missing()}")
    if sys.platform == "win32":
        return subprocess.Popen(
            command, shell=True, creationflags=subprocess.CREATE_NEW_PROCESS_GROUP, **popen_kwargs
        )
    if sys.platform != "linux":
        return subprocess.Popen(command, shell=True, start_new_session=True, **popen_kwargs)
    # Built here, never in the child
    install = None if policy.seccomp is None else seccomp.installer(policy.seccomp)
    # Where the command finds its python3
    path = (popen_kwargs.get("env") or os.environ).get("PATH")
    pythons = () if policy.mode is None else python_installations(policy.workspace, path)
    # A Ctrl-C (or SIGTERM) that lands while Python forks is raised in its at-fork callbacks, which
    # drop it: the run would go on. So those signals wait until the command is started and known,
    # then stop it.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    try:
        with lock:
            become_subreaper()
            ruleset, own = (-1, False) if policy.mode is None else cached_ruleset(policy, pythons)
            try:
                process = subprocess.Popen(
                    command,
                    shell=True,
                    start_new_session=True,
                    preexec_fn=child_setup(ruleset, install, policy.unprivileged),
                    **popen_kwargs,
                )
            finally:
                # The child has applied it (or failed to start): one per command would pile up
                if own:
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
    """Kill the command's process group, reap it, then kill and reap whatever it left running
    elsewhere (setsid'd or double-forked processes). Safe to call twice."""
    if sys.platform == "win32":
        if process.poll() is None:
            subprocess.run(["taskkill", "/F", "/T", "/PID", str(process.pid)], capture_output=True)
        process.wait()
        return
    with lock:
        ours = roots.get(process.pid) is process or sys.platform != "linux"
    if ours:  # a second call must not signal a group whose number may since have been reused
        with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    if sys.platform != "linux":
        return
    with lock:
        if roots.get(process.pid) is process:
            del roots[process.pid]
            sweep()


def sweep() -> None:
    """Kill and reap the agent's children that are no running command's root, until none is left: a
    killed leftover's own children come back to the agent in turn. Call with `lock` held."""
    everyone_marked = no_new_privs("self")  # then every child of the agent looks like a command's
    while True:
        leftovers = [
            pid for pid in children() if pid not in roots and (everyone_marked or no_new_privs(pid))
        ]
        if not leftovers:
            return
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in leftovers:  # exactly these: other threads' Popen objects reap their own children
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def children() -> set[int]:
    """The agent's child processes, from the kernel's per-thread lists (an orphan may be handed to
    any thread), or without them (no CONFIG_PROC_CHILDREN) from the parent of every process in
    /proc, which is slower."""
    me, found = os.getpid(), set[int]()
    if CHILDREN_LISTED:
        for thread in os.listdir("/proc/self/task"):
            with contextlib.suppress(FileNotFoundError):  # the thread has just ended
                found.update(
                    int(pid)
                    for pid in Path(f"/proc/self/task/{thread}/children").read_text().split()
                )
        return found
    for name in filter(str.isdigit, os.listdir("/proc")):
        # After the name in (...), which may hold spaces: state, parent
        with contextlib.suppress(OSError):
            if int(Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()[1]) == me:
                found.add(int(name))
    return found


def no_new_privs(pid: int | str) -> bool:
    """Whether a process has no_new_privs, which every command sets for all it starts: it tells a
    command's leftovers from other children of the agent (unless the agent has it too)."""
    try:
        return "NoNewPrivs:\t1" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False  # gone: leave the pid alone, it may already be someone else's


@functools.cache  # set once; a failure is not cached
def become_subreaper() -> None:
    """Orphans of commands come back to the agent instead of init, so finish() can find them."""
    if libc().prctl(PR_SET_CHILD_SUBREAPER, *ON) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def child_setup(
    ruleset: int, install: typing.Callable[[], int] | None = None, unprivileged: bool = False
):
    """What runs in the forked child before exec: five system calls, all looked up and built here,
    since other threads may hold locks at fork time (dlsym in the child could wait for good). The
    command's root is a subreaper too, so what it orphans stays its own; no_new_privs marks every
    process of the command, and lets the seccomp filter (`install`, from seccomp.installer) go on
    last, so it filters none of these calls. `unprivileged` empties the capability sets: with
    no_new_privs, exec gives back none, even to root (who could reboot)."""
    prctl, syscall, capset = libc().prctl, libc().syscall, libc().capset
    restrict = (ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_long(ruleset), ctypes.c_long(0))
    header, nothing = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0), (ctypes.c_uint32 * 6)()

    def setup() -> None:
        # Popen() held them in the agent, not for the command
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
        if (
            prctl(PR_SET_NO_NEW_PRIVS, *ON) != 0
            or prctl(PR_SET_CHILD_SUBREAPER, *ON) != 0
            or ruleset >= 0
            and syscall(*restrict) != 0
            or unprivileged
            and capset(ctypes.byref(header), nothing) != 0
            or install is not None
            and install() != 0
        ):
            raise OSError(ctypes.get_errno(), "could not sandbox the command")

    return setup


def cached_ruleset(policy: Policy, pythons: tuple[str, ...]) -> tuple[int, bool]:
    """The policy's ruleset (build_ruleset) as a file descriptor, and whether it is the command's
    own (to close once the child has started): with files to hide or protect in the workspace, or
    to hide in a folder commands may read (the agent in /opt), it is built anew, as the entries
    around them may have changed; else once per (mode, workspace, tmp, pythons: a venv made since
    needs its own, protected), kept until remove_tmp(). Call with `lock`."""
    if (
        hidden_inside(policy.workspace, policy.hidden)
        or hidden_readable(policy.hidden, pythons)
        or any(policy.workspace in p.parents for p in policy.protected)
    ):
        return build_ruleset(policy, pythons), True
    protected = tuple(map(str, policy.protected))
    key = (policy.mode, str(policy.workspace), str(policy.tmp), pythons, protected, policy.network)
    if key not in rulesets:
        # For hard links to them only
        rulesets[key] = build_ruleset(policy, pythons)
    return rulesets[key], False


def make_tmp() -> Path:
    """A private temporary folder (mode 0700) for one run's commands; their TMPDIR should point at
    it."""
    return Path(tempfile.mkdtemp(prefix="agent-tmp-"))


def remove_tmp(path: Path) -> None:
    """Remove a folder from make_tmp() and close the rulesets built for it."""
    with lock:
        for key in [key for key in rulesets if key[2] == str(path)]:
            os.close(rulesets.pop(key))
    shutil.rmtree(path, ignore_errors=True)


def blocked(exit_code: int, stderr: str) -> bool:
    """Whether a sandboxed command likely failed because the kernel refused it something: a guess
    from stderr (so say "may have"), but not from warnings (git warns that it cannot read
    ~/.gitconfig, then goes on)."""
    return exit_code != 0 and any(
        sign in line
        for line in stderr.splitlines()
        if not line.startswith("warning:")
        for sign in ("Permission denied", "Operation not permitted", "EACCES", "EPERM")
    )
