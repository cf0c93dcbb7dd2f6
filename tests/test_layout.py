"""The house a reader walks: one job per module, said in its opening docstring; no two modules import each other,
at any depth; `python harness.py` loads the loop once; each module a size a reader takes in."""

import ast
import subprocess
import sys

from helpers import ROOT

MODULES = sorted(ROOT.glob("*.py"))
MOST_LINES = 350  # "a few hundred lines at most"


def imports(path) -> set[str]:
    """The project's modules a file imports, anywhere in it (inside functions too)."""
    names = {p.stem for p in MODULES}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found & names - {path.stem}


def test_no_module_imports_itself_through_others_at_any_depth():
    graph = {path.stem: imports(path) for path in MODULES}

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for name in graph[todo.pop()] - seen:
                seen.add(name)
                todo.append(name)
        return seen

    assert [name for name in graph if name in reachable(name)] == []


def test_python_harness_py_loads_the_loop_once():
    result = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "harness.py"), "--help"],
                            capture_output=True, text=True, cwd=ROOT)

    assert result.returncode == 0
    loaded = [line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")]
    assert "cli" in loaded and "harness" not in loaded  # harness.py runs as __main__, and nothing imports it again


def test_each_module_opens_with_a_docstring_and_stays_a_size_a_reader_takes_in():
    for path in MODULES:
        text = path.read_text(encoding="utf-8")
        assert ast.get_docstring(ast.parse(text)), f"{path.name} does not say what it is for"
        assert len(text.splitlines()) <= MOST_LINES, f"{path.name} has {len(text.splitlines())} lines"
