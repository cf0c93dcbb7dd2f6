"""A tool's result as the model gets it (phase 5): valid UTF-8, and no longer than the run allows,
keeping its start and its end."""

from plainagent.core.settings import Settings

NOTE_ROOM = 200  # characters a result may add to that limit for its own note on what was cut


def cap(text: str, config: Settings) -> str:
    """Fit a result for the model and the transcript: valid UTF-8 (a lone surrogate becomes an
    escape), and at most AGENT_MAX_CHARS, keeping its start and its end (where errors usually are)
    with a marker between. The paged tools cut their own results and may add a note of up to
    NOTE_ROOM characters."""
    limit = config.max_chars
    if len(text) > limit + NOTE_ROOM:
        head = limit // 3
        text = (
            f"{text[:head]}\n[... cut {len(text) - limit:,} characters of {len(text):,} "
            f"...]\n{text[head - limit :]}"
        )
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
