"""The scripts in examples/, each run as a person runs it (a subprocess, in the project's folder)
against the stand-in server, named by the environment as the command line's is."""

import json

from fake_model import answer, calls
from helpers import ROOT, run_script

EXAMPLES = ROOT / "examples"
TICKET = {
    "title": "Crash when a file name has a space",
    "severity": "high",
    "files": ["editor.py"],
    "steps_to_reproduce": ["save 'my file.txt'"],
    "suspected_cause": None,
}


def test_ticket_py_prints_the_ticket_as_one_line_of_json(model, tmp_path):
    (tmp_path / "editor.py").write_text("def save(name):\n    open(name.split()[0])\n")
    model.queue(
        calls(("read_file", {"path": "editor.py"})),
        answer("It is in save(): the name is split."),
        answer(json.dumps(TICKET)),
    )

    result = run_script("examples/ticket.py", "saving 'my file.txt' crashes", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == TICKET and result.stdout.count("\n") == 1
    assert model.messages(0)[1]["content"].endswith("The report: saving 'my file.txt' crashes")
    asked = model.requests[2]["body"]
    assert asked["response_format"]["json_schema"]["name"] == "Ticket" and "tools" not in asked


def test_ticket_py_says_in_one_line_when_no_ticket_could_be_had(model, tmp_path):
    model.queue(answer("A bug."), answer("not json"), answer("still not"))

    result = run_script("examples/ticket.py", "it crashes", cwd=tmp_path)

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(
        "no ticket: the model's answer does not fit the schema (Ticket), asked twice"
    )


def test_ticket_py_says_in_one_line_when_the_run_stopped_without_an_answer(model, tmp_path):
    model.queue(answer("The ticket is", finish_reason="length"))

    result = run_script("examples/ticket.py", "it crashes", cwd=tmp_path)

    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "no ticket: the run stopped without an answer (length): The ticket is\n"


def test_the_examples_import_the_agent_as_the_docs_say_scripts_do():
    for script in sorted(EXAMPLES.glob("*.py")):
        imports = [
            line
            for line in script.read_text().splitlines()
            if "import" in line and "plainagent" in line
        ]
        assert imports and all(line.startswith("from plainagent import ") for line in imports), (
            script.name
        )
        assert "from harness import" not in script.read_text()


def test_fan_out_py_asks_every_project_at_once(model, tmp_path):
    folders = ["api", "web", "cli"]
    for name in folders:
        (tmp_path / name).mkdir()

    def reply(body: dict) -> dict:
        folder = next(
            name for name in folders if f"{tmp_path / name} on" in body["messages"][0]["content"]
        )
        return {**answer(f"pytest in {folder}"), "delay": 0.5}

    model.router = reply

    result = run_script("examples/fan_out.py", "Which test framework?", *folders, cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"{name}: pytest in {name}" for name in folders]
    received = [at for kind, at in model.timeline if kind == "received"]
    first_reply = min(at for kind, at in model.timeline if kind == "sent")
    # all three asked before any answer came
    assert len(received) == 3 and max(received) < first_reply


def test_conversation_py_saves_the_conversation_and_the_next_question_continues_it(model, tmp_path):
    model.queue(answer("It is a small agent."), answer("With pytest."))

    first = run_script("examples/conversation.py", "What does this project do?", cwd=tmp_path)
    second = run_script("examples/conversation.py", "And how is it tested?", cwd=tmp_path)

    assert (first.returncode, first.stdout) == (0, "It is a small agent.\n"), first.stderr
    assert (second.returncode, second.stdout) == (0, "With pytest.\n"), second.stderr
    assert [(m["role"], m["content"]) for m in model.messages(1)[1:]] == [
        ("user", "What does this project do?"),
        ("assistant", "It is a small agent."),
        ("user", "And how is it tested?"),
    ]
    saved = json.loads((tmp_path / "conversation.json").read_text())
    assert [m["role"] for m in saved] == ["system", "user", "assistant", "user", "assistant"]
    assert saved[-1] == {"role": "assistant", "content": "With pytest."}
