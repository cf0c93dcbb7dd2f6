"""The README and the manual in docs/: every link resolves, the README stays a front door (short,
the quick start on its first screen), its samples follow the program's own rules, every setting,
flag and module is documented, and no page names a Python file that does not exist."""

import ast
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from fake_model import answer, calls
from helpers import ROOT, imports, module_name

from plainagent.cli import main as cli
from plainagent.core import settings
from plainagent.runs import transcript

README = ROOT / "README.md"
WALK = ROOT / "docs" / "read-the-code.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
README_MOST_WORDS = 1800
QUICK_START_LINES = 60  # the quick start must be on the README's first screen or so
TRANSCRIPT_NAME = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(.+)\.jsonl")


def without_code(text: str) -> str:
    """The text with fenced blocks and inline code blanked out: a link or heading in an example is
    not one."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def code_blocks(text: str) -> list[str]:
    """The contents of the page's fenced code blocks, in order."""
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The #anchors GitHub makes for the page's headings: lowercase, punctuation other than '-' and
    '_' dropped, each space a '-', and a repeated one suffixed -1, -2, ..."""
    made: set[str] = set()
    for heading in re.findall(
        r"^#{1,6}\s+(.+?)\s*#*\s*$",
        without_code(page.read_text(encoding="utf-8")),
        flags=re.MULTILINE,
    ):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in made:
            n += 1
            anchor = f"{slug}-{n}"
        made.add(anchor)
    return made


def links(page: Path) -> list[str]:
    """The targets of the page's relative Markdown links (web addresses left out)."""
    targets = re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", without_code(page.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def slug_of(name: str) -> str:
    """The task part of a transcript's file name (after its start time)."""
    match = TRANSCRIPT_NAME.fullmatch(name)
    assert match, f"{name} is not named <time>-<task>.jsonl"
    return match[1]


def test_every_relative_link_in_the_readme_and_docs_reaches_a_file_and_heading_that_exist():
    checked = 0
    for page in [README, *DOCS]:
        for target in links(page):
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            assert linked.exists(), (
                f"{page.relative_to(ROOT)} links to {target}, which does not exist"
            )
            if anchor:
                assert anchor in anchors(linked), (
                    f"{page.relative_to(ROOT)} links to {target}: no such heading"
                )
            checked += 1
    assert checked >= len(DOCS)


def test_the_anchor_rule_is_githubs():
    page = ROOT / "docs" / "tools.md"
    assert "what-a-tool-call-looks-like" in anchors(page)
    assert "project-instructions-agentsmd" in anchors(page)


def test_the_readme_links_every_page_of_the_manual_and_each_page_links_back():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in links(README)}
    assert len(DOCS) >= 10
    for page in DOCS:
        assert page.resolve() in linked, f"the README does not link {page.relative_to(ROOT)}"
        title, intro = page.read_text(encoding="utf-8").split("\n\n")[:2]
        assert title.startswith("# ") and "\n" not in title, page.name
        assert "[Back to the README](../README.md)" in intro, (
            f"{page.name} does not open with a link back"
        )


def test_the_readme_is_a_front_door_short_with_the_quick_start_on_its_first_screen():
    lines = README.read_text(encoding="utf-8").splitlines()

    assert len(" ".join(lines).split()) <= README_MOST_WORDS
    clone = next(i for i, line in enumerate(lines) if line.startswith("git clone "))
    first_run = next(i for i, line in enumerate(lines) if line.startswith('python harness.py "'))
    assert clone < first_run < QUICK_START_LINES
    installed = next(i for i, line in enumerate(lines) if line.startswith('plainagent "'))
    assert first_run < installed < QUICK_START_LINES, (
        "the installed command is not shown beside the first run"
    )


def test_scripts_put_the_agents_folder_after_their_own_on_the_import_path():
    # Inserted first, the agent's folder would put its four files before a person's own modules;
    # appended, only the names backend, tools, harness, probe and plainagent can collide.
    pages = [README, ROOT / "docs" / "from-a-script.md"]
    assert all("sys.path.insert" not in page.read_text(encoding="utf-8") for page in pages)
    assert sum(page.read_text(encoding="utf-8").count('sys.path.append("') for page in pages) >= 3


def test_the_supported_versions_in_the_readme_are_the_ones_the_package_declares():
    readme = README.read_text(encoding="utf-8")
    supported = " ".join(
        readme[
            readme.index("## What is supported and checked") : readme.index("## The files")
        ].split()
    )
    declared = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8").split()
    python = re.search(r'^requires-python = ">=(3\.\d+)"$', declared, re.M)[1]
    assert f"Python {python} to 3." in supported
    for package, floor in re.findall(
        r'"([\w-]+)>=([\d.]+)"', declared[declared.index("dependencies") :]
    ):
        assert f"{package}>={floor}" in requirements
        assert f"`{package}` {floor} or newer" in supported, (
            f"the README does not give {package}'s floor, {floor}"
        )


