"""The everyday read-only forms a model explores with (rg, git grep/blame/show/log -p, sed
-n, several files for wc/head/tail, redirections to /dev/null) run without asking under
the sandbox and show the real output; each variant of them that writes, runs a program or
opens another file still asks."""

import dataclasses
import os
import shutil
import subprocess
import sys

import pytest
from fake_model import answer, calls
from helpers import needs_landlock, posix_only

import harness
from plainagent.shell import allowlist

pytestmark = posix_only

needs_rg = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep (rg) is not installed")
READ_ONLY_FORMS = [
    pytest.param("rg -n --sort path hello", marks=needs_rg),
    pytest.param("rg --files --sort path", marks=needs_rg),
    # rg searches files in parallel: unsorted, the order of its lines varies from run to run
    pytest.param("rg -c --sort path world a.txt b.txt 2>/dev/null", marks=needs_rg),
    "git grep -n hello",
    "git grep -e world HEAD -- a.txt",
    "git blame -s a.txt",
    "git show HEAD:a.txt",
    "git show HEAD -- a.txt",
    "git log -p --format='%s'",
    "sed -n '1,2p' a.txt",
    "sed -n '/world/p' a.txt b.txt",
    "sed -n -e 1p -e '$=' a.txt",
    "ls a.txt missing 2>/dev/null",
    "cat a.txt >/dev/null",
    "cat a.txt >>/dev/null",
    "ls missing 2>&1",
    # the same, with the stream named or the other way round
    "cat a.txt 1>/dev/null",
    "ls missing 2>>/dev/null",
    "cat a.txt >&2",
    "cat a.txt 1>&2",
    "git status --short 2>/dev/null | wc -l",
    "wc -l a.txt b.txt",
    "head -n 1 a.txt b.txt",
    "tail -n 1 a.txt b.txt",
    # from a line on, sorted, counted, numbered, the index listed, % in a format
    "tail -n +2 a.txt",
    "tail -n+2 a.txt",
    "sort -r a.txt b.txt",
    "sort -k2 -t ' ' -n b.txt a.txt",
    "cat a.txt b.txt | sort | uniq -c",
    "uniq -c a.txt",
    "nl -ba a.txt",
    "git ls-files",
    "git ls-files -s --full-name",
    "git log --format=%H%x20%s",
    "stat -c %s a.txt",
]
WRITING_VARIANTS = [
    "sed -n 'w x' a.txt",
    "sed -n '1p;w x' a.txt",
    "sed -n '/[/]w x/p' a.txt",
    "sed -n 's/a/b/w x' a.txt",
    "sed -n '1e touch x' a.txt",
    "sed -i 1d a.txt",
    "sed -f script a.txt",
    "cat a.txt > x",
    "ls 2> x",
    "ls >> x",
    "ls 3>/dev/null",
    "ls 1> x",
    "ls >| x",
    "ls >&-",
    "ls 2>&-",
    "ls >/dev/null2",
    "ls > '/dev/null' >x",
    "rg --pre ./x hello",
    "rg -z hello",
    "rg -L hello",
    "git grep -O hello",
    "git grep --textconv hello",
    "git show --textconv HEAD:a.txt",
    "git blame --textconv a.txt",
    "sort -o x a.txt",
    "sort --output=x a.txt",
    "sort --compress-program=./x -S 1 a.txt",
    "sort -T . a.txt",
    "uniq a.txt x",
    "uniq -c a.txt x",
    "head -n +1 a.txt",
    "tail +1 a.txt",
    "git ls-files --with-tree=HEAD",
    "git ls-files --recurse-submodules",
]


@pytest.fixture
def repository(tmp_path):
    """A workspace with two files in a git repository of two commits."""

    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    (tmp_path / "a.txt").write_text("hello\nworld\n")
    (tmp_path / "b.txt").write_text("another world\n")
    git("add", ".")
    git("commit", "-qm", "first")
    (tmp_path / "a.txt").write_text("hello\nwide world\nend\n")
    git("commit", "-qam", "second")
    return tmp_path


