"""Helpers the test files share: markers, process and transcript readers, the
pseudo-terminal driver."""

import ast
import contextlib
import fcntl
import hashlib
import io
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import typing
from pathlib import Path

import pytest

from plainagent.core import redaction
from plainagent.sandbox import process as sandbox

ROOT = Path(__file__).resolve().parent.parent
# The agent's modules: the tutorial's four files at the top, and the package's
MODULES = sorted([*ROOT.glob("*.py"), *(ROOT / "plainagent").rglob("*.py")])


def readable(fd, timeout: float) -> bool:
    """Whether fd (or a file) has something to read within `timeout` seconds: by poll(), which
    takes any descriptor, where select() refuses one numbered past 1023."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(max(timeout, 0) * 1000))


def module_name(path: Path) -> str:
    """A module's dotted name (plainagent.shell.words), a folder's for its __init__.py."""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def imports(path: Path) -> set[str]:
    """The agent's own modules a file imports, by name, anywhere in it (inside functions too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found & {module_name(module) for module in MODULES} - {module_name(path)}


def cached_venv(kind: str, key: bytes, prepare: typing.Callable[[Path], list[str]]) -> Path:
    """The python of a venv that `pip install`s what `prepare(folder)` returns (it may first put
    sources in `folder`), built once per machine, base Python and key under the temporary folder,
    and built again where the one there no longer runs. The venv is made from the base Python the
    suite runs on, never from the venv the suite runs in: a venv made by a venv's python links to
    it and breaks when that venv is removed (as CI removes its own). Skips the test, saying why,
    where pip cannot install them."""
    base = os.path.realpath(sys.executable)
    digest = hashlib.sha256(repr((base, sys.version)).encode() + b"\0" + key).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / "agent-harness-test-venvs"
    cache.mkdir(exist_ok=True)
    folder = cache / f"{kind}-py{sys.version_info[0]}.{sys.version_info[1]}-{digest}"
    python = folder / "venv" / "bin" / "python"
    with open(cache / f"{folder.name}.lock", "w") as lock:
        # test workers and other runs wait for the one that builds it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "built").exists() and subprocess.run(
            [str(python), "-c", ""], capture_output=True
        ).returncode == 0:
            return python
        for old in cache.glob(f"{kind}-py*"):  # built for sources or versions of another day
            if old.is_dir() and old != folder and time.time() - old.stat().st_mtime > 86400:
                shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        wanted = prepare(folder)
        subprocess.run([base, "-m", "venv", str(folder / "venv")], check=True, capture_output=True)
        done = subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--timeout",
                "15",
                "--retries",
                "1",
                *wanted,
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode:
            shutil.rmtree(folder, ignore_errors=True)
            said = [line for line in done.stderr.splitlines() if line.startswith("ERROR")] or [
                "no word"
            ]
            pytest.skip(
                f"cannot install {' '.join(wanted)[:200]} from the package index: {said[-1][:200]}"
            )
        (folder / "built").touch()
    return python


