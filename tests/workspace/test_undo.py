"""Undo: a run's write_file and edit_file changes are kept beside its transcript and taken back
by --undo (or /undo in a session), leaving alone what the person changed since; bounded, private,
and one line when it cannot."""

import contextlib
import dataclasses
import hashlib
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import (
    CHILD,
    PROMPT,
    ROOT,
    audit_hooked,
    copy_of_the_agent,
    default_signals,
    descendants,
    edit,
    folder_locked,
    limited,
    linux_only,
    only_transcript,
    posix_only,
    read_events,
    run_script,
    runs_of,
    traced,
    wait_for,
    write,
)

import harness
from plainagent.core.settings import resolve
from plainagent.workspace import undo, writes


def real(folder: Path):
    """`python harness.py ARGS` in its own process, in the folder."""
    return lambda *args: run_script("harness.py", *args, cwd=folder)


def changing_run(model, tmp_path, run, *more: str):
    """A run that edits a.txt (twice), overwrites b.txt (mode 0640) and creates
    new/sub/c.txt, approved with --yes."""
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "b.txt").write_text("bee\n")
    os.chmod(tmp_path / "b.txt", 0o640)
    model.queue(
        calls(
            edit("a.txt", "two", "TWO"), write("b.txt", "BEE\n"), write("new/sub/c.txt", "sea\n")
        ),
        calls(edit("a.txt", "one", "ONE")),
        answer("changed"),
    )
    result = run("--yes", "change them", *more)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n"
    return result


def modes(folder: Path) -> set[tuple[str, int]]:
    return {
        ("folder" if p.is_dir() else "file", stat.S_IMODE(p.stat().st_mode))
        for p in [folder, *folder.rglob("*")]
    }


def test_undo_takes_back_an_edit_an_overwrite_and_a_new_file_made_by_a_real_run(model, tmp_path):
    changing_run(model, tmp_path, real(tmp_path))
    path = only_transcript(tmp_path)
    kept = runs_of(tmp_path) / f"{path.name}.undo"
    private = modes(kept)
    # since the run: undo puts back the mode from before it, on the new file
    os.chmod(tmp_path / "b.txt", 0o600)

    result = run_script("harness.py", "--undo", cwd=tmp_path)

    assert (result.returncode, result.stderr) == (0, "")
    assert (
        result.stdout
        == "restored a.txt\nrestored b.txt\nremoved new/sub/c.txt (the run created it)\n"
    )
    # the first original, though it was edited twice
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
    assert (tmp_path / "b.txt").read_text() == "bee\n" and stat.S_IMODE(
        (tmp_path / "b.txt").stat().st_mode
    ) == 0o640
    assert not (tmp_path / "new").exists()  # the folders write_file made for it go too
    assert private == {("folder", 0o700), ("file", 0o600)}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.txt",
        "b.txt",  # no temporary file left
    ]
    assert read_events(path)[-1]["message"] == {
        "role": "user",
        "content": (
            "(I undid the file changes of your latest task that still had any, with --undo: "
            "restored a.txt; restored b.txt; removed new/sub/c.txt (the run created it).)"
        ),
    }


@posix_only
@pytest.mark.parametrize(
    "mode", [0o4755, 0o2750, 0o1644], ids=["set-user-id", "set-group-id", "sticky"]
)
def test_undo_puts_back_a_file_whose_mode_had_set_id_or_sticky_bits(model, cli, tmp_path, mode):
    script = tmp_path / "tool.sh"
    script.write_text("echo one\n")
    script.chmod(mode)
    model.queue(calls(write("tool.sh", "echo two\n")), answer("changed"))
    assert cli("--yes", "change it").returncode == 0

    result = cli("--undo")

    assert (result.returncode, result.stdout, result.stderr) == (0, "restored tool.sh\n", "")
    assert script.read_text() == "echo one\n" and stat.S_IMODE(script.stat().st_mode) == mode


def test_a_continued_conversation_is_told_what_was_undone(model, cli, tmp_path):
    changing_run(model, tmp_path, cli)
    assert cli("--undo").returncode == 0
    model.queue(answer("noted"))

    result = cli("--continue", "what now?")

    assert result.returncode == 0, result.stderr
    assert [m["content"] for m in model.messages(3)[-3:]] == [
        "changed",
        "(I undid the file changes of your latest task that still had any, with --undo: restored "
        "a.txt; restored b.txt; removed new/sub/c.txt (the run created it).)",
        "what now?",
    ]


def test_a_file_changed_since_the_run_is_left_alone_and_named(model, cli, tmp_path):
    changing_run(model, tmp_path, cli, "--transcript", "t.jsonl")
    (tmp_path / "b.txt").write_text("the person's own words\n")
    (tmp_path / "new" / "sub" / "c.txt").unlink()

    result = cli("--undo", "--transcript", "t.jsonl")

    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        "restored a.txt",
        "left alone b.txt: changed since the run; its content from before the run is in "
        "t.jsonl.undo/1/2",
        "removed the folders the run made for new/sub/c.txt (the file was gone already)",
    ]
    assert not (tmp_path / "new").exists()
    assert (tmp_path / "b.txt").read_text() == "the person's own words\n"
    # kept, for the person to look at
    assert (tmp_path / "t.jsonl.undo" / "1" / "2").read_text() == "bee\n"
    assert not (tmp_path / "t.jsonl.undo" / "1" / "1").exists()  # a.txt's copy is no longer needed
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"


@posix_only  # Windows has no flock
def test_a_folder_another_program_holds_locked_is_not_undone_until_it_lets_go(
    model, cli, tmp_path, monkeypatch
):
    changing_run(model, tmp_path, cli, "--transcript", "t.jsonl")
    monkeypatch.setattr(writes, "FOLDER_WAIT", 0.2)

    with folder_locked(tmp_path):
        result = cli("--undo", "--transcript", "t.jsonl")

    assert result.returncode == 1, result.stderr
    held = (
        "another program has held a lock on its folder for 0.2 s (another agent run writing there, "
        "or a command holding it); nothing was written; try again when it is done"
    )
    assert result.stdout.splitlines() == [
        f"failed a.txt: cannot write a.txt: {held}",
        f"failed b.txt: cannot write b.txt: {held}",
        "removed new/sub/c.txt (the run created it)",  # in another folder
    ]
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n" and (
        tmp_path / "b.txt"
    ).read_text() == "BEE\n"
    # then undo again takes them back
    assert cli("--undo", "--transcript", "t.jsonl").returncode == 0
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n" and (
        tmp_path / "b.txt"
    ).read_text() == "bee\n"


def holds_open(pid: int, folder: Path) -> bool:
    """Whether the process has the folder open (undo opens it to lock it, and waits there
    while another holds it)."""
    with contextlib.suppress(OSError):
        return any(
            os.readlink(f"/proc/{pid}/fd/{fd}") == str(folder)
            for fd in os.listdir(f"/proc/{pid}/fd")
        )
    return False


@linux_only  # flock, /proc
@pytest.mark.parametrize(
    "change", [write("notes.txt", "the run's notes\n"), write("new.txt", "the run's file\n")]
)
def test_a_save_made_while_undo_waits_for_the_folder_lock_is_left_alone(
    model, cli, tmp_path, change
):
    # undo compared the file with what the run left, then waited for the folder's lock, then put
    # back the copy without looking again: the person's save (made by rename, as vim saves) was
    # overwritten, and said restored. A file the run created was removed without the lock at all.
    (tmp_path / "notes.txt").write_text("before the run\n")
    model.queue(calls(change), answer("wrote it"))
    assert cli("--yes", "--transcript", "t.jsonl", "write").returncode == 0
    name = change[1]["path"]
    folder = tmp_path.resolve()

    with folder_locked(folder):  # another agent run writing there, say
        undoing = subprocess.Popen(
            [sys.executable, str(ROOT / "harness.py"), "--undo", "--transcript", "t.jsonl"],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **CHILD,
        )
        wait_for(lambda: undoing.poll() is not None or holds_open(undoing.pid, folder))
        # the editor's write, then its rename
        (tmp_path / ".saving").write_text("the person's own words\n")
        os.rename(tmp_path / ".saving", tmp_path / name)
    out, err = undoing.communicate(timeout=60)

    assert (undoing.returncode, err) == (1, "")
    assert out.startswith(f"left alone {name}: changed since the run"), out
    assert (tmp_path / name).read_text() == "the person's own words\n"


def writing_a_new_file_in(pid: int, folder: Path) -> bool:
    """Whether the process, or one under it, has an unnamed new file open in folder
    ('folder/#inode (deleted)')."""
    for each in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError):
            if any(
                os.readlink(f"/proc/{each}/fd/{fd}").startswith(f"{folder}/#")
                for fd in os.listdir(f"/proc/{each}/fd")
            ):
                return True
    return False


