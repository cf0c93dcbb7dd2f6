"""The shell runs exactly the bytes the allowlist checked, in any locale: where a character's second
byte can be |
` or \\ (Big5, GBK, Shift_JIS), a command that holds one asks instead of running unasked."""

import os
import shutil
import subprocess
import sys

import pytest
from fake_model import answer, calls
from helpers import posix_only, run_script

import tools
from plainagent.shell import allowlist, words


@posix_only
@pytest.mark.parametrize(
    "encoding, char, byte",
    [
        ("big5", "ヤ", "|"),
        ("big5", "︶", "`"),
        ("big5", "許", "\\"),
        ("shift_jis", "ソ", "\\"),
        ("gbk", "丂", "@"),
    ],
)
def test_a_character_written_with_an_ascii_byte_in_the_locale_asks(encoding, char, byte):
    assert char.encode(encoding)[-1:] == byte.encode()

    reason = words.misread_bytes(f"ls {char} touch pwned", [encoding])

    assert reason == (
        f"in this locale's encoding ({encoding}) {char!r} is written with the byte {byte!r}, "
        "which the shell would read as that character"
    )


@posix_only
def test_characters_written_without_ascii_bytes_run_as_they_are(tmp_path, in_a_run):
    assert words.misread_bytes("ls ヤ touch é", ["utf-8"]) is None
    assert words.misread_bytes("ls é ü", ["latin-1"]) is None
    assert words.misread_bytes("ls ヤ", ["latin-1"]).startswith(
        "it has characters this locale's encoding"
    )
    # a lone byte
    assert words.misread_bytes("ls \udcc7|x", ["utf-8"]).startswith("it has characters")
    (tmp_path / "ヤ.txt").write_text("katakana\n")

    # this process's locale: UTF-8
    assert tools.run_shell("cat ヤ.txt", settings=in_a_run) == "exit code: 0\nstdout:\nkatakana\n"


@pytest.fixture
def big5_locale(tmp_path):
    """An environment whose locale is zh_TW.BIG5 (built here with localedef), no UTF-8 mode."""
    if not shutil.which("localedef"):
        pytest.skip("localedef is missing, so no Big5 locale can be built")
    locales = tmp_path / "locales"
    locales.mkdir()
    built = subprocess.run(
        ["localedef", "-i", "zh_TW", "-f", "BIG5", str(locales / "zh_TW.BIG5")],
        capture_output=True,
        text=True,
    )
    if not (locales / "zh_TW.BIG5").exists():
        pytest.skip(f"localedef could not build zh_TW.BIG5: {built.stderr.strip()}")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LC_", "PYTHONUTF8", "PYTHONIOENCODING"))
    }
    return env | {"LOCPATH": str(locales), "LANG": "zh_TW.BIG5"}


@posix_only
def test_in_a_big5_locale_a_trail_byte_never_becomes_a_pipe_or_a_backquote(
    model, tmp_path, big5_locale
):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = big5_locale
    subprocess.run(
        ["/bin/sh", "-c", "ls ヤ touch seen".encode("big5")], cwd=ws, env=env, capture_output=True
    )
    assert (ws / "seen").exists()  # the shell really reads ヤ's second byte as a pipe
    (ws / "seen").unlink()
    commands = ["ls ヤ touch pwned", "echo ︶touch pwned︶", "ls -la"]
    model.queue(
        calls(*[("run_shell", {"command": command}) for command in commands]), answer("done")
    )

    result = run_script("harness.py", "look", "--sandbox", "off", cwd=ws, env=env, errors="replace")

    assert result.returncode == 0, result.stderr
    denied, backquoted, listing = [message["content"] for message in model.messages(1)[-3:]]
    assert denied.startswith("denied: nobody is at a terminal") and backquoted.startswith("denied:")
    assert listing.startswith("exit code: 0") and " ..\n" in listing
    # nothing made, and no transcript in the workspace
    assert sorted(p.name for p in ws.iterdir()) == []


@posix_only
def test_with_python_in_utf8_mode_in_a_big5_locale_the_bytes_are_checked_as_the_shell_reads_them(
    big5_locale,
):
    # The bytes are made in UTF-8, the shell reads them in Big5: there the 3 bytes of U+0861
    # and the pipe after them are two characters, so a shell that reads the locale (bash) sees
    # no pipe where the check saw one.
    command = "echo \u0861| cat"
    check = (
        "import sys, locale; from plainagent.shell import words; "
        "print(sys.getfilesystemencoding(), locale.nl_langinfo(locale.CODESET), "
        "words.misread_bytes(sys.argv[1]))"
    )
    seen = subprocess.run(
        [sys.executable, "-c", check, command],
        env=big5_locale | {"PYTHONUTF8": "1"},
        capture_output=True,
        text=True,
        encoding="utf-8",
    )

    assert seen.stdout.split(" ", 2) == [
        "utf-8",
        "BIG5",
        "in this locale's encoding (BIG5) '﹄' is written with "
        "the byte '|', which the shell would read as that character\n",
    ], seen.stderr
    if shutil.which("bash"):
        read = subprocess.run(
            ["bash", "-c", command.encode()], env=big5_locale, capture_output=True
        )
        assert read.stdout.endswith(b" cat\n")  # the pipe was read as part of a character


@posix_only
def test_an_approved_command_the_locale_cannot_write_is_one_clear_error(in_a_run):
    assert allowlist.reason_to_ask("echo \ud800", in_a_run) is not None

    with pytest.raises(
        ValueError,
        match=r"^the command has '\\ud800', which this locale's encoding \(utf-8\) "
        "cannot write; use only characters it has$",
    ):
        tools.run_shell("echo \ud800", settings=in_a_run)
