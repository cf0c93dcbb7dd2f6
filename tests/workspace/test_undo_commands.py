"""Undo of approved commands: what a command changed in the workspace is kept before it runs and
taken back by --undo (and /undo), by the file tools' rules, the report naming the command."""

import os
import stat
from pathlib import Path

from fake_model import answer, calls
from helpers import edit, only_transcript, posix_only, run_script, runs_of, write


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


def harness(folder: Path, *args: str):
    return run_script("harness.py", *args, cwd=folder)


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
        f"removed made/sub (the run created it; changed by: {COMMAND})",
        f"removed made (the run created it; changed by: {COMMAND})",
    ]

    again = harness(tmp_path, "--undo")

    assert again.returncode == 2
    assert "were all undone already" in again.stderr
    assert tree(tmp_path) == before