@linux_only
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to slow the write down")
def test_a_save_made_while_undo_writes_the_copy_back_is_left_alone_and_kept_to_undo(
    model, cli, tmp_path
):
    # Checked under the lock, the file could still be saved by an editor (which takes no lock) while
    # undo wrote and flushed the copy: it is looked at once more right before the rename.
    (tmp_path / "notes.txt").write_text("before the run\n")
    model.queue(calls(write("notes.txt", "the run's notes\n")), answer("wrote it"))
    assert cli("--yes", "--transcript", "t.jsonl", "write").returncode == 0
    folder = tmp_path.resolve()

    undoing = subprocess.Popen(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            os.devnull,
            "-e",
            "trace=fsync",
            "-e",
            "inject=fsync:delay_enter=1500000:when=1",
            sys.executable,
            str(ROOT / "harness.py"),
            "--undo",
            "--transcript",
            "t.jsonl",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **CHILD,
    )
    wait_for(lambda: undoing.poll() is not None or writing_a_new_file_in(undoing.pid, folder))
    (tmp_path / ".saving").write_text("the person's own words\n")
    os.rename(tmp_path / ".saving", tmp_path / "notes.txt")
    out, err = undoing.communicate(timeout=60)

    assert (undoing.returncode, err) == (1, "")
    assert out == (
        "left alone notes.txt: changed while undo was putting it back; its content from before the "
        "run is in t.jsonl.undo/1/1\n"
    )
    assert (tmp_path / "notes.txt").read_text() == "the person's own words\n"
    assert sorted(os.listdir(tmp_path)) == [
        "notes.txt",
        "t.jsonl",
        "t.jsonl.undo",  # no new file left behind
    ]
    assert cli("--undo", "--transcript", "t.jsonl").stdout.startswith(
        "left alone notes.txt: changed since the run"
    )


def undo_held_in(call: str, path: Path, cwd: Path) -> tuple[subprocess.Popen, Path]:
    """--undo --transcript t.jsonl under strace, held 1.5 s in its first `call` on
    path (a name, or a descriptor open on it) once the call is made; and strace's log,
    which says DELAYED from then on."""
    log = cwd.parent / f"{cwd.name}.strace"
    undoing = subprocess.Popen(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            str(log),
            "-e",
            "signal=none",
            "-P",
            str(path),
            "-e",
            f"trace={call}",
            "-e",
            f"inject={call}:delay_exit=1500000:when=1",
            sys.executable,
            str(ROOT / "harness.py"),
            "--undo",
            "--transcript",
            "t.jsonl",
        ],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **CHILD,
    )
    return undoing, log


def held(undoing: subprocess.Popen, log: Path) -> bool:
    return undoing.poll() is not None or log.exists() and "(DELAYED)" in log.read_text()


def in_place_keeping_size_and_mtime(path: Path) -> None:
    """A save as some editors and `touch -r` make it: the same file, as long as
    before, its time put back."""
    before = os.stat(path)
    with open(path, "r+b") as file:
        file.write(path.read_bytes().upper())
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def a_link_to_itself(path: Path) -> None:
    (path.parent / ".saving").symlink_to(path.name)
    os.rename(path.parent / ".saving", path)


@linux_only
@pytest.mark.skipif(
    shutil.which("strace") is None, reason="needs strace to hold undo in its read of the file"
)
@pytest.mark.parametrize("change", [in_place_keeping_size_and_mtime, a_link_to_itself])
def test_a_change_made_while_undo_reads_the_file_is_left_alone(model, cli, tmp_path, change):
    # Undo reads the file to compare it with what the run left, then looks whether it changed
    # meanwhile: by its inode, size, mtime and ctime (a save in place that keeps size and mtime
    # changes the ctime alone), and at the name itself (a link there is a change, not a loop of
    # links on the way to report as a failure).
    (tmp_path / "notes.txt").write_text("before the run\n")
    model.queue(calls(write("notes.txt", "the run's notes\n")), answer("wrote it"))
    assert cli("--yes", "--transcript", "t.jsonl", "write").returncode == 0
    path = tmp_path.resolve() / "notes.txt"
    undoing, log = undo_held_in("read", path, tmp_path)

    wait_for(lambda: held(undoing, log))
    change(path)
    out, err = undoing.communicate(timeout=60)

    assert (undoing.returncode, out, err) == (
        1,
        "left alone notes.txt: changed since the run; its content from "
        "before the run is in t.jsonl.undo/1/1\n",
        "",
    )
    assert os.path.islink(path) or path.read_text() == "THE RUN'S NOTES\n"


@linux_only
@pytest.mark.skipif(
    shutil.which("strace") is None, reason="needs strace to hold undo in its open of the file"
)
def test_a_file_saved_just_as_undo_finds_the_created_file_gone_is_not_said_to_be_as_before_the_run(
    model, cli, tmp_path
):
    # The person removed the file the run created, then saved one of their own at its name
    # just as undo looked: its open found none, but one is there, and undo says so rather
    # than "already as before the run".
    model.queue(calls(write("new.txt", "the run's file\n")), answer("wrote it"))
    assert cli("--yes", "--transcript", "t.jsonl", "write").returncode == 0
    path = tmp_path.resolve() / "new.txt"
    path.unlink()
    undoing, log = undo_held_in("openat", path, tmp_path)

    wait_for(lambda: held(undoing, log))
    path.write_text("the person's own file\n")
    out, err = undoing.communicate(timeout=60)

    assert (undoing.returncode, out, err) == (1, "left alone new.txt: changed since the run\n", "")
    assert path.read_text() == "the person's own file\n"


@posix_only
def test_a_file_made_read_only_since_the_run_is_not_undone_until_it_is_writable_again(
    model, cli, tmp_path
):
    # write_file and edit_file refuse a read-only file, even as root; --undo replaced it by rename
    # all the same, and made it writable again.
    changing_run(model, tmp_path, cli, "--transcript", "t.jsonl")
    (tmp_path / "a.txt").chmod(0o444)
    (tmp_path / "new" / "sub" / "c.txt").chmod(0o400)

    result = cli("--undo", "--transcript", "t.jsonl")

    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        "failed a.txt: it is read-only now; make it writable (chmod u+w a.txt), then undo again",
        "restored b.txt",
        "failed new/sub/c.txt: it is read-only now; make it writable (chmod u+w new/sub/c.txt), "
        "then undo again",
    ]
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n" and stat.S_IMODE(
        (tmp_path / "a.txt").stat().st_mode
    ) == 0o444
    assert (tmp_path / "new" / "sub" / "c.txt").read_text() == "sea\n"

    (tmp_path / "a.txt").chmod(0o644)
    (tmp_path / "new" / "sub" / "c.txt").chmod(0o644)
    # once writable, undo again takes them back
    assert cli("--undo", "--transcript", "t.jsonl").returncode == 0
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n" and not (tmp_path / "new").exists()


def test_undo_twice_steps_back_one_run_at_a_time_then_says_there_is_nothing_left(
    model, cli, tmp_path
):
    model.queue(
        calls(write("x.txt", "1")), answer("one"), calls(write("x.txt", "2")), answer("two")
    )
    cli("--yes", "first", "--transcript", "t.jsonl")
    cli("--yes", "--continue", "second", "--transcript", "t.jsonl")

    undone = [cli("--undo", "--transcript", "t.jsonl") for _ in range(3)]

    assert [(r.returncode, r.stdout) for r in undone[:2]] == [
        (0, "restored x.txt\n"),
        (0, "removed x.txt (the run created it)\n"),
    ]
    assert undone[2].returncode == 2 and undone[2].stdout == ""
    assert (
        undone[2].stderr
        == "error: cannot undo: the changes kept in t.jsonl.undo/ were all undone already\n"
    )
    assert not (tmp_path / "x.txt").exists()


def test_a_task_after_an_older_record_was_deleted_keeps_a_record_of_its_own(model, cli, tmp_path):
    # The person removed the first task's undo data (to save room, say): the third
    # task's record is numbered past the newest there, never into the second's, so
    # --undo takes back the third task alone.
    model.queue(
        calls(write("a.txt", "1")),
        answer("one"),
        calls(write("b.txt", "2")),
        answer("two"),
        calls(write("c.txt", "3")),
        answer("three"),
    )
    cli("--yes", "first", "--transcript", "t.jsonl")
    cli("--yes", "--continue", "second", "--transcript", "t.jsonl")
    shutil.rmtree(tmp_path / "t.jsonl.undo" / "1")
    cli("--yes", "--continue", "third", "--transcript", "t.jsonl")

    undone = cli("--undo", "--transcript", "t.jsonl")

    assert (undone.returncode, undone.stdout) == (0, "removed c.txt (the run created it)\n")
    assert (tmp_path / "b.txt").read_text() == "2"


