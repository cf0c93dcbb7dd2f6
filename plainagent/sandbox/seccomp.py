"""The kernel sandbox, part two (beyond the tutorial): a seccomp-BPF filter that closes what
Landlock leaves open to a command that runs without asking: sockets, io_uring, keyrings, System V
IPC and message queues, other processes' limits and scheduling, and in read-only mode changes to
a file's mode, owner, times or extended attributes."""

import ctypes
import errno
import functools
import os
import platform
import sys
from collections.abc import Callable

from plainagent.sandbox.landlock import libc

NO_NETWORK = "no-network"
NO_CHANGES = "no-changes"  # no network, and no changes to files' metadata either

# Each refused call: its number on (x86_64, aarch64), None where that architecture lacks it. From
# the kernel's arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h (which
# aarch64 uses).
NETWORK_CALLS = {
    "socket": (41, 198),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    # The kernel's keyrings: the user's keyring holds whatever the person's programs put there
    # (tokens,
    # Kerberos tickets), and Landlock does not guard it.
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    # System V IPC and POSIX message queues: machine-wide, so a message queue or shared memory
    # segment of any other process is a way out (Landlock does not guard them). An id is a number to
    # guess: all calls go.
    "shmget": (29, 194),
    "shmat": (30, 196),
    "shmctl": (31, 195),
    "shmdt": (67, 197),
    "semget": (64, 190),
    "semop": (65, 193),
    "semctl": (66, 191),
    "semtimedop": (220, 192),
    "msgget": (68, 186),
    "msgsnd": (69, 189),
    "msgrcv": (70, 188),
    "msgctl": (71, 187),
    "mq_open": (240, 180),
    "mq_unlink": (241, 181),
    "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183),
    "mq_notify": (244, 184),
    "mq_getsetattr": (245, 185),
}
# Landlock cannot refuse these (its documentation says so): they change a file without writing to
# it.
METADATA_CALLS = {
    "chmod": (90, None),
    "fchmod": (91, 52),
    "fchmodat": (268, 53),
    "fchmodat2": (452, 452),
    "chown": (92, None),
    "fchown": (93, 55),
    "lchown": (94, None),
    "fchownat": (260, 54),
    "utime": (132, None),
    "utimes": (235, None),
    "utimensat": (280, 88),
    "futimesat": (261, None),
    "setxattr": (188, 5),
    "lsetxattr": (189, 6),
    "fsetxattr": (190, 7),
    "setxattrat": (463, 463),
    "removexattr": (197, 14),
    "lremovexattr": (198, 15),
    "fremovexattr": (199, 16),
    "removexattrat": (466, 466),
}
SOCKETPAIR = (53, 199)  # allowed, but only for local stream pairs
COLUMN = {"x86_64": 0, "aarch64": 1}
# include/uapi/linux/audit.h: the ELF machine number, 64-bit and little-endian flags.
NATIVE_ARCH = {"x86_64": 62 | 0x80000000 | 0x40000000, "aarch64": 183 | 0x80000000 | 0x40000000}
X32_SYSCALL_BIT = 0x40000000  # x86_64 only: the same entry point, another ABI, other numbers

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RET_KILL_PROCESS, RET_ALLOW = 0x80000000, 0x7FFF0000
RET_EPERM = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO with the errno in its low bits
# struct seccomp_data: int nr, u32 arch, u64 instruction_pointer, u64 args[6]; an argument's low
# word suffices where the kernel reads it as an int.
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24
# Calls that may act on another process of the same user, which Landlock does not guard (it guards
# ptrace and signals): allowed only on the caller itself. Each: its numbers, the argument naming the
# process (0: the caller), and where one says what that argument is, that argument and the values
# allowed (a process or its group, not all the user's processes). prlimit64 on the agent could make
# its next write kill it (RLIMIT_FSIZE).
ON_ITSELF_ONLY = {
    "prlimit64": ((302, 261), ARG0, None),
    "sched_setaffinity": ((203, 122), ARG0, None),
    "sched_setscheduler": ((144, 119), ARG0, None),
    "sched_setparam": ((142, 118), ARG0, None),
    "sched_setattr": ((314, 274), ARG0, None),
    "setpriority": ((141, 140), ARG1, (ARG0, (0, 1))),  # PRIO_PROCESS or PRIO_PGRP, never PRIO_USER
    "ioprio_set": ((251, 30), ARG1, (ARG0, (1, 2))),  # IOPRIO_WHO_PROCESS or _PGRP, never _USER
}
# include/uapi/linux/bpf_common.h
# BPF_LD | BPF_W | BPF_ABS, BPF_ALU | BPF_AND | BPF_K, BPF_RET | BPF_K
LOAD, AND, RET = (0x20, 0x54, 0x06)
JEQ, JSET = 0x15, 0x45  # BPF_JMP | BPF_JEQ | BPF_K, BPF_JMP | BPF_JSET | BPF_K
AF_UNIX, SOCK_STREAM, SOCK_SEQPACKET, SOCK_TYPE_MASK = 1, 1, 5, 0xF
Step = tuple[int, int, int, int]  # (code, jump if true, jump if false, k)


class SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