def directly(command: str, cwd) -> str:
    """The result the model should get: the command run by sh outside the agent."""
    done = subprocess.run(["sh", "-c", command], cwd=cwd, capture_output=True, text=True)
    streams = [
        f"{name}:\n{text}"
        for name, text in (("stdout", done.stdout), ("stderr", done.stderr))
        if text
    ]
    return "\n".join([f"exit code: {done.returncode}", *streams])


@needs_landlock
@pytest.mark.parametrize("command", READ_ONLY_FORMS)
def test_everyday_read_only_forms_run_without_asking_and_show_the_real_output(
    command, model, repository
):
    asked = []
    model.queue(calls(("run_shell", {"command": command})), answer("done"))

    harness.run(
        "look",
        approve=lambda name, arguments: asked.append(arguments) or False,
        workspace=repository,
    )

    assert asked == []
    assert model.messages(1)[-1]["content"] == directly(command, repository)


@pytest.mark.parametrize("command", WRITING_VARIANTS)
def test_variants_that_write_run_programs_or_open_other_files_still_ask(command, model, repository):
    asked = []
    model.queue(calls(("run_shell", {"command": command})), answer("done"))

    harness.run(
        "look",
        approve=lambda name, arguments: asked.append(arguments["command"]) or False,
        workspace=repository,
    )

    assert asked == [command]
    assert model.messages(1)[-1]["content"] == "denied by the user"
    assert not (repository / "x").exists()


@needs_landlock
def test_git_blame_and_grep_run_no_textconv_program_of_the_repository(model, repository):
    marker = repository.parent / f"{repository.name}-TEXTCONV-RAN"
    (repository / "conv.sh").write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n')
    (repository / "conv.sh").chmod(0o755)
    (repository / ".gitattributes").write_text("*.txt diff=conv\n")
    with open(repository / ".git" / "config", "a") as config:
        config.write(f'[diff "conv"]\n\ttextconv = {repository}/conv.sh\n')
    model.queue(
        calls(
            ("run_shell", {"command": "git blame a.txt"}),
            ("run_shell", {"command": "git grep world"}),
        ),
        answer("done"),
    )

    harness.run("look", approve=lambda name, arguments: False, workspace=repository, sandbox="off")

    blame, grep = [m["content"] for m in model.messages(1)[-2:]]
    assert (
        blame.startswith("exit code: 0")
        and "wide world" in blame
        and grep.startswith("exit code: 0")
    )
    assert not marker.exists()


def fake_venv(workspace, name=".venv"):
    """A workspace venv whose pytest says which it is."""
    (workspace / name / "bin").mkdir(parents=True)
    (workspace / name / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    pytest_script = workspace / name / "bin" / "pytest"
    pytest_script.write_text('#!/bin/sh\necho "the venv\'s pytest $*"\n')
    pytest_script.chmod(0o755)
    (workspace / name / "bin" / "python").symlink_to(sys.executable)  # as venv makes it: a link out


@needs_landlock
def test_allowing_pytest_covers_python_m_pytest_and_the_workspace_venvs_pytest(
    model, tmp_path, monkeypatch
):
    fake_venv(tmp_path)
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    commands = [
        ".venv/bin/pytest -q",
        "./.venv/bin/pytest -x",
        "python -m pytest --version",
        ".venv/bin/python -m pytest --version",
    ]
    asked = []
    model.queue(calls(*[("run_shell", {"command": c}) for c in commands]), answer("done"))

    harness.run(
        "test",
        approve=lambda name, arguments: asked.append(arguments) or False,
        workspace=tmp_path,
        allow=["pytest"],
    )

    venv_q, venv_x, module, venv_module = [m["content"] for m in model.messages(1)[-4:]]
    assert asked == []
    assert venv_module.startswith("exit code: ")  # its pytest, or that this made-up venv has none
    assert venv_q == "exit code: 0\nstdout:\nthe venv's pytest -q\n"
    assert venv_x == "exit code: 0\nstdout:\nthe venv's pytest -x\n"
    # `python` is the project's: its venv's python, whatever that one holds
    assert module == venv_module


@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest",
        ".venv/bin/pytest",
        "python -m pip list",
        "venv/bin/pytest",
        ".venv/bin/python -m pip",
        "python -c 1 -m pytest",
    ],
)
def test_only_the_person_naming_pytest_lets_its_other_forms_run_unasked(command, model, tmp_path):
    fake_venv(tmp_path)
    (tmp_path / "venv" / "bin").mkdir(parents=True)  # no pyvenv.cfg: not a virtual environment
    (tmp_path / "venv" / "bin" / "pytest").write_text("#!/bin/sh\ntouch planted-ran\n")
    asked = []
    model.queue(calls(("run_shell", {"command": command})), answer("done"))

    allow = [] if command in ("python -m pytest", ".venv/bin/pytest") else ["pytest"]
    harness.run(
        "test",
        approve=lambda name, arguments: asked.append(arguments["command"]) or False,
        workspace=tmp_path,
        allow=allow,
    )

    assert asked == [command] and not (tmp_path / "planted-ran").exists()