def test_a_file_named_like_a_record_in_the_undo_folder_stops_neither_the_next_task_nor_undo(
    model, cli, tmp_path
):
    # A file "2" beside record 1 (a note the person kept there, say): the next task's record
    # was made under a temporary name and renamed onto it, which fails, so every write of every
    # later task was refused; and --undo counted the file as a record and stopped at it,
    # "cannot be read (Not a directory)".
    model.queue(
        calls(write("a.txt", "1")), answer("one"), calls(write("b.txt", "2")), answer("two")
    )
    cli("--yes", "first", "--transcript", "t.jsonl")
    (tmp_path / "t.jsonl.undo" / "2").write_text("a note of my own\n")
    cli("--yes", "--continue", "second", "--transcript", "t.jsonl")

    undone = [cli("--undo", "--transcript", "t.jsonl") for _ in range(2)]

    assert model.messages(3)[-1]["content"] == "created b.txt (1 bytes)"
    assert [(r.returncode, r.stdout, r.stderr) for r in undone] == [
        (0, "removed b.txt (the run created it)\n", ""),
        (0, "removed a.txt (the run created it)\n", ""),
    ]
    assert (tmp_path / "t.jsonl.undo" / "2").read_text() == "a note of my own\n"


@pytest.mark.parametrize("name", ["²", "٣"])
def test_a_folder_in_the_undo_folder_named_in_other_digits_is_no_record(model, cli, tmp_path, name):
    # str.isdigit() takes both: int() raised on "²", a traceback at --undo and at every later task's
    # start; and read "٣" as record 3, which --undo then looked for under the name "3".
    model.queue(
        calls(write("a.txt", "1")), answer("one"), calls(write("b.txt", "2")), answer("two")
    )
    cli("--yes", "first", "--transcript", "t.jsonl")
    (tmp_path / "t.jsonl.undo" / name).mkdir()
    shutil.copy(tmp_path / "t.jsonl.undo" / "1" / "manifest.json", tmp_path / "t.jsonl.undo" / name)
    cli("--yes", "--continue", "second", "--transcript", "t.jsonl")

    undone = [cli("--undo", "--transcript", "t.jsonl") for _ in range(3)]

    assert [(r.returncode, r.stdout) for r in undone] == [
        (0, "removed b.txt (the run created it)\n"),
        (0, "removed a.txt (the run created it)\n"),
        (2, ""),
    ]
    assert (
        undone[2].stderr
        == "error: cannot undo: the changes kept in t.jsonl.undo/ were all undone already\n"
    )


@posix_only
def test_slash_undo_in_a_session_takes_back_the_last_task(model, terminal, tmp_path):
    (tmp_path / "x.txt").write_text("before\n")
    model.queue(
        calls(write("x.txt", "first\n")),
        answer("wrote it"),
        calls(edit("x.txt", "first", "second")),
        answer("edited it"),
        answer("ok"),
    )
    shown = terminal("--yes")

    shown.type_at_prompts("write x", "edit x", "/undo")
    shown.read_until(PROMPT, count=4)
    after_one = (tmp_path / "x.txt").read_text()
    shown.type_at_prompts("/undo", "/undo", "and now?", "/exit")

    assert shown.finish() == 0, shown.output
    assert after_one == "first\n"
    assert (tmp_path / "x.txt").read_text() == "before\n"
    assert shown.output.count("\nrestored x.txt\n") == 2
    assert f"error: cannot undo: the changes kept in {runs_of(tmp_path)}/" in shown.output
    assert [m["content"] for m in model.messages(4)[-4:]] == [
        "edited it",
        "(I undid the file changes of your latest task that still had any, with /undo: restored "
        "x.txt.)",
        "(I undid the file changes of your latest task that still had any, with /undo: restored "
        "x.txt.)",
        "and now?",
    ]
    assert [e["task"] for e in read_events(only_transcript(tmp_path)) if e["type"] == "start"] == [
        "write x",
        "edit x",
        "and now?",
    ]


def test_a_file_over_the_size_bound_is_named_at_the_time_and_at_undo(model, cli, tmp_path):
    big = "x" * undo.MAX_FILE_BYTES + "\nend\n"
    (tmp_path / "big.txt").write_text(big)
    (tmp_path / "small.txt").write_text("small\n")
    model.queue(
        calls(edit("big.txt", "end", "END"), edit("small.txt", "small", "SMALL")), answer("done")
    )

    run = cli("--yes", "change")
    result = cli("--undo")

    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[:2] == [
        '[1] edit_file {"path": "big.txt", "old_text": "end", "new_text": "END"}',
        "note: big.txt is changed without keeping a copy for undo (over 10 MB): --undo cannot take "
        "this change back",
    ]
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "not undone big.txt: its content from before the run was not kept (over 10 MB)",
        "restored small.txt",
    ]
    assert (tmp_path / "big.txt").read_text().endswith("\nEND\n")
    assert (tmp_path / "small.txt").read_text() == "small\n"
    assert sum(p.stat().st_size for p in runs_of(tmp_path).rglob("*") if p.is_file()) < 1_000_000


def test_a_run_keeps_at_most_the_total_bound_of_copies(model, tmp_path, monkeypatch, capsys):
    # the bound's logic, at a size a test can afford
    monkeypatch.setattr(undo, "MAX_RUN_BYTES", 250)
    for name in "abc":
        (tmp_path / f"{name}.txt").write_text(name * 100)
    model.queue(calls(*[write(f"{name}.txt", name.upper()) for name in "abc"]), answer("done"))
    settings = dataclasses.replace(resolve(approve_all=True), undo=tmp_path / "kept" / "1")

    harness.run("shout", settings=settings)
    # it writes only where the run's file tools may
    lines, complete = undo.take_back(tmp_path / "kept", settings)

    assert (
        "note: c.txt is changed without keeping a copy for undo (the run already keeps 0 MB for "
        "undo)" in capsys.readouterr().err
    )
    assert (lines, complete) == (
        [
            "restored a.txt",
            "restored b.txt",
            "not undone c.txt: its content from before the "
            "run was not kept (the run already keeps 0 MB for undo)",
        ],
        False,
    )
    assert [(tmp_path / f"{name}.txt").read_text() for name in "abc"] == ["a" * 100, "b" * 100, "C"]


def test_a_script_calling_run_keeps_no_undo_data_unless_it_asks(model, tmp_path):
    model.queue(calls(write("x.txt", "x")), answer("done"))

    harness.run("write", approve_all=True)

    assert (tmp_path / "x.txt").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]


@posix_only
def test_every_folder_the_undo_record_makes_on_its_way_is_private(in_a_run, tmp_path):
    # As when the state folder was removed during a run: os.makedirs(mode=0o700) made only the last
    # folder private, and the workspace's runs folder came back readable by everyone.
    state = tmp_path.parent / f"{tmp_path.name}-state"
    record = state / "plainagent" / "project-0123456789" / "t.jsonl.undo" / "1"
    umask = os.umask(0o022)  # a person's usual one: a folder made without a mode is 0755
    try:
        with undo.remembered(
            tmp_path / "a.txt", [b"new"], dataclasses.replace(in_a_run, undo=record)
        ):
            (tmp_path / "a.txt").write_bytes(b"new")
    finally:
        os.umask(umask)

    assert {
        f.name: stat.S_IMODE(f.stat().st_mode) for f in record.parents if state in (f, *f.parents)
    } == {
        "t.jsonl.undo": 0o700,
        "project-0123456789": 0o700,
        "plainagent": 0o700,
        state.name: 0o700,
    }
    assert json.loads((record / "manifest.json").read_text())["files"][0]["existed"] is False


def manifest_of(tmp_path: Path) -> Path:
    [manifest] = runs_of(tmp_path).glob("*.undo/1/manifest.json")
    return manifest