def test_the_readmes_test_command_is_the_one_ci_runs():
    assert "\npython -m pytest -q tests\n" in README.read_text(encoding="utf-8")
    assert "\npython -m pytest -q tests\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_sample_sessions_name_their_transcripts_as_the_program_does():
    # A run is named after its task, a session after "session", and --continue appends to the run it
    # continues.
    checked: dict[Path, int] = {}
    for page in [README, *DOCS]:
        for block in code_blocks(page.read_text(encoding="utf-8")):
            expected = None
            for line in block.splitlines():
                if line.startswith("$ python harness.py"):
                    words = shlex.split(line[2:])[2:]
                    if "--continue" not in words:
                        task = next((w for w in words if not w.startswith("--")), "session")
                        expected = slug_of(transcript.new_path(task, Path("runs")).name)
                elif match := re.match(
                    r"(done|stopped): .* transcript \S*/plainagent/\S+/(\S+)$", line
                ):
                    assert expected is not None, f"{page.name}: {line!r} follows no command"
                    assert slug_of(match[2]) == expected, f"{page.name}: {line!r}"
                    checked[page] = checked.get(page, 0) + 1
    assert checked.get(README, 0) >= 1
    assert sum(checked.values()) >= 4


def test_every_setting_is_in_the_configuration_page_and_env_example():
    source = Path(settings.__file__).read_text(encoding="utf-8")
    variables = set(re.findall(r"[\"'](AGENT_[A-Z_]+)[\"']", source))
    variables |= {
        v
        for preset in settings.BACKENDS.values()
        for v in (preset["key"], preset["url_variable"])
        if v
    }
    assert len(variables) >= 15
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    for variable in sorted(variables):
        assert re.search(rf"\b{variable}\b", configuration), (
            f"{variable} is not in docs/configuration.md"
        )
        assert re.search(rf"\b{variable}\b", example), f"{variable} is not in .env.example"


def modules() -> list[Path]:
    """Every module of the agent: the tutorial's four files at the top, and the package's, without
    __init__.py."""
    package = [path for path in (ROOT / "plainagent").rglob("*.py") if path.name != "__init__.py"]
    return sorted([*ROOT.glob("*.py"), *package])


def test_every_module_is_in_the_readmes_file_table_and_in_read_the_code():
    readme = README.read_text(encoding="utf-8")
    table = readme[readme.index("## The files") : readme.index("## The manual")]
    walk = (ROOT / "docs" / "read-the-code.md").read_text(encoding="utf-8")
    found = modules()
    assert len(found) >= 30 and len([path for path in found if path.parent == ROOT]) == 4
    for path in found:
        assert f"`{path.name}`" in table, f"the README's file table does not name {path.name}"
        if path.parent != ROOT:  # a package folder's row, named after it, names its files
            folder = f"| `{path.parent.relative_to(ROOT).as_posix()}/` |"
            row = next((line for line in table.splitlines() if line.startswith(folder)), "")
            assert f"`{path.name}`" in row, (
                f"the README's file table names {path.name} outside its folder's row"
            )
        named = path.relative_to(ROOT).as_posix()
        assert f"`{named}`" in walk or f"### {named}" in walk, (
            f"docs/read-the-code.md does not name {named}"
        )


def test_read_the_code_walks_the_package_in_its_dependency_order():
    walk = (ROOT / "docs" / "read-the-code.md").read_text(encoding="utf-8")
    listed = re.findall(
        r"^    (\w+)/ ", (ROOT / "plainagent" / "__init__.py").read_text(encoding="utf-8"), re.M
    )
    folders = sorted(
        path.name for path in (ROOT / "plainagent").iterdir() if (path / "__init__.py").is_file()
    )
    assert sorted(listed) == folders
    headings = re.findall(r"^### (\w+):", walk, re.M)
    assert headings == listed, (
        "docs/read-the-code.md walks the folders in another order than plainagent/__init__.py"
    )


def walk_entries() -> list[tuple[Path, str]]:
    """read-the-code.md's entries, each with the file it is about: an item of the list under one of
    the four files' headings (### harness.py: ...), or an item that opens with a package file's
    path."""
    entries, heading = [], None
    for block in re.split(r"\n(?=- |#)", WALK.read_text(encoding="utf-8")):
        if block.startswith("#"):
            heading = re.match(r"### (\w+\.py):", block)
        elif opening := re.match(r"- `(plainagent/[\w/]+\.py)`", block):
            entries.append((ROOT / opening[1], block))
        elif heading and block.startswith("- "):
            entries.append((ROOT / heading[1], block))
    return entries