@posix_only
@pytest.mark.parametrize(
    "command",
    [
        "python -m pytest -q",
        "python3 -m pytest -q",
        ".venv/bin/pytest -q",
        "./.venv/bin/pytest -q",
        "venv/bin/pytest -q",
        "./venv/bin/pytest -q",
        ".venv/bin/python -m pytest -q",
        "venv/bin/python3 -m pytest -q",
    ],
)
def test_naming_pytest_lets_each_of_its_forms_run_without_asking(command, in_a_run, monkeypatch):
    # Each form the docs list, python and python3, .venv and venv, with and without
    # ./: one of a pair alone was tested, and a form left out would ask (or one added
    # would run) with no test noticing.
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    for venv in (".venv", "venv"):
        fake_venv(in_a_run.workspace, venv)
    trusting_pytest = dataclasses.replace(in_a_run, allow=frozenset({"pytest"}))

    assert allowlist.reason_to_ask(command, trusting_pytest) is None
    assert allowlist.reason_to_ask(command, in_a_run) is not None  # only because pytest is named


@pytest.mark.parametrize(
    "command", [".venv/bin/pytest/run", "./.venv/bin/pytest/run -q", "venv/bin/pytest/run"]
)
def test_a_program_in_a_folder_named_like_the_venvs_pytest_is_not_that_pytest(command, in_a_run):
    for venv in (".venv", "venv"):
        (in_a_run.workspace / venv / "bin" / "pytest").mkdir(parents=True)
        (in_a_run.workspace / venv / "pyvenv.cfg").write_text(
            f"home = {os.path.dirname(sys.executable)}\n"
        )
    trusting_pytest = dataclasses.replace(in_a_run, allow=frozenset({"pytest"}))

    assert "not on the allowlist" in (
        allowlist.reason_to_ask(command, trusting_pytest) or "runs unasked"
    )


