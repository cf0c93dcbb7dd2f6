"""The seccomp filter against real child processes: what a command under NO_NETWORK or
NO_CHANGES can no longer do (sockets of every kind, io_uring, changing files' metadata, other
ABIs) and what it still can. Each refusal is checked against the same child without the
filter, so each test can fail."""

import ctypes
import errno
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from plainagent.sandbox import seccomp

pytestmark = pytest.mark.skipif(
    seccomp.filter_missing() is not None,
    reason=f"seccomp cannot be applied here: {seccomp.filter_missing()}",
)
POLICIES = (seccomp.NO_NETWORK, seccomp.NO_CHANGES)
PR_SET_NO_NEW_PRIVS = 38
X86_64 = platform.machine() == "x86_64"
libc = ctypes.CDLL(None, use_errno=True)
# Defined in every child: call(number, *args) makes a raw system call and
# prints "ok" or the errno's name.
PRELUDE = """\
import ctypes, errno, json, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
def outcome(action):
    try:
        action()
        return "ok"
    except OSError as error:
        return errno.errorcode[error.errno]
def raw(number, *args):
    if libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args)) < 0:
        raise OSError(ctypes.get_errno(), "")
"""


def child_setup(policy: str | None):
    """As sandbox.child_setup does it: no_new_privs first, then the filter (None:
    no filter, to compare)."""
    prctl, flag = (
        libc.prctl,
        (ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)),
    )
    install = seccomp.installer(policy) if policy else None

    def setup() -> None:
        if prctl(PR_SET_NO_NEW_PRIVS, *flag) != 0 or install is not None and install() != 0:
            raise OSError(ctypes.get_errno(), "could not install the filter")

    return setup


def run(code: str, policy: str | None) -> subprocess.CompletedProcess:
    """Python running PRELUDE then `code`, under the policy's filter."""
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
        preexec_fn=child_setup(policy),
        capture_output=True,
        text=True,
        timeout=30,
    )


def attempt(code: str, policy: str | None) -> str:
    """What `code` printed, or the name of the errno of the OSError it raised."""
    done = run(
        f"try:\n{textwrap.indent(textwrap.dedent(code), '    ')}\n"
        "except OSError as error:\n    print(errno.errorcode[error.errno])",
        policy,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_filter_loads_and_checks_the_architecture_first():
    program = seccomp.program(seccomp.NO_CHANGES)
    steps = [
        (program.filter[i].code, program.filter[i].jt, program.filter[i].jf, program.filter[i].k)
        for i in range(3)
    ]
    assert steps == [
        (0x20, 0, 0, 4),
        (0x15, 1, 0, seccomp.NATIVE_ARCH[platform.machine()]),
        (0x06, 0, 0, 0x80000000),  # load seccomp_data.arch; the native one skips the kill
    ]
    assert seccomp.program(seccomp.NO_CHANGES) is program  # built once
    with pytest.raises(ValueError, match="unknown seccomp policy"):
        seccomp.program("offline")


@pytest.mark.parametrize("policy", POLICIES)
def test_udp_to_a_local_listener_is_refused(policy):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        send = (
            "socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'{}', ('127.0.0.1', {})); "
            "print('ok')"
        )
        assert attempt(send.format("filtered", listener.getsockname()[1]), policy) == "EPERM"
        assert attempt(send.format("open", listener.getsockname()[1]), None) == "ok"
        listener.settimeout(10)
        # the first to arrive: nothing came from the filtered child
        assert listener.recv(100) == b"open"
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):  # nor anything after it
            listener.recv(100)


@pytest.mark.parametrize("family", ["unix", "tcp"])
def test_a_unix_socket_with_a_path_or_tcp_is_refused(family, tmp_path):
    """A Unix socket with a path is how ssh-agent, docker and D-Bus are reached;
    Landlock does not stop it."""
    if family == "unix":
        listener, address = socket.socket(socket.AF_UNIX), str(tmp_path / "agent.sock")
        listener.bind(address)
        connect = (
            f"s = socket.socket(socket.AF_UNIX); s.connect({address!r}); s.sendall(b'{{}}'); "
            "print('ok')"
        )
    else:
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        connect = (
            f"s = socket.create_connection(('127.0.0.1', {port})); s.sendall(b'{{}}'); print('ok')"
        )
    with listener:
        listener.listen()
        assert attempt(connect.format("filtered"), seccomp.NO_NETWORK) == "EPERM"
        assert attempt(connect.format("open"), None) == "ok"
        listener.settimeout(10)
        connection, _ = listener.accept()  # the first connection is the unfiltered child's
        with connection:
            assert connection.recv(100) == b"open"
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):  # nor anything after it
            listener.accept()