def default_signals() -> None:
    """Under `nohup` or `script &` the suite runs with SIGINT or SIGHUP ignored, and
    children inherit that; a child started with this as preexec_fn gets Ctrl-C (and SIGTERM,
    SIGHUP) as a person's shell would."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


# Popen options for every child
CHILD = {} if sys.platform == "win32" else {"preexec_fn": default_signals}


def limited(limit: int, size: int) -> dict:
    """Popen options for a child under a resource limit (resource.RLIMIT_FSIZE: a write past `size`
    bytes fails with EFBIG, as on a full disk, SIGXFSZ ignored; RLIMIT_DATA: memory), with the
    signals a person's shell gives it and no bytecode written: Python's write of a .pyc does not
    check for a short write, so a child cut at the limit left the agent's (or its venv's) compiled
    files cut, and every later start failed with 'marshal data too short'. The one place a test sets
    a resource limit (test_bytecode.py checks both)."""
    import resource

    def setup() -> None:
        default_signals()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(limit, (size, size))

    return {"preexec_fn": setup, "env": {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}}


def git(*args: str, cwd: Path) -> str:
    """Run git in cwd as a person named t, the test failing if it fails; what it printed."""
    identity = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **identity},
    ).stdout


def run_script(
    name: str, *args: str, cwd: Path, timeout: float = 60, root: Path = ROOT, **kwargs
) -> subprocess.CompletedProcess:
    """Run one of the project's scripts (from root, the agent's folder) as a user
    would, stdin not a terminal; kwargs go to subprocess.run, over CHILD's (limited()'s)."""
    if "input" not in kwargs:
        kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(
        [sys.executable, str(root / name), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        **{**CHILD, **kwargs},
    )


def descendants(pid: int) -> list[int]:
    """The processes under pid, from /proc (none found where there is no /proc)."""
    children: dict[int, list[int]] = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(status.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(status.parent.name))
    found, pending = [], [pid]
    while pending:
        below = children.get(pending.pop(), [])
        found += below
        pending += below
    return found


def copy_of_the_agent(folder: Path) -> Path:
    """The agent's files in a folder of their own, so a test can give it a .env
    without touching ours."""
    folder.mkdir()
    for source in ROOT.glob("*.py"):
        shutil.copy(source, folder / source.name)
    shutil.copytree(
        ROOT / "plainagent", folder / "plainagent", ignore=shutil.ignore_patterns("__pycache__")
    )
    return folder


posix_only = pytest.mark.skipif(
    sys.platform == "win32", reason="POSIX signals, shell, files and terminals"
)
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
needs_landlock = pytest.mark.skipif(
    sandbox.landlock_missing() is not None,
    reason=f"Landlock cannot be applied here: {sandbox.landlock_missing()}",
)


@contextlib.contextmanager
def folder_locked(folder: Path) -> typing.Iterator[None]:
    """Another program (a command left running, say) holds an flock on the
    folder until the block ends."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
            str(folder),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        **CHILD,
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.communicate(input="")  # the end of its input: it exits, and its lock goes with it


