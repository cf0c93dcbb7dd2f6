"""The README and the manual in docs/: every link resolves, the README stays a front door (short, the quick start
on its first screen), its samples follow the program's own rules, every setting, flag and module is documented,
and no page names a Python file that does not exist."""

import re
import shlex
from pathlib import Path

import pytest

from plainagent.cli import main as cli
from plainagent.core import settings
from plainagent.runs import transcript
from helpers import ROOT


README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
README_MOST_WORDS = 1800
QUICK_START_LINES = 60  # the quick start must be on the README's first screen or so
TRANSCRIPT_NAME = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(.+)\.jsonl")


def without_code(text: str) -> str:
    """The text with fenced blocks and inline code blanked out: a link or heading in an example is not one."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def code_blocks(text: str) -> list[str]:
    """The contents of the page's fenced code blocks, in order."""
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """The #anchors GitHub makes for the page's headings: lowercase, punctuation other than '-' and '_' dropped,
    each space a '-', and a repeated one suffixed -1, -2, ..."""
    made: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", without_code(page.read_text(encoding="utf-8")),
                              flags=re.MULTILINE):
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
            assert linked.exists(), f"{page.relative_to(ROOT)} links to {target}, which does not exist"
            if anchor:
                assert anchor in anchors(linked), f"{page.relative_to(ROOT)} links to {target}: no such heading"
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
        assert "[Back to the README](../README.md)" in intro, f"{page.name} does not open with a link back"


def test_the_readme_is_a_front_door_short_with_the_quick_start_on_its_first_screen():
    lines = README.read_text(encoding="utf-8").splitlines()

    assert len(" ".join(lines).split()) <= README_MOST_WORDS
    clone = next(i for i, line in enumerate(lines) if line.startswith("git clone "))
    first_run = next(i for i, line in enumerate(lines) if line.startswith('python harness.py "'))
    assert clone < first_run < QUICK_START_LINES


def test_the_readmes_test_command_is_the_one_ci_runs():
    assert "\npython -m pytest -q tests\n" in README.read_text(encoding="utf-8")
    assert "\npython -m pytest -q tests\n" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_sample_sessions_name_their_transcripts_as_the_program_does():
    # A run is named after its task, a session after "session", and --continue appends to the run it continues.
    checked: dict[Path, int] = {}
    for page in [README, *DOCS]:
        for block in code_blocks(page.read_text(encoding="utf-8")):
            expected = None
            for line in block.splitlines():
                if line.startswith("$ python harness.py"):
                    words = shlex.split(line[2:])[2:]
                    if "--continue" not in words:
                        task = next((w for w in words if not w.startswith("--")), "session")
                        expected = slug_of(transcript.new_path(task).name)
                elif match := re.match(r"(done|stopped): .* transcript runs/(\S+)$", line):
                    assert expected is not None, f"{page.name}: {line!r} follows no command"
                    assert slug_of(match[2]) == expected, f"{page.name}: {line!r}"
                    checked[page] = checked.get(page, 0) + 1
    assert checked.get(README, 0) >= 1
    assert sum(checked.values()) >= 4


def test_every_setting_is_in_the_configuration_page_and_env_example():
    source = Path(settings.__file__).read_text(encoding="utf-8")
    variables = set(re.findall(r"[\"'](AGENT_[A-Z_]+)[\"']", source))
    variables |= {v for preset in settings.BACKENDS.values() for v in (preset["key"], preset["url_variable"]) if v}
    assert len(variables) >= 15
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    for variable in sorted(variables):
        assert re.search(rf"\b{variable}\b", configuration), f"{variable} is not in docs/configuration.md"
        assert re.search(rf"\b{variable}\b", example), f"{variable} is not in .env.example"


def test_every_module_is_in_the_readmes_file_table_and_in_read_the_code():
    readme = README.read_text(encoding="utf-8")
    walk = (ROOT / "docs" / "read-the-code.md").read_text(encoding="utf-8")
    modules = sorted(path.name for path in ROOT.glob("*.py"))
    assert len(modules) >= 25
    for name in modules:
        assert f"`{name}`" in readme, f"the README's file table does not name {name}"
        assert f"`{name}`" in walk, f"docs/read-the-code.md does not name {name}"


def test_the_readme_and_docs_name_only_python_files_that_exist():
    # A module renamed or merged (safety.py) must not live on in the manual. Names given as examples of what a
    # planted file could be are the exception.
    examples = {"dotenv.py"}
    exist = {path.name for path in [*ROOT.glob("*.py"), *(ROOT / "tests").glob("*.py")]}
    checked = 0
    for page in [README, *DOCS, ROOT / ".env.example"]:
        for name in re.findall(r"[\w./-]*?(\w+\.py)\b", page.read_text(encoding="utf-8")):
            assert name in exist or name in examples, f"{page.relative_to(ROOT)} names {name}, which does not exist"
            checked += 1
    assert checked >= 50


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
    # The page's snippet, pasted into tools.py as it says: a schema from the docstring, a result, a refusal.
    import tools
    from plainagent.calls.schema import schema

    snippet = code_blocks((ROOT / "docs" / "add-a-tool.md").read_text(encoding="utf-8"))[0]
    module = dict(vars(tools))
    exec(snippet, module)
    count_lines = module["TOOL_FUNCTIONS"][-1]
    assert schema(count_lines)["function"] == {
        "name": "count_lines", "description": "Count the lines in a text file.",
        "parameters": {"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string", "description": "the file, relative to the workspace"}}}}
    (tmp_path / "three.txt").write_text("a\nb\nc\n")
    with settings.use(settings.resolve(workspace=tmp_path, require_key=False)):
        assert count_lines("three.txt") == "3"
        with pytest.raises(PermissionError, match="outside the workspace"):
            count_lines("../elsewhere.txt")