def test_every_address_family_is_refused():
    sweep = """
        results = {}
        for family in range(64):
            tries = [outcome(lambda: socket.socket(family, kind, 0).close())
                     for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW)]
            results[family] = "ok" if "ok" in tries else tries[0]
        print(json.dumps(results))
    """
    filtered, unfiltered = (
        json.loads(run(sweep, policy).stdout) for policy in (seccomp.NO_NETWORK, None)
    )
    assert set(filtered.values()) == {"EPERM"}
    opened = {family for family, result in unfiltered.items() if result == "ok"}
    assert {
        str(int(f)) for f in (socket.AF_UNIX, socket.AF_INET, socket.AF_NETLINK, socket.AF_PACKET)
    } <= opened


def test_root_is_refused_too():
    if os.getuid() != 0:
        pytest.skip("needs root: CI runs as root, and seccomp must hold there too")
    assert attempt("socket.socket(); print('ok')", seccomp.NO_NETWORK) == "EPERM"
    assert attempt("socket.socket(); print('ok')", None) == "ok"


@pytest.mark.parametrize("policy", POLICIES)
def test_socketpair_and_pipes_still_work(policy):
    both = """
        a, b = socket.socketpair()
        c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        r, w = os.pipe()
        a.sendall(b"x"), c.sendall(b"y"), os.write(w, b"z")
        print(b.recv(1).decode() + d.recv(1).decode() + os.read(r, 1).decode())
    """
    assert attempt(both, policy) == "xyz"


