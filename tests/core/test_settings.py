"""Every setting does what it says: variables, flags, .env rules, and bad
values refused in one line."""

import os
import sys

import pytest
from fake_model import answer, calls
from helpers import copy_of_the_agent, run_script, runs_of

import harness
from plainagent.core import settings
from plainagent.core.settings import ConfigError
from plainagent.sandbox import process as sandbox


def test_agent_max_steps_sets_the_step_limit(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_MAX_STEPS", "2")
    model.queue(calls(("list_dir", {})), calls(("list_dir", {"path": "."})))

    result = cli("loop")

    assert result.returncode == 1
    assert len(model.requests) == 2


def test_max_steps_flag_wins_over_the_variable(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_MAX_STEPS", "5")
    model.queue(calls(("list_dir", {})))

    assert cli("loop", "--max-steps", "1").returncode == 1
    assert len(model.requests) == 1


@pytest.mark.parametrize("value", ["lots", "nan", "inf", "-1", "0"])
@pytest.mark.parametrize(
    "variable",
    [
        "AGENT_MAX_STEPS",
        "AGENT_TIMEOUT",
        "AGENT_CONTEXT_BUDGET",
        "AGENT_SHELL_TIMEOUT",
        "AGENT_MAX_CHARS",
    ],
)
def test_a_bad_number_is_a_one_line_configuration_error(model, cli, monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)

    result = cli("x")

    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith(f"error: {variable} must be a positive ")
    assert model.requests == []


@pytest.mark.parametrize(
    "url", ["notaurl", "localhost:8080/v1", "http://[::1", "http://host:port/v1", "ftp://host/v1"]
)
def test_a_base_url_the_sdk_cannot_use_is_refused_before_any_request(model, tmp_path, url):
    # one line naming the variable, where it was a connection error at "/" after three tries, or
    # an InvalidURL's name
    os.environ["GROQ_BASE_URL"] = url

    result = run_script("harness.py", "x", cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr == (
        "error: GROQ_BASE_URL must be an http:// or https:// address, like "
        f"https://api.groq.com/openai/v1, not {url!r}; fix GROQ_BASE_URL in the environment\n"
    )
    assert model.requests == [] and model.connections == 0


def test_a_base_url_given_to_run_is_checked_as_the_variable_is(model):
    with pytest.raises(ConfigError, match=r"must be an http:// .*; fix the base_url= argument$"):
        harness.run("x", base_url="127.0.0.1:8080")


@pytest.mark.parametrize(
    "key", ["gsk_Ab3dE5fG7hJ9kL1mNp\n", " gsk_Ab3dE5fG7hJ9kL1mNp", "gsk_Ab3dE5…"]
)
def test_a_key_no_http_header_carries_is_refused_before_any_request_without_showing_it(
    model, cli, monkeypatch, key
):
    # as a script reads it from a file: open("key.txt").read(), its line break kept
    said = (
        "GROQ_API_KEY must be the key alone: it holds a space or line break at an end, or a "
        "character an HTTP header cannot carry (a line read from a file keeps its line break: "
        "strip() it); fix "
    )
    with pytest.raises(ConfigError) as raised:
        harness.run("x", api_key=key)
    assert str(raised.value) == said + "the api_key= argument"
    monkeypatch.setenv("GROQ_API_KEY", key)
    result = cli("x")
    assert (
        result.returncode == 2
        and result.stderr == f"error: {said}GROQ_API_KEY in the environment\n"
    )
    assert "gsk_" not in result.stderr and model.requests == []


def test_max_steps_zero_is_a_usage_error(model, cli):
    with pytest.raises(SystemExit) as exit:
        cli("x", "--max-steps", "0")
    assert exit.value.code == 2


@pytest.mark.parametrize("args", [("x", "--max-steps", "0"), ("x", "--no-such-flag"), ("x", "y")])
def test_a_usage_error_is_one_line_saying_where_the_flags_are(model, tmp_path, args):
    result = run_script("harness.py", *args, cwd=tmp_path)

    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and line.endswith("; see python harness.py --help")
    assert model.requests == []


def test_agent_timeout_bounds_a_model_request(model, cli, monkeypatch):
    # counted from when the client is built: only the request's own time
    monkeypatch.setenv("AGENT_TIMEOUT", "1")
    # no second try starts once AGENT_TIMEOUT is spent
    model.queue({**answer("too late"), "delay": 10})

    result = cli("x")

    assert result.returncode == 1
    assert (
        result.stderr.splitlines()[-1]
        == "error: the model did not answer within 1 s: try again, or raise AGENT_TIMEOUT"
    )


def test_agent_max_chars_sets_the_cut(model, tmp_path):
    (tmp_path / "a.txt").write_text("x" * 500)
    model.queue(calls(("read_file", {"path": "a.txt"})), answer("ok"))

    result = run_script(
        "harness.py", "read", cwd=tmp_path, env={**os.environ, "AGENT_MAX_CHARS": "100"}
    )

    assert result.returncode == 0, result.stderr
    assert (
        model.messages(1)[-1]["content"]
        == "x" * 100 + "\n[cut: showed bytes 0-100 of 500; call read_file with offset=100 for more]"
    )


def test_workspace_flag_confines_the_tools_to_that_folder(model, cli, tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "inside.txt").write_text("in")
    model.queue(calls(("list_dir", {}), ("read_file", {"path": "../outside.txt"})), answer("ok"))

    assert cli("look", "--workspace", "project").returncode == 0

    listing, refused = [m["content"] for m in model.messages(1)[-2:]]
    assert listing == "inside.txt  2 bytes"
    assert refused.startswith("error: PermissionError: ../outside.txt is outside the workspace ")
    assert str((tmp_path / "project").resolve()) in model.messages(0)[0]["content"]


def test_a_workspace_that_is_not_a_folder_is_a_usage_error(model, cli):
    result = cli("x", "--workspace", "nowhere")
    assert result.returncode == 2
    assert "is not a folder; check --workspace or AGENT_WORKSPACE" in result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX sleep")
def test_timeout_flag_sets_the_shell_timeout(model, cli):
    model.queue(calls(("run_shell", {"command": "sleep 10"})), answer("slow"))

    assert cli("sleep", "--timeout", "0.5", "--yes").returncode == 0

    assert (
        model.messages(1)[-1]["content"]
        == "timed out after 0.5 s; the command and its children were killed"
    )


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("AGENT_APPROVE", "yes", "error: AGENT_APPROVE must be 'all' or unset, not 'yes'"),
        ("AGENT_SANDBOX", "on", "error: AGENT_SANDBOX must be one of auto, off, not 'on'"),
        (
            "AGENT_REASONING_EFFORT",
            "max",
            "error: AGENT_REASONING_EFFORT must be one of low, medium, high, not 'max'",
        ),
        (
            "AGENT_BACKEND",
            "nope",
            "error: unknown backend 'nope'; known backends: groq, openai, ollama",
        ),
    ],
)
def test_a_bad_choice_is_refused_in_one_line_and_leaves_no_transcript(
    model, cli, monkeypatch, tmp_path, variable, value, message
):
    monkeypatch.setenv(variable, value)

    result = cli("x")

    assert (
        result.returncode == 2
        and result.stderr.startswith(message)
        and len(result.stderr.splitlines()) == 1
    )
    assert model.requests == [] and not runs_of(tmp_path).exists()


@pytest.mark.parametrize(
    "given, field, value",
    [
        ({"AGENT_BACKEND": "Groq"}, "backend", "groq"),
        ({"AGENT_SANDBOX": "OFF"}, "sandbox", "off"),
        ({"AGENT_REASONING_EFFORT": "Low"}, "reasoning_effort", "low"),
        ({"AGENT_STREAM": "Auto"}, "stream", None),
        ({"AGENT_APPROVE": "All"}, "approve_all", True),
    ],
)
def test_a_choice_written_in_another_case_is_that_choice(model, monkeypatch, given, field, value):
    # AGENT_BACKEND=Groq was "unknown backend 'Groq'", though Groq is how its name is written.
    for variable, raw in given.items():
        monkeypatch.setenv(variable, raw)

    assert getattr(settings.resolve(), field) == value


@pytest.mark.parametrize("flag", [["--sandbox", "Off"], ["--reasoning-effort", "LOW"]])
def test_a_choice_flag_written_in_another_case_is_that_choice(model, cli, flag):
    model.queue(answer("ok"))

    result = cli(*flag, "--no-transcript", "x")

    assert (result.returncode, result.stdout) == (0, "ok\n"), result.stderr


def test_agent_sandbox_in_dot_env_is_ignored_and_said_so(model, tmp_path):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("AGENT_SANDBOX=off\n")
    model.queue(answer("hi"))

    result = run_script("harness.py", "x", cwd=tmp_path, root=agent)

    assert result.returncode == 0, result.stderr
    assert "note: AGENT_SANDBOX in" in result.stderr and "is ignored" in result.stderr
    if not sandbox.landlock_missing():  # the sandbox stays on, so the model is told it holds
        assert "A kernel sandbox holds" in model.messages(0)[0]["content"]


def test_a_boolean_for_a_number_setting_is_a_config_error(model):
    with pytest.raises(ConfigError, match="max_steps|AGENT_MAX_STEPS"):
        harness.run("x", max_steps=True)
    assert model.requests == []


def test_a_workspace_that_is_a_file_is_a_usage_error(model, cli, tmp_path):
    (tmp_path / "a-file").write_text("x")

    result = cli("x", "--workspace", "a-file")

    assert result.returncode == 2 and "is not a folder" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and model.requests == []


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_a_workspace_that_is_a_loop_of_links_is_a_usage_error(model, cli, tmp_path):
    os.symlink("loop", tmp_path / "loop")

    result = cli("x", "--workspace", "loop")

    assert result.returncode == 2 and "is not a folder" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and model.requests == []


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_a_loop_of_links_at_home_the_virtual_env_or_the_agents_env_does_not_stop_a_run(
    model, tmp_path
):
    # Each was resolved with Path.resolve(), which raises RuntimeError on a loop (Python
    # 3.10-3.12): a traceback at the start, or `error: unexpected RuntimeError` once the run began
    agent = copy_of_the_agent(tmp_path / "agent")
    os.symlink(".env", agent / ".env")
    os.symlink("loop", tmp_path / "loop")
    (tmp_path / "ws").mkdir()
    model.queue(calls(("write_file", {"path": "a.txt", "content": "new\n"})), answer("done"))
    loop = str(tmp_path / "loop")

    result = run_script(
        "harness.py",
        "write",
        "--yes",
        "--no-transcript",
        cwd=tmp_path / "ws",
        root=agent,
        env={**os.environ, "HOME": loop, "VIRTUAL_ENV": loop, "PATH": f"{loop}:{os.defpath}"},
    )

    assert (result.returncode, result.stdout) == (0, "done\n"), result.stderr
    assert (tmp_path / "ws" / "a.txt").read_text() == "new\n"


def test_a_bad_number_given_to_run_names_the_argument_not_the_variable(model, monkeypatch):
    monkeypatch.setenv("AGENT_MAX_STEPS", "5")

    with pytest.raises(
        ConfigError,
        match=r"AGENT_MAX_STEPS must be a positive whole number, not 0; fix the "
        r"max_steps= argument$",
    ):
        harness.run("x", max_steps=0)
    assert model.requests == []


def test_an_infinite_number_given_to_run_is_a_config_error_too(model):
    # int(float("inf")) raises OverflowError, not ValueError: still the one-line setting error.
    with pytest.raises(
        ConfigError, match=r"must be a positive whole number, not inf; fix the max_steps= argument$"
    ):
        harness.run("x", max_steps=float("inf"))
    assert model.requests == []


@pytest.mark.parametrize(
    "allow", ["make,,pytest", "make pytest", "./build.sh", "tools/make", "bin\\make", "-rf", " "]
)
def test_an_allow_list_that_cannot_be_what_was_meant_is_refused_not_guessed_at(
    allow, model, cli, monkeypatch
):
    # A path, an option, a space inside a name or an empty one: the person
    # meant something else; say so.
    monkeypatch.setenv("AGENT_ALLOW", allow)

    result = cli("x")

    assert result.returncode == 2 and model.requests == []
    assert result.stderr.startswith(
        "error: AGENT_ALLOW (--allow) must be program names separated by commas"
    )
    assert len(result.stderr.splitlines()) == 1


def test_an_empty_key_in_the_environment_does_not_hide_the_one_in_dot_env(
    model, tmp_path, monkeypatch
):
    from plainagent.core import settings

    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / ".env").write_text("GROQ_API_KEY=gsk_from_dot_env_0123456789\n")
    monkeypatch.setattr(settings, "DOTENV", tmp_path / "agent" / ".env")
    monkeypatch.setenv("GROQ_API_KEY", "")  # an `export GROQ_API_KEY=` left over
    model.queue(answer("hi"))

    assert harness.run("x") == "hi"
    assert len(model.requests) == 1


