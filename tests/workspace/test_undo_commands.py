"""Undo of approved commands: what a command changed in the workspace is kept before it runs and
taken back by --undo (and /undo), by the file tools' rules, the report naming the command."""

import hashlib
import json
import os
import resource
import signal
import threading
import time
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import (
    edit,
    git,
    limited,
    posix_only,
    run_script,
    runs_of,
    shell,
    store_of,
    tree,
    wait_for,
    write,
)

import harness as agent
from plainagent.core.settings import resolve
from plainagent.workspace import objects, undo


def project(folder: Path) -> None:
    (folder / "log.txt").write_bytes(b"first\n")
    (folder / "gone.txt").write_bytes(b"delete me\n")
    (folder / "old.py").write_bytes(b"print('old')\n")
    (folder / "tool.sh").write_bytes(b"echo hi\n")
    os.chmod(folder / "tool.sh", 0o640)
    (folder / "keep").mkdir()
    (folder / "keep" / "x.bin").write_bytes(bytes(range(256)))


COMMAND = (
    "echo more >> log.txt && rm gone.txt && mkdir -p made/sub && echo new > made/sub/n.txt"
    " && mv old.py new.py && chmod 755 tool.sh && ln -s log.txt link.txt"
)


def harness(folder: Path, *args: str, **kwargs):
    return run_script("harness.py", *args, cwd=folder, **kwargs)


@posix_only
def test_undo_takes_back_an_approved_commands_changes_exactly(model, tmp_path):
    project(tmp_path)
    before = tree(tmp_path)
    model.queue(calls(shell(COMMAND)), answer("done"))

    ran = harness(tmp_path, "--yes", "change things")

    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "log.txt").read_bytes() == b"first\nmore\n"
    assert (tmp_path / "made/sub/n.txt").exists() and not (tmp_path / "old.py").exists()

    undone = harness(tmp_path, "--undo")

    assert (undone.returncode, undone.stderr) == (0, "")
    assert tree(tmp_path) == before
    by = f"(changed by: {COMMAND})"
    assert undone.stdout.splitlines() == [
        f"restored gone.txt {by}",
        f"removed link.txt (the run created it; changed by: {COMMAND})",
        f"restored log.txt {by}",
        f"removed made/sub/n.txt (the run created it; changed by: {COMMAND})",
        f"removed new.py (the run created it; changed by: {COMMAND})",
        f"restored old.py {by}",
        f"restored the mode of tool.sh {by}",
        f"removed made/sub/ (the run created it; changed by: {COMMAND})",
        f"removed made/ (the run created it; changed by: {COMMAND})",
    ]

    again = harness(tmp_path, "--undo")

    assert again.returncode == 2
    assert "were all undone already" in again.stderr
    assert tree(tmp_path) == before


@posix_only
def test_a_file_the_person_changed_after_the_run_is_left_alone_and_named(model, tmp_path):
    project(tmp_path)
    model.queue(calls(shell("echo more >> log.txt && echo two >> gone.txt")), answer("done"))
    assert harness(tmp_path, "--yes", "append").returncode == 0
    (tmp_path / "log.txt").write_bytes(b"mine now\n")

    undone = harness(tmp_path, "--undo")

    assert undone.returncode == 1, undone.stderr
    [kept] = [
        line
        for line in undone.stdout.splitlines()
        if line.startswith("left alone log.txt: changed since the run; its content from before")
    ]
    assert (tmp_path / "log.txt").read_bytes() == b"mine now\n"
    assert Path(kept.rsplit(" is in ", 1)[1]).read_bytes() == b"first\n"
    assert "restored gone.txt (changed by: echo more >> log.txt && echo two >> gone.txt)" in (
        undone.stdout
    )
    assert (tmp_path / "gone.txt").read_bytes() == b"delete me\n"


