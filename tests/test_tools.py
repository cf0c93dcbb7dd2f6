"""The tools on a temporary folder, and the schemas derived from their signatures."""

import re
import sys
import types
from pathlib import Path

import pytest

import harness
import tools
from fake_model import calls, answer


def test_read_file_returns_text_from_an_offset(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text("hello world")

    assert tools.read_file("a.txt") == "hello world"
    assert tools.read_file("a.txt", offset=6) == "world"


def test_binary_files_are_reported_not_dumped(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "img.bin").write_bytes(b"\x89PNG\x00\x01\x02" * 10)

    assert tools.read_file("img.bin") == "img.bin is a binary file (70 bytes), not text; it was not read"


def test_missing_file_raises_for_the_dispatcher_to_report(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError):
        tools.read_file("nope.txt")


def test_list_dir_marks_folders_and_sizes(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "f.txt").write_text("12345")

    assert tools.list_dir() == "f.txt  5 bytes\nsub/"
    assert tools.list_dir("sub") == "sub is empty"


def test_run_shell_returns_exit_code_stdout_and_stderr(tmp_path, monkeypatch, in_a_run):
    monkeypatch.chdir(tmp_path)
    newline = "\r\n" if sys.platform == "win32" else "\n"

    assert tools.run_shell("echo out&& echo err 1>&2&& exit 3") == \
        f"exit code: 3\nstdout:\nout{newline}\nstderr:\nerr{newline}"
    assert tools.run_shell("exit 0") == "exit code: 0"


def test_long_results_are_cut_with_a_marker_and_read_on_with_offset(model, tmp_path):
    text = "".join(f"{i:05d}\n" for i in range(3039))  # 18234 characters
    (tmp_path / "big.txt").write_text(text)
    model.queue(calls(("read_file", {"path": "big.txt"})), calls(("read_file", {"path": "big.txt", "offset": 4000})),
                answer("read it"))

    harness.run("read big.txt")

    first, second = model.messages(1)[-1]["content"], model.messages(2)[-1]["content"]
    assert first == text[:4000] + "\n[cut: showed bytes 0-4000 of 18,234; call read_file with offset=4000 for more]"
    assert second == (text[4000:8000] +
                      "\n[cut: showed bytes 4000-8000 of 18,234; call read_file with offset=8000 for more]")


def test_list_dir_output_is_capped_too(model, tmp_path):
    for i in range(400):
        (tmp_path / f"file-with-a-long-name-{i:04d}.txt").write_text("x")
    model.queue(calls(("list_dir", {})), answer("many"))

    harness.run("list")

    *entries, note = model.messages(1)[-1]["content"].splitlines()
    assert len("\n".join(entries)) <= 4000
    assert entries[0] == "file-with-a-long-name-0000.txt  1 bytes"
    assert note == f"[cut: showed entries 1-{len(entries)} of 400; call list_dir with offset={len(entries)} for more]"


def test_the_add_a_tool_pages_example_becomes_a_tool_in_registry_and_tools_and_works(tmp_path, as_a_run):
    # tools.py extended exactly as docs/add-a-tool.md says: its function, and its TOOL_FUNCTIONS line.
    page = (Path(tools.__file__).parent / "docs" / "add-a-tool.md").read_text(encoding="utf-8")
    example = re.search(r"^# Add a tool.*?```python\n(.*?)```", page, re.DOTALL)[1]
    function, tool_list = example.split("\nTOOL_FUNCTIONS = ")
    source = Path(tools.__file__).read_text(encoding="utf-8")
    added = re.sub(r"\nTOOL_FUNCTIONS = \[.*?\]", lambda m: f"\n{function}\nTOOL_FUNCTIONS = {tool_list.strip()}",
                   source, count=1, flags=re.DOTALL)
    extended = types.ModuleType("extended_tools")
    exec(compile(added, tools.__file__, "exec"), extended.__dict__)

    names = [f.__name__ for f in extended.TOOL_FUNCTIONS]
    assert names == ["read_file", "list_dir", "write_file", "edit_file", "run_shell", "count_lines"]
    assert list(extended.REGISTRY) == names and list(extended.REGISTRY.values()) == extended.TOOL_FUNCTIONS
    assert [t["function"]["name"] for t in extended.TOOLS] == names
    assert extended.TOOLS[-1] == extended.schema(extended.count_lines)
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    as_a_run(workspace=tmp_path)
    assert extended.count_lines("three.txt") == "3"


def test_read_file_schema_is_exactly_this():
    assert tools.schema(tools.read_file) == {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file and return its text from a byte offset; a long file comes in parts, "
                           "each ending with the offset to read on from.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "the file to read, relative to the workspace"},
                    "offset": {"type": "integer",
                               "description": "the byte to start at (0 is the start); to read on after a cut "
                                              "result, use the offset it names"},
                },
                "required": ["path"],
            },
        },
    }


def test_a_new_function_becomes_a_tool_from_its_signature_and_docstring():
    def count_words(text: str, minimum: int = 1, ratio: float = 0.5, loud: bool = False) -> str:
        """Count the words in a text.

        Args:
            text: the text to count in,
                which may be long
            minimum: only words at least this long
        """
        return ""

    parameters = tools.schema(count_words)["function"]["parameters"]
    assert parameters["properties"] == {
        "text": {"type": "string", "description": "the text to count in, which may be long"},
        "minimum": {"type": "integer", "description": "only words at least this long"},
        "ratio": {"type": "number"},
        "loud": {"type": "boolean"},
    }
    assert parameters["required"] == ["text"]