def test_an_empty_key_exported_and_none_in_dot_env_says_it_is_empty(model, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "")

    with pytest.raises(
        ConfigError, match="^GROQ_API_KEY is empty: put your key after GROQ_API_KEY="
    ):
        harness.run("x")
    assert model.requests == []


def test_cli_reads_the_key_from_dot_env_in_the_agents_folder_not_the_working_folder(
    model, tmp_path, monkeypatch
):
    monkeypatch.delenv("GROQ_API_KEY")
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("GROQ_API_KEY=from-dot-env\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text(
        "GROQ_API_KEY=from-the-workspace\nGROQ_BASE_URL=http://127.0.0.1:9/v1\n"
    )
    model.queue(answer("hi"))

    result = run_script("harness.py", "x", cwd=work, root=agent)

    assert result.returncode == 0, result.stderr
    assert model.requests[0]["headers"]["authorization"] == "Bearer from-dot-env"


def test_a_variable_set_in_the_environment_wins_over_dot_env(model, tmp_path, monkeypatch):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("GROQ_API_KEY=from-dot-env\nGROQ_BASE_URL=http://127.0.0.1:9/v1\n")
    model.queue(answer("hi"))

    result = run_script("harness.py", "x", cwd=tmp_path, root=agent)

    assert result.returncode == 0, result.stderr
    assert model.requests[0]["headers"]["authorization"] == "Bearer test-key-not-real"