@posix_only
def test_write_file_then_a_command_then_edit_file_undo_to_the_original(model, tmp_path):
    (tmp_path / "a.txt").write_text("original\n")
    model.queue(
        calls(write("a.txt", "written\n")),
        calls(shell("sed -i s/written/sedded/ a.txt && echo b > b.txt")),
        calls(edit("a.txt", "sedded", "edited")),
        answer("done"),
    )
    assert harness(tmp_path, "--yes", "three steps").returncode == 0
    assert (tmp_path / "a.txt").read_text() == "edited\n"

    undone = harness(tmp_path, "--undo")

    assert (undone.returncode, undone.stderr) == (0, "")
    assert (tmp_path / "a.txt").read_text() == "original\n"
    assert not (tmp_path / "b.txt").exists()
    assert "restored a.txt (changed by: sed -i s/written/sedded/ a.txt && echo b > b.txt)" in (
        undone.stdout
    )


@posix_only
def test_a_git_commit_is_left_to_git_and_named(model, tmp_path):
    git("init", "-q", cwd=tmp_path)
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt", cwd=tmp_path)
    git("-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "one", cwd=tmp_path)
    head = git("rev-parse", "HEAD", cwd=tmp_path)
    command = "echo two >> a.txt && git -c user.name=a -c user.email=a@b commit -qam two"
    model.queue(calls(shell(command)), answer("committed"))
    assert harness(tmp_path, "--yes", "commit").returncode == 0
    committed = git("rev-parse", "HEAD", cwd=tmp_path)

    undone = harness(tmp_path, "--undo")

    assert undone.returncode == 1, undone.stderr
    assert undone.stdout.splitlines() == [
        f"restored a.txt (changed by: {command})",
        f"left .git/: changed by {command}; history is git's to undo (git log, git reset, "
        "git checkout)",
    ]
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert git("rev-parse", "HEAD", cwd=tmp_path) == committed != head


@posix_only
def test_git_status_in_a_command_is_no_change_to_git_for_undo(model, tmp_path):
    """git status makes and removes a lock file in .git (a test runner asking git for the commit
    does too): .git's folder changes, its history and files do not, and undo says nothing of it."""
    git("init", "-q", cwd=tmp_path)
    (tmp_path / "a.txt").write_text("one\n")
    os.utime(tmp_path / "a.txt", (time.time() - 3600,) * 2)  # not racy: git status keeps the index
    git("add", "a.txt", cwd=tmp_path)
    git("commit", "-qm", "one", cwd=tmp_path)
    git("status", cwd=tmp_path)
    folder = (tmp_path / ".git").stat().st_mtime_ns
    command = "git status --short && echo made > out.txt"
    model.queue(calls(shell(command)), answer("done"))
    assert harness(tmp_path, "--yes", "status").returncode == 0
    assert (tmp_path / ".git").stat().st_mtime_ns != folder  # the lock was made and removed

    undone = harness(tmp_path, "--undo")

    assert (undone.returncode, undone.stderr) == (0, "")
    assert undone.stdout.splitlines() == [
        f"removed out.txt (the run created it; changed by: {command})"
    ]


@posix_only
def test_a_file_over_the_limit_is_named_as_not_kept_once_and_in_the_undo_report(
    model, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENT_UNDO_FILE_LIMIT", "1")
    (tmp_path / "big.bin").write_bytes(b"x" * 1_500_000)
    (tmp_path / "small.txt").write_text("small\n")
    model.queue(
        calls(shell("echo more >> big.bin")),
        calls(shell("echo more >> small.txt")),
        answer("done"),
    )

    ran = harness(tmp_path, "--yes", "append")

    assert ran.returncode == 0, ran.stderr
    note = (
        "note: big.bin is not kept for undo (over 1 MB): --undo cannot take back a change a "
        "command makes to it"
    )
    assert ran.stderr.count(note) == 1
    undone = harness(tmp_path, "--undo")
    assert undone.returncode == 1
    assert undone.stdout.splitlines() == [
        "not undone big.bin: its content from before the run was not kept (over 1 MB; changed "
        "by: echo more >> big.bin)",
        "restored small.txt (changed by: echo more >> small.txt)",
    ]
    assert (tmp_path / "small.txt").read_text() == "small\n"


@posix_only
def test_slash_undo_in_a_session_takes_back_a_commands_changes(model, terminal, tmp_path):
    project(tmp_path)
    before = tree(tmp_path)
    # no "> " in it: the terminal would take it for the prompt
    command = (
        "sed -i s/first/changed/ log.txt && rm gone.txt && mv old.py new.py && chmod +x tool.sh"
    )
    model.queue(calls(shell(command)), answer("done"))
    shown = terminal("--yes")

    shown.type_at_prompts("change things", "/undo", "/undo", "/exit")

    assert shown.finish() == 0, shown.output
    assert tree(tmp_path) == before
    assert f"\nrestored log.txt (changed by: {command})\n" in shown.output
    assert f"\nremoved new.py (the run created it; changed by: {command})\n" in shown.output
    assert f"\nrestored the mode of tool.sh (changed by: {command})\n" in shown.output
    assert "were all undone already" in shown.output


@posix_only
def test_a_continued_conversation_is_told_the_first_lines_of_a_long_undo_report(model, tmp_path):
    # One line a file: the model was sent every one of a command's thousands, each naming it
    command = "mkdir many && for i in $(seq 10 40); do echo $i > many/$i.txt; done"
    model.queue(calls(shell(command)), answer("made them"))
    assert harness(tmp_path, "--yes", "make files").returncode == 0
    undone = harness(tmp_path, "--undo")
    assert undone.returncode == 0, undone.stderr
    lines = undone.stdout.splitlines()
    assert len(lines) == 32 and not (tmp_path / "many").exists()
    model.queue(answer("noted"))

    went_on = harness(tmp_path, "--continue", "and now?")

    assert went_on.returncode == 0, went_on.stderr
    told = model.messages(2)[-2]["content"]
    assert told == (
        "(I undid the file changes of your latest task that still had any, with --undo: "
        f"{'; '.join(lines[:20])}; and 12 more lines like these.)"
    )


def copying(folder: Path) -> bool:
    """Whether an object is being made in the store: a temporary file with bytes in it."""
    return any(p.name.startswith(".new-") and p.stat().st_size for p in store_of(folder).glob("*"))


@posix_only
@pytest.mark.parametrize("when", ["walk", "copy"])
def test_kill_9_while_the_workspace_is_kept_leaves_it_and_the_store_usable(
    model, start_cli, tmp_path, monkeypatch, when
):
    monkeypatch.setenv("AGENT_UNDO_FILE_LIMIT", "1000")
    project(tmp_path)
    if when == "walk":  # many small files: the walk takes a while
        for k in range(3000):
            (tmp_path / "keep" / f"{k}.txt").write_text(f"{k}\n")
    else:  # a large file: its copy does
        with open(tmp_path / "keep" / "big.bin", "wb") as big:
            for _ in range(300):
                big.write(os.urandom(1_000_000))
    before = tree(tmp_path)
    model.queue(calls(shell("echo more >> log.txt")))
    killed = start_cli(tmp_path, "--yes", "append")

    wait_for(store_of(tmp_path).exists if when == "walk" else lambda: copying(tmp_path), 60)
    killed.send_signal(signal.SIGKILL)
    killed.wait()

    assert tree(tmp_path) == before
    model.queue(calls(shell("echo more >> log.txt && rm gone.txt")), answer("done"))
    ran = harness(tmp_path, "--yes", "append")
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "log.txt").read_bytes() == b"first\nmore\n"
    assert not [p for p in store_of(tmp_path).glob("*") if p.name.startswith(".new-")]
    undone = harness(tmp_path, "--undo")
    assert (undone.returncode, undone.stderr) == (0, ""), undone.stdout
    assert tree(tmp_path) == before


def files_in(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


@posix_only
def test_the_store_is_shown_by_runs_and_pruned_with_the_runs_it_serves(model, cli, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"a" * 300_000)
    model.queue(calls(shell("echo more >> a.txt")), answer("done"))
    assert cli("--yes", "append").returncode == 0
    model.queue(calls(shell("echo more >> a.txt")), answer("done"))
    assert cli("--yes", "append again").returncode == 0
    objects = store_of(tmp_path) / "objects"
    assert len(files_in(objects)) == 3  # before each command, and after the last

    listed = cli("--runs")

    assert f"kept in {runs_of(tmp_path)} (900 KB of it to undo commands); " in listed.stderr
    [first] = [p for p in runs_of(tmp_path).glob("*.jsonl") if '"task": "append"' in p.read_text()]
    start, rest = first.read_text().split("\n", 1)  # the first run started three days ago
    first.write_text(
        json.dumps({**json.loads(start), "time": time.time() - 3 * 86_400}) + "\n" + rest
    )
    forgot = cli("--forget-runs", "2")
    assert forgot.returncode == 0, forgot.stderr
    # the first run's copy goes; the second's, and what the workspace holds now, stay
    assert len(files_in(objects)) == 2 and all(any(f.iterdir()) for f in objects.iterdir())
    assert cli("--forget-runs", "0").returncode == 0
    assert not runs_of(tmp_path).exists()


@posix_only
def test_runs_says_a_small_store_in_kb(model, cli, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"a" * 20_000)
    model.queue(calls(shell("echo more >> a.txt")), answer("done"))
    assert cli("--yes", "append").returncode == 0

    listed = cli("--runs")

    # before and after the command: 40,005 bytes, where it said 0.0 MB
    assert f"kept in {runs_of(tmp_path)} (40 KB of it to undo commands); " in listed.stderr


@posix_only
def test_a_script_keeps_undo_data_when_it_names_a_folder_with_undo_and_takes_it_back(
    model, tmp_path
):
    (tmp_path / "a.txt").write_text("one\n")
    model.queue(calls(shell("echo two >> a.txt")), calls(write("b.txt", "b\n")), answer("done"))
    model.queue(calls(write("c.txt", "c\n")), answer("done"))
    settings = resolve(workspace=tmp_path, approve_all=True)
    kept = settings.runs_folder / "my-script.undo"

    agent.run("go", workspace=tmp_path, approve_all=True, undo=kept)
    agent.run("more", settings=settings, undo=kept)  # a record of its own, numbered past
    assert undo.take_back(kept, settings) == (["removed c.txt (the run created it)"], True)
    lines, complete = undo.take_back(kept, settings)

    assert complete
    assert lines == [
        "restored a.txt (changed by: echo two >> a.txt)",
        "removed b.txt (the run created it)",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    assert (tmp_path / "a.txt").read_text() == "one\n"
    # as from-a-script.md says: with nothing left, UndoError, and nothing changed
    with pytest.raises(undo.UndoError, match="my-script.undo/ were all undone already"):
        undo.take_back(kept, settings)


def test_runs_at_once_that_name_one_undo_folder_each_keep_a_record_of_their_own(model, tmp_path):
    def by_task(body: dict) -> dict:
        task = body["messages"][1]["content"]
        if body["messages"][-1]["role"] == "user":  # each run writes a file named after its task
            return {**calls(write(f"{task}.txt", f"{task}\n")), "delay": 0.2}
        return answer("done")

    model.router = by_task
    settings = resolve(workspace=tmp_path, approve_all=True)
    kept = settings.runs_folder / "my-script.undo"
    runs = [
        threading.Thread(
            target=agent.run, args=(f"t{i}",), kwargs={"settings": settings, "undo": kept}
        )
        for i in range(4)
    ]
    for started in runs:
        started.start()
    for started in runs:
        started.join()

    assert sorted(entry.name for entry in kept.iterdir()) == ["1", "2", "3", "4"]
    lines, complete = undo.take_back(kept, settings)  # the newest run's alone
    assert complete and len(lines) == 1
    [left] = {"t0.txt", "t1.txt", "t2.txt", "t3.txt"} - {p.name for p in tmp_path.iterdir()}
    assert lines == [f"removed {left} (the run created it)"]


@posix_only
def test_a_link_a_command_made_to_a_file_outside_the_workspace_is_removed_not_followed(
    model, tmp_path
):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("theirs\n")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "old").symlink_to("gone-target")
    command = f"ln -s {outside} out.txt && rm old"
    model.queue(calls(shell(command)), answer("linked"))
    assert harness(tmp_path / "work", "--yes", "link").returncode == 0

    undone = harness(tmp_path / "work", "--undo")

    assert (undone.returncode, undone.stderr) == (0, ""), undone.stdout
    assert undone.stdout.splitlines() == [
        f"made the link old again (changed by: {command})",
        f"removed out.txt (the run created it; changed by: {command})",
    ]
    assert os.readlink(tmp_path / "work" / "old") == "gone-target"
    assert not os.path.lexists(tmp_path / "work" / "out.txt")
    assert outside.read_text() == "theirs\n"


@posix_only
def test_an_install_into_a_venv_or_node_modules_is_left_to_the_package_manager_and_named(
    model, tmp_path
):
    packages = tmp_path / ".venv" / "lib" / "python3.12" / "site-packages"
    packages.mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "requirements.txt").write_text("one\n")
    command = (
        "echo two >> requirements.txt && mkdir .venv/lib/python3.12/site-packages/two"
        " && mkdir node_modules/left-pad"
    )
    model.queue(calls(shell(command)), answer("installed"))
    assert harness(tmp_path, "--yes", "install").returncode == 0

    undone = harness(tmp_path, "--undo")

    assert undone.returncode == 1, undone.stderr
    manager = "installs are the package manager's to undo"
    assert undone.stdout.splitlines() == [
        f"restored requirements.txt (changed by: {command})",
        f"left .venv/: changed by {command}; {manager} (pip uninstall, or make the venv again)",
        f"left node_modules/: changed by {command}; {manager} (npm uninstall, npm ci)",
    ]
    assert (packages / "two").is_dir() and (tmp_path / "node_modules" / "left-pad").is_dir()
    assert (tmp_path / "requirements.txt").read_text() == "one\n"


@posix_only
def test_a_kept_copy_missing_or_damaged_in_the_store_is_named_and_nothing_else_is_written(
    model, tmp_path
):
    project(tmp_path)
    model.queue(calls(shell("echo more >> log.txt && rm gone.txt")), answer("done"))
    assert harness(tmp_path, "--yes", "append").returncode == 0
    log, gone = (
        Path(objects.object_path(store_of(tmp_path), hashlib.sha256(content).hexdigest()))
        for content in (b"first\n", b"delete me\n")
    )
    damaged = bytearray(log.read_bytes())
    damaged[0] ^= 1
    log.write_bytes(bytes(damaged))
    gone.unlink()

    undone = harness(tmp_path, "--undo")

    assert undone.returncode == 1
    assert undone.stdout.splitlines() == [
        "failed gone.txt: its content from before the run is gone from the undo store",
        "failed log.txt: it is not the content undo kept",
    ]
    assert (tmp_path / "log.txt").read_bytes() == b"first\nmore\n"
    assert not (tmp_path / "gone.txt").exists()


@posix_only
def test_a_full_disk_that_stops_the_index_being_written_leaves_the_command_covered(model, tmp_path):
    # The index is a cache: where it cannot be written (the disk full, here a limit on a file's
    # size that the index of a thousand files passes, about 140 kB, and no object or pack does, nor
    # the pack's own index of where each content is in it, about 70 kB), what the walk kept
    # stands and the command's changes are recorded, where nothing was kept and undo had nothing
    project(tmp_path)
    for k in range(1000):
        (tmp_path / "keep" / f"{k}.txt").write_text(f"{k}\n")
    before = tree(tmp_path)
    model.queue(calls(shell("echo more >> log.txt && rm gone.txt")), answer("done"))

    ran = harness(tmp_path, "--yes", "append", **limited(resource.RLIMIT_FSIZE, 100_000))

    assert ran.returncode == 0, ran.stderr
    assert "note:" not in ran.stderr
    assert (tmp_path / "log.txt").read_bytes() == b"first\nmore\n"
    undone = harness(tmp_path, "--undo")
    assert (undone.returncode, undone.stderr) == (0, ""), undone.stdout
    assert tree(tmp_path) == before


@posix_only
def test_a_file_that_cannot_be_kept_is_named_above_the_question_and_once(
    model, terminal, tmp_path, monkeypatch
):
    monkeypatch.setenv("AGENT_UNDO_FILE_LIMIT", "1")
    (tmp_path / "big.bin").write_bytes(b"x" * 1_500_000)
    model.queue(calls(shell("echo more >> big.bin")), answer("appended"))
    shown = terminal("append")
    shown.read_until("[y]es / [N]o")
    asked = shown.output
    shown.type("y")

    assert shown.finish() == 0, shown.output
    note = (
        "note: big.bin is not kept for undo (over 1 MB): --undo cannot take back a change a "
        "command makes to it\nrun_shell wants to run:\n  echo more >> big.bin\n"
    )
    assert note in asked
    assert shown.output.count("is not kept for undo") == 1


@posix_only
def test_past_ten_files_not_kept_the_rest_are_counted_not_named(model, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_UNDO_FILE_LIMIT", "1")
    for k in range(12):
        (tmp_path / f"big{k:02}.bin").write_bytes(b"x" * 1_100_000)
    model.queue(calls(shell("touch made")), answer("done"))

    ran = cli("--yes", "touch")

    assert ran.returncode == 0, ran.stderr
    notes = [line for line in ran.stderr.splitlines() if "not kept for undo" in line]
    assert len(notes) == 11
    assert notes[-1] == "note: 2 more files are not kept for undo (over 1 MB, ...)"


@posix_only
def test_undo_finds_content_kept_in_a_store_made_before_objects_had_folders(model, tmp_path):
    # Objects were once kept in one folder, by their whole digest: a run kept so is undone too
    project(tmp_path)
    before = tree(tmp_path)
    model.queue(calls(shell(COMMAND)), answer("done"))
    assert harness(tmp_path, "--yes", "change things").returncode == 0
    objects = store_of(tmp_path) / "objects"
    for path in files_in(objects):
        path.rename(objects / (path.parent.name + path.name))
    for folder in [f for f in objects.iterdir() if f.is_dir()]:
        folder.rmdir()

    undone = harness(tmp_path, "--undo")

    assert (undone.returncode, undone.stderr) == (0, "")
    assert tree(tmp_path) == before


@posix_only
def test_a_file_a_command_moved_is_not_removed_while_its_old_names_copy_is_gone(model, tmp_path):
    # Undoing `mv old.py new.py` removes new.py and makes old.py again from the store: with that
    # copy gone, new.py is the content's only copy, and stays
    project(tmp_path)
    model.queue(calls(shell("mv old.py new.py")), answer("done"))
    assert harness(tmp_path, "--yes", "rename").returncode == 0
    content = b"print('old')\n"
    Path(objects.object_path(store_of(tmp_path), hashlib.sha256(content).hexdigest())).unlink()

    undone = harness(tmp_path, "--undo")

    assert undone.returncode == 1
    assert (tmp_path / "new.py").read_bytes() == content
    assert "failed new.py: not removed: it holds what a file the run changed held" in undone.stdout
    assert "failed old.py: its content from before the run is gone from the undo store" in (
        undone.stdout
    )


@posix_only
@pytest.mark.parametrize(
    "field, value",
    [("before", None), ("after", None), ("copy", "1"), ("folders", 5), ("folders", [1])],
)
def test_a_commands_entry_missing_a_node_or_with_a_field_of_another_kind_is_refused_whole(
    model, tmp_path, field, value
):
    # None: the field is left out. Each was a KeyError or TypeError traceback from --undo
    project(tmp_path)
    model.queue(calls(shell("echo more >> log.txt && echo new > n.txt")), answer("done"))
    assert harness(tmp_path, "--yes", "change things").returncode == 0
    [path] = runs_of(tmp_path).glob("*.undo/1/manifest.json")
    manifest = json.loads(path.read_text())
    for entry in manifest["files"]:
        if value is None:
            del entry[field]
        else:
            entry[field] = value
    path.write_text(json.dumps(manifest))

    undone = harness(tmp_path, "--undo")

    assert (undone.returncode, undone.stdout) == (2, "")
    assert undone.stderr == f"error: cannot undo: {path} is not a manifest this program wrote\n"
    assert (tmp_path / "log.txt").read_bytes() == b"first\nmore\n" and (tmp_path / "n.txt").exists()
