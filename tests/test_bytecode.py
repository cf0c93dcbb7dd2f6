"""The checkout keeps starting whatever the tests do to their children: a child run under a
resource limit writes no bytecode (Python's write of a .pyc does not check for a short write, so
one cut at the limit stopped every later start with 'marshal data too short'), and
helpers.limited is the one place a test sets such a limit. conftest.py checks, after the whole
suite, that the agent still starts here."""

import ast
import resource
import subprocess
import sys

from helpers import ROOT, copy_of_the_agent, limited, posix_only, run_script

TESTS = ROOT / "tests"


@posix_only
def test_the_agent_run_under_a_file_size_limit_leaves_its_copy_able_to_start(tmp_path):
    agent = copy_of_the_agent(tmp_path / "agent")  # no compiled files yet, as in a fresh clone
    harness = [sys.executable, str(agent / "harness.py"), "--help"]

    cut = run_script(
        "harness.py", "--help", cwd=tmp_path, root=agent, **limited(resource.RLIMIT_FSIZE, 3000)
    )
    written = sorted(agent.rglob("*.pyc"))
    # as a person's Python starts: its bytecode written
    fresh = subprocess.run(
        harness, cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )

    assert cut.returncode == 0, cut.stderr
    assert written == []
    assert (fresh.returncode, fresh.stderr) == (0, "")
    assert fresh.stdout == cut.stdout


def test_every_resource_limit_a_test_sets_is_set_by_helpers_limited():
    setting = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside = {
            id(node): function.name
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef)
            for node in ast.walk(function)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and (
                    node.func.attr == "setrlimit"
                    or node.func.attr == "prlimit"
                    and len(node.args) > 2
                )
            ):
                setting.append((path.relative_to(TESTS).as_posix(), inside.get(id(node))))
    assert setting == [("helpers.py", "setup")]