def copy_named_outside_the_record(folder: Path) -> None:
    """The manifest names its copy "2" as "../2", and that copy is moved there, whole: a
    copy undo would take from outside the record it reads (a name with a slash, or anything
    but the digits undo gives)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    [entry] = [entry for entry in manifest["files"] if entry.get("copy") == "2"]
    entry["copy"] = "../2"
    (folder / "2").rename(folder.parent / "2")
    (folder / "manifest.json").write_text(json.dumps(manifest))


def each_path_made_relative(folder: Path) -> None:
    """The manifest names every file by a relative path: undo would find them from
    wherever it was started."""
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest["files"]:
        entry["path"] = entry["path"].lstrip("/")
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "damage, said",
    [
        (
            lambda folder: (folder / "manifest.json").write_text("{not json"),
            "manifest.json cannot be read (",
        ),
        (
            lambda folder: (folder / "manifest.json").write_text(
                '{"files": [{"path": "a.txt"}], "undone": false}'
            ),
            "manifest.json is not a manifest this program wrote",
        ),
        (lambda folder: (folder / "manifest.json").unlink(), "has no manifest.json"),
        (lambda folder: (folder / "2").unlink(), "/1/2 cannot be read (No such file or directory)"),
        (
            lambda folder: (folder / "2").write_text("not what it was"),
            "/1/2 is not the copy undo kept",
        ),
        (copy_named_outside_the_record, "manifest.json is not a manifest this program wrote"),
        (each_path_made_relative, "manifest.json is not a manifest this program wrote"),
    ],
)
def test_undo_with_damaged_data_is_one_line_exit_2_and_changes_nothing(
    model, cli, tmp_path, damage, said
):
    changing_run(model, tmp_path, cli)
    damage(manifest_of(tmp_path).parent)

    result = cli("--undo")

    assert (result.returncode, result.stdout) == (2, "")
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: cannot undo: {runs_of(tmp_path)}/") and said in line, line
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n" and (
        tmp_path / "new/sub/c.txt"
    ).exists()


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_undo_of_a_run_whose_transcript_is_now_a_link_says_what_to_do_and_changes_nothing(
    model, cli, tmp_path
):
    # It said `or run with --no-transcript`, which --undo refuses
    changing_run(model, tmp_path, cli)
    [kept] = runs_of(tmp_path).glob("*.jsonl")
    moved = kept.with_name("elsewhere.txt")
    kept.rename(moved)
    os.symlink(moved, kept)
    before = moved.read_bytes()

    result = cli("--undo")

    assert (result.returncode, result.stdout) == (2, "")
    [line] = result.stderr.splitlines()
    assert line == (
        f"error: cannot create the transcript {kept.as_posix()}: Too many levels of symbolic "
        "links; undo writes in the run's transcript: let it be written there (a file, not a "
        "link), then undo again"
    )
    assert moved.read_bytes() == before and (tmp_path / "a.txt").read_text() == "ONE\nTWO\n"


COPIED, CREATED = "b.txt", "new/sub/c.txt"  # an entry of each kind changing_run leaves


@pytest.mark.parametrize(
    "which, field, value",
    [
        (COPIED, "path", 5),
        (COPIED, "existed", "yes"),
        (COPIED, "after", None),
        (COPIED, "copy", "2x"),
        (COPIED, "copy", 2),
        (COPIED, "copy", "/2"),
        (COPIED, "before", None),
        (COPIED, "mode", -1),
        (COPIED, "mode", 0o10000),
        (COPIED, "mode", "0640"),
        (COPIED, "mode", 420.0),
        (COPIED, "mode", True),
        (COPIED, "size", "4"),
        (COPIED, "size", False),
        (COPIED, "size", None),
        (COPIED, "size", -1),
        (COPIED, "size", float("inf")),
        (COPIED, "mode", float("nan")),
        (CREATED, "folders", "new"),
        (CREATED, "folders", [1]),
        (CREATED, "folders", None),
        # A field of the other kind: each was a TypeError or KeyError traceback
        (CREATED, "copy", "1"),
        (CREATED, "copy", 5),
        (COPIED, "folders", 5),
        (COPIED, "folders", [1]),
        ("manifest", "files", {}),
        ("manifest", "undone", "no"),
    ],
)
def test_a_manifest_with_any_field_of_the_wrong_kind_is_refused_whole(
    model, cli, tmp_path, which, field, value
):
    # Each field undo acts on is checked before anything changes: no entry of a
    # damaged manifest is undone.
    changing_run(model, tmp_path, cli)
    manifest_path = manifest_of(tmp_path)
    manifest = json.loads(manifest_path.read_text())
    [entry] = (
        [manifest]
        if which == "manifest"
        else [e for e in manifest["files"] if e["path"] == str((tmp_path / which).resolve())]
    )
    if value is None:
        del entry[field]
    else:
        entry[field] = value
    manifest_path.write_text(json.dumps(manifest))

    result = cli("--undo")

    assert (result.returncode, result.stdout) == (2, ""), result.stdout
    assert result.stderr.strip().endswith("manifest.json is not a manifest this program wrote"), (
        result.stderr
    )
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n" and (
        tmp_path / "b.txt"
    ).read_text() == "BEE\n"
    assert (tmp_path / "new/sub/c.txt").exists()


def test_undo_of_a_run_whose_commands_changed_nothing_says_there_is_nothing_to_undo(
    model, cli, tmp_path
):
    (tmp_path / "made.txt").write_text("made\n")
    model.queue(calls(("run_shell", {"command": "echo made > made.txt"})), answer("made"))
    assert cli("--yes", "make it").returncode == 0

    result = cli("--undo")

    assert result.returncode == 2
    [path] = runs_of(tmp_path).glob("*.jsonl")
    assert result.stderr == (
        f"error: cannot undo: no undo data in {path}.undo/: the run changed no file "
        "with write_file, edit_file, an approved command or a writing MCP server\n"
    )
    assert (tmp_path / "made.txt").read_text() == "made\n"


def test_undo_with_no_transcript_yet_is_one_line_exit_2(model, cli, tmp_path):
    result = cli("--undo")

    assert (result.returncode, result.stderr) == (
        2,
        f"error: cannot undo: no run of {tmp_path.resolve()} yet (its "
        f"runs are kept in {runs_of(tmp_path)})\n",
    )


@pytest.mark.parametrize(
    "args", [("--undo", "a task"), ("--undo", "--continue"), ("--undo", "--no-transcript")]
)
def test_undo_takes_no_task(model, cli, capsys, args):
    with pytest.raises(SystemExit) as exit:
        cli(*args)

    assert exit.value.code == 2
    assert capsys.readouterr().err == (
        "error: --undo takes no task, --continue or --no-transcript (only --run N or "
        "--transcript PATH); see python harness.py --help\n"
    )


def test_undo_needs_no_api_key(model, cli, tmp_path):
    changing_run(model, tmp_path, cli)
    # no .env beside it, whatever the developer's folder holds
    agent = copy_of_the_agent(tmp_path / "agent")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GROQ_")}

    result = run_script("harness.py", "--undo", cwd=tmp_path, root=agent, env=environment)

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"


@posix_only
def test_undo_while_the_run_is_still_going_is_refused(model, tmp_path, start_cli):
    gate = threading.Event()
    replies = iter([calls(write("x.txt", "x")), answer("done")])
    model.router = lambda body: next(replies) if len(model.requests) == 1 or gate.wait(60) else None
    first = start_cli(tmp_path, "--yes", "write")
    wait_for(lambda: len(model.requests) == 2)  # x.txt is written; the run waits for its answer

    result = run_script("harness.py", "--undo", cwd=tmp_path)
    gate.set()
    first.communicate(timeout=30)

    [path] = runs_of(tmp_path).glob("*.jsonl")
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {path} is in use by another run; wait for that run to end, then undo\n"
    )
    assert (tmp_path / "x.txt").read_text() == "x"


def test_the_undo_data_is_protected_from_the_file_tools_and_unprompted_commands(
    model, cli, tmp_path
):
    (tmp_path / "a.txt").write_text("a")
    model.queue(
        calls(write("a.txt", "b")),
        answer("one"),
        calls(write("t.jsonl.undo/1/1", "forged")),
        answer("two"),
        calls(
            ("run_shell", {"command": "cat t.jsonl.undo/1/1"}),
            ("run_shell", {"command": "cat a.txt"}),
        ),
        answer("three"),
    )
    cli("--yes", "first", "--transcript", "t.jsonl")

    cli("--yes", "--continue", "second", "--transcript", "t.jsonl")
    # without --yes: what needs approval is denied
    cli("--continue", "third", "--transcript", "t.jsonl")

    assert model.messages(3)[-1]["content"] == (
        "error: PermissionError: t.jsonl.undo/1/1 is protected (.env or the "
        "transcripts folder); write somewhere else"
    )
    assert model.messages(5)[-2]["content"].startswith("denied")
    # the same command on another file runs
    assert model.messages(5)[-1]["content"].startswith("exit code: 0")
    assert (tmp_path / "t.jsonl.undo" / "1" / "1").read_text() == "a"


def test_undo_writes_nothing_outside_the_workspace_whatever_its_manifest_says(
    model, tmp_path, monkeypatch
):
    # Undo data forged (an older version kept it in runs/, where a command could
    # write it): a manifest that names a file outside, with its hash as "what the run
    # left", and a copy to put back.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("precious\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    runs_of(ws).mkdir(parents=True)
    monkeypatch.chdir(ws)
    (runs_of(ws) / "9999-forged.jsonl").write_text('{"type": "start"}\n')
    record = runs_of(ws) / "9999-forged.jsonl.undo" / "1"
    record.mkdir(parents=True)
    (record / "1").write_text("owned\n")
    digest = hashlib.sha256
    entry = {
        "path": str(outside / "victim"),
        "existed": True,
        "copy": "1",
        "size": 6,
        "mode": 0o644,
        "before": digest(b"owned\n").hexdigest(),
        "after": digest(b"precious\n").hexdigest(),
    }
    (record / "manifest.json").write_text(json.dumps({"files": [entry], "undone": False}))

    result = run_script("harness.py", "--undo", cwd=ws)

    assert (outside / "victim").read_text() == "precious\n"
    assert (
        result.returncode == 1
        and "left alone" in result.stdout
        and "outside the workspace" in result.stdout
    )


@posix_only
@pytest.mark.parametrize("planted", ["manifest.json", "1"])
def test_undo_data_that_a_command_made_a_named_pipe_is_refused_not_waited_on(
    model, tmp_path, planted
):
    # A command that could write an older version's runs/ could put a FIFO where undo reads its
    # manifest or a copy: opened as a file, it waited for a writer for good.
    runs_of(tmp_path).mkdir(parents=True)
    (runs_of(tmp_path) / "9999-forged.jsonl").write_text('{"type": "start"}\n')
    record = runs_of(tmp_path) / "9999-forged.jsonl.undo" / "1"
    record.mkdir(parents=True)
    entry = {
        "path": str(tmp_path / "a.txt"),
        "existed": True,
        "copy": "1",
        "size": 1,
        "mode": 0o644,
        "before": hashlib.sha256(b"a").hexdigest(),
        "after": hashlib.sha256(b"b").hexdigest(),
    }
    (record / "manifest.json").write_text(json.dumps({"files": [entry], "undone": False}))
    (tmp_path / "a.txt").write_text("b")
    (record / planted).unlink(missing_ok=True)
    os.mkfifo(record / planted)

    result = run_script("harness.py", "--undo", cwd=tmp_path)

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(f"error: cannot undo: {record}/{planted} cannot be read (")
    assert "not a regular file" in result.stderr and (tmp_path / "a.txt").read_text() == "b"


@posix_only
@pytest.mark.parametrize("planted", ["manifest.json", "2"])
def test_undo_data_that_a_command_made_a_link_is_refused_not_followed(
    model, cli, tmp_path, planted
):
    # Undo reads its own data only: a link put in its place (by a command that could write an
    # older version's runs/) would have it read whatever file the link names, anywhere, and put
    # that back into the person's files.
    changing_run(model, tmp_path, cli)
    record = manifest_of(tmp_path).parent
    elsewhere = tmp_path / "elsewhere"
    shutil.copy(record / planted, elsewhere)  # the very bytes it holds: only the link is wrong
    (record / planted).unlink()
    (record / planted).symlink_to(elsewhere)

    result = cli("--undo")

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: cannot undo: {record}/{planted} cannot be read (Too many levels of symbolic "
        "links)\n"
    )
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n" and (
        tmp_path / "b.txt"
    ).read_text() == "BEE\n"


@pytest.mark.parametrize(
    "planted, said",
    [
        ("manifest.json", "manifest.json cannot be read (over 100 MB, more than undo ever keeps)"),
        ("2", "/1/2 cannot be read (over 10 MB, more than undo ever keeps)"),
    ],
)
def test_undo_data_a_command_made_huge_is_refused_not_read_into_memory(
    model, cli, tmp_path, planted, said
):
    # A command that could write an older version's runs/ could make a manifest or a copy a sparse
    # terabyte: read whole, a MemoryError.
    changing_run(model, tmp_path, cli)
    os.truncate(manifest_of(tmp_path).parent / planted, 1 << 40)

    result = cli("--undo")

    assert (result.returncode, result.stdout) == (2, "")
    [line] = result.stderr.splitlines()
    assert line.startswith(f"error: cannot undo: {runs_of(tmp_path)}/") and said in line, line
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n"


def test_undo_reads_no_more_copies_than_a_run_keeps_in_all(model, cli, tmp_path, monkeypatch):
    # A forged manifest can name one copy's hard links again and again.
    changing_run(model, tmp_path, cli)
    record = manifest_of(tmp_path).parent
    manifest = json.loads((record / "manifest.json").read_text())
    [copied] = [entry for entry in manifest["files"] if entry.get("copy")][:1]
    (record / copied["copy"]).write_bytes(b"x" * 100_000)
    copied["before"] = hashlib.sha256(b"x" * 100_000).hexdigest()
    for n in range(3, 40):
        os.link(record / copied["copy"], record / str(n))
        manifest["files"].append({**copied, "copy": str(n)})
    (record / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(undo, "MAX_RUN_BYTES", 1_000_000)

    result = cli("--undo")

    assert (result.returncode, result.stdout) == (2, "")
    assert "/1/11 cannot be read (the copies are over 1 MB in all)" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1 and (tmp_path / "a.txt").read_text() == "ONE\nTWO\n"


@posix_only
def test_a_loop_of_links_on_the_way_to_a_file_is_a_failed_line_not_a_traceback(
    model, cli, tmp_path
):
    # Python 3.11's resolve() raises RuntimeError on a loop of links, which --undo let
    # through as a traceback; 3.13's raises nothing, and undo said "left alone: changed since
    # the run" and spent the change.
    model.queue(calls(write("sub/x.txt", "x\n")), answer("wrote it"))
    assert cli("--yes", "write sub/x.txt").returncode == 0
    (tmp_path / "sub" / "x.txt").unlink()
    (tmp_path / "sub").rmdir()
    (tmp_path / "sub").symlink_to("sub")

    result = cli("--undo")

    assert (result.returncode, result.stderr) == (1, "")
    said = "failed sub/x.txt: a loop of links is on its way\n"
    # kept to undo again, on every Python
    assert result.stdout == said and cli("--undo").stdout == said


@posix_only
def test_an_undo_folder_left_as_a_link_to_itself_is_one_line_not_a_traceback(model, cli, tmp_path):
    model.queue(calls(write("x.txt", "x\n")), answer("wrote it"))
    assert cli("--yes", "write x.txt").returncode == 0
    [folder] = runs_of(tmp_path).glob("*.undo")
    shutil.rmtree(folder)
    folder.symlink_to(folder.name)

    result = cli("--undo")

    assert (
        result.returncode == 2
        and result.stderr.startswith("error: ")
        and result.stderr.count("\n") == 1
    )
    assert (tmp_path / "x.txt").exists()
    # a write then keeps nothing: refused, not a crash
    model.queue(calls(write("y.txt", "y\n")), answer("could not"))
    assert (
        cli("--yes", "--continue", "write y.txt").returncode == 0
        and not (tmp_path / "y.txt").exists()
    )
    assert (
        model.messages(3)[-1]["content"].startswith("error: ")
        and "cannot keep what undo needs" in model.messages(3)[-1]["content"]
    )


def test_undo_from_another_workspace_leaves_the_files_alone_and_can_be_tried_again(
    model, cli, tmp_path, monkeypatch
):
    # A run with --workspace undone without it: every file was "left alone" as outside the
    # workspace, and the record was marked undone, so the right --undo --workspace then said "all
    # undone already" and nothing was.
    work, here = tmp_path / "project", tmp_path / "here"
    work.mkdir()
    here.mkdir()
    monkeypatch.chdir(here)  # the run works in the folder beside this one
    model.queue(calls(write("notes.txt", "hello\n")), answer("wrote it"))
    assert cli("--yes", "--workspace", str(work), "write notes.txt").returncode == 0
    # its own runs
    assert cli("--undo").stderr.startswith(f"error: cannot undo: no run of {here.resolve()} yet")

    wrong = cli("--undo", "--transcript", str(only_transcript(work)))

    assert wrong.returncode == 1 and (work / "notes.txt").exists()
    assert wrong.stdout.startswith(f"left alone {(work / 'notes.txt').as_posix()}: ")
    assert (
        "kept to undo again: if the run had a --workspace, give it (--undo --workspace DIR)"
        in wrong.stdout
    )
    right = cli("--undo", "--workspace", str(work))
    assert (right.returncode, right.stdout, right.stderr) == (
        0,
        f"removed {(work / 'notes.txt').as_posix()} (the run created it)\n",
        "",
    )
    assert not (work / "notes.txt").exists()


@posix_only
@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file away"
)
def test_undo_keeps_the_owner_of_the_file_it_restores(model, cli, tmp_path):
    # Undo restored through a new temporary file, which root made its own: the
    # person's file became root's.
    (tmp_path / "a.txt").write_text("one\n")
    os.chown(tmp_path / "a.txt", 1234, 5678)
    model.queue(calls(edit("a.txt", "one", "ONE")), answer("changed"))
    assert cli("--yes", "change it").returncode == 0
    assert (tmp_path / "a.txt").stat().st_uid == 1234  # the edit kept it

    result = cli("--undo")

    assert (result.returncode, result.stdout) == (0, "restored a.txt\n")
    info = (tmp_path / "a.txt").stat()
    assert (tmp_path / "a.txt").read_text() == "one\n" and (info.st_uid, info.st_gid) == (
        1234,
        5678,
    )


# --undo in a child that says so and waits when it first reads its undo data (a FIFO
# there is refused, not read).
UNDO_STOPPED_IN_A_READ = f"""
import sys, time
sys.path.insert(0, {str(ROOT)!r})
import harness
from plainagent.cli import main as cli
from plainagent.workspace import undo, undo_record
def stuck(*args):
    print("reading", flush=True)
    time.sleep(60)
