"""Errors only a person can fix, worded at the edge (beyond the tutorial): one line that says
what is wrong and what to do, for the command line, probe.py and backend.py; and what a rate
limit (429) says about waiting."""

import importlib.util
import ipaddress
import math
import re
import sys
import time
import typing

from plainagent.core.ownfiles import AGENT_FOLDER, VENV_BIN, installed
from plainagent.core.redaction import redactor
from plainagent.core.screen import shown
from plainagent.core.settings import BACKENDS, BY_NAME, ConfigError, Settings, read_from, resolve
from plainagent.model.output import OutputError

if typing.TYPE_CHECKING:  # loaded where a request is made (backend.py), not to word a setting
    import openai

RATE_LIMIT_MAX_WAIT = 60.0  # seconds; a 429 asking for longer, or a daily limit, stops the run
RATE_LIMIT_DEFAULT_WAIT = 5.0  # seconds, when a 429 says neither retry-after nor "try again in"
LONGEST_RESET = 7 * 24 * 3600.0  # a limit that claims to last longer is taken as lasting a week


# The packages the agent needs, by the name it imports: the name pip installs
PACKAGES = {"openai": "openai", "dotenv": "python-dotenv"}


def script_arguments(argv: list[str], usage: str, words: int) -> int | None:
    """For backend.py and probe.py, which take no options and at most `words` words: --help (-h)
    prints `usage` (exit 0); an option or a word too many is one line (exit 2), where it was passed
    over, or sent as the question, and the default model asked. None: go on."""
    if argv[:1] in (["-h"], ["--help"]):
        print(usage)
        return 0
    extra = [word for word in argv if word.startswith("-")] or argv[words:]
    if not extra:
        return None
    said = f"{extra[0]} is not taken here"
    if words and not extra[0].startswith("-"):
        said = f'the question is one argument: put it in quotes, "{" ".join(argv)}"'
    print(f"error: {said}; {usage}", file=sys.stderr)
    return 2


