"""Where a setting comes from, named: a bad value and a rejected key name the .env they were read
from (or the environment), and a name no setting has but one is close to (AGENT_MAX_STEP) is named
at the start, with the setting it was likely meant to be, in one note line."""

from fake_model import answer, error

from plainagent.core import settings


def test_a_misspelled_setting_in_the_environment_is_named_with_the_one_it_is_close_to(
    model, cli, monkeypatch
):
    monkeypatch.setenv("AGENT_MAX_STEP", "1")
    monkeypatch.setenv("AGENT_NAME", "a CI machine's own")  # close to nothing of ours
    model.queue(answer("ok"))

    result = cli("x")

    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        "note: AGENT_MAX_STEP (in the environment) is no setting; did you mean AGENT_MAX_STEPS?"
    ]


def test_misspelled_settings_in_the_agents_dot_env_are_one_note_that_names_the_file(
    model, cli, tmp_path
):
    settings.DOTENV.write_text("AGENT_MODLE=llama\nGROK_API_KEY=gsk_x\nPROJECT_NAME=mine\n")
    model.queue(answer("ok"))

    result = cli("x")

    notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert notes == [
        f"note: AGENT_MODLE (in {settings.DOTENV}) is no setting; did you mean AGENT_MODEL?; "
        f"GROK_API_KEY (in {settings.DOTENV}) is no setting; did you mean GROQ_API_KEY?"
    ]
    assert model.requests[0]["body"]["model"] == "openai/gpt-oss-120b"


def test_a_bad_value_names_the_dot_env_it_was_read_from(model, cli):
    settings.DOTENV.write_text("AGENT_MAX_STEPS=lots\n")

    result = cli("x")

    assert result.returncode == 2
    assert result.stderr == (
        f"error: AGENT_MAX_STEPS must be a positive whole number, not 'lots'; fix AGENT_MAX_STEPS "
        f"in {settings.DOTENV}\n"
    )


def test_a_bad_value_in_the_environment_says_so(model, cli, monkeypatch):
    monkeypatch.setenv("AGENT_TIMEOUT", "soon")

    result = cli("x")

    assert result.stderr.endswith("; fix AGENT_TIMEOUT in the environment\n")


def test_a_rejected_key_names_where_it_was_read_from(model, cli, monkeypatch):
    monkeypatch.delenv("GROQ_API_KEY")
    settings.DOTENV.write_text("GROQ_API_KEY=gsk_revoked\n")
    model.queue(error(401, "Invalid API Key", code="invalid_api_key"))

    result = cli("x")

    assert result.returncode == 2
    assert result.stderr == (
        f"error: the server rejected the API key (401): check GROQ_API_KEY in {settings.DOTENV}\n"
    )
