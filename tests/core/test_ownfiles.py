"""The agent's own folder as the workspace (the quick start): no tool and no command, approved or
not, changes the files the agent runs from or reads its .env; and no tool writes a transcript
through another name for it."""

import json
import os
import subprocess
import sys

import pytest
from fake_model import answer, calls
from helpers import ROOT, copy_of_the_agent, needs_landlock, run_script

import tools
from plainagent.core import ownfiles as agentfiles

KEY = "gsk_" + "Qw7" * 15 + "pLm2"
REFUSED_IN_FOLDER = (
    "is in the agent's own folder, whose top level, __pycache__ and virtual environments no tool "
    "changes"
)


@pytest.fixture
def agent(tmp_path, monkeypatch):
    """A copy of the agent with its key in its .env, and a docs/ folder of its own."""
    monkeypatch.delenv("GROQ_API_KEY")
    folder = copy_of_the_agent(tmp_path / "agent")
    (folder / ".env").write_text(f"GROQ_API_KEY={KEY}\n")
    (folder / "docs").mkdir()
    return folder


@needs_landlock
def test_nothing_changes_the_agents_own_files_and_the_next_run_still_works(model, agent):
    dotenv, harness_py = (agent / ".env").read_bytes(), (agent / "harness.py").read_bytes()
    model.queue(
        calls(
            ("run_shell", {"command": "echo GROQ_BASE_URL=http://evil >> .env"}),
            ("run_shell", {"command": "printf 'raise SystemExit(9)\\n' > dotenv.py"}),
            ("run_shell", {"command": "echo x >> harness.py; mkdir json"}),
            ("write_file", {"path": "harness.py", "content": "x"}),
            ("write_file", {"path": ".env", "content": "GROQ_BASE_URL=http://evil\n"}),
            ("write_file", {"path": "dotenv.py", "content": "raise SystemExit(9)\n"}),
            ("write_file", {"path": "json/__init__.py", "content": "raise SystemExit(9)\n"}),
            ("write_file", {"path": "__pycache__/dotenv.cpython-312.pyc", "content": "x"}),
            ("edit_file", {"path": "harness.py", "old_text": "Phase 1", "new_text": "x"}),
            ("edit_file", {"path": ".env", "old_text": "GROQ", "new_text": "x"}),
            ("run_shell", {"command": "cat .env"}),
            ("write_file", {"path": "docs/notes.md", "content": "a subfolder may be written\n"}),
            ("run_shell", {"command": "echo made > docs/made.txt"}),
        ),
        answer("done"),
    )

    result = run_script(
        "harness.py", "change the agent", "--yes", "--no-transcript", cwd=agent, root=agent
    )

    assert result.returncode == 0, result.stderr
    told = [m["content"] for m in model.messages(1)[-13:]]
    assert told[0] == "exit code: 2\nstderr:\n/bin/sh: 1: cannot create .env: Permission denied\n"
    assert (
        told[1] == "exit code: 2\nstderr:\n/bin/sh: 1: cannot create dotenv.py: Permission denied\n"
    )
    shell_said, mkdir_said = told[2].splitlines()[2:]  # mkdir's quotes depend on the locale
    assert shell_said == "/bin/sh: 1: cannot create harness.py: Permission denied"
    assert mkdir_said.startswith("mkdir: cannot create directory ") and mkdir_said.endswith(
        ": Permission denied"
    )
    assert "json" in mkdir_said
    for text, path in zip(
        told[3:8],
        ["harness.py", ".env", "dotenv.py", "json/__init__.py", "__pycache__/"],
        strict=True,
    ):
        assert text.startswith(f"error: PermissionError: {path}") and ("no tool" in text), text
    assert told[3] == (
        f"error: PermissionError: harness.py {REFUSED_IN_FOLDER} (Python would run them in the "
        "agent); to work on the agent's code, copy its folder and run the agent on the copy"
    )
    assert told[4].endswith(".env holds the agent's own API keys; no tool reads or writes it")
    assert told[8].startswith(f"error: PermissionError: harness.py {REFUSED_IN_FOLDER}")
    assert told[9].startswith("error: PermissionError: .env holds the agent's own API keys")
    assert (
        told[10].startswith("exit code: 1\n")
        and ".env: Permission denied" in told[10]
        and "Qw7" not in told[10]
    )
    assert told[11:] == ["created docs/notes.md (27 bytes)", "exit code: 0"]
    assert (agent / ".env").read_bytes() == dotenv and (
        agent / "harness.py"
    ).read_bytes() == harness_py
    assert not (agent / "dotenv.py").exists() and not (agent / "json").exists()
    assert not (agent / "__pycache__" / "dotenv.cpython-312.pyc").exists()
    assert (agent / "docs" / "made.txt").read_text() == "made\n"

    model.queue(answer("still here"))
    again = run_script("harness.py", "hello", "--no-transcript", cwd=agent, root=agent)

    assert again.returncode == 0 and again.stdout == "still here\n", again.stderr
    assert len(model.requests) == 3  # the key still went to the fake model, not to http://evil


