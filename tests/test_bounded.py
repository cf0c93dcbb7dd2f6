"""Tools stay bounded whatever they meet (endless output, huge files and folders, FIFOs, swapped links)
and survive odd bytes (names and text that are not UTF-8), with real processes and files."""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import harness

import files

import settings
import tools
from conftest import ROOT, run_script
from fake_model import answer, calls

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell, resource and FIFOs")
odd_names = pytest.mark.skipif(sys.platform != "linux", reason="file names that are not UTF-8 (macOS refuses them)")
NOTE = re.compile(r"\n\[cut: showed (?:bytes|entries) [0-9-]+ of [0-9,]+; call \w+ with offset=(\d+) for more\]$")
MARKER = re.compile(r"\n\[\.\.\. cut ([0-9,]+) bytes of ([0-9,]+) \.\.\.\]\n")
GROWTH_ALLOWED_MB = 20  # reading back a whole 10 MB output costs about 25 MB; yes used gigabytes


def in_child(code: str, cwd: Path, **env: str) -> dict:
    """Run `code` (which sets `result`) in a fresh Python that imported tools, so its memory is measured
    cleanly: returns the result and how far the child's peak RSS grew while the code ran, in MB."""
    script = "\n".join([
        "import json, resource, sys",
        f"sys.path.insert(0, {str(ROOT)!r})",
        "import settings, tools",
        "settings.CURRENT.set(settings.resolve(require_key=False))",  # this child is one run
        "def peak():",
        "    size = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss",
        "    return size / 2**20 if sys.platform == 'darwin' else size / 2**10",  # bytes on macOS, KB elsewhere
        "before = peak()",
        code,
        "print(json.dumps({'result': result, 'growth_mb': peak() - before}))",
    ])
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def read_all(call, *args) -> tuple[list[str], str]:
    """Call a paged tool from offset 0, following its notes to the end: the pages' texts, and all of it."""
    pages, offset = [], 0
    while True:
        result = call(*args, offset=offset)
        note = NOTE.search(result)
        pages.append(result[:note.start()] if note else result)
        if not note:
            return pages, "".join(pages)
        offset = int(note[1])


@posix_only
def test_yes_is_stopped_and_the_agents_memory_stays_bounded(tmp_path, in_a_run):
    child = in_child("tools.run_shell('true')\nresult = tools.run_shell('yes')", tmp_path, AGENT_SHELL_TIMEOUT="2")

    result = child["result"]
    assert result.startswith(("stopped after 10 MB of output; the command and its children were killed\n",
                              "timed out after 2 s; the command and its children were killed\n"))
    assert len(result) <= settings.BY_NAME["max_chars"].default + tools.NOTE_ROOM and MARKER.search(result)
    assert child["growth_mb"] < GROWTH_ALLOWED_MB


