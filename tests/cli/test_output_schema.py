"""--output-schema FILE.json: the answer as JSON that fits the schema, alone on stdout in one
line (so `| jq` works); a schema file that cannot be used is one line saying what to fix,
exit 2, before any request."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from fake_model import answer, calls
from helpers import CHILD, ROOT, run_script

SCHEMA = {
    "type": "object",
    "properties": {
        "files": {"type": "array", "items": {"type": "string"}},
        "summary": {"type": "string"},
    },
    "required": ["files", "summary"],
}
REPLY = {"summary": "two files: a café menu", "files": ["a.txt", "b.txt"]}


def test_output_schema_prints_only_the_json_answer_in_one_line(model, cli, tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    model.queue(
        calls(("list_dir", {})), answer("There are two files."), answer(json.dumps(REPLY, indent=2))
    )

    result = cli("--output-schema", "s.json", "--no-transcript", "What is here?")

    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"summary":"two files: a caf\\u00e9 menu","files":["a.txt","b.txt"]}\n'
    assert json.loads(result.stdout) == REPLY
    # progress and summary stay on stderr
    assert result.stderr.splitlines()[-1].startswith("done: ")
    asked = model.requests[2]["body"]
    assert asked["response_format"]["json_schema"]["schema"]["additionalProperties"] is False
    assert "tools" not in asked


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_output_schema_pipes_into_jq(model, tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    model.queue(answer("Two files."), answer(json.dumps(REPLY)))

    agent = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "harness.py"),
            "--output-schema",
            "s.json",
            "--quiet",
            "What is here?",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **CHILD,
    )
    picked = subprocess.run(
        ["jq", "-r", ".files[1]"], stdin=agent.stdout, capture_output=True, text=True, timeout=60
    )
    agent.stdout.close()

    assert agent.wait(timeout=60) == 0, agent.stderr.read()
    assert picked.stdout == "b.txt\n"


def test_an_answer_that_never_fits_is_one_line_and_exit_1(model, cli, tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    model.queue(answer("Two files."), answer('{"files": "a.txt"}'), answer('{"files": []}'))

    result = cli("--output-schema", "s.json", "--no-transcript", "What is here?")

    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "error: the model's answer does not fit the schema (answer), asked twice: "
        "missing field 'summary'\n"
    )


def test_the_step_limit_with_output_schema_prints_no_json(model, cli, tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    model.queue(calls(("list_dir", {})))

    result = cli(
        "--output-schema", "s.json", "--max-steps", "1", "--no-transcript", "What is here?"
    )

    assert result.returncode == 1 and result.stdout == ""
    assert "error: stopped: the run hit the step limit, so there is no output\n" in result.stderr


@pytest.mark.parametrize(
    "content, said",
    [
        (
            None,
            "error: cannot read --output-schema missing.json: No such file or directory; name a "
            "JSON Schema file",
        ),
        (
            "{not json",
            "error: --output-schema missing.json is not JSON (Expecting property name enclosed in "
            "double quotes: line 1 column 2 (char 1)); fix the file, or name another",
        ),
        (
            '["a"]',
            "error: --output-schema missing.json holds JSON that is not a schema (a JSON object); "
            'write one of an object: {"type": "object", "properties": {...}}',
        ),
        (
            '{"type": "string"}',
            'error: --output-schema missing.json: the schema must be one of an object ("type": '
            '"object" at its top); put a list or a single value in a field of one',
        ),
    ],
)
def test_a_schema_file_that_cannot_be_used_is_one_line_exit_2_before_any_request(
    model, cli, tmp_path, content, said
):
    if content is not None:
        (tmp_path / "missing.json").write_text(content)

    result = cli("--output-schema", "missing.json", "--no-transcript", "What is here?")

    assert (result.returncode, result.stdout, result.stderr) == (2, "", said + "\n")
    assert model.requests == []


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_a_schema_that_is_a_fifo_is_one_line_exit_2_at_once(model, tmp_path):
    # It was read from for ever (and /dev/zero until the memory ran out)
    os.mkfifo(tmp_path / "schema.json")

    result = run_script(
        "harness.py", "--output-schema", "schema.json", "x", cwd=tmp_path, timeout=30
    )

    assert (result.returncode, result.stdout, result.stderr) == (
        2,
        "",
        "error: cannot read --output-schema schema.json: it is not a regular file; name a JSON "
        "Schema file\n",
    )
    assert model.requests == []
