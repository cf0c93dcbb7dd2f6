"""Ways around the guards found by attacking the agent as a hostile model would, each now refused or harmless."""

import os
import subprocess
import sys

import pytest

import previews

import terminal as screen


import harness

import allowlist

import sandbox
import settings
import tools
from conftest import copy_of_the_agent, run_script
from fake_model import answer, calls

KEY = "gsk_" + "Zq8" * 15 + "xYz4"  # 51 characters, like a real one
needs_landlock = pytest.mark.skipif(bool(sandbox.unavailable()), reason=f"no Landlock: {sandbox.unavailable()}")
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell and git setup")


def windows(text: str) -> set[str]:
    return {text[i:i + screen.SHORTEST_SECRET_PIECE] for i in range(len(text) - screen.SHORTEST_SECRET_PIECE + 1)}


@needs_landlock
def test_in_the_agents_own_folder_a_recursive_grep_cannot_read_its_dot_env(model, tmp_path, monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY")
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text(f"GROQ_API_KEY={KEY}\n")
    (agent / "notes.txt").write_text("GROQ_API_KEY is set in .env\n")
    model.queue(calls(("run_shell", {"command": "grep -r GROQ_API_KEY ."})),
                calls(("run_shell", {"command": "grep -r -o -h '.........' ."})),
                answer(f"the key is {KEY}"))

    result = run_script("harness.py", "find the key", "--transcript", "t.jsonl", cwd=agent, root=agent)

    assert result.returncode == 0, result.stderr
    first, second = (model.messages(i)[-1]["content"] for i in (1, 2))
    assert "./notes.txt:GROQ_API_KEY is set in .env" in first and "./.env: Permission denied" in first
    assert KEY[4:13] not in second  # not even in nine-character pieces
    shown = result.stdout + result.stderr + (agent / "t.jsonl").read_text()
    assert not windows(KEY) & windows(shown)  # the answer on stdout is redacted too
    assert result.stdout == "the key is [redacted API key]\n"


@posix_only
def test_a_repository_that_sets_signature_programs_and_formats_runs_nothing(tmp_path, monkeypatch, as_a_run):
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "MARKER"
    (tmp_path / "evil.sh").write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    (tmp_path / "evil.sh").chmod(0o755)
    git = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=ws,
                                       check=True, capture_output=True, text=True).stdout
    git("init", "-q")
    (ws / "f.txt").write_text("a\n")
    git("add", "f.txt")
    tree = git("write-tree").strip()
    signed = (f"tree {tree}\nauthor t <t@t> 0 +0000\ncommitter t <t@t> 0 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n"
              " AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n")
    commit = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=ws, input=signed,
                            capture_output=True, text=True, check=True).stdout.strip()
    git("update-ref", "HEAD", commit)
    for key, value in (("gpg.program", str(tmp_path / "evil.sh")), ("format.pretty", "%G?"),
                       ("pretty.x", "%G? %s"), ("core.sshCommand", str(tmp_path / "evil.sh"))):
        git("config", key, value)
    subprocess.run(["git", "log", "-n1"], cwd=ws, capture_output=True)
    assert marker.exists()  # a plain git runs the repository's program
    marker.unlink()
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    as_a_run()

    results = [tools.run_shell(command) for command in ("git log -n1", "git show", "git log --format=x:y.z")]

    assert not marker.exists(), results
    assert results[0].startswith("exit code: 0") and "signed" in results[0]


def test_a_runs_link_planted_in_the_working_folder_stops_the_transcript(model, cli, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "work").mkdir()
    os.chdir(tmp_path / "work")
    os.symlink(elsewhere, "runs")

    result = cli("x")

    assert result.returncode == 2
    assert result.stderr == ("error: cannot create the transcript runs/" + result.stderr.split("runs/", 1)[1])
    assert "runs is a link, not a folder" in result.stderr and list(elsewhere.iterdir()) == []
    assert model.requests == []


def test_list_dir_shows_a_link_out_of_the_workspace_without_its_size(tmp_path, monkeypatch, as_a_run):
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("x" * 631)
    os.symlink(tmp_path / "secret.txt", tmp_path / "ws" / "shadowlink")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path / "ws"))
    as_a_run()

    assert tools.list_dir() == "shadowlink  (link to outside the workspace)"