def test_a_datagram_socketpair_cannot_send_to_a_socket_with_a_path(tmp_path):
    """A Unix datagram socket sends to any path it is given, paired or not (journald,
    syslog, systemd notify)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(tmp_path / "log.sock"))
        send = (
            "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); "
            f"a.sendto(b'{{}}', {listener.getsockname()!r}); print('ok')"
        )
        assert attempt(send.format("filtered"), seccomp.NO_NETWORK) == "EPERM"
        assert attempt(send.format("open"), None) == "ok"
        listener.settimeout(10)
        assert listener.recv(100) == b"open"
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):  # nor anything after it
            listener.recv(100)


@pytest.mark.parametrize(
    "family, kind, unfiltered",
    [
        ("AF_UNIX", "SOCK_RAW", "ok"),  # a datagram pair in disguise
        ("AF_INET", "SOCK_STREAM", errno.errorcode[errno.EOPNOTSUPP]),
    ],
)
def test_socketpair_is_refused_for_anything_but_local_stream_pairs(family, kind, unfiltered):
    pair = f"socket.socketpair(socket.{family}, socket.{kind}); print('ok')"
    assert attempt(pair, seccomp.NO_NETWORK) == "EPERM"
    assert attempt(pair, None) == unfiltered


@pytest.mark.parametrize("policy", POLICIES)
def test_ordinary_programs_still_run(policy, tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\n")
    done = subprocess.run(
        [
            "sh",
            "-c",
            "ls -l >/dev/null && cat notes.txt && git --version >/dev/null && id -un "
            ">/dev/null && python3 -c 'print(42)' | cat",
        ],
        cwd=tmp_path,
        preexec_fn=child_setup(policy),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "alpha\n42\n", "")


def test_io_uring_is_refused():
    # io_uring_setup(1 entry, params), io_uring_enter(fd -1, ...), io_uring_register(fd
    # -1, ...): 425-427 everywhere.
    calls = """
        params = ctypes.create_string_buffer(120)
        print(json.dumps([outcome(lambda: raw(425, 1, ctypes.addressof(params))),
                          outcome(lambda: raw(426, -1, 0, 0, 0, 0, 0)),
                          outcome(lambda: raw(427, -1, 0, 0, 0))]))
    """
    unfiltered = json.loads(run(calls, None).stdout)
    if unfiltered[0] != "ok":
        pytest.skip(f"io_uring is turned off for everyone here ({unfiltered[0]})")
    assert "EPERM" not in unfiltered  # a ring, then EBADF or EINVAL for the made-up arguments
    assert json.loads(run(calls, seccomp.NO_NETWORK).stdout) == ["EPERM", "EPERM", "EPERM"]


def test_read_only_refuses_changing_modes_owners_times_and_attributes_but_reads(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("alpha\n")
    changes = f"""
        path, fd = {str(target)!r}, os.open({str(target)!r}, os.O_RDONLY)
        print(json.dumps({{
            "chmod": outcome(lambda: os.chmod(path, 0o600)),
            "fchmod": outcome(lambda: os.fchmod(fd, 0o640)),
            "chown": outcome(lambda: os.chown(path, os.getuid(), os.getgid())),
            "lchown": outcome(lambda: os.lchown(path, os.getuid(), os.getgid())),
            "fchown": outcome(lambda: os.fchown(fd, os.getuid(), os.getgid())),
            "utime": outcome(lambda: os.utime(path, (0, 0))),
            "futimens": outcome(lambda: os.utime(fd, (1, 1))),
            "setxattr": outcome(lambda: os.setxattr(path, "user.agent", b"1")),
            "removexattr": outcome(lambda: os.removexattr(path, "user.agent")),
            "read": open(path).read()}}))
    """
    before = target.stat()
    refused = {
        name: "EPERM"
        for name in (
            "chmod",
            "fchmod",
            "chown",
            "lchown",
            "fchown",
            "utime",
            "futimens",
            "setxattr",
            "removexattr",
        )
    }
    assert json.loads(run(changes, seccomp.NO_CHANGES).stdout) == {**refused, "read": "alpha\n"}
    after = target.stat()
    assert (after.st_mode, after.st_uid, after.st_gid, after.st_mtime) == (
        before.st_mode,
        before.st_uid,
        before.st_gid,
        before.st_mtime,
    )
    allowed = {name: "ok" for name in refused}
    assert json.loads(run(changes, seccomp.NO_NETWORK).stdout) == {**allowed, "read": "alpha\n"}
    assert json.loads(run(changes, None).stdout) == {**allowed, "read": "alpha\n"}


@pytest.mark.parametrize("policy", POLICIES)
def test_every_listed_call_is_refused_with_eperm(policy):
    """Also the calls libc no longer uses (chmod, utime, futimesat ...) but a
    program may still make itself."""
    column = seccomp.COLUMN[platform.machine()]
    numbers = {
        name: pair[column]
        for name, pair in (seccomp.NETWORK_CALLS | seccomp.METADATA_CALLS).items()
        if pair[column] is not None
    }
    calls = (
        f"print(json.dumps({{name: outcome(lambda: raw(n, -1, 0, 0, 0, 0, 0)) "
        f"for name, n in {numbers!r}.items()}}))"
    )
    filtered, unfiltered = (json.loads(run(calls, p).stdout) for p in (policy, None))
    refused = seccomp.NETWORK_CALLS | (
        seccomp.METADATA_CALLS if policy == seccomp.NO_CHANGES else {}
    )
    assert {name for name, result in filtered.items() if result == "EPERM"} == set(refused) & set(
        numbers
    )
    assert "EPERM" not in unfiltered.values() and "ok" not in unfiltered.values()


@pytest.mark.skipif(not X86_64, reason="the x32 ABI exists on x86_64 only")
def test_x32_numbers_are_refused():
    x32_socket = (
        f"raw(0x40000000 | 41, {int(socket.AF_INET)}, {int(socket.SOCK_DGRAM)}, 0); print('ok')"
    )
    assert attempt(x32_socket, seccomp.NO_NETWORK) == "EPERM"
    assert attempt(x32_socket, None) != "EPERM"  # ENOSYS where the kernel has no x32, else a socket


@pytest.mark.skipif(not X86_64, reason="an i386 call from a 64-bit process is an x86_64 thing")
def test_a_call_from_another_abi_kills_the_process():
    # mov eax, 20 (i386 getpid); int 0x80; ret: an i386 system call from this 64-bit process.
    i386_getpid = """
        import mmap
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(bytes.fromhex("b814000000cd80c3"))
        code = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
        print(code() == os.getpid())
    """
    unfiltered = run(i386_getpid, None)
    if unfiltered.returncode != 0:
        pytest.skip("this kernel runs no i386 system calls (no IA32 emulation)")
    assert unfiltered.stdout == "True\n"
    assert run(i386_getpid, seccomp.NO_NETWORK).returncode == -signal.SIGSYS


@pytest.mark.parametrize("policy", POLICIES)
def test_the_kernels_keyrings_are_out_of_reach(policy):
    # The user's keyring is shared by all the person's processes: a token put there was
    # readable to a trusted python3 that ran without asking. KEYCTL_GET_KEYRING_ID of the
    # user keyring (-4), and add_key.
    code = f"""\
        print(outcome(lambda: raw({number("keyctl")}, 0, -4, 0)),
              outcome(lambda: raw({number("add_key")}, 0, 0, 0, 0, -4)))"""

    assert attempt(code, None).split()[0] == "ok"
    assert attempt(code, policy) == "EPERM EPERM"


@pytest.mark.parametrize("policy", POLICIES)
def test_a_message_queue_of_another_process_is_out_of_reach(policy):
    # System V message queues are machine-wide: an unasked command sent a
    # message to a listener this way.
    # IPC_PRIVATE, IPC_CREAT | 0600: its id is all another process needs
    queue = libc.msgget(0, 0o1600)
    assert queue >= 0, os.strerror(ctypes.get_errno())
    try:
        code = f"""\
            message = (ctypes.c_long * 2)(1, 0)  # its type (1), then the text
            address = ctypes.addressof(message)
            print(outcome(lambda: raw({number("msgsnd")}, {queue}, address, 3, 0)))"""
        assert attempt(code, None) == "ok"
        assert attempt(code, policy) == "EPERM"
    finally:
        libc.msgctl(queue, 0, None)  # IPC_RMID


def number(call: str) -> int:
    """A refused system call's number on this machine."""
    return seccomp.NETWORK_CALLS[call][seccomp.COLUMN[platform.machine()]]