def test_the_rule_freezes_the_top_level_and_what_python_runs_from_and_nothing_else(tmp_path):
    folder = tmp_path / "agent"
    for name in ("docs", "tests", "json", "__pycache__", ".venv", "envs"):
        (folder / name).mkdir(parents=True)
    (folder / "envs" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (folder / "harness.py").write_text("")
    os.symlink("docs", folder / "link")

    assert agentfiles.read_only_entries(folder) == [
        folder / name for name in (".venv", "__pycache__", "envs", "harness.py", "json", "link")
    ]
    assert [
        agentfiles.may_change(folder / path, folder)
        for path in (
            "docs/a.md",
            "tests/deep/b.py",
            "harness.py",
            "new.py",
            "new/c.txt",
            "json/__init__.py",
            "link/a.md",
            ".",
            "../elsewhere.py",
        )
    ] == [True, True, False, False, False, False, False, False, True]


@needs_landlock
def test_an_approved_command_may_not_link_an_agent_file_to_a_writable_name(model, agent):
    model.queue(
        calls(
            ("run_shell", {"command": "ln harness.py docs/h.py"}),
            ("run_shell", {"command": "ln .env docs/e.txt"}),
        ),
        answer("done"),
    )

    result = run_script("harness.py", "link", "--yes", "--no-transcript", cwd=agent, root=agent)

    assert result.returncode == 0, result.stderr
    first, second = (m["content"] for m in model.messages(1)[-2:])
    assert first.startswith("exit code: 1") and second.startswith("exit code: 1"), (first, second)
    assert not (agent / "docs" / "h.py").exists() and not (agent / "docs" / "e.txt").exists()


@needs_landlock
def test_hard_links_made_before_the_run_in_a_workspace_inside_the_agents_folder_lend_it_nothing(
    model, agent
):
    os.link(agent / "harness.py", agent / "docs" / "h.py")
    os.link(agent / ".env", agent / "docs" / "e.txt")
    harness_py = (agent / "harness.py").read_bytes()
    model.queue(
        calls(
            ("run_shell", {"command": "cat e.txt"}), ("run_shell", {"command": "echo x >> h.py"})
        ),
        answer("done"),
    )

    result = run_script(
        "harness.py", "change the agent", "--yes", "--no-transcript", cwd=agent / "docs", root=agent
    )

    assert result.returncode == 0, result.stderr
    read, wrote = (m["content"] for m in model.messages(1)[-2:])
    assert read.startswith("exit code: 1") and "GROQ" not in read, read
    assert wrote.startswith("exit code: 2") and "Permission denied" in wrote, wrote
    assert (agent / "harness.py").read_bytes() == harness_py


@needs_landlock
def test_a_hard_link_to_the_transcript_is_never_written(model, cli, tmp_path):
    # A transcript the person named in the workspace: a command may link it (the runs in the
    # state folder it could not reach).
    model.queue(
        calls(("run_shell", {"command": "ln kept.jsonl t.jsonl"})),
        calls(
            ("write_file", {"path": "t.jsonl", "content": "{}\n"}),
            ("edit_file", {"path": "t.jsonl", "old_text": "{", "new_text": "["}),
        ),
        answer("done"),
    )

    result = cli("rewrite the transcript", "--yes", "--transcript", "kept.jsonl")

    assert result.returncode == 0, result.stderr
    told = [m["content"] for m in model.messages(2)[-2:]]
    assert (
        told
        == [
            "error: PermissionError: t.jsonl is another name (a hard link) for a transcript, which "
            "no tool writes; write a new file instead"
        ]
        * 2
    )
    transcript = tmp_path / "kept.jsonl"
    assert os.path.samefile(transcript, tmp_path / "t.jsonl")
    # still whole records
    assert all(json.loads(line) for line in transcript.read_text().splitlines())


def test_a_file_with_other_names_elsewhere_is_still_written(in_a_run, tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "old.jsonl").write_text("{}\n")

    assert tools.edit_file("a.txt", "one", "two", settings=in_a_run).startswith("edited a.txt")
    assert (tmp_path / "a.txt").read_text() == "two\n"


@needs_landlock
def test_a_workspace_that_holds_the_agents_folder_leaves_its_files_to_no_command(
    model, agent, tmp_path
):
    harness_py = (agent / "harness.py").read_bytes()
    model.queue(
        calls(
            ("run_shell", {"command": "echo x >> agent/harness.py"}),
            ("run_shell", {"command": "echo made > agent/docs/made.txt"}),
        ),
        answer("done"),
    )

    result = run_script(
        "harness.py", "change the agent", "--yes", "--no-transcript", cwd=tmp_path, root=agent
    )

    assert result.returncode == 0, result.stderr
    first, second = (m["content"] for m in model.messages(1)[-2:])
    assert (
        first
        == "exit code: 2\nstderr:\n/bin/sh: 1: cannot create agent/harness.py: Permission denied\n"
    )
    assert second == "exit code: 0"
    assert (agent / "harness.py").read_bytes() == harness_py


PLANT = 'mkdir -p lib && echo \'open("planted", "w")\' > lib/sitecustomize.py'


@pytest.mark.parametrize(
    "pythonpath",
    [
        "lib",
        ".",
        "{ws}/lib",
        "/nowhere" + os.pathsep + "{ws}/lib",
        os.pathsep.join(["/nowhere", "", "/elsewhere"]),
        "{ws}/..",
    ],
    ids=["relative", "the-workspace", "absolute", "second-entry", "empty-entry", "above-it"],
)
def test_a_python_path_into_the_workspace_stops_the_agent_before_a_command_can_put_code_there(
    model, tmp_path, monkeypatch, pythonpath
):
    # A command allowed to write the workspace wrote lib/sitecustomize.py; the next
    # start ran it outside the sandbox.
    monkeypatch.setenv("PYTHONPATH", pythonpath.format(ws=tmp_path))
    # what a start let through would do
    model.queue(calls(("run_shell", {"command": PLANT})), answer("planted"))

    first = run_script("harness.py", "--yes", "--no-transcript", "plant", cwd=tmp_path)
    model.script.clear()
    second = run_script("harness.py", "--yes", "--no-transcript", "look", cwd=tmp_path)

    for result in (first, second):
        assert (result.returncode, result.stdout) == (2, "")
        assert (
            result.stderr.startswith("error: PYTHONPATH names ") and result.stderr.count("\n") == 1
        ), result.stderr
        assert "unset it for the agent (env -u PYTHONPATH python harness.py ...)" in result.stderr
    assert (
        not (tmp_path / "lib" / "sitecustomize.py").exists() and not (tmp_path / "planted").exists()
    )


def test_the_refusal_names_the_entry_and_the_workspace(model, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "lib")

    result = run_script("harness.py", "look", cwd=tmp_path)

    assert result.stderr == (
        f"error: PYTHONPATH names lib, in the workspace {tmp_path}: a sitecustomize.py put "
        "there would run inside the agent at its next start; unset it for the agent (env -u "
        "PYTHONPATH python harness.py ...) or use a workspace apart from it\n"
    )


@pytest.mark.parametrize(
    "variable, value, flags",
    [
        ("PYTHONPATH", "lib", ["-E"]),
        ("PYTHONHOME", "{ws}", ["-E"]),
        ("PYTHONUSERBASE", "{ws}/.local", ["-s"]),
    ],
)
def test_places_python_skips_at_this_start_but_reads_at_the_next_stop_the_agent_too(
    model, tmp_path, monkeypatch, variable, value, flags
):
    monkeypatch.setenv(variable, value.format(ws=tmp_path))

    result = subprocess.run(
        [sys.executable, *flags, str(ROOT / "harness.py"), "look"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert (result.returncode, result.stdout) == (2, "")
    assert str(tmp_path) in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ")


def test_a_python_path_outside_the_workspace_starts_as_before(model, tmp_path, monkeypatch):
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "lib"), str(ROOT)]))
    model.queue(answer("fine"))

    result = run_script("harness.py", "--no-transcript", "look", cwd=tmp_path / "ws")

    assert (result.returncode, result.stdout) == (0, "fine\n"), result.stderr