@posix_only
def test_a_command_printing_20_mb_is_stopped_at_the_limit_and_says_so(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    # 10 MB and one byte, then a pause the watcher must cut short, then the other 10 MB (never written)
    result = tools.run_shell("yes | head -c 10000001; sleep 60; yes | head -c 9999999")

    assert result.startswith("stopped after 10 MB of output; the command and its children were killed\nstdout:\ny\n")
    assert MARKER.search(result)[2] == "10,000,001"


def test_long_output_keeps_its_start_and_its_end_where_the_error_is(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    printed = "".join(f"{i}\n" for i in range(1, 100001)) + "Error: it broke at the very end\n"

    result = tools.run_shell(f"{sys.executable} -c \"import sys; [print(i) for i in range(1, 100001)]; "
                             "print('Error: it broke at the very end'); sys.exit(1)\"")

    head, marker, tail = MARKER.split(result, maxsplit=1)[0], MARKER.search(result), MARKER.split(result)[-1]
    assert head.startswith("exit code: 1\nstdout:\n1\n2\n3\n")
    assert tail.endswith("99999\n100000\nError: it broke at the very end\n")
    assert len(tail) > len(head) - len("exit code: 1\nstdout:\n")  # the end gets the larger share
    shown = len(head.removeprefix("exit code: 1\nstdout:\n")) + len(tail)
    assert (int(marker[1].replace(",", "")), marker[2]) == (len(printed) - shown, f"{len(printed):,}")
    assert printed.startswith(head.removeprefix("exit code: 1\nstdout:\n")) and printed.endswith(tail)
    assert len(result) <= settings.BY_NAME["max_chars"].default + tools.NOTE_ROOM


def test_a_long_result_of_another_tool_keeps_start_and_end_with_a_marker(in_a_run):
    text = "a" * 9000 + "the end"

    assert tools.cap(text) == \
        "a" * 1333 + "\n[... cut 5,007 characters of 9,007 ...]\n" + "a" * 2660 + "the end"


def test_results_with_lone_surrogates_become_valid_utf8(in_a_run):
    assert tools.cap("caf\udce9") == "caf\\udce9"


@posix_only
def test_read_file_of_a_1_gb_sparse_file_reads_only_the_slice_it_shows(tmp_path, in_a_run):
    size = 2**30
    with open(tmp_path / "big.txt", "wb") as file:
        file.write(b"start of the file\n" * 1000)
        file.truncate(size)  # sparse: the gigabyte costs nothing on disk
        file.seek(size - 11000)
        file.write(b"tail line\n" * 1100)

    child = in_child(f"result = tools.read_file('big.txt', offset={size - 11000})", tmp_path)

    assert child["result"] == ("tail line\n" * 400 + f"\n[cut: showed bytes {size - 11000}-{size - 7000} of "
                               f"1,073,741,824; call read_file with offset={size - 7000} for more]")
    assert child["growth_mb"] < GROWTH_ALLOWED_MB


@pytest.mark.parametrize("limit, lines", [("7", 60), ("4000", 600)])  # 7: cuts land at every byte alignment
def test_reading_on_from_the_notes_offset_continues_exactly_where_the_text_stopped(tmp_path, monkeypatch, limit,
                                                                                   lines, as_a_run):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_MAX_CHARS", limit)
    as_a_run()
    text = "".join(f"{i} héllo wörld 你好 🙂 ok\n" for i in range(lines))
    (tmp_path / "u.txt").write_bytes(text.encode("utf-8") + b"caf\xe9 au lait\n")

    pages, whole = read_all(tools.read_file, "u.txt")

    assert whole == text + "caf\ufffd au lait\n"
    assert len(pages) > 1 and all(len(page) <= int(limit) for page in pages)


def test_read_file_says_when_the_offset_is_past_the_end(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello")

    assert tools.read_file("a.txt", offset=5) == "a.txt has 5 bytes; offset 5 is at or past its end"


def test_a_latin1_file_is_text_with_replacement_characters(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "menu.txt").write_bytes("Café crème, brûlée\n".encode("latin-1") * 3)

    assert tools.read_file("menu.txt") == "Caf\ufffd cr\ufffdme, br\ufffdl\ufffde\n" * 3


@pytest.mark.parametrize("data", [b"hello\0world", bytes(range(128, 256)) * 10], ids=["utf8-with-nul", "undecodable"])
def test_nul_bytes_or_mostly_undecodable_bytes_are_binary(tmp_path, monkeypatch, data, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.bin").write_bytes(data)

    assert tools.read_file("f.bin") == f"f.bin is a binary file ({len(data)} bytes), not text; it was not read"


@posix_only
@pytest.mark.parametrize("call", ["tools.read_file('pipe')", "tools.write_file('pipe', 'x')"])
def test_a_fifo_is_refused_clearly_instead_of_hanging(tmp_path, call):
    os.mkfifo(tmp_path / "pipe")

    # in a child with a timeout: if the call hung, the test fails and the child is killed
    child = in_child(f"try:\n    {call}\nexcept OSError as error:\n    result = str(error)", tmp_path)

    assert child["result"] == "pipe is a named pipe, not a regular file; only regular files can be read or written"


@posix_only
def test_a_socket_is_refused_and_listed_as_what_it_is(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        with pytest.raises(OSError, match="^sock is a socket, not a regular file"):
            tools.read_file("sock")
        assert tools.list_dir() == "sock  (socket)"


def test_list_dir_of_1000_entries_comes_in_pages_that_continue(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    for i in range(1000):
        (tmp_path / f"f{i:04d}").write_text("x" * (i % 10))

    first = tools.list_dir()
    pages, _ = read_all(tools.list_dir, ".")

    assert first.splitlines()[:2] == ["f0000  0 bytes", "f0001  1 bytes"]
    assert first.splitlines()[-1] == "[cut: showed entries 1-200 of 1,000; call list_dir with offset=200 for more]"
    assert len(first.splitlines()) == tools.MAX_ENTRIES + 1
    entries = [line.split()[0] for page in pages for line in page.splitlines()]
    assert entries == [f"f{i:04d}" for i in range(1000)] and len(pages) == 5
    assert tools.list_dir(offset=1000) == ". has 1000 entries; offset 1000 is past the end"


@odd_names
def test_a_name_that_is_not_utf8_is_listed_escaped_and_read_by_that_name(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_bytes("déjà vu\n".encode("latin-1"))
    (tmp_path / os.fsdecode(b"line\nbreak")).write_text("x")

    assert tools.list_dir() == "caf\\xe9.txt  8 bytes\nline\\x0abreak  1 bytes"
    assert tools.read_file("caf\\xe9.txt") == "d\ufffdj\ufffd vu\n"
    assert tools.read_file("line\\x0abreak") == "x"


@odd_names
def test_a_run_meeting_odd_names_completes_and_can_be_continued(model, tmp_path):
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"d\xe9j\xe0 vu\n")
    # JSON can carry a lone surrogate; the error naming that path must still be valid UTF-8
    model.queue(calls(("list_dir", {})), calls(("read_file", {"path": "caf\\xe9.txt"}),
                                               ("read_file", '{"path": "../\\udce9"}')),
                answer("it says deja vu"), answer("still deja vu"))

    first = run_script("harness.py", "what is in the file?", cwd=tmp_path)
    second = run_script("harness.py", "--continue", "and now?", cwd=tmp_path)

    assert (first.returncode, first.stdout) == (0, "it says deja vu\n"), first.stderr
    assert (second.returncode, second.stdout) == (0, "still deja vu\n"), second.stderr
    assert model.messages(1)[-1]["content"] == "caf\\xe9.txt  8 bytes\nruns/"
    read, refused = [m["content"] for m in model.messages(2)[-2:]]
    assert read == "d\ufffdj\ufffd vu\n"
    assert refused.startswith("error: PermissionError: ../\\udce9 is outside the workspace ")
    assert model.messages(3)[:-2] == model.messages(2)


def test_a_link_swapped_in_after_the_check_is_refused_at_open(tmp_path, monkeypatch, in_a_run):
    (tmp_path / "ws").mkdir()
    monkeypatch.chdir(tmp_path / "ws")
    (tmp_path / "secret.txt").write_text("secret")
    (tmp_path / "ws" / "a.txt").write_text("fine")
    target = files.confine("a.txt")  # the check passes: a regular file inside

    (tmp_path / "ws" / "a.txt").unlink()
    (tmp_path / "ws" / "a.txt").symlink_to(tmp_path / "secret.txt")  # then the file becomes a link out

    with pytest.raises(OSError):
        files.open_regular("a.txt", target, os.O_RDONLY)


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc")
def test_a_folder_swapped_for_a_link_after_the_check_is_refused_at_open(tmp_path, monkeypatch, as_a_run):
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    monkeypatch.chdir(tmp_path / "ws")
    as_a_run()
    (tmp_path / "outside" / "a.txt").write_text("secret")
    (tmp_path / "ws" / "sub" / "a.txt").write_text("fine")
    target = files.confine("sub/a.txt")

    (tmp_path / "ws" / "sub" / "a.txt").unlink()
    (tmp_path / "ws" / "sub").rmdir()
    (tmp_path / "ws" / "sub").symlink_to(tmp_path / "outside")  # a folder on the way now leads out

    with pytest.raises(PermissionError, match="^sub/a.txt led outside the workspace "):
        files.open_regular("sub/a.txt", target, os.O_RDONLY)
    (tmp_path / "ws" / "inside.txt").write_text("fine")
    os.close(files.open_regular("inside.txt", files.confine("inside.txt"), os.O_RDONLY))  # inside still opens