@pytest.mark.parametrize("policy", POLICIES)
def test_another_processs_limits_and_priority_are_out_of_reach_and_its_own_are_not(policy):
    # prlimit64 on the agent (the same user) could set its RLIMIT_FSIZE to 0: its
    # next write would kill it.
    code = """\
        import resource
        parent, nice = os.getppid(), os.getpriority(os.PRIO_PROCESS, 0)
        print(outcome(lambda: resource.prlimit(parent, resource.RLIMIT_NOFILE)),
              outcome(lambda: resource.prlimit(0, resource.RLIMIT_NOFILE)),
              outcome(lambda: os.setpriority(os.PRIO_PROCESS, 0, nice)),
              outcome(lambda: os.sched_setaffinity(0, os.sched_getaffinity(0))))"""

    assert attempt(code, None) == "ok ok ok ok"
    assert attempt(code, policy) == "EPERM ok ok ok"
    assert attempt("print(outcome(lambda: os.setpriority(os.PRIO_USER, 0, 0)))", policy) == "EPERM"


@pytest.mark.parametrize("policy", POLICIES)
def test_the_io_priority_of_all_the_users_processes_is_out_of_reach_and_its_own_is_not(policy):
    # ioprio_set(IOPRIO_WHO_USER, 0, ...) sets it for every process of the user, the agent's
    # among them. The priority asked for is 0 (none: the kernel's default), so that where the
    # filter failed nothing would change.
    ioprio_set = seccomp.ON_ITSELF_ONLY["ioprio_set"][0][seccomp.COLUMN[platform.machine()]]
    who_process, who_user = 1, 3
    code = (
        f"print(outcome(lambda: raw({ioprio_set}, {who_process}, 0, 0)), "
        f"outcome(lambda: raw({ioprio_set}, {who_user}, 0, 0)))"
    )

    assert attempt(code, policy) == "ok EPERM"