undo.read_kept = undo_record.read_kept = stuck
sys.exit(cli.main(harness.run, ["--undo"]))
"""


def undo_stopped(
    code: str, saying: str, signum: int, folder: Path, *args: str
) -> tuple[int, str, str]:
    """Run `code` (an --undo made to stop and say `saying`) in a child, send it signum
    there; its exit and output."""
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=folder,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,
    )
    try:
        assert child.stdout.readline() == saying + "\n"
        child.send_signal(signum)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, out, err


@posix_only
def test_ctrl_c_during_undo_is_one_line_and_exit_130(model, cli, tmp_path):
    # Ctrl-C outside a task (here while --undo reads its manifest) ended in a traceback.
    changing_run(model, tmp_path, cli)

    stopped = undo_stopped(UNDO_STOPPED_IN_A_READ, "reading", signal.SIGINT, tmp_path)

    assert stopped == (130, "", "interrupted\n")
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n"  # nothing was undone


# --undo in a child whose first fsync (the restored file's, before it is renamed
# into place) says so and waits.
UNDO_STOPPED_IN_A_WRITE = f"""
import os, sys, time
sys.path.insert(0, {str(ROOT)!r})
import harness
from plainagent.cli import main as cli
from plainagent.workspace import writes
writes.UNNAMED_FILES = sys.argv[1] == "unnamed"
def stuck(fd):
    print("writing", flush=True)
    time.sleep(60)