@needs_landlock
def test_the_agents_package_is_its_own_for_the_file_tools_and_the_kernel_alike(model, agent):
    # A new package folder is not a name Python would import from elsewhere: the rule must name it.
    loop = (agent / "plainagent" / "shell" / "allowlist.py").read_bytes()
    model.queue(
        calls(
            ("write_file", {"path": "plainagent/shell/allowlist.py", "content": "x"}),
            ("write_file", {"path": "plainagent/new.py", "content": "x"}),
            ("edit_file", {"path": "plainagent/__init__.py", "old_text": "The", "new_text": "x"}),
            ("write_file", {"path": "plainagent/__pycache__/x.cpython-311.pyc", "content": "x"}),
            ("run_shell", {"command": "echo x >> plainagent/shell/allowlist.py"}),
            ("run_shell", {"command": "echo x > plainagent/new.py"}),
        ),
        answer("done"),
    )

    result = run_script(
        "harness.py", "change the package", "--yes", "--no-transcript", cwd=agent, root=agent
    )

    assert result.returncode == 0, result.stderr
    told = [m["content"] for m in model.messages(1)[-6:]]
    for text in told[:4]:
        assert (
            text.startswith("error: PermissionError: plainagent/") and REFUSED_IN_FOLDER in text
        ), text
    assert all(
        text.startswith("exit code: 2\n") and "Permission denied" in text for text in told[4:]
    ), told[4:]
    assert (agent / "plainagent" / "shell" / "allowlist.py").read_bytes() == loop
    assert not (agent / "plainagent" / "new.py").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="a venv's python in bin/")