@functools.cache
def filter_missing() -> str | None:
    """None if seccomp filters can be installed here, else a short reason why not. Asked of the
    kernel once."""
    if sys.platform != "linux":
        return "not Linux"
    if platform.machine() not in COLUMN or ctypes.sizeof(ctypes.c_void_p) != 8:
        return (
            f"seccomp is not wired up for {platform.machine()} "
            f"({ctypes.sizeof(ctypes.c_void_p) * 8}-bit) here"
        )
    # Asking for filter mode without a filter installs nothing: EFAULT says the kernel would have
    # read one.
    if (
        libc().prctl(
            PR_SET_SECCOMP,
            ctypes.c_ulong(SECCOMP_MODE_FILTER),
            None,
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )
        != 0
        and ctypes.get_errno() == errno.EFAULT
    ):
        return None
    if ctypes.get_errno() == errno.EINVAL:
        return "seccomp filters are not available on this kernel (it lacks CONFIG_SECCOMP_FILTER)"
    return f"seccomp filters are not available here ({os.strerror(ctypes.get_errno())})"


def installer(policy: str) -> Callable[[], int]:
    """A function for the forked child to call right before exec, that installs the policy's filter
    with one prctl and returns its result (0, or -1 with ctypes' errno set); looked up and built
    here, as dlsym in the child could wait for good on a lock held at fork time. The child must set
    no_new_privs first: else the kernel refuses the filter (without CAP_SYS_ADMIN), and a setuid
    program could get around it."""
    prctl, args = (
        libc().prctl,
        (
            PR_SET_SECCOMP,
            ctypes.c_ulong(SECCOMP_MODE_FILTER),
            ctypes.byref(program(policy)),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        ),
    )
    return lambda: prctl(*args)


@functools.cache
def program(policy: str) -> SockFprog:
    """The policy's BPF program for this machine, built once; the cache keeps its instructions alive
    too."""
    if policy not in (NO_NETWORK, NO_CHANGES):
        raise ValueError(f"unknown seccomp policy {policy!r}; use {NO_NETWORK!r} or {NO_CHANGES!r}")
    if filter_missing():
        raise RuntimeError(f"cannot build a seccomp filter: {filter_missing()}")
    code = instructions(policy, platform.machine())
    return SockFprog(len(code), (SockFilter * len(code))(*(SockFilter(*step) for step in code)))


def instructions(policy: str, machine: str) -> list[Step]:
    """The filter's steps. Another ABI (i386 or x32 on x86_64, arm32 on aarch64) numbers every call
    differently, so none gets through: a process of a foreign architecture is killed at its first
    call (SIGSYS: "Bad system call"), and an x32 call, which comes under the native arch, gets
    EPERM."""
    refused = NETWORK_CALLS | (METADATA_CALLS if policy == NO_CHANGES else {})
    numbers = [number for pair in refused.values() if (number := pair[COLUMN[machine]]) is not None]
    return [
        load(ARCH),
        *unless_equal(NATIVE_ARCH[machine], RET_KILL_PROCESS),
        load(NR),
        *([(JSET, 0, 1, X32_SYSCALL_BIT), answer(RET_EPERM)] if machine == "x86_64" else []),
        *(step for number in numbers for step in if_equal(number, RET_EPERM)),
        *(
            step
            for numbers, who, which in ON_ITSELF_ONLY.values()
            for step in only_on_itself(numbers[COLUMN[machine]], who, which)
        ),
        *socketpair_only_for_pipes(SOCKETPAIR[COLUMN[machine]]),
        answer(RET_ALLOW),
    ]


def only_on_itself(number: int, who: int, which: tuple[int, tuple[int, ...]] | None) -> list[Step]:
    """Allow the call only when its `who` argument is 0 (the caller) and, where given, its `which`
    argument is one of the values allowed; else EPERM. Expects the call number loaded, and leaves it
    so for other calls."""
    check = [load(who), *unless_equal(0, RET_EPERM)]
    if which is not None:
        offset, allowed = which
        check += [load(offset), *(step for value in allowed for step in if_equal(value, RET_ALLOW))]
    check += [answer(RET_ALLOW if which is None else RET_EPERM)]
    return [(JEQ, 0, len(check), number), *check]


def socketpair_only_for_pipes(number: int) -> list[Step]:
    """socketpair() only for local stream pairs (pipes between processes): a Unix datagram socket
    may send to any socket with a path, even paired, and other families are network protocols. Comes
    last (it loads args)."""
    check = [
        load(ARG0),
        *unless_equal(AF_UNIX, RET_EPERM),
        load(ARG1),
        (AND, 0, 0, SOCK_TYPE_MASK),
        *if_equal(SOCK_STREAM, RET_ALLOW),
        *if_equal(SOCK_SEQPACKET, RET_ALLOW),
        answer(RET_EPERM),
    ]
    return [(JEQ, 0, len(check), number), *check]


def load(offset: int) -> Step:
    return LOAD, 0, 0, offset


def answer(action: int) -> Step:
    return RET, 0, 0, action


def if_equal(value: int, action: int) -> list[Step]:
    return [(JEQ, 0, 1, value), answer(action)]


def unless_equal(value: int, action: int) -> list[Step]:
    return [(JEQ, 1, 0, value), answer(action)]