def audit_hooked(folder: Path, body: str) -> dict[str, str]:
    """The environment for a child Python that runs `body` at each audit event it raises (`event`
    and `args` in scope, `os`, `signal` and `sys` imported; a global `state` dict it may keep things
    in): a sitecustomize.py in folder (outside the workspace, where the agent takes PYTHONPATH),
    adding the hook with sys.addaudithook. A test stops the agent, or does a person's save, at one
    operation of its own choosing, as the agent makes it."""
    folder.mkdir(parents=True)
    (folder / "sitecustomize.py").write_text(
        "import os, signal, sys\n\nstate = {}\n\n\ndef hook(event, args):\n"
        + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
        + "\n\n\nsys.addaudithook(hook)\n"
    )
    return {**os.environ, "PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}


def wait_for(condition, timeout: float = 20) -> None:
    """Poll until condition() is true; fail the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether the process still runs (not gone, not a zombie)."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except FileNotFoundError:
            return False
    try:
        os.kill(pid, 0)  # no /proc (macOS): signal 0 only asks whether the process exists
    except ProcessLookupError:
        return False
    return True


def read_events(path) -> list[dict]:
    """The events of a transcript, one a line."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def runs_of(workspace) -> Path:
    """Where the runs of a workspace are kept: its folder in the state folder the test's environment
    names (conftest points XDG_STATE_HOME at a folder of the test's own)."""
    from plainagent.core import statefolder

    return statefolder.runs_folder(Path(workspace).resolve(), dict(os.environ))


def only_transcript(workspace):
    """The one transcript of runs in the workspace (fails if there is none, or more than one)."""
    [path] = runs_of(workspace).glob("*.jsonl")
    return path


ALLOWED_ASSISTANT_FIELDS = {"role", "content", "tool_calls"}


def assert_well_formed(messages: list[dict]) -> None:
    """Every assistant turn with tool calls is followed by exactly one result
    per call, in call order."""
    i = 0
    while i < len(messages):
        message = messages[i]
        if message["role"] == "assistant":
            assert set(message) <= ALLOWED_ASSISTANT_FIELDS, set(message)
            ids = [call["id"] for call in message.get("tool_calls") or []]
            results = messages[i + 1 : i + 1 + len(ids)]
            assert [r["role"] for r in results] == ["tool"] * len(ids)
            assert [r["tool_call_id"] for r in results] == ids
            assert all(isinstance(r["content"], str) for r in results)
            i += len(ids)
        i += 1


class Typed(io.StringIO):
    """Typed answers on a stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


# 51 characters, 'n' at index 22
KEY = "gsk_" + "Ab3dE5fG7hJ9kL1mNp" + "nQ2rS4tU6vW8xY0zA1bC3dE5fG7hJ"


def windows(text: str) -> set[str]:
    """Every run of SHORTEST_SECRET_PIECE characters in text: none of a key's may
    be written or printed."""
    return {
        text[i : i + redaction.SHORTEST_SECRET_PIECE]
        for i in range(len(text) - redaction.SHORTEST_SECRET_PIECE + 1)
    }


GROWTH_ALLOWED_MB = 20  # reading back a whole 10 MB output costs about 25 MB; yes used gigabytes


def in_child(code: str, cwd: Path, **env: str) -> dict:
    """Run `code` (which sets `result`) in a fresh Python that imported tools, so its
    memory is measured cleanly: returns the result and how far the child's peak RSS
    grew while the code ran, in MB."""
    script = "\n".join(
        [
            "import json, resource, sys",
            f"sys.path.insert(0, {str(ROOT)!r})",
            "from plainagent.core import settings",
            "import tools",
            # this child is one run: code hands its tools config
            "config = settings.resolve(require_key=False)",
            "def peak():",
            "    size = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss",
            # bytes on macOS, KB elsewhere
            "    return size / 2**20 if sys.platform == 'darwin' else size / 2**10",
            "before = peak()",
            code,
            "print(json.dumps({'result': result, 'growth_mb': peak() - before}))",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


odd_names = pytest.mark.skipif(
    sys.platform != "linux", reason="file names that are not UTF-8 (macOS refuses them)"
)


APP = "def f():\n    return 1\n\ndef g():\n    return 2\n"


class Terminal:
    """`python harness.py` on a real pseudo-terminal: read what it shows, type answers into it."""

    def __init__(self, *args: str, cwd, command: list[str] | None = None, **popen) -> None:
        """Start `python harness.py ARGS`, or `command`, with stdin, stdout and stderr on the
        terminal; `popen` gives other Popen options (stdout=subprocess.PIPE, preexec_fn=...)."""
        self.master, slave = os.openpty()
        # Ctrl-C works even when the suite runs as a background job
        options = {"stdin": slave, "stdout": slave, "stderr": slave, **CHILD, **popen}
        try:
            self.process = subprocess.Popen(
                command or [sys.executable, str(ROOT / "harness.py"), *args],
                cwd=cwd,
                start_new_session=True,
                **options,
            )
        finally:
            os.close(slave)  # else the master never sees the end of the output
        self.raw = b""
        self.prompts_answered = 0  # by type_at_prompts

    @property
    def output(self) -> str:
        return self.raw.decode("utf-8", "replace").replace("\r\n", "\n")

    def read_until(self, text: str, count: int = 1, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.output.count(text) < count:
            if not self.read(max(deadline - time.monotonic(), 0)):
                raise AssertionError(
                    f"never saw {text!r} {count} times; the terminal shows:\n{self.output}"
                )

    def read(self, timeout: float) -> bool:
        if not readable(self.master, timeout):
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the program has exited and closed the terminal
            return False
        self.raw += data
        return bool(data)

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def type_at_prompts(self, *lines: str) -> None:
        """A session's lines typed one at a time, each once the next prompt is shown: the first at
        the first prompt of the session, and on from wherever an earlier call left off."""
        for line in lines:
            self.prompts_answered += 1
            self.read_until(PROMPT, count=self.prompts_answered)
            self.type(line)

    def finish(self, timeout: float = 30) -> int:
        code = self.process.wait(timeout)
        while self.read(1):
            pass
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


def write(path: str, content: str) -> tuple[str, dict]:
    """A write_file call, for calls()."""
    return "write_file", {"path": path, "content": content}


def edit(path: str, old_text: str, new_text: str) -> tuple[str, dict]:
    """An edit_file call, for calls()."""
    return "edit_file", {"path": path, "old_text": old_text, "new_text": new_text}


def results(model, request: int, count: int = 1) -> list[str]:
    """The last `count` tool results the model was sent in request number `request`."""
    return [m["content"] for m in model.messages(request)[-count:]]


def command_line(pid: int) -> str:
    """The process's command line, its arguments joined by spaces (empty once it is gone)."""
    try:
        return (
            Path(f"/proc/{pid}/cmdline")
            .read_bytes()
            .replace(b"\0", b" ")
            .decode(errors="replace")
            .strip()
        )
    except OSError:
        return ""


def under(pid: int, command: str) -> int | None:
    """The first live process under pid whose command line is `command`."""
    return next((p for p in descendants(pid) if command_line(p) == command and alive(p)), None)


PROMPT = "> "
# The approval question for a command not on the allowlist, in a run with a task given
RM_PROMPT = "[y]es / [N]o / [a]lways allow rm like this for this run: "


def asleep(pid: int) -> bool:
    """Whether the process is blocked, waiting (True where there is no /proc). CPython's
    readline shows the prompt, then waits in select(); a Ctrl-C that comes in between is only
    seen once a key is pressed."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "S"
    except OSError:
        return True


def traced(calls: str, *args: str, cwd: Path) -> list[tuple[str, list[Path]]]:
    """Run `python harness.py ARGS` in cwd under strace, tracing `calls` (named as strace's -e
    trace= names them); the calls that succeeded, in order, each with the paths it names, made
    whole (a name relative to a folder descriptor or to cwd joined to it)."""
    log = cwd.parent / f"{cwd.name}.strace"
    run = subprocess.run(
        ["strace", "-f", "-qq", "-y", "-s", "4096", "-o", str(log), "-e", f"trace={calls}"]
        + [sys.executable, str(ROOT / "harness.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        **CHILD,
    )
    assert run.returncode == 0, run.stderr
    found = []
    for line in log.read_text().splitlines():
        call = re.match(r"\d+ +(\w+)\((.*)\) += 0$", line)
        if call is None:
            continue
        name, at, paths = call[1], cwd, []
        for folder, text in re.findall(r'(?:AT_FDCWD|\d+)(?:<([^>]*)>)?|"([^"]*)"', call[2]):
            if text:
                paths.append(Path(at, text))
                at = cwd
            elif folder and name == "fsync":
                paths.append(Path(folder))
            else:
                at = Path(folder) if folder else cwd
        found.append((name, paths))
    return found


def shell(command: str) -> tuple[str, dict]:
    return "run_shell", {"command": command}


def tree(folder: Path) -> dict[str, tuple[str, int, bytes | str]]:
    """Every path under folder but .git: its kind, mode and content (a link's target)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if name == ".git" or name.startswith(".git/"):
            continue
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            found[name] = ("link", 0, os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            found[name] = ("folder", stat.S_IMODE(info.st_mode), b"")
        else:
            found[name] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


def store_of(folder: Path) -> Path:
    """The undo store of the workspace `folder`."""
    return runs_of(folder) / "store"
