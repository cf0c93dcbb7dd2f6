"""The house a reader walks: the tutorial's four files at the top, every later layer a folder of one
package; imports run one way (the four files use the package, the package never imports them, and no
folder imports a folder that imports it back); one job per module, said in its opening docstring, in
a size a reader takes in; `python harness.py` loads its loop once."""

import ast
import re
import subprocess
import sys

from helpers import MODULES, ROOT, imports, module_name

DESIGN_CARD = {"backend", "tools", "harness", "probe"}
PACKAGE = ROOT / "plainagent"
MOST_LINES = 350  # "a few hundred lines at most"
MOST_LONG_LINES = 0.02  # of the product's lines, over 100 characters
NAMES = {module_name(path): path for path in MODULES}


def folder_of(name: str) -> str:
    """The package folder a module is in ('plainagent.shell'), or the top-level file's own name."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "plainagent" and len(parts) > 2 else name


def cycles(graph: dict[str, set[str]]) -> list[str]:
    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for name in graph.get(todo.pop(), set()) - seen:
                seen.add(name)
                todo.append(name)
        return seen

    return [name for name in graph if name in reachable(name)]


def test_the_top_level_holds_only_the_tutorials_four_files():
    assert {path.stem for path in ROOT.glob("*.py")} == DESIGN_CARD


def test_no_module_imports_itself_through_others_at_any_depth():
    assert cycles({name: imports(path) for name, path in NAMES.items()}) == []


def test_no_folder_of_the_package_imports_a_folder_that_imports_it_back():
    graph: dict[str, set[str]] = {}
    for name, path in NAMES.items():
        graph.setdefault(folder_of(name), set()).update(folder_of(used) for used in imports(path))
    for folder in graph:
        graph[folder].discard(folder)
    assert cycles(graph) == []


def test_the_package_never_imports_the_four_files():
    for name, path in NAMES.items():
        if name.startswith("plainagent"):
            assert not imports(path) & DESIGN_CARD, (
                f"{path.relative_to(ROOT)} imports a top-level file"
            )


def test_python_harness_py_loads_the_loop_once():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(ROOT / "harness.py"), "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )

    assert result.returncode == 0
    loaded = [
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    ]
    # harness.py runs as __main__ alone
    assert "plainagent.cli.main" in loaded and "harness" not in loaded


def test_each_module_opens_with_a_docstring_and_stays_a_size_a_reader_takes_in():
    for path in MODULES:
        text = path.read_text(encoding="utf-8")
        assert ast.get_docstring(ast.parse(text)), (
            f"{path.relative_to(ROOT)} does not say what it is for"
        )
        assert len(text.splitlines()) <= MOST_LINES, (
            f"{path.relative_to(ROOT)} has {len(text.splitlines())} lines"
        )


def test_each_folder_of_the_package_names_its_files_where_it_opens():
    for folder in [
        PACKAGE,
        *(path for path in PACKAGE.iterdir() if path.is_dir() and path.name != "__pycache__"),
    ]:
        said = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        for path in folder.iterdir():
            if (
                path.suffix == ".py"
                and path.name != "__init__.py"
                or path.is_dir()
                and path.name != "__pycache__"
            ):
                name = path.name if path.is_file() else f"{path.name}/"
                assert name in said, f"{folder.relative_to(ROOT)}/__init__.py does not name {name}"


def test_few_lines_of_the_product_are_longer_than_a_reader_takes_in_at_a_glance():
    lines = [line for path in MODULES for line in path.read_text(encoding="utf-8").splitlines()]
    long = [line for line in lines if len(line) > 100]
    assert len(long) <= MOST_LONG_LINES * len(lines), (
        f"{len(long)} of {len(lines)} lines are over 100 characters"
    )


def test_neither_the_loop_nor_the_model_layer_imports_the_sandbox():
    # What the kernel sandbox does here reaches them with the settings
    # (approval.prompt.with_the_sandbox)
    for name, path in NAMES.items():
        if name == "harness" or name.startswith("plainagent.model"):
            used = {module for module in imports(path) if module.startswith("plainagent.sandbox")}
            assert not used, f"{path.relative_to(ROOT)} imports {', '.join(sorted(used))}"


def test_backend_py_builds_the_client_and_sends_the_request_itself():
    tree = ast.parse((ROOT / "backend.py").read_text(encoding="utf-8"))
    called = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
    assert "openai.OpenAI" in called and "sdk.post" in called
    assert "/chat/completions" in strings


def test_each_module_of_the_package_says_its_tutorial_phase_or_that_it_is_beyond_the_tutorial():
    for path in MODULES:
        opening = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))).split("\n\n")[0]
        assert re.search(r"\bphases? \d|beyond the tutorial", opening, re.IGNORECASE), (
            f"{path.relative_to(ROOT)} does not say which phase of the tutorial it belongs to"
        )