@posix_only
def test_a_key_under_another_variable_name_does_not_reach_commands(model, tmp_path, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    monkeypatch.setenv("MY_COPY_OF_THE_KEY", KEY)
    monkeypatch.setenv("HARMLESS", "kept")
    model.queue(calls(("run_shell", {"command": "env"})), answer("ok"))

    import harness
    harness.run("env", approve_all=True)

    told = model.messages(1)[-1]["content"]
    assert "HARMLESS=kept" in told and "MY_COPY_OF_THE_KEY" not in told and KEY not in told


def test_the_approval_prompt_shows_every_character_of_a_command_and_no_key(monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    command = f"ls -la > listing.txt ;\x1b[8m ; touch HIDDEN #\x1b[0m\u202e\necho {KEY}"
    with settings.use(settings.resolve()):
        shown = previews.describe("run_shell", {"command": command},
                               lambda text: screen.shown(text, redact=screen.redactor([KEY])))

    assert shown.splitlines()[1] == ("  ls -la > listing.txt ;\\x1b[8m ; touch HIDDEN #\\x1b[0m\\u202e\\n"
                                     "echo [redacted API key]")
    assert not any(ord(c) < 32 and c != "\n" for c in shown)


@needs_landlock
def test_a_link_or_a_hard_link_in_the_agents_folder_opens_nothing_to_read_only_commands(tmp_path, monkeypatch):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text(f"GROQ_API_KEY={KEY}\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP SECRET")
    os.symlink(tmp_path / "outside", agent / "data")
    os.link(agent / ".env", agent / "cfg.txt")
    monkeypatch.setattr(settings, "DOTENV", agent / ".env")  # as if this copy were the agent that runs
    monkeypatch.setenv("AGENT_WORKSPACE", str(agent))
    # The kernel's layer alone, as if the allowlist had let this command through: read-only, .env hidden.
    private = sandbox.make_tmp()
    try:
        process = sandbox.popen("cat data/secret.txt cfg.txt harness.py", mode=sandbox.READ_ONLY, workspace=agent,
                                tmp=private, hidden=(agent / ".env",), cwd=agent, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        result = process.communicate()[0]
        sandbox.finish(process)
    finally:
        sandbox.remove_tmp(private)

    assert "TOP SECRET" not in result and KEY not in result
    assert "data/secret.txt: Permission denied" in result and "cfg.txt: Permission denied" in result
    assert "Phase 1, the loop" in result  # the rest of the workspace is still readable
    with settings.use(settings.resolve(require_key=False)):  # and the allowlist and the file tools refuse both
        assert allowlist.reason_to_ask("cat cfg.txt") and allowlist.reason_to_ask("cat data/secret.txt")
        with pytest.raises(PermissionError, match="holds the agent's own API keys"):
            tools.read_file("cfg.txt")


@pytest.mark.parametrize("content", [["a", "list"], {"a": "dict"}, 5, "lone \ud800 surrogate"])
def test_an_answer_that_is_not_plain_text_is_printed_as_text(model, cli, content):
    model.queue({"body": {**answer("x")["body"], "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}})

    result = cli("x", "--no-transcript")

    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert result.stdout.strip() in ('["a", "list"]', '{"a": "dict"}', "5", "lone \\ud800 surrogate")


def test_usage_with_null_token_counts_still_gives_a_summary(model, cli):
    reply = answer("fine")
    reply["body"]["usage"] = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}
    model.queue(reply)

    result = cli("x", "--no-transcript")

    assert result.returncode == 0 and result.stderr.startswith("done: 1 step, 0 tool calls, 0 tokens in, 0 out")


def test_arguments_nested_too_deeply_are_an_error_for_the_model(model):
    import harness
    model.queue(calls(("read_file", "[" * 50_000 + "]" * 50_000)), answer("ok"))

    assert harness.run("x") == "ok"

    assert model.messages(1)[-1]["content"].startswith("error: the arguments are nested too deeply")


def test_continue_from_a_runs_folder_with_a_dangling_link_or_deep_json_is_one_line(model, cli, tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "deep.jsonl").write_text("[" * 100_000 + "\n")
    assert cli("--continue", "x").returncode == 2
    os.symlink(tmp_path / "nowhere", tmp_path / "runs" / "zz.jsonl")

    result = cli("--continue", "x")

    assert result.returncode == 2 and result.stderr.startswith("error: cannot continue from ")
    assert len(result.stderr.splitlines()) == 1 and model.requests == []


@posix_only
def test_asking_to_write_over_a_named_pipe_never_waits_on_it(model, tmp_path, in_a_run):
    import harness
    os.mkfifo(tmp_path / "pipe")
    asked = []
    model.queue(calls(("write_file", {"path": "pipe", "content": "x"})), answer("refused"))

    harness.run("write", approve=lambda name, arguments: asked.append(previews.describe(name, arguments, screen.shown)) or True)

    assert asked == []  # describing it refused the pipe before anyone was asked
    assert model.messages(1)[-1]["content"].startswith("error: OSError: ") and "named pipe" in model.messages(1)[-1]["content"]


@posix_only
def test_git_reads_no_repository_outside_the_workspace_and_runs_no_hook_even_without_the_sandbox(tmp_path, monkeypatch, as_a_run):
    outside, ws = tmp_path / "outside", tmp_path / "ws"
    for folder in (outside, ws):
        folder.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    (outside / "secret.txt").write_text("REPO SECRET\n")
    (ws / "a.txt").write_text("a\n")
    git = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=ws,
                                       check=True, capture_output=True)
    git("add", "a.txt")
    git("commit", "-qm", "a")
    hook = ws / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/HOOK_RAN\n")
    hook.chmod(0o755)
    git("config", "core.worktree", str(outside))
    os.utime(ws / "a.txt", (1, 1))  # stale stat data: git diff would refresh the index and fire the hook
    monkeypatch.setenv("AGENT_WORKSPACE", str(ws))
    monkeypatch.setenv("AGENT_SANDBOX", "off")  # the allowlist's own layer, as on macOS or Windows
    as_a_run()

    results = [tools.run_shell(command) for command in ("git diff", "git status", "git diff --stat")]

    assert not (tmp_path / "HOOK_RAN").exists()
    assert not any("REPO SECRET" in result or "secret.txt" in result for result in results), results
    (ws / ".git" / "objects" / "info" / "alternates").write_text(str(outside / ".git" / "objects") + "\n")
    with settings.use(settings.resolve(require_key=False)):
        assert "borrows objects" in allowlist.reason_to_ask("git log")


@posix_only
def test_a_dot_git_file_pointing_elsewhere_makes_git_ask(tmp_path, monkeypatch, as_a_run):
    (tmp_path / ".git").write_text("gitdir: /somewhere/else/.git\n")
    monkeypatch.setenv("AGENT_WORKSPACE", str(tmp_path))
    as_a_run()
    with settings.use(settings.resolve(require_key=False)):
        assert "is not a folder of its own" in allowlist.reason_to_ask("git log -p")
        assert allowlist.reason_to_ask("ls") is None