os.fsync = stuck
sys.exit(cli.main(harness.run, ["--undo"]))
"""


@posix_only
@pytest.mark.parametrize("temporary", ["unnamed", "named"])
def test_sigterm_during_undo_is_one_line_exit_143_and_leaves_the_file_whole_and_no_temporary(
    model, cli, tmp_path, temporary
):
    # --undo had no handler for SIGTERM: it died silently where it was, and where the new file has
    # a name while it is written (macOS, Windows, file systems without unnamed files) that file
    # was left in the person's folder.
    changing_run(model, tmp_path, cli)

    stopped = undo_stopped(UNDO_STOPPED_IN_A_WRITE, "writing", signal.SIGTERM, tmp_path, temporary)

    assert stopped == (143, "", "terminated\n")
    # the first file undo restores, left as the run left it
    assert (tmp_path / "a.txt").read_text() == "ONE\nTWO\n"
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt", "new"]
    assert cli("--undo").returncode == 0 and (tmp_path / "a.txt").read_text() == "one\ntwo\n"


@linux_only
@pytest.mark.skipif(
    shutil.which("strace") is None, reason="needs strace to see the order of system calls"
)
def test_the_undo_record_is_on_disk_whole_before_the_file_it_protects_changes(model, tmp_path):
    # Copies and manifest were flushed, but not the folders naming them: after a
    # power cut a manifest could name a copy that is not on disk, or a file could be
    # changed with no record of it at all.
    folder = tmp_path.resolve()
    (folder / "a.txt").write_text("one\n"), (folder / "b.txt").write_text("bee\n")
    model.queue(calls(write("a.txt", "two\n")), calls(write("b.txt", "BEE\n")), answer("done"))

    made = traced(
        "fsync,mkdir,mkdirat,rename,renameat,renameat2,link,linkat", "--yes", "write", cwd=folder
    )

    # unsynced: names whose folder was not flushed since they were made (a
    # dot-name is one undo never reads).
    runs, unsynced, flushed, checked = runs_of(folder), set(), set(), []
    for name, paths in made:
        if name == "fsync":
            unsynced -= {p for p in unsynced if p.parent == paths[0]}
            flushed.add(paths[0])
            continue
        source, target = (None, *paths) if name.startswith("mkdir") else paths
        if runs in target.parents and name.startswith("rename"):
            assert source in flushed, f"{source} was named {target} before it was on disk"
            assert not {p for p in unsynced if source in p.parents}, (
                f"{source} was named {target} before its files"
            )
            if target.name == "manifest.json":
                assert not {p for p in unsynced if p.parent == target.parent}, (
                    f"{target} names copies not on disk"
                )
        if target.parent == folder and target.name in ("a.txt", "b.txt"):
            assert not {p for p in unsynced if runs in p.parents}, f"{target} was changed first"
            checked.append(target.name)
        if not target.name.startswith("."):
            unsynced.add(target)
    assert checked == ["a.txt", "b.txt"]


def test_ctrl_c_while_undo_data_is_kept_leaves_no_record_that_stops_undo(model, cli, tmp_path):
    # A record folder was made, then the first copy written into it, then its manifest: stopped
    # in between (Ctrl-C, SIGTERM, kill -9), it was left with no manifest, and every later
    # --undo said the data was damaged.
    changing_run(model, tmp_path, cli)
    [folder] = runs_of(tmp_path).glob("*.undo")

    # what the tool writes, cut short by a Ctrl-C once the copy is kept
    def stopped_after_the_copy():
        yield b"ONE"
        raise KeyboardInterrupt

    config = dataclasses.replace(resolve(require_key=False), undo=folder / "2")
    with pytest.raises(KeyboardInterrupt):
        undo.remember((tmp_path / "a.txt").resolve(), stopped_after_the_copy(), config)
    assert sorted(os.listdir(folder)) == ["1"]

    result = cli("--undo")

    assert (result.returncode, result.stderr) == (0, "")
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"


@posix_only
def test_a_write_that_fails_on_a_full_disk_leaves_undo_the_content_the_run_did_leave(
    model, tmp_path
):
    # undo recorded what the tool was about to leave before the write: when the task's second write
    # to a file failed (EFBIG here, as on a full disk), --undo said "left alone a.txt: changed since
    # the run" though nobody had touched it.
    original = "one\n" + "x" * 990_000 + "\n"
    (tmp_path / "a.txt").write_text(original)
    model.queue(
        calls(edit("a.txt", "one", "ONE")),
        calls(edit("a.txt", "ONE", "ONE" + "!" * 20_000)),
        answer("the disk is full"),
    )

    # write() past 1 MB fails with EFBIG, as on a full disk
    run = run_script(
        "harness.py", "--yes", "edit", cwd=tmp_path, **limited(resource.RLIMIT_FSIZE, 1_000_000)
    )
    assert run.returncode == 0, run.stderr
    assert "File too large" in model.messages(2)[-1]["content"]
    assert (tmp_path / "a.txt").read_text() == original.replace("one", "ONE")  # the first edit only

    result = run_script("harness.py", "--undo", cwd=tmp_path)

    assert (result.returncode, result.stdout, result.stderr) == (0, "restored a.txt\n", "")
    assert (tmp_path / "a.txt").read_text() == original
    assert [p.name for p in runs_of(tmp_path).rglob(".*")] == []  # no earlier record left behind


@posix_only
def test_undo_compares_a_huge_file_without_reading_it_into_memory(model, cli, tmp_path):
    # A file changed without a copy (over 10 MB) may grow to any size after the run: --undo read all
    # of it into memory to compare it, and a log of a few GB ended it with MemoryError.
    log = tmp_path / "big.log"
    log.write_text("started\n" + "x" * 11_000_000 + "\n")
    model.queue(calls(edit("big.log", "started", "STARTED")), answer("changed"))
    assert cli("--yes", "shout").returncode == 0
    with open(log, "r+b") as file:
        file.truncate(300 << 20)  # grown since, sparse: no disk used

    # the agent needs well under 100 MB
    result = run_script(
        "harness.py", "--undo", cwd=tmp_path, **limited(resource.RLIMIT_DATA, 150 << 20)
    )

    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout == (
        "not undone big.log: its content from before the run was not kept (over 10 MB)\n"
    )


@pytest.mark.parametrize("how", ["--undo", "/undo"])
def test_undo_after_a_half_written_last_line_leaves_a_transcript_that_continues(
    model, cli, terminal, tmp_path, how
):
    # A run killed mid-line left a half line; undo ended it and appended its note, and from then on
    # every --continue stopped with "line N is not JSON".
    (tmp_path / "x.txt").write_text("before\n")
    model.queue(calls(write("x.txt", "after\n")), answer("wrote it"))
    assert cli("--yes", "--transcript", "t.jsonl", "write x").returncode == 0
    cut = len((tmp_path / "t.jsonl").read_text().splitlines()) + 1
    with open(tmp_path / "t.jsonl", "a") as file:
        # where the kill cut it
        file.write('{"time": 1, "type": "message", "message": {"role": "assis')
    said = (
        "note: the last line of t.jsonl was half-written; it is ended and marked, so --continue "
        "skips it"
    )

    if how == "--undo":
        result = cli("--undo", "--transcript", "t.jsonl")
        assert (result.returncode, result.stdout, result.stderr) == (
            0,
            "restored x.txt\n",
            said + "\n",
        )
    else:
        shown = terminal("--transcript", "t.jsonl")
        shown.type_at_prompts("/undo", "/exit")
        assert shown.finish() == 0, shown.output
        assert said in shown.output and "\nrestored x.txt\n" in shown.output
    model.queue(answer("noted"), answer("again"))
    first = cli("--continue", "--transcript", "t.jsonl", "and now?")
    second = cli("--continue", "--transcript", "t.jsonl", "and then?")

    assert (first.returncode, second.returncode) == (0, 0), first.stderr
    assert first.stderr.startswith(f"note: line {cut} of t.jsonl was half-written and is skipped\n")
    assert [m["content"] for m in model.messages(2)[-3:]] == [
        "wrote it",
        f"(I undid the file changes of your latest task that still had any, with {how}: restored "
        "x.txt.)",
        "and now?",
    ]
    assert (tmp_path / "x.txt").read_text() == "before\n"


@posix_only
def test_slash_undo_first_thing_in_a_session_on_an_earlier_runs_transcript(
    model, cli, terminal, tmp_path
):
    # The session's conversation is empty (no --continue): the file is restored, and the note that
    # tells the model goes to the transcript, where --continue finds it after the run it undid.
    (tmp_path / "x.txt").write_text("before\n")
    model.queue(calls(write("x.txt", "after\n")), answer("wrote it"))
    assert cli("--yes", "--transcript", "t.jsonl", "write x").returncode == 0
    shown = terminal("--transcript", "t.jsonl")

    shown.type_at_prompts("/undo", "/exit")

    assert shown.finish() == 0, shown.output
    assert "\nrestored x.txt\n" in shown.output and "Traceback" not in shown.output
    assert (tmp_path / "x.txt").read_text() == "before\n"
    events = read_events(tmp_path / "t.jsonl")
    assert events[-1]["message"]["content"].startswith(
        "(I undid the file changes of your latest task that still"
    )
    model.queue(answer("noted"))
    assert cli("--continue", "--transcript", "t.jsonl", "and now?").returncode == 0
    assert [m["content"] for m in model.messages(2)[-3:]] == [
        "wrote it",
        "(I undid the file changes of your latest task that still had any, with /undo: restored "
        "x.txt.)",
        "and now?",
    ]


def forge_undo(workspace: Path, victims: list[Path]) -> None:
    """A transcript's record in runs/ as a command that could write it would forge one (undone by
    name, --transcript): for each victim, its hash as what the run left, and a copy to put back."""
    (workspace / "runs").mkdir(exist_ok=True)
    (workspace / "runs" / "9999-forged.jsonl").write_text('{"type": "start"}\n')
    record = workspace / "runs" / "9999-forged.jsonl.undo" / "1"
    record.mkdir(parents=True)
    entries = []
    for n, victim in enumerate(victims, 1):
        (record / str(n)).write_text("owned\n")
        entries.append(
            {
                "path": str(victim),
                "existed": True,
                "copy": str(n),
                "size": 6,
                "mode": 0o644,
                "before": hashlib.sha256(b"owned\n").hexdigest(),
                "after": hashlib.sha256(victim.read_bytes()).hexdigest(),
            }
        )
    (record / "manifest.json").write_text(json.dumps({"files": entries, "undone": False}))


def test_undo_writes_nothing_into_the_agents_own_files_or_runs_whatever_its_manifest_says(
    model, tmp_path, monkeypatch
):
    # The workspace holds the agent (started in the folder above it) and the state folder its runs
    # are kept in: inside the workspace, but no tool may write them, so neither may undo.
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("GROQ_API_KEY=gsk_kept_as_it_is_0123456789\n")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    kept = tmp_path / "state" / "plainagent" / "earlier" / "0001-earlier.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_text('{"type": "start", "task": "kept"}\n')
    victims = [
        agent / "harness.py",
        agent / "plainagent" / "shell" / "allowlist.py",
        agent / ".env",
        agent / "plainagent" / "__init__.py",
        kept,
    ]
    before = {victim: victim.read_bytes() for victim in victims}
    forge_undo(tmp_path, victims)

    result = run_script(
        "harness.py", "--undo", "--transcript", "runs/9999-forged.jsonl", cwd=tmp_path, root=agent
    )

    assert {victim: victim.read_bytes() for victim in victims} == before
    assert result.returncode == 1 and "restored" not in result.stdout, result.stdout + result.stderr
    assert result.stdout.count("left alone") == len(victims), result.stdout
    said = [
        line.split(": ", 1)[1]
        for line in result.stdout.splitlines()
        if line.startswith("left alone")
    ]
    assert [
        next(
            why
            for why in ("agent's own folder", "agent's own API keys", "is protected")
            if why in line
        )
        for line in said
    ] == ["agent's own folder"] * 2 + ["agent's own API keys", "agent's own folder", "is protected"]


def test_undo_writes_nothing_into_the_agents_own_python_installation_whatever_its_manifest_says(
    model, tmp_path
):
    import site
    import venv

    python_home = tmp_path / "python"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(python_home)
    [packages] = python_home.glob("lib/python*/site-packages")
    # this Python's packages too
    (packages / "these.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    (packages / "module.py").write_text("VALUE = 1\n")
    victims = [packages / "module.py", packages / "these.pth"]
    before = {victim: victim.read_bytes() for victim in victims}
    forge_undo(tmp_path, victims)

    result = subprocess.run(
        [
            str(python_home / "bin" / "python"),
            str(ROOT / "harness.py"),
            "--undo",
            "--transcript",
            "runs/9999-forged.jsonl",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )

    assert {victim: victim.read_bytes() for victim in victims} == before
    assert result.returncode == 1 and "restored" not in result.stdout, result.stdout + result.stderr
    assert result.stdout.count("Python installation") == len(victims), result.stdout


def test_undo_removes_no_folder_outside_the_workspace_whatever_its_manifest_says(model, tmp_path):
    # A file the run "created", with the folders it "made" for it named outside: removing the file
    # is allowed, but not the empty folder outside.
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    (outside / "empty").mkdir(parents=True)
    ws.mkdir()
    (ws / "new.txt").write_text("made\n")
    (ws / "runs" / "9999-forged.jsonl.undo" / "1").mkdir(parents=True)
    (ws / "runs" / "9999-forged.jsonl").write_text('{"type": "start"}\n')
    entry = {
        "path": str(ws / "new.txt"),
        "existed": False,
        "folders": [str(outside / "empty"), str(outside)],
        "after": hashlib.sha256(b"made\n").hexdigest(),
    }
    (ws / "runs" / "9999-forged.jsonl.undo" / "1" / "manifest.json").write_text(
        json.dumps({"files": [entry], "undone": False})
    )

    result = run_script("harness.py", "--undo", "--transcript", "runs/9999-forged.jsonl", cwd=ws)

    assert (outside / "empty").is_dir(), result.stdout + result.stderr
    assert result.returncode == 1 and "outside the workspace" in result.stdout


@posix_only
def test_undo_leaves_a_named_pipe_put_where_the_run_left_an_empty_file(model, tmp_path):
    # The run created an empty file; a command put a FIFO there since: it is
    # not the file the run left.
    (tmp_path / "runs" / "9999-forged.jsonl.undo" / "1").mkdir(parents=True)
    (tmp_path / "runs" / "9999-forged.jsonl").write_text('{"type": "start"}\n')
    os.mkfifo(tmp_path / "empty.txt")
    entry = {
        "path": str(tmp_path / "empty.txt"),
        "existed": False,
        "folders": [],
        "after": hashlib.sha256(b"").hexdigest(),
    }
    (tmp_path / "runs" / "9999-forged.jsonl.undo" / "1" / "manifest.json").write_text(
        json.dumps({"files": [entry], "undone": False})
    )

    result = run_script(
        "harness.py", "--undo", "--transcript", "runs/9999-forged.jsonl", cwd=tmp_path
    )

    assert stat.S_ISFIFO(os.lstat(tmp_path / "empty.txt").st_mode)
    assert (
        result.returncode == 1 and "left alone empty.txt: changed since the run" in result.stdout
    ), result.stdout


@posix_only
@pytest.mark.parametrize("name", ["notes.txt", "new.txt"])
def test_a_link_put_where_the_runs_file_was_is_left_alone_as_changed_not_failed_as_a_loop(
    model, cli, tmp_path, name
):
    # The file tools open no link at a file's name (ELOOP): that is a change made since the run, not
    # a loop of links on the way to it, which --undo reports as a failure and keeps to try again.
    (tmp_path / "notes.txt").write_text("before the run\n")
    (tmp_path / "mine.txt").write_text("the person's own file\n")
    model.queue(calls(write(name, "the run's words\n")), answer("wrote it"))
    assert cli("--yes", "--transcript", "t.jsonl", "write").returncode == 0
    (tmp_path / name).unlink()
    (tmp_path / name).symlink_to("mine.txt")

    result = cli("--undo", "--transcript", "t.jsonl")

    kept = "; its content from before the run is in t.jsonl.undo/1/1" if name == "notes.txt" else ""
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        f"left alone {name}: changed since the run{kept}\n",
        "",
    )
    assert os.readlink(tmp_path / name) == "mine.txt"
    assert (tmp_path / "mine.txt").read_text() == "the person's own file\n"


@linux_only
@pytest.mark.skipif(
    shutil.which("strace") is None, reason="needs strace to interrupt the write at its rename"
)
def test_a_write_interrupted_right_after_its_rename_is_still_undone(model, cli, tmp_path):
    # Ctrl-C landing as the new file is renamed over the old one: the tool fails, but the file holds
    # what it wrote, so the record of what it held before stays for --undo.
    (tmp_path / "notes.txt").write_text("before the run\n")
    model.queue(calls(write("notes.txt", "the run's notes\n")))
    # the rename over the file is the run's one renameat (the undo record's are rename)
    interrupted = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            os.devnull,
            "-e",
            "trace=renameat",
            "-e",
            "inject=renameat:signal=SIGINT:when=1",
            sys.executable,
            str(ROOT / "harness.py"),
            "--yes",
            "--transcript",
            "t.jsonl",
            "write",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        **CHILD,
    )

    assert interrupted.returncode == 130, interrupted.stderr
    assert (tmp_path / "notes.txt").read_text() == "the run's notes\n"
    undone = cli("--undo", "--transcript", "t.jsonl")
    assert (undone.returncode, undone.stdout) == (0, "restored notes.txt\n"), undone.stderr
    assert (tmp_path / "notes.txt").read_text() == "before the run\n"


def test_a_file_the_run_created_whose_folder_is_now_a_file_is_left_alone_as_changed(
    model, cli, tmp_path
):
    # The person replaced the folder the run made with a file of that name: theirs,
    # left alone, not a failure.
    model.queue(calls(write("sub/new.txt", "x\n")), answer("done"))
    assert cli("--yes", "--transcript", "t.jsonl", "write").returncode == 0
    shutil.rmtree(tmp_path / "sub")
    (tmp_path / "sub").write_text("the person's file named sub\n")

    undone = cli("--undo", "--transcript", "t.jsonl")

    assert (undone.returncode, undone.stdout) == (
        1,
        "left alone sub/new.txt: changed since the run\n",
    ), undone.stderr
    assert (tmp_path / "sub").read_text() == "the person's file named sub\n"


@posix_only
@pytest.mark.parametrize("stop", ["SIGKILL", "SIGTERM", "SIGINT"])
@pytest.mark.parametrize("at", ["new/sub", "new"])
def test_an_undo_stopped_between_a_created_file_and_its_folders_removes_the_folders_next_time(
    model, cli, tmp_path, tmp_path_factory, stop, at
):
    # Stopped after removing new/sub/c.txt and before its folders (kill -9 at the rmdir, Ctrl-C or
    # SIGTERM at the unlink), the next --undo found the file gone, said "unchanged" without looking
    # at the folders, and marked the task undone: the folders the run made stayed for good.
    changing_run(model, tmp_path, cli)
    env = audit_hooked(
        tmp_path_factory.mktemp("hook") / "python",
        f"""
        if event == "os.rmdir" and os.fspath(args[0]) == {str(tmp_path.resolve() / at)!r}:
            os.kill(os.getpid(), signal.{stop})
        """,
    )

    stopped = run_script("harness.py", "--undo", cwd=tmp_path, env=env)
    assert stopped.returncode == {"SIGKILL": -9, "SIGTERM": 143, "SIGINT": 130}[stop], (
        stopped.stderr
    )
    assert not (tmp_path / "new" / "sub" / "c.txt").exists() and (tmp_path / "new").is_dir()
    undone = cli("--undo")

    assert (undone.returncode, undone.stderr) == (0, "")
    assert undone.stdout.splitlines() == [
        "unchanged a.txt (already as before the run)",
        "unchanged b.txt (already as before the run)",
        "removed the folders the run made for new/sub/c.txt (the file was gone already)",
    ]
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]


def test_undo_removes_the_folders_of_created_files_that_share_them(model, cli, tmp_path):
    # new/a.txt made new/, new/sub/b.txt then made new/sub/: undone in the order they were
    # made, a.txt's folder was still holding sub/ when it was tried, and b.txt's own folders
    # did not include new/: new/ stayed.
    model.queue(
        calls(write("new/a.txt", "a\n"), write("new/sub/b.txt", "b\n")), answer("made them")
    )
    assert cli("--yes", "make").returncode == 0

    undone = cli("--undo")

    assert (undone.returncode, undone.stdout) == (
        0,
        "removed new/a.txt (the run created it)\nremoved new/sub/b.txt (the run created it)\n",
    ), undone.stderr
    assert not (tmp_path / "new").exists()


# A person's save, as code for a hook to run at `path`: as vim makes it (a new file renamed over the
# old one), or written in place.
SAVES = {
    "by rename": "open(path + '.saving', 'w').write(WORDS); os.rename(path + '.saving', path)",
    "in place": "open(path, 'w').write(WORDS)",
}


# Where the C library has no renameat2 (macOS, an old glibc): a hook's first lines that make it so
# for the agent, once the module has defined its own.
WITHOUT_RENAMEAT2 = """
    swaps = sys.modules.get("plainagent.workspace.swaps")
    if hasattr(getattr(swaps, "renameat2", None), "cache_info"):
        swaps.renameat2 = lambda: None