HEADERS = {
    "x86_64": "/usr/include/x86_64-linux-gnu/asm/unistd_64.h",
    "aarch64": "/usr/include/asm-generic/unistd.h",
}


def kernel_calls(machine: str) -> dict[str, int] | None:
    """An architecture's system calls by name, from the kernel's header for it (which
    may be older than the kernel: the calls added since are not in it); None where
    the header is not installed."""
    header = Path(HEADERS[machine])
    if not header.exists():
        return None
    return {
        name: int(number)
        for name, number in re.findall(r"#define __NR_(\w+)\s+(\d+)\b", header.read_text())
    }


# What a call does, by its name in the kernel: changing a file's mode, owner, times or extended
# attributes; a socket, io_uring, the keyrings, System V IPC and POSIX message queues.
METADATA_NAME = re.compile(r"\w*(chmod|chown|utime|setxattr|removexattr)\w*")
NETWORK_NAME = re.compile(r"socket|io_uring_\w+|add_key|request_key|keyctl|(shm|sem|msg)\w+|mq_\w+")


def test_each_call_of_the_kernels_list_changing_metadata_or_reaching_out_is_in_the_filters_tables():
    known = kernel_calls(platform.machine())
    if known is None:
        pytest.skip(
            "the kernel's list of system calls is not installed here "
            f"({HEADERS[platform.machine()]})"
        )
    tables = {"metadata": seccomp.METADATA_CALLS, "network": seccomp.NETWORK_CALLS}
    for kind, pattern in (("metadata", METADATA_NAME), ("network", NETWORK_NAME)):
        wanted = {name for name in known if pattern.fullmatch(name)}
        assert wanted, f"no {kind} call found in the kernel's list: the patterns no longer match it"
        assert wanted <= set(tables[kind]), (
            f"{kind} calls missing from the filter: {wanted - set(tables[kind])}"
        )


@pytest.mark.parametrize("machine", sorted(seccomp.COLUMN))
def test_each_call_in_the_filters_tables_has_the_kernels_number_for_each_architecture(machine):
    known = kernel_calls(machine)
    if known is None:
        pytest.skip(
            f"the kernel's list of {machine} system calls is not installed here "
            f"({HEADERS[machine]})"
        )
    column = seccomp.COLUMN[machine]
    tables = (
        seccomp.METADATA_CALLS
        | seccomp.NETWORK_CALLS
        | {"socketpair": seccomp.SOCKETPAIR}
        | {name: numbers for name, (numbers, _, _) in seccomp.ON_ITSELF_ONLY.items()}
    )
    for name, pair in tables.items():
        # a newer call may be missing from an older header; a call the architecture lacks is None
        assert pair[column] == known.get(name, pair[column]), (name, pair[column], known[name])
        assert pair[column] is not None or name not in known, name


def test_an_unasked_chmod_through_fchmodat2_the_newest_call_is_refused(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("alpha\n")
    target.chmod(0o644)
    fchmodat2 = seccomp.METADATA_CALLS.get("fchmodat2", (452, 452))[
        seccomp.COLUMN[platform.machine()]
    ]
    # fchmodat2(AT_FDCWD, path, mode, flags): the call the newest libc makes for
    # chmod, and any program can make
    change = f"""
        path = ctypes.create_string_buffer({str(target).encode()!r})
        done = libc.syscall(ctypes.c_long({fchmodat2}), ctypes.c_long(-100), path,
                            ctypes.c_long(0o600), ctypes.c_long(0))
        print("ok" if done == 0 else errno.errorcode[ctypes.get_errno()])
    """
    unfiltered = attempt(change, None)
    if unfiltered == "ENOSYS":
        pytest.skip("this kernel has no fchmodat2 (Linux 6.6 and later have it)")
    assert unfiltered == "ok" and target.stat().st_mode & 0o777 == 0o600
    target.chmod(0o644)

    assert attempt(change, seccomp.NO_CHANGES) == "EPERM"
    assert target.stat().st_mode & 0o777 == 0o644
    # the network filter leaves modes to Landlock's rules
    assert attempt(change, seccomp.NO_NETWORK) == "ok"
