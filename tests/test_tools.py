"""The tools on a temporary folder: read_file and list_dir, their pages and the notes that read on,
and a tool added as docs/add-a-tool.md says."""

import os
import random
import re
import sys
import types
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import GROWTH_ALLOWED_MB, in_child, odd_names, posix_only

import harness
import tools
from plainagent.workspace import reading


def test_read_file_returns_text_from_an_offset(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello world")

    assert tools.read_file("a.txt", settings=in_a_run) == "hello world"
    assert tools.read_file("a.txt", offset=6, settings=in_a_run) == "world"


def test_binary_files_are_reported_not_dumped(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "img.bin").write_bytes(b"\x89PNG\x00\x01\x02" * 10)

    assert (
        tools.read_file("img.bin", settings=in_a_run)
        == "img.bin is a binary file (70 bytes), not text; it was not read"
    )


def test_missing_file_raises_for_the_dispatcher_to_report(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError):
        tools.read_file("nope.txt", settings=in_a_run)


def test_list_dir_marks_folders_and_sizes(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "f.txt").write_text("12345")

    assert tools.list_dir(settings=in_a_run) == "f.txt  5 bytes\nsub/"
    assert tools.list_dir("sub", settings=in_a_run) == "sub is empty"


def test_long_results_are_cut_with_a_marker_and_read_on_with_offset(model, tmp_path):
    text = "".join(f"{i:05d}\n" for i in range(3039))  # 18234 characters
    (tmp_path / "big.txt").write_text(text)
    model.queue(
        calls(("read_file", {"path": "big.txt"})),
        calls(("read_file", {"path": "big.txt", "offset": 4000})),
        answer("read it"),
    )

    harness.run("read big.txt")

    first, second = model.messages(1)[-1]["content"], model.messages(2)[-1]["content"]
    assert (
        first
        == text[:4000]
        + "\n[cut: showed bytes 0-4000 of 18,234; call read_file with offset=4000 for more]"
    )
    assert second == (
        text[4000:8000]
        + "\n[cut: showed bytes 4000-8000 of 18,234; call read_file with offset=8000 for more]"
    )


def test_list_dir_output_is_capped_too(model, tmp_path):
    for i in range(400):
        (tmp_path / f"file-with-a-long-name-{i:04d}.txt").write_text("x")
    model.queue(calls(("list_dir", {})), answer("many"))

    harness.run("list")

    *entries, note = model.messages(1)[-1]["content"].splitlines()
    assert len("\n".join(entries)) <= 4000
    assert entries[0] == "file-with-a-long-name-0000.txt  1 bytes"
    assert (
        note == f"[cut: showed entries 1-{len(entries)} of 400; call list_dir with "
        f"offset={len(entries)} for more]"
    )


def test_the_add_a_tool_pages_example_becomes_a_tool_in_registry_and_tools_and_works(
    tmp_path, as_a_run
):
    # tools.py extended exactly as docs/add-a-tool.md says: its function, and
    # its TOOL_FUNCTIONS line.
    page = (Path(tools.__file__).parent / "docs" / "add-a-tool.md").read_text(encoding="utf-8")
    example = re.search(r"^# Add a tool.*?```python\n(.*?)```", page, re.DOTALL)[1]
    function, tool_list = example.split("\nTOOL_FUNCTIONS = ")
    source = Path(tools.__file__).read_text(encoding="utf-8")
    added = re.sub(
        r"\nTOOL_FUNCTIONS(?::[^=\n]*)? = \[.*?\]",
        lambda m: f"\n{function}\nTOOL_FUNCTIONS = {tool_list.strip()}",
        source,
        count=1,
        flags=re.DOTALL,
    )
    extended = types.ModuleType("extended_tools")
    exec(compile(added, tools.__file__, "exec"), extended.__dict__)

    names = [f.__name__ for f in extended.TOOL_FUNCTIONS]
    assert names == ["read_file", "list_dir", "write_file", "edit_file", "run_shell", "count_lines"]
    assert (
        list(extended.REGISTRY) == names
        and list(extended.REGISTRY.values()) == extended.TOOL_FUNCTIONS
    )
    assert [t["function"]["name"] for t in extended.TOOLS] == names
    assert extended.TOOLS[-1] == extended.schema(extended.count_lines)
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    config = as_a_run(workspace=tmp_path)
    assert extended.count_lines("three.txt", settings=config) == "3"


NOTE = re.compile(
    r"\n\[cut: showed (?:bytes|entries) [0-9-]+ of [0-9,]+; call \w+ with offset=(\d+) for more\]$"
)


def read_all(call, *args, settings) -> tuple[list[str], str]:
    """Call a paged tool from offset 0 in a run's settings, following its notes to the end: the
    pages' texts, and all of it."""
    pages, offset = [], 0
    while True:
        result = call(*args, offset=offset, settings=settings)
        note = NOTE.search(result)
        pages.append(result[: note.start()] if note else result)
        if not note:
            return pages, "".join(pages)
        offset = int(note[1])


@posix_only
def test_read_file_of_a_1_gb_sparse_file_reads_only_the_slice_it_shows(tmp_path, in_a_run):
    size = 2**30
    with open(tmp_path / "big.txt", "wb") as file:
        file.write(b"start of the file\n" * 1000)
        file.truncate(size)  # sparse: the gigabyte costs nothing on disk
        file.seek(size - 11000)
        file.write(b"tail line\n" * 1100)

    child = in_child(
        f"result = tools.read_file('big.txt', offset={size - 11000}, settings=config)", tmp_path
    )

    assert child["result"] == (
        "tail line\n" * 400 + f"\n[cut: showed bytes {size - 11000}-{size - 7000} of "
        f"1,073,741,824; call read_file with offset={size - 7000} for more]"
    )
    assert child["growth_mb"] < GROWTH_ALLOWED_MB


# 7: cuts land at every byte alignment
@pytest.mark.parametrize("limit, lines", [("7", 60), ("4000", 600)])
def test_reading_on_from_the_notes_offset_continues_exactly_where_the_text_stopped(
    tmp_path, monkeypatch, limit, lines, as_a_run
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_MAX_CHARS", limit)
    config = as_a_run()
    text = "".join(f"{i} héllo wörld 你好 🙂 ok\n" for i in range(lines))
    (tmp_path / "u.txt").write_bytes(text.encode("utf-8") + b"caf\xe9 au lait\n")

    pages, whole = read_all(tools.read_file, "u.txt", settings=config)

    assert whole == text + "caf\ufffd au lait\n"
    assert len(pages) > 1 and all(len(page) <= int(limit) for page in pages)


def test_read_file_says_when_the_offset_is_past_the_end(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello")

    assert (
        tools.read_file("a.txt", offset=5, settings=in_a_run)
        == "a.txt has 5 bytes; offset 5 is at or past its end"
    )


def test_write_file_counts_the_bytes_it_wrote_not_the_characters(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)

    assert (
        tools.write_file("menu.txt", "café crème\n", settings=in_a_run)
        == "created menu.txt (13 bytes)"
    )
    assert (tmp_path / "menu.txt").stat().st_size == 13


def test_an_empty_file_reads_as_empty_text(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.txt").write_bytes(b"")

    assert tools.read_file("empty.txt", settings=in_a_run) == ""


def test_a_nul_byte_past_the_sample_in_the_part_read_makes_the_file_binary(
    tmp_path, monkeypatch, in_a_run
):
    # The first 8,192 bytes are text; the part read from the offset holds a NUL:
    # not text, and nothing shown.
    monkeypatch.chdir(tmp_path)
    data = b"a line of text\n" * 1000 + b"\0" + b"more text\n"
    (tmp_path / "mixed.log").write_bytes(data)

    assert tools.read_file("mixed.log", offset=14_000, settings=in_a_run) == (
        f"mixed.log is a binary file ({len(data)} bytes), not text; it was not read"
    )


def test_a_latin1_file_is_text_with_replacement_characters(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "menu.txt").write_bytes("Café crème, brûlée\n".encode("latin-1") * 3)

    assert (
        tools.read_file("menu.txt", settings=in_a_run)
        == "Caf\ufffd cr\ufffdme, br\ufffdl\ufffde\n" * 3
    )


@pytest.mark.parametrize(
    "data", [b"hello\0world", bytes(range(128, 256)) * 10], ids=["utf8-with-nul", "undecodable"]
)
def test_nul_bytes_or_mostly_undecodable_bytes_are_binary(tmp_path, monkeypatch, data, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.bin").write_bytes(data)

    assert (
        tools.read_file("f.bin", settings=in_a_run)
        == f"f.bin is a binary file ({len(data)} bytes), not text; it was not read"
    )


def test_list_dir_of_1000_entries_comes_in_pages_that_continue(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    for i in range(1000):
        (tmp_path / f"f{i:04d}").write_text("x" * (i % 10))

    first = tools.list_dir(settings=in_a_run)
    pages, _ = read_all(tools.list_dir, ".", settings=in_a_run)

    assert first.splitlines()[:2] == ["f0000  0 bytes", "f0001  1 bytes"]
    assert (
        first.splitlines()[-1]
        == "[cut: showed entries 1-200 of 1,000; call list_dir with offset=200 for more]"
    )
    assert len(first.splitlines()) == reading.MAX_ENTRIES + 1
    entries = [line.split()[0] for page in pages for line in page.splitlines()]
    assert entries == [f"f{i:04d}" for i in range(1000)] and len(pages) == 5
    assert (
        tools.list_dir(offset=1000, settings=in_a_run)
        == ". has 1000 entries; offset 1000 is past the end"
    )


@odd_names
def test_a_name_that_is_not_utf8_is_listed_escaped_and_read_by_that_name(
    tmp_path, monkeypatch, in_a_run
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_bytes("déjà vu\n".encode("latin-1"))
    (tmp_path / os.fsdecode(b"line\nbreak")).write_text("x")
    # DEL, which a terminal acts on like the controls below it
    (tmp_path / "rub\x7fout").write_text("y")

    assert (
        tools.list_dir(settings=in_a_run)
        == "caf\\xe9.txt  8 bytes\nline\\x0abreak  1 bytes\nrub\\x7fout  1 bytes"
    )
    assert tools.read_file("caf\\xe9.txt", settings=in_a_run) == "d\ufffdj\ufffd vu\n"
    assert tools.read_file("line\\x0abreak", settings=in_a_run) == "x"
    assert tools.read_file("rub\\x7fout", settings=in_a_run) == "y"


def test_list_dir_is_sorted_by_name(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    names = [f"f{i:02d}.txt" for i in range(30)]
    for name in random.Random(7).sample(names, len(names)):
        (tmp_path / name).write_text("x")

    assert tools.list_dir(settings=in_a_run) == "\n".join(f"{name}  1 bytes" for name in names)


def test_valid_utf8_with_a_nul_byte_is_binary(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nul.txt").write_bytes(b"text\x00more")

    assert (
        tools.read_file("nul.txt", settings=in_a_run)
        == "nul.txt is a binary file (9 bytes), not text; it was not read"
    )


def test_list_dir_shows_a_link_out_of_the_workspace_without_its_size(
    tmp_path, monkeypatch, as_a_run
):
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("x" * 631)
    os.symlink(tmp_path / "secret.txt", tmp_path / "ws" / "shadowlink")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    config = as_a_run()

    assert tools.list_dir(settings=config) == "shadowlink  (link to outside the workspace)"


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_list_dir_shows_a_link_inside_the_workspace_as_what_it_points_to(
    tmp_path, monkeypatch, in_a_run
):
    import tools

    (tmp_path / "a.txt").write_text("abc")
    os.symlink(tmp_path / "a.txt", tmp_path / "b.txt")
    os.symlink(tmp_path, tmp_path / "top")  # the workspace itself is inside it
    monkeypatch.chdir(tmp_path)

    assert tools.list_dir(".", settings=in_a_run) == "a.txt  3 bytes\nb.txt  3 bytes\ntop/"


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_list_dir_lists_a_folder_that_holds_a_loop_of_links(tmp_path, monkeypatch, in_a_run):
    # Path.resolve() raises RuntimeError on a loop (Python 3.10-3.12): the whole listing failed
    import tools

    (tmp_path / "a.txt").write_text("abc")
    os.symlink("loop", tmp_path / "loop")
    monkeypatch.chdir(tmp_path)

    assert tools.list_dir(".", settings=in_a_run) == "a.txt  3 bytes\nloop  (broken link)"


def test_list_dir_never_returns_an_empty_page_when_one_entry_is_longer_than_the_limit(
    tmp_path, monkeypatch, as_a_run
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_MAX_CHARS", "50")
    config = as_a_run()
    long_names = ["a" * 200, "b" * 200]
    for name in long_names:
        (tmp_path / name).write_text("x")

    first, second = tools.list_dir(settings=config), tools.list_dir(offset=1, settings=config)

    assert first.splitlines() == [
        f"{long_names[0]}  1 bytes",
        "[cut: showed entries 1-1 of 2; call list_dir with offset=1 for more]",
    ]
    assert second == f"{long_names[1]}  1 bytes"


@pytest.mark.parametrize("tool", ["read_file", "list_dir"])
def test_a_negative_offset_is_refused_in_words(tmp_path, in_a_run, tool):
    (tmp_path / "a.txt").write_text("abc")
    with pytest.raises(ValueError, match="^offset must be 0 or more, not -1$"):
        getattr(tools, tool)("a.txt" if tool == "read_file" else ".", offset=-1, settings=in_a_run)