def test_a_venv_whose_bin_folder_leads_out_of_the_workspace_runs_nothing_unasked(model, tmp_path):
    # pyvenv.cfg in the workspace, but bin/ a link to a folder elsewhere: .venv/bin/pytest would be
    # a program from outside, which the person never named.
    workspace, elsewhere = tmp_path / "workspace", tmp_path / "elsewhere"
    (elsewhere / "bin").mkdir(parents=True)
    (elsewhere / "bin" / "pytest").write_text(f"#!/bin/sh\ntouch {tmp_path}/planted-ran\n")
    (elsewhere / "bin" / "pytest").chmod(0o755)
    (workspace / ".venv").mkdir(parents=True)
    (workspace / ".venv" / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    (workspace / ".venv" / "bin").symlink_to(elsewhere / "bin")
    asked = []
    model.queue(calls(("run_shell", {"command": ".venv/bin/pytest -q"})), answer("done"))

    harness.run(
        "test",
        approve=lambda name, arguments: asked.append(arguments["command"]) or False,
        workspace=workspace,
        allow=["pytest"],
    )

    assert asked == [".venv/bin/pytest -q"] and not (tmp_path / "planted-ran").exists()


SED_PRINTS_OR_STOPS = "p=ldqQ"
# Every command GNU sed knows (info sed, "sed scripts"), as one character.
SED_COMMANDS = "#:=aAbcdDeFgGhHilLnNpPqQrRsStTvwWxyz{}"


@pytest.mark.parametrize("command", [c for c in SED_COMMANDS if c not in SED_PRINTS_OR_STOPS])
def test_every_sed_command_but_those_that_print_or_stop_asks_alone_or_with_text(command, in_a_run):
    (in_a_run.workspace / "a.txt").write_text("x\n")
    for script in (command, f"1{command}", f"1{command} x", f"/x/{command}", f"1p;{command}"):
        assert allowlist.reason_to_ask(f"sed -n '{script}' a.txt", in_a_run) is not None, script


@pytest.mark.parametrize("command", SED_PRINTS_OR_STOPS)
def test_the_sed_commands_that_print_or_stop_run_without_asking(command, in_a_run):
    (in_a_run.workspace / "a.txt").write_text("x\n")
    for script in (command, f"1{command}", f"1,/x/{command}", f"$!{command}"):
        assert allowlist.reason_to_ask(f"sed -n '{script}' a.txt", in_a_run) is None, script


# Every way each program takes its pattern or script (or is told there is none): after any of them
# the first other word is a file, and checked as one.
PATTERN_GIVEN = {
    "grep": ["-e x", "--regexp x", "--regexp=x", "-ex", "-f a.txt", "--file a.txt", "--file=a.txt"],
    "git grep": ["-e x", "--regexp x", "-f a.txt", "--file a.txt"],
    "rg": [
        "-e x",
        "--regexp x",
        "--regexp=x",
        "-f a.txt",
        "--file a.txt",
        "--files",
        "--type-list",
    ],
    "sed": ["-e 1p", "-e1p", "-ne 1p", "--expression 1p", "--expression=1p"],
}


@pytest.mark.parametrize(
    "program, option", [(p, o) for p, options in PATTERN_GIVEN.items() for o in options]
)
def test_a_file_after_the_pattern_given_by_an_option_is_checked_as_a_path(
    program, option, in_a_run
):
    (in_a_run.workspace / "a.txt").write_text("x\n")

    assert allowlist.reason_to_ask(f"{program} {option} a.txt", in_a_run) is None
    assert "outside the workspace" in (
        allowlist.reason_to_ask(f"{program} {option} /etc/passwd", in_a_run) or ""
    )


@pytest.mark.parametrize(
    "given",
    ["'{}'", "-e '{}'", "-e '1p' -e '{}'", "-ne '{}'", "--expression '{}'", "--expression='{}'"],
)
def test_a_sed_script_is_checked_however_it_is_given(given, in_a_run):
    (in_a_run.workspace / "a.txt").write_text("x\n")

    assert allowlist.reason_to_ask(f"sed -n {given.format('1p')} a.txt", in_a_run) is None
    assert "not 'w x'" in (
        allowlist.reason_to_ask(f"sed -n {given.format('w x')} a.txt", in_a_run) or ""
    )


@pytest.mark.parametrize(
    "form",
    [
        "git blame --contents={} a.txt",
        "git blame --contents {} a.txt",
        "git blame --ignore-revs-file={} a.txt",
        "git grep --file={}",
        "git grep -f {}",
        "find . -newer {}",
        "grep --exclude-from={} x a.txt",
        "grep -f {} a.txt",
    ],
)
def test_a_file_an_option_names_is_checked_as_a_path(form, in_a_run):
    (in_a_run.workspace / "a.txt").write_text("x\n")

    assert allowlist.reason_to_ask(form.format("a.txt"), in_a_run) is None
    assert "outside the workspace" in (
        allowlist.reason_to_ask(form.format("/etc/passwd"), in_a_run) or ""
    )