def test_dot_env_cannot_widen_permissions_and_says_it_is_ignored(model, tmp_path):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("AGENT_APPROVE=all\nAGENT_ALLOW=touch\nAGENT_WORKSPACE=/\n")
    model.queue(calls(("run_shell", {"command": "touch pwned"})), answer("done"))

    result = run_script("harness.py", "x", cwd=tmp_path, root=agent)

    assert result.returncode == 0, result.stderr
    assert (
        "AGENT_APPROVE, AGENT_ALLOW, AGENT_WORKSPACE in" in result.stderr
        and "are ignored" in result.stderr
    )
    assert not (tmp_path / "pwned").exists()
    assert model.messages(1)[-1]["content"].startswith("denied: nobody is at a terminal")
    assert f"working in the folder {tmp_path.resolve()}" in model.messages(0)[0]["content"]


def test_an_empty_key_in_dot_env_says_it_is_empty(model, tmp_path, monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY")
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("GROQ_API_KEY=\n")

    result = run_script("harness.py", "x", cwd=tmp_path, root=agent)

    assert result.returncode == 2
    assert result.stderr.startswith(
        "error: GROQ_API_KEY is empty: put your key after GROQ_API_KEY= in "
    )
    assert len(result.stderr.splitlines()) == 1 and model.requests == []


def test_a_dot_env_that_is_not_utf8_is_one_line_naming_it(model, tmp_path):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_bytes(b"GROQ_API_KEY=caf\xe9\n")

    result = run_script("harness.py", "x", cwd=tmp_path, root=agent)

    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {agent / '.env'} cannot be read as UTF-8 text")
    assert len(result.stderr.splitlines()) == 1 and model.requests == []


def test_a_dot_env_too_big_to_be_one_is_one_line_at_once(model, tmp_path):
    agent = copy_of_the_agent(tmp_path / "agent")
    (agent / ".env").write_text("X=1\n" * 3_000_000)  # 12 MB: python-dotenv took minutes over it

    result = run_script("harness.py", "x", cwd=tmp_path, root=agent, timeout=30)

    assert (result.returncode, result.stderr) == (
        2,
        f"error: {agent / '.env'} cannot be read: it is over 1 MB; fix it\n",
    )
    assert model.requests == []


@pytest.mark.parametrize("variable, value", [("AGENT_MAX_STEPS", "nan"), ("AGENT_APPROVE", "yes")])
def test_a_bad_setting_leaves_no_transcript(model, cli, tmp_path, monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)

    result = cli("hello")

    assert result.returncode == 2 and result.stderr.startswith(f"error: {variable} must be ")
    assert not runs_of(tmp_path).exists()


def test_a_dot_env_with_a_byte_order_mark_gives_its_first_variable_on_the_oldest_python_dotenv_too(
    model, oldest_packages, tmp_path, monkeypatch
):
    monkeypatch.delenv("GROQ_API_KEY")
    agent = copy_of_the_agent(tmp_path / "agent")
    # as some Windows editors save
    (agent / ".env").write_bytes("GROQ_API_KEY=from-dot-env\n".encode("utf-8-sig"))
    model.queue(answer("hi"))

    result = oldest_packages("harness.py", "x", "--no-transcript", cwd=tmp_path, root=agent)

    assert (result.returncode, result.stdout) == (0, "hi\n"), result.stderr
    assert model.requests[0]["headers"]["authorization"] == "Bearer from-dot-env"