def test_the_subfolder_holding_the_running_venv_deeper_down_is_the_agents_own(tmp_path):
    # pythons/3.12/ is a venv, but pythons/ has no pyvenv.cfg and no name of
    # RUN_FROM: only its holding the Python that runs keeps it (a .pth file written
    # into it would run inside the agent).
    folder = tmp_path / "agent"
    venv = folder / "pythons" / "3.12"
    (folder / "docs").mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    look = (
        "import sys; from pathlib import Path; from plainagent.core import ownfiles as o; "
        "f = Path(sys.argv[1]); print([p.name for p in o.read_only_entries(f)], "
        "o.may_change(f / 'pythons' / 'x.pth', f), o.may_change(f / 'docs' / 'x.md', f))"
    )

    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", look, str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )

    assert done.stdout == "['pythons'] False True\n"


def test_the_rule_counts_the_package_folder_as_the_agents_own(tmp_path):
    folder = copy_of_the_agent(tmp_path / "agent")

    assert folder / "plainagent" in agentfiles.read_only_entries(folder)
    assert not agentfiles.may_change(folder / "plainagent" / "core" / "x.py", folder)
    (folder / "docs").mkdir()
    # other subfolders may be written
    assert agentfiles.may_change(folder / "docs" / "x.md", folder)