def defined_in(path: Path) -> tuple[set[str], set[str]]:
    """What a module defines at its top (functions, classes, assigned names, and each class's
    members as Class.member), and the same with the members' bare names."""
    top, members = set(), set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            top |= {
                name.id
                for target in targets
                for name in ast.walk(target)
                if isinstance(name, ast.Name)
            }
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    named = [item.name]
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    named = [target.id for target in targets if isinstance(target, ast.Name)]
                else:
                    named = []
                top |= {f"{node.name}.{name}" for name in named}
                members |= set(named)
    return top, top | members


def test_every_code_name_read_the_code_places_in_a_file_is_defined_there():
    # A reader looks for a name in the file whose entry gives it, or in a file the entry names
    # ("`report()`, in plainagent/model/errors.py"): lex() under allowlist.py, which it had left
    # for words.py, sent them to the wrong file. A call (`name()`) is always a name it places; a
    # bare word only if it names something of the agent's (not `PATH`, `a` or `str`).
    defined = {path: defined_in(path) for path in modules()}
    agents = set().union(*(top for top, _ in defined.values()))
    entries = walk_entries()
    assert {path for path, _ in entries} == set(modules())
    misplaced = []
    for path, entry in entries:
        named = [
            other
            for other in defined
            if re.search(rf"(?<![\w/]){re.escape(other.relative_to(ROOT).as_posix())}", entry)
            or re.search(rf"(?<![\w/]){re.escape(other.name)}", entry)
        ]
        for code, called in re.findall(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)(\([^`]*\))?`", entry):
            if (called or code in agents) and not any(
                code in defined[f][1] for f in [path, *named]
            ):
                misplaced.append(f"`{code}` under {path.relative_to(ROOT)}")
    assert misplaced == [], "docs/read-the-code.md places names where they are not defined:\n" + (
        "\n".join(misplaced)
    )


def test_read_the_code_reads_each_package_file_after_the_files_it_imports():
    # Its claim, "each file uses only what was read before it": a file read before one it uses
    # sends the reader on ahead and back again.
    package = [path for path, _ in walk_entries() if path.parent != ROOT]
    names = {module_name(path) for path in package}
    read: set[str] = set()
    for path in package:
        ahead = sorted(imports(path) & names - read)
        assert ahead == [], f"{path.relative_to(ROOT)} is read before {', '.join(ahead)}"
        read.add(module_name(path))


def test_the_readmes_file_table_lists_the_files_in_the_order_read_the_code_walks_them():
    readme = README.read_text(encoding="utf-8")
    table = readme[readme.index("## The files") : readme.index("## The manual")]
    listed = [
        name
        for row in re.findall(r"^\| (?:the tutorial|`plainagent/).*$", table, re.M)
        for name in re.findall(r"(?<![\w/])`(\w+\.py)`", row.split("|")[2])
    ]
    walked = list(dict.fromkeys(path.name for path, _ in walk_entries()))
    assert listed == walked


def test_the_readme_and_docs_name_only_python_files_that_exist():
    # A module renamed, merged (safety.py) or moved into the package (settings.py) must not live on
    # in the manual under a name or path it no longer has. A path into the package, tests/ or
    # examples/ is checked as a path, any other path (../agent/harness.py) must end in a file at the
    # top, and a bare name must be some file's name. Names given as examples of what a planted file
    # could be are the exception.
    examples = {"dotenv.py", "sitecustomize.py"}
    top = {path.name for path in ROOT.glob("*.py")}
    files = [
        *ROOT.glob("*.py"),
        *(ROOT / "plainagent").rglob("*.py"),
        *(ROOT / "tests").rglob("*.py"),
        *(ROOT / "examples").glob("*.py"),
    ]
    paths = {path.relative_to(ROOT).as_posix() for path in files}
    names = {path.name for path in files}
    checked = 0
    for page in [README, *DOCS, ROOT / ".env.example"]:
        for named in re.findall(r"[\w./-]*\w+\.py\b", page.read_text(encoding="utf-8")):
            inside = re.search(r"(?<![\w.-])(plainagent|tests|examples)/[\w./-]+$", named)
            if inside:
                assert inside[0] in paths, (
                    f"{page.relative_to(ROOT)} names {named}, which does not exist"
                )
            elif "/" in named:
                assert named.rsplit("/", 1)[1] in top, (
                    f"{page.relative_to(ROOT)} names {named}, which does not exist"
                )
            else:
                assert named in names or named in examples, (
                    f"{page.relative_to(ROOT)} names {named}, which does not exist"
                )
            checked += 1
    assert checked >= 50


def test_a_bare_module_name_in_the_docs_is_one_of_the_four_files_at_the_top():
    # In the package a module is named by its path (plainagent/shell/allowlist.py): a bare
    # allowlist.py would send a reader to look for it at the top. The README's file table names each
    # folder's files in its row, and "your own `settings.py`" is a person's module, not ours.
    top = {path.name for path in ROOT.glob("*.py")}
    package = {path.name for path in modules()} - top
    for page in [README, *DOCS]:
        text = page.read_text(encoding="utf-8")
        if page == README:
            text = text[: text.index("## The files")] + text[text.index("## The manual") :]
        text = re.sub(r"your own (`\w+\.py`(, | or )?)+", "", text)
        for name in re.findall(r"(?<![\w./-])(\w+\.py)\b", text):
            assert name not in package, f"{page.relative_to(ROOT)} names {name} without its folder"


def test_every_flag_of_the_command_line_is_in_the_configuration_page(capsys):
    try:
        cli.parse_arguments(["--help"])
    except SystemExit:
        pass
    flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", capsys.readouterr().out)) - {"--help"}
    assert len(flags) >= 15
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for flag in sorted(flags):
        assert f"`{flag}" in configuration, f"{flag} is not in docs/configuration.md"


def test_the_add_a_tool_example_works_as_written(tmp_path):
    # The page's snippet, pasted into tools.py as it says: a schema from the docstring, a result, a
    # refusal.
    import tools
    from plainagent.calls.schema import schema

    snippet = code_blocks((ROOT / "docs" / "add-a-tool.md").read_text(encoding="utf-8"))[0]
    module = dict(vars(tools))
    exec(snippet, module)
    count_lines = module["TOOL_FUNCTIONS"][-1]
    assert schema(count_lines)["function"] == {
        "name": "count_lines",
        "description": "Count the lines in a text file.",
        "parameters": {
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "description": "the file, relative to the workspace"}
            },
        },
    }
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    config = settings.resolve(workspace=tmp_path, require_key=False)
    assert count_lines("three.txt", settings=config) == "3"
    with pytest.raises(PermissionError, match="outside the workspace"):
        count_lines("../elsewhere.txt", settings=config)


def test_the_from_a_script_examples_run_as_written(model, tmp_path):
    # Each example, pasted into a script in the project's folder, with the agent's folder where it
    # says: all of them, each importing the agent the way the page says scripts do.
    page = (ROOT / "docs" / "from-a-script.md").read_text(encoding="utf-8")
    examples = [block for block in code_blocks(page) if "sys.path.append" in block]
    assert all(
        "from plainagent import" in block and "import harness" not in block for block in examples
    )
    first, tools, output, conversation, options, at_once, threads = examples
    assert ("file_ticket" in tools, "output=Ticket" in output, "history = []" in conversation) == (
        True,
    ) * 3
    assert ("options=" in options, "arun(" in at_once, "ThreadPoolExecutor" in threads) == (
        True,
    ) * 3
    for folder in ("path/to/project", "projects/a", "projects/b", "projects/c"):
        (tmp_path / folder).mkdir(parents=True)
    ticket = {
        "title": "test_save fails",
        "severity": "high",
        "files": ["test_save.py"],
        "owner": None,
    }
    model.queue(
        answer("3"),
        calls(("search_issues", {"query": "installer"})),
        calls(
            (
                "file_ticket",
                {"ticket": {"title": "installer fails", "priority": "high", "labels": []}},
            )
        ),
        answer("Filed #8."),
        answer("test_save fails."),
        answer(json.dumps(ticket)),
        answer("pytest"),
        answer("bash .ci/run"),
        answer("Un agent."),
        *[answer("pytest")] * 6,  # three runs at once, twice
    )

    printed = [run_example(block, tmp_path) for block in examples]

    at_once_printed = "projects/a: pytest\nprojects/b: pytest\nprojects/c: pytest\n"
    assert printed == [
        "3\n",
        "Filed #8.\n",
        "high test_save fails ['test_save.py']\n",
        "bash .ci/run\n",
        "Un agent.\n",
        at_once_printed,
        at_once_printed,
    ]
    assert model.messages(0)[0]["content"].startswith(
        f"You are a helpful agent working in the folder {tmp_path / 'path/to/project'} "
    )
    assert [m["content"] for m in model.messages(2)[-1:]] == [
        '[{"number": 7, "title": "installer fails on Windows", "state": "open"}]'
    ]
    assert model.messages(3)[-1]["content"] == "filed #8: installer fails (high)"
    assert (
        "tools" not in model.requests[5]["body"] and "response_format" in model.requests[5]["body"]
    )
    assert [m["role"] for m in json.loads((tmp_path / "conversation.json").read_text())] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert model.messages(8)[0]["content"].endswith("Answer in French.")
    assert (model.requests[8]["body"]["temperature"], "tools" in model.requests[8]["body"]) == (
        0.2,
        False,
    )


def run_example(code: str, folder: Path) -> str:
    (folder / "example.py").write_text(code.replace("/path/to/agent", str(ROOT)))
    result = subprocess.run(
        [sys.executable, "example.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
