"""A tool's result as the model gets it (phase 5): valid UTF-8, and cut to AGENT_MAX_CHARS keeping its start and its
end, the paged tools' own notes given room."""

from plainagent.calls import results


def test_a_long_result_of_another_tool_keeps_start_and_end_with_a_marker(in_a_run):
    text = "a" * 9000 + "the end"

    assert results.cap(text, in_a_run) == \
        "a" * 1333 + "\n[... cut 5,007 characters of 9,007 ...]\n" + "a" * 2660 + "the end"


def test_results_with_lone_surrogates_become_valid_utf8(in_a_run):
    assert results.cap("caf\udce9", in_a_run) == "caf\\udce9"


def test_a_result_up_to_the_limit_and_the_notes_room_is_kept_whole_and_one_character_more_is_cut(in_a_run):
    limit = in_a_run.max_chars
    whole = "x" * (limit + results.NOTE_ROOM)
    assert results.cap(whole, in_a_run) == whole

    cut = results.cap(whole + "y", in_a_run)
    marker = f"\n[... cut {len(whole) + 1 - limit:,} characters of {len(whole) + 1:,} ...]\n"
    assert cut == "x" * (limit // 3) + marker + "x" * (limit - limit // 3 - 1) + "y"