def test_a_workspace_inside_the_agents_pycache_is_read_only_to_approved_commands(model, agent):
    cache = agent / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "dotenv.cpython-312.pyc").write_bytes(b"compiled")
    model.queue(
        calls(
            (
                "run_shell",
                {"command": "echo x >> dotenv.cpython-312.pyc; touch json.cpython-312.pyc"},
            )
        ),
        answer("done"),
    )

    result = run_script(
        "harness.py",
        "plant",
        "--yes",
        "--no-transcript",
        "--workspace",
        str(cache),
        cwd=agent,
        root=agent,
    )

    assert result.returncode == 0, result.stderr
    told = model.messages(1)[-1]["content"]
    assert told.startswith("exit code: 1") and "Permission denied" in told, told
    # (the agent's own start compiles its modules there)
    assert not (cache / "json.cpython-312.pyc").exists()
    assert (cache / "dotenv.cpython-312.pyc").read_bytes() == b"compiled"


@pytest.mark.parametrize("name", ["__pycache__", ".venv", "venv", "env", "ENV", ".Venv"])
def test_a_subfolder_named_as_python_runs_from_is_frozen_even_before_it_holds_a_venv(
    tmp_path, name
):
    folder = copy_of_the_agent(tmp_path / "agent")
    (folder / name).mkdir(exist_ok=True)
    (folder / "docs").mkdir()

    assert not agentfiles.may_change(folder / name / "activate", folder)
    assert agentfiles.may_change(folder / "docs" / "notes.md", folder)


def test_a_python_path_in_the_workspace_stops_continue_too_but_not_undo(
    model, tmp_path, monkeypatch
):
    monkeypatch.setenv("PYTHONPATH", "lib")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "0001-x.jsonl").write_text('{"type": "start"}\n')

    carried_on = run_script("harness.py", "--continue", "go on", cwd=tmp_path)
    undone = run_script("harness.py", "--undo", cwd=tmp_path)

    assert (carried_on.returncode, carried_on.stdout) == (2, "")
    assert carried_on.stderr.startswith("error: PYTHONPATH names lib, in the workspace "), (
        carried_on.stderr
    )
    assert "PYTHONPATH names" not in undone.stderr  # --undo runs no command: it works there still


@needs_landlock
def test_a_hard_link_to_the_env_at_the_top_of_the_agents_folder_lends_an_approved_command_nothing(
    model, agent
):
    # A top-level file of the agent's folder is one an approved command may read; this
    # one is .env by another name.
    os.link(agent / ".env", agent / "notes.txt")
    model.queue(calls(("run_shell", {"command": "cat notes.txt"})), answer("done"))

    result = run_script("harness.py", "read", "--yes", "--no-transcript", cwd=agent, root=agent)

    assert result.returncode == 0, result.stderr
    told = model.messages(1)[-1]["content"]
    assert told.startswith("exit code: 1") and "Permission denied" in told and KEY not in told, told


@pytest.mark.parametrize(
    "installation",
    [
        "lib/python3.12/site-packages",
        "lib/python3/dist-packages",
        "local/lib/python3.12/dist-packages",
    ],
)
def test_an_agent_installed_into_any_packages_folder_reads_its_env_from_the_configuration_folder(
    installation, tmp_path
):
    # pip's site-packages, and Debian's dist-packages (apt, and pip on Debian's Python): never
    # beside harness.py, where the next upgrade would replace it
    folder = tmp_path / installation

    assert agentfiles.installed(folder)
    assert agentfiles.dotenv_file(folder) == agentfiles.config_folder() / ".env"
    assert agentfiles.dotenv_file(tmp_path / "clone") == tmp_path / "clone" / ".env"