"""


@linux_only  # renameat2
@pytest.mark.parametrize("save", SAVES)
@pytest.mark.parametrize(
    "name, renameat2", [("notes.txt", "present"), ("new.txt", "present"), ("new.txt", "missing")]
)
def test_a_save_landing_as_undo_replaces_or_removes_the_file_is_kept(
    model, cli, tmp_path, tmp_path_factory, name, renameat2, save
):
    # Between undo's last look at the file and its rename over it (or its removal of a file the run
    # created), a save was overwritten or removed and kept nowhere. Here the save lands in that
    # instant: once undo has read the file, at its next rename, link or removal. A file the run
    # created is moved aside before it is removed, with or without renameat2 (without, a link puts
    # it back); a restore needs renameat2 (see the docs).
    (tmp_path / "notes.txt").write_text("before the run\n")
    model.queue(calls(write(name, "the run's text\n")), answer("wrote it"))
    assert cli("--yes", "--transcript", "t.jsonl", "write").returncode == 0
    path = tmp_path.resolve() / name
    env = audit_hooked(
        tmp_path_factory.mktemp("hook") / "python",
        (WITHOUT_RENAMEAT2 if renameat2 == "missing" else "")
        + f"""
    if state.get("saved"):
        return
    if event == "open" and isinstance(args[0], str) and args[0] == {str(path)!r}:
        state["read"] = True
    elif state.get("read") and event in ("os.rename", "os.link", "os.remove"):
        state["saved"] = True
        path, WORDS = {str(path)!r}, "the person's own words\\n"
        {SAVES[save]}
    """,
    )

    undone = run_script("harness.py", "--undo", "--transcript", "t.jsonl", cwd=tmp_path, env=env)

    kept = "; its content from before the run is in t.jsonl.undo/1/1" if name == "notes.txt" else ""
    assert (undone.returncode, undone.stdout, undone.stderr) == (
        1,
        f"left alone {name}: changed while undo was putting it back{kept}\n",
        "",
    )
    assert path.read_text() == "the person's own words\n"
    # nothing aside
    assert sorted(os.listdir(tmp_path)) == sorted({"notes.txt", name, "t.jsonl", "t.jsonl.undo"})
    again = cli("--undo", "--transcript", "t.jsonl")
    assert (again.returncode, again.stdout) == (
        1,
        f"left alone {name}: changed since the run{kept}\n",
    )


@linux_only
def test_where_names_cannot_be_exchanged_undo_still_restores_and_removes(
    model, cli, tmp_path, tmp_path_factory
):
    changing_run(model, tmp_path, cli)
    env = audit_hooked(tmp_path_factory.mktemp("hook") / "python", WITHOUT_RENAMEAT2)

    undone = run_script("harness.py", "--undo", cwd=tmp_path, env=env)

    assert (undone.returncode, undone.stdout, undone.stderr) == (
        0,
        "restored a.txt\nrestored b.txt\nremoved new/sub/c.txt (the run created it)\n",
        "",
    )
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt"]
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\n" and (
        tmp_path / "b.txt"
    ).read_text() == "bee\n"