def without_packages() -> str | None:
    """For a command line (harness.py, the plainagent command, backend.py, probe.py) started by a
    Python that lacks the agent's packages (its venv not active in a new terminal, or never
    installed into): the one line that says which Python to run it with, or what to install, in
    place of a ModuleNotFoundError's traceback. None when both are there."""
    missing = [pip for name, pip in PACKAGES.items() if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    python = sys.executable
    said = f"error: this Python, {python}, has no {' or '.join(missing)}, which the agent needs"
    venv = AGENT_FOLDER / ".venv"
    venv_python = venv / VENV_BIN / ("python.exe" if sys.platform == "win32" else "python")
    if installed():
        return f"{said}: install it again, {python} -m pip install {' '.join(missing)}"
    requirements = AGENT_FOLDER / "requirements.txt"
    if not venv_python.exists():
        return (
            f"{said}: make the agent's venv and install the packages, as the README's quick start "
            f"does: {python} -m venv {venv}, then {venv_python} -m pip install -r {requirements}"
        )
    if venv.samefile(sys.prefix):
        return f"{said}: install the packages into it, {python} -m pip install -r {requirements}"
    activate = (
        venv / VENV_BIN / "Activate.ps1"
        if sys.platform == "win32"
        else f". {venv / VENV_BIN / 'activate'}"
    )
    return (
        f"{said}: run it with the agent's own venv, {venv_python} {sys.argv[0]}, or activate that "
        f"venv first ({activate})"
    )


class BadReply(Exception):
    """A 200 reply that holds no chat completion (an HTML page, no choices): its message says what
    to check. Not the SDK's own error class, so that this module loads without the SDK; each place
    that catches the SDK's errors (openai.OpenAIError) catches this too."""


def report(error: BaseException, settings: Settings | None = None) -> int:
    """Print the one-line error for a person, no traceback; return the exit code (2: a setting to
    fix)."""
    settings = settings or defaults()  # once, for the wording and the redaction
    line = f"error: {explain(error, settings) or f'{type(error).__name__}: {error}'}"
    # A server's words too
    print(shown(line, redact=redactor(settings.secrets if settings else ())), file=sys.stderr)
    if isinstance(error, (ConfigError, BadReply, OutputError)):
        return 2 if isinstance(error, ConfigError) else 1
    import openai  # here, not at the top: wording a setting's error needs no SDK

    return 2 if isinstance(error, openai.AuthenticationError) else 1


def explain(error: BaseException, settings: Settings | None) -> str | None:
    """One line a person can act on for errors only they can fix; None for anything else."""
    if isinstance(error, (ConfigError, BadReply, OutputError)):
        return str(error)
    import openai  # here, not at the top: wording a setting's error needs no SDK

    preset = BACKENDS[settings.backend if settings else BY_NAME["backend"].default]
    key, url = preset["key"] or "the key", preset["url_variable"]
    if isinstance(error, openai.AuthenticationError):
        return f"the server rejected the API key (401): check {key} in {read_from(key)}"
    if isinstance(error, openai.NotFoundError):
        model = settings.model if settings else preset["model"]
        return (
            f"the model or URL was not found (404): {server_message(error).rstrip('.')}; check "
            f"the model, {model} (--model or AGENT_MODEL), and {url}"
        )
    if isinstance(error, openai.APITimeoutError):
        timeout = settings.timeout if settings else BY_NAME["timeout"].default
        return f"the model did not answer within {timeout:g} s: try again, or raise AGENT_TIMEOUT"
    if isinstance(error, openai.APIConnectionError):
        server = error.request.url.copy_with(path="/")
        # A server on this machine (Ollama's, say) is not running: the network is not the cause
        check = "is it running? check" if loopback(server.host) else "check your network and"
        return f"could not reach the model server at {server}: {check} {url}"
    if isinstance(error, openai.BadRequestError) and error.code == "tool_use_failed":
        return (
            "the model kept writing malformed tool calls (Groq's tool_use_failed): "
            "try again, rephrase the task, or choose another model with --model or AGENT_MODEL"
        )
    if isinstance(error, openai.RateLimitError):
        info = rate_limit(error)
        when = (
            f"; it resets in about {about(info['resets_in'])} (around "
            f"{time.strftime('%H:%M', time.localtime(time.time() + info['resets_in']))})"
            if info["resets_in"]
            else ""
        )
        if info["daily"]:
            return (
                f"rate limited: the plan's {info['limit']} are used up{when}; try again then, "
                "or use a paid tier"
            )
        return (
            f"rate limited ({info['limit']}) and waiting would take too long{when}; "
            "try again later, or use a paid tier"
        )
    if isinstance(error, openai.APIStatusError) and error.status_code == 413:
        sizes = re.search(r"Limit (\d+), Requested (\d+)", server_message(error))
        size = f" ({sizes[2]} tokens, the limit is {sizes[1]})" if sizes else ""
        return (
            f"the request was too large for the plan's tokens per minute{size} (413): "
            "lower AGENT_CONTEXT_BUDGET, use fewer --max-steps, or use a paid tier"
        )
    if isinstance(error, openai.APIStatusError):
        return f"the model server answered {error.status_code}: {server_message(error)}"
    return None


def loopback(host: str) -> bool:
    """Whether host names this machine (localhost, 127.0.0.1, ::1)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost" or host.endswith(".localhost")


def defaults() -> Settings | None:
    """The environment's settings, for wording an error; None if the environment is what is
    wrong."""
    try:
        return resolve(require_key=False)
    except ConfigError:
        return None


def server_message(error: "openai.APIStatusError") -> str:
    """The server's own error text, shortened to one readable line even when the body is an HTML
    page."""
    body = error.body
    text = body.get("message") if isinstance(body, dict) else None
    text = text if isinstance(text, str) and text else error.response.text or error.message
    if "<html" in text.lower():
        text = error.response.reason_phrase or "an HTML error page"
    return " ".join(str(text).split())[:300]


def rate_limit(error: "openai.RateLimitError") -> dict:
    """What a 429 says: which limit (e.g. 'tokens per minute'), whether it is daily, when it resets,
    and the seconds to wait before asking again (None when it will not lift soon: daily, or a long
    wait)."""
    message = server_message(error)
    limit = re.search(r"on (\w+ per \w+)", message)
    headers = error.response.headers
    asked = re.search(r"try again in ([\dhms.]+)", message)
    wait = seconds(headers.get("retry-after", ""))
    wait = seconds(asked[1]) if wait is None and asked else wait
    resets = [
        seconds(headers.get(f"x-ratelimit-reset-{kind}") or "") for kind in ("requests", "tokens")
    ]
    daily, patience = "per day" in message, RATE_LIMIT_DEFAULT_WAIT if wait is None else wait
    return {
        "limit": limit[1] if limit else "requests or tokens",
        "daily": daily,
        "wait": None if daily or patience > RATE_LIMIT_MAX_WAIT else patience,
        "resets_in": wait if wait is not None else max(filter(None, resets), default=None),
    }


def seconds(duration: str) -> float | None:
    """Parse '4', '4.77s', '7m12.5s', '2h3m', '250ms' (Groq's headers and messages) into seconds; a
    number too large to be true (1e400, inf) is a week; anything else unreadable is None."""
    total: float | None
    try:
        total = float(duration)
    except ValueError:
        parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
        scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
        total = sum(float(amount) * scale[unit] for amount, unit in parts) if parts else None
    return None if total is None or math.isnan(total) or total < 0 else min(total, LONGEST_RESET)


def about(duration: float) -> str:
    return f"{duration / 3600:.1f} h" if duration > 5400 else f"{max(1, round(duration / 60))} min"
