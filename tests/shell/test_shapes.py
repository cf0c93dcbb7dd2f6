"""What 'always' remembers of a command (shapes.py): its program and words, a run of the workspace's
paths as one stand-in, options as themselves."""

import os
from pathlib import Path

import pytest
from helpers import posix_only

from plainagent.shell import shapes
from plainagent.shell.shapes import WORKSPACE_PATHS, Part, command_shapes


def part_shapes(command: str, settings) -> set[Part]:
    """The shapes of a command's parts, whichever pipeline each is in: what each part's words
    become."""
    return {part for shape in command_shapes(command, settings) for part in shape}


def test_a_run_of_workspace_paths_becomes_one_stand_in_and_each_run_keeps_its_place(
    tmp_path, in_a_run
):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()

    assert part_shapes("rm -f a.txt b.txt sub", in_a_run) == {("rm", "-f", WORKSPACE_PATHS)}
    assert part_shapes("cp a.txt -t sub", in_a_run) == {
        ("cp", WORKSPACE_PATHS, "-t", WORKSPACE_PATHS)
    }
    assert part_shapes("rm -f", in_a_run) == {("rm", "-f")}


def test_a_redirection_to_dev_null_is_no_part_of_a_commands_shape(tmp_path, in_a_run):
    # It changes nothing: 'always' for `make 2>/dev/null` covers `make`, and the other way round.
    assert (
        part_shapes("make test 2>/dev/null", in_a_run)
        == part_shapes("make test", in_a_run)
        == {("make", "test")}
    )
    assert part_shapes("make >/dev/null 2>&1", in_a_run) == {("make",)}


def test_an_option_stays_itself_even_where_a_file_has_its_name(tmp_path, in_a_run):
    (tmp_path / "-rf").write_text("")
    (tmp_path / "a.txt").write_text("")

    assert part_shapes("rm -rf a.txt", in_a_run) == {("rm", "-rf", WORKSPACE_PATHS)}


@posix_only
def test_a_word_through_a_link_that_loops_is_kept_as_given_and_breaks_no_question(
    tmp_path, in_a_run
):
    # The prompt works out a command's shapes before it asks; a link the model made
    # to loop must not end the run
    (tmp_path / "loop").symlink_to("loop")

    assert part_shapes("rm -f loop/x", in_a_run) == {("rm", "-f", "loop/x")}


@posix_only
def test_a_relative_path_entry_finds_programs_in_the_workspace_not_where_the_agent_started(
    tmp_path, monkeypatch, as_a_run
):
    # An approved command runs in the workspace with the person's PATH:
    # node_modules/.bin is the workspace's, so `build` names that program there, even
    # where a folder of the workspace has its name too
    workspace = tmp_path / "ws"
    (workspace / "build").mkdir(parents=True)
    (workspace / "node_modules" / ".bin").mkdir(parents=True)
    (workspace / "node_modules" / ".bin" / "build").write_text("#!/bin/sh\n")
    (workspace / "node_modules" / ".bin" / "build").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join(["node_modules/.bin", os.environ["PATH"]]))
    monkeypatch.chdir(tmp_path)
    config = as_a_run(workspace=str(workspace))

    assert part_shapes("timeout 60 build", config) == {("timeout", "60", "build")}


def test_the_dot_env_and_the_runs_folder_stay_themselves_so_always_for_a_file_never_covers_them(
    tmp_path, monkeypatch, as_a_run
):
    # 'always' for `cat a.txt` must not cover `cat .env`, nor a command on the transcripts
    # where the state folder is inside the workspace: those words are not workspace paths a
    # stand-in may take the place of
    for name in ("a.txt", ".env", ".Env"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    config = as_a_run()
    (config.protected[0] / "runs").mkdir(parents=True)

    assert part_shapes("cat a.txt", config) == {("cat", WORKSPACE_PATHS)}
    assert part_shapes("cat .env", config) == {("cat", ".env")}
    assert part_shapes("cat a.txt .Env", config) == {("cat", WORKSPACE_PATHS, ".Env")}
    state = str(config.protected[0].relative_to(tmp_path) / "runs")
    assert part_shapes(f"rm -r {state}", config) == {("rm", "-r", state)}


# 'Always' lets a word stand for other paths only where its program is known to read
# it as a path (PATH_OPERANDS, in shapes.py)


def test_make_reads_its_words_as_targets_so_a_folder_of_that_name_stands_for_no_other(
    tmp_path, in_a_run
):
    # With docs/ and deploy/ folders, 'always' for `make docs` once covered `make deploy`
    for name in ("docs", "deploy"):
        (tmp_path / name).mkdir()

    assert part_shapes("make docs", in_a_run) == {("make", "docs")}
    assert part_shapes("make deploy", in_a_run) == {("make", "deploy")}
    assert part_shapes("make -C docs", in_a_run) == {("make", "-C", "docs")}


def test_the_workspace_itself_never_stands_in_by_any_name(tmp_path, in_a_run):
    # 'always' for `rm -rf build` once covered `rm -rf /the/workspace`: it passed
    # as a folder of the workspace
    (tmp_path / "build").mkdir()

    assert part_shapes("rm -rf build", in_a_run) == {("rm", "-rf", WORKSPACE_PATHS)}
    for word in (str(tmp_path), f"{tmp_path}/", ".", "./", "build/..", "..", "/"):
        assert part_shapes(f"rm -rf {word}", in_a_run) == {("rm", "-rf", word)}, word
    assert part_shapes(f"rm -rf build {tmp_path}", in_a_run) == {
        ("rm", "-rf", WORKSPACE_PATHS, str(tmp_path))
    }


def test_git_add_stands_in_for_paths_but_never_dot_nor_a_pathspec_with_magic(tmp_path, in_a_run):
    # git reads :/ as the whole tree, whatever a folder named : holds
    for name in ("a.txt", "b.txt", ":/c.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)

    assert part_shapes("git add a.txt", in_a_run) == {("git", "add", WORKSPACE_PATHS)}
    assert part_shapes("git add -- b.txt a.txt", in_a_run) == {
        ("git", "add", "--", WORKSPACE_PATHS)
    }
    assert part_shapes("git add .", in_a_run) == {("git", "add", ".")}
    assert part_shapes("git add -A", in_a_run) == {("git", "add", "-A")}
    assert part_shapes("git add :/", in_a_run) == {("git", "add", ":/")}
    assert part_shapes("git add :/c.txt", in_a_run) == {("git", "add", ":/c.txt")}


def test_git_clone_reads_a_repository_not_a_path_so_a_url_named_like_a_folder_is_itself(
    tmp_path, in_a_run
):
    # A folder of that odd name existed, so `git clone http://...` passed for a local clone
    for name in ("tmpl", "dest", "http:/127.0.0.1:9/x"):
        (tmp_path / name).mkdir(parents=True)

    assert part_shapes("git clone tmpl dest", in_a_run) == {("git", "clone", "tmpl", "dest")}
    assert part_shapes("git clone http://127.0.0.1:9/x dest", in_a_run) == {
        ("git", "clone", "http://127.0.0.1:9/x", "dest")
    }


def test_an_interpreters_script_and_its_arguments_are_remembered_as_shown(tmp_path, in_a_run):
    # The script is the program that runs, and what it reads its words as nobody knows
    for name in ("a.py", "b.py", "data.csv"):
        (tmp_path / name).write_text("")

    assert part_shapes("python3 a.py data.csv", in_a_run) == {("python3", "a.py", "data.csv")}
    assert part_shapes("sh a.py", in_a_run) == {("sh", "a.py")}


def test_only_the_values_an_option_table_calls_paths_stand_in(tmp_path, in_a_run):
    for name in ("a.txt", "b.txt", "bak"):
        (tmp_path / name).write_text("")

    # cp -S takes a suffix, touch -d a date; touch -r a file to copy times from
    assert part_shapes("cp -S bak a.txt b.txt", in_a_run) == {("cp", "-S", "bak", WORKSPACE_PATHS)}
    assert part_shapes("touch -d a.txt b.txt", in_a_run) == {
        ("touch", "-d", "a.txt", WORKSPACE_PATHS)
    }
    assert part_shapes("touch -r a.txt b.txt", in_a_run) == {("touch", "-r", WORKSPACE_PATHS)}
    assert part_shapes("head -n 5 a.txt", in_a_run) == {("head", "-n", "5", WORKSPACE_PATHS)}
    # An option the table does not hold could take the next word as its value:
    # nothing of that part stands in
    assert part_shapes("cp --sparse-ish a.txt b.txt", in_a_run) == {
        ("cp", "--sparse-ish", "a.txt", "b.txt")
    }
    assert part_shapes("rm -f --forc a.txt", in_a_run) == {("rm", "-f", "--forc", "a.txt")}
    # tail reads +5 as where to start
    (tmp_path / "+5").write_text("")
    assert part_shapes("tail +5 a.txt", in_a_run) == {("tail", "+5", WORKSPACE_PATHS)}


@posix_only
def test_a_word_that_leads_to_or_holds_a_dot_env_or_has_other_names_is_itself(tmp_path, in_a_run):
    # rm -rf, cp -rL and git add take all of a folder: one holding a .env, or a
    # link to one, is kept as shown
    for name in ("a.txt", "secrets/.env", "plain/x.txt", "linked/y.txt", "conf/prod.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / "linked" / "to-env").symlink_to(tmp_path / "secrets" / ".env")
    (tmp_path / "env-link").symlink_to("secrets/.env")
    # a link named .env: its target holds the secret
    (tmp_path / "conf" / ".env").symlink_to("prod.txt")
    os.link(tmp_path / "secrets" / ".env", tmp_path / "hard")

    assert part_shapes("rm -rf a.txt plain", in_a_run) == {("rm", "-rf", WORKSPACE_PATHS)}
    for word in ("secrets", "linked", "env-link", "conf", "conf/.env", "hard", "secrets/.env/"):
        assert part_shapes(f"rm -rf {word}", in_a_run) == {("rm", "-rf", word)}, word


@posix_only
def test_a_folder_holding_a_link_out_of_the_workspace_is_itself(tmp_path, in_a_run):
    # cp -rL copies what its links lead to: 'always' for `cp -rL src out` must not let
    # `cp -rL ext out` bring a file from outside (a key in /etc/ssl/private) into the
    # workspace, where read_file shows it
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "key.pem").write_text("secret")
    for name in ("src/a.txt", "ext/b.txt", "inner/c.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / "ext" / "key").symlink_to(outside / "key.pem")
    (tmp_path / "ext" / "folder").symlink_to(outside)
    (tmp_path / "inner" / "to-src").symlink_to(tmp_path / "src")

    assert part_shapes("cp -rL src inner out", in_a_run) == {("cp", "-rL", WORKSPACE_PATHS, "out")}
    (tmp_path / "ext" / "folder").unlink()
    assert part_shapes("cp -rL ext out", in_a_run) == {("cp", "-rL", "ext", "out")}
    (tmp_path / "ext" / "key").unlink()
    (tmp_path / "ext" / "folder").symlink_to(outside)
    assert part_shapes("cp -rL ext out", in_a_run) == {("cp", "-rL", "ext", "out")}


def test_a_word_that_holds_or_is_in_the_state_folder_is_itself(tmp_path, monkeypatch, as_a_run):
    # With the home folder as the workspace, .local holds every workspace's transcripts
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".local" / "state"))
    monkeypatch.chdir(tmp_path)
    config = as_a_run()
    (config.protected[0] / "runs").mkdir(parents=True)
    (tmp_path / "build").mkdir()

    assert part_shapes("rm -rf build", config) == {("rm", "-rf", WORKSPACE_PATHS)}
    for word in (
        ".local",
        ".local/state",
        ".local/state/plainagent",
        ".local/state/plainagent/runs",
    ):
        assert part_shapes(f"rm -rf {word}", config) == {("rm", "-rf", word)}, word


def test_the_agents_own_folder_and_files_are_themselves_where_the_workspace_holds_them(
    tmp_path, monkeypatch, as_a_run
):
    from plainagent.core.settings import AGENT_FOLDER

    monkeypatch.chdir(AGENT_FOLDER.parent)
    config = as_a_run()
    here = AGENT_FOLDER.name

    assert part_shapes(f"cat {here}/docs/safety.md", config) == {("cat", WORKSPACE_PATHS)}
    for word in (
        here,
        f"{here}/harness.py",
        f"{here}/plainagent",
        f"{here}/plainagent/shell/shapes.py",
    ):
        assert part_shapes(f"cat {word}", config) == {("cat", word)}, word


@posix_only
def test_a_program_of_the_workspace_reads_its_words_as_it_likes_so_none_stand_in(
    tmp_path, monkeypatch, as_a_run
):
    # An approved command finds the project's venv first: a planted
    # .venv/bin/rm is no rm the table knows
    (tmp_path / "a.txt").write_text("")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    config = as_a_run()
    assert part_shapes("rm a.txt", config) == {("rm", WORKSPACE_PATHS)}

    (tmp_path / ".venv" / "bin" / "rm").write_text("#!/bin/sh\n")
    (tmp_path / ".venv" / "bin" / "rm").chmod(0o755)

    assert part_shapes("rm a.txt", config) == {("rm", "a.txt")}


def test_a_folder_too_big_to_look_through_is_itself(tmp_path, in_a_run):
    from plainagent.shell.shapes import WALK_LIMIT

    (tmp_path / "small").mkdir()
    (tmp_path / "big").mkdir()
    for number in range(WALK_LIMIT + 1):
        (tmp_path / "big" / str(number)).touch()

    assert part_shapes("rm -r small", in_a_run) == {("rm", "-r", WORKSPACE_PATHS)}
    assert part_shapes("rm -r big", in_a_run) == {("rm", "-r", "big")}


@posix_only
def test_a_repositorys_git_folder_and_the_launcher_are_themselves(tmp_path, monkeypatch, as_a_run):
    # rm -rf .git takes history away, and a plainagent on PATH runs outside the
    # sandbox next time: never covered
    for name in ("a.txt", ".git/config", "sub/.git/HEAD", "plain/x.txt", "bin/plainagent"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    config = as_a_run()

    assert part_shapes("rm -rf a.txt plain", config) == {("rm", "-rf", WORKSPACE_PATHS)}
    for word in (".git", ".git/config", "sub", "sub/.git", "bin", "bin/plainagent"):
        assert part_shapes(f"rm -rf {word}", config) == {("rm", "-rf", word)}, word
    # in another case too: on macOS and Windows it is the same folder
    for name in (".GIT/HEAD", "other/.Git/HEAD"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    for word in (".GIT", ".GIT/HEAD", "other"):
        assert part_shapes(f"rm -rf {word}", config) == {("rm", "-rf", word)}, word


@posix_only
def test_the_file_tools_refuse_and_always_keeps_each_of_the_agents_own_places_alike(
    tmp_path, monkeypatch, as_a_run
):
    # One list (ownfiles.own_places) for both: each place, here all in the workspace /, is
    # refused by writable() with what it is, and kept as shown by 'always'
    from plainagent.core import settings as agent_settings
    from plainagent.core.ownfiles import in_own_place, own_places
    from plainagent.shell.shapes import guarded_places, kept
    from plainagent.workspace.files import REFUSALS, writable

    (tmp_path / "bin").mkdir()
    (tmp_path / "tool" / "bin").mkdir(parents=True)  # the venv the launcher runs on
    (tmp_path / "tool" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (tmp_path / "bin" / "plainagent").write_text(f"#!{tmp_path / 'tool' / 'bin' / 'python'}\n")
    agent_settings.DOTENV.write_text("GROQ_API_KEY=gsk_x\n")
    agent_settings.DOTENV.with_name("mcp.json").write_text("{}")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    config = as_a_run(workspace="/")
    config.protected[0].mkdir(parents=True, exist_ok=True)
    own = own_places(config.protected, agent_settings.DOTENV)
    guarded = guarded_places(config)

    assert {kind for _, kind in own} == set(REFUSALS)
    for place, kind in own:
        with pytest.raises(PermissionError) as refused:
            writable(str(place), config)
        # a place within another (a venv of the agent's folder the agent runs on) may be refused as
        # either
        holding = [k for p, k in own if in_own_place(Path(os.path.realpath(place)), p, k)]
        assert kind in holding
        assert str(refused.value) in [REFUSALS[k].format(path=place) for k in holding], place
        assert kept(Path(os.path.realpath(place)), guarded), place


def test_a_word_after_cd_is_looked_at_where_it_runs_not_at_the_top(tmp_path, in_a_run):
    # 'always' for `cd sub && rm -rf out` must not cover `cd sub && rm -rf build` where sub/build
    # holds a .env: the top's harmless build/ is not the folder rm is given.
    for folder in ("out", "build", "sub/out", "sub/build"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "sub/build/.env").write_text("KEY=1\n")

    assert part_shapes("cd sub && rm -rf build", in_a_run) == {
        ("cd", "sub"),
        ("rm", "-rf", "build"),
    }
    assert part_shapes("cd sub && rm -rf out", in_a_run) == {
        ("cd", "sub"),
        ("rm", "-rf", WORKSPACE_PATHS),
    }
    assert part_shapes("rm -rf build", in_a_run) == {("rm", "-rf", WORKSPACE_PATHS)}


def test_after_a_cd_the_agent_does_not_follow_no_word_stands_in(tmp_path, in_a_run):
    # cd .. leaves the workspace: what rm is then given is not a file of the workspace's top
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "sub").mkdir()

    assert part_shapes("cd sub || true; rm -f a.txt", in_a_run) == {
        ("cd", "sub"),
        ("true",),
        ("rm", "-f", "a.txt"),
    }


def test_a_pipeline_is_remembered_whole_and_what_feeds_a_pipe_keeps_its_words(tmp_path, in_a_run):
    # What cat prints is the script sh runs, the names xargs gives rm: 'always' for
    # `cat build.sh | sh` never covers `cat evil.sh | sh`, nor `cat list.txt | xargs rm` the same
    # of another list, nor are the parts of two pipelines joined into a third.
    for name in ("build.sh", "evil.sh", "list.txt", "other.txt"):
        (tmp_path / name).write_text("x\n")

    assert command_shapes("cat build.sh | sh", in_a_run).keys() == {(("cat", "build.sh"), ("sh",))}
    assert command_shapes("cat list.txt | xargs rm", in_a_run).keys() == {
        (("cat", "list.txt"), ("xargs", "rm"))
    }
    assert command_shapes("cat build.sh | xargs rm", in_a_run).keys() == {
        (("cat", "build.sh"), ("xargs", "rm"))
    }
    # the last part's paths still stand in, and a pipeline is one shape among the others
    assert command_shapes("make; grep -c x list.txt | wc -l other.txt", in_a_run).keys() == {
        (("make",),),
        (("grep", "-c", "x", "list.txt"), ("wc", "-l", WORKSPACE_PATHS)),
    }


@posix_only
def test_a_file_a_word_kept_as_shown_names_is_pinned_as_it_was(tmp_path, in_a_run):
    # An interpreter's script, a program of the workspace, an option's value: 'always' covers
    # each as it was shown; a stand-in (rm's operand) pins nothing, it stands for any file
    (tmp_path / "build.sh").write_text("echo a\n")
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho a\n")
    (tmp_path / "run.sh").chmod(0o755)
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.mk").write_text("all:\n")
    commands = ["sh build.sh", "./run.sh", "cd sub && make --file=b.mk", "rm a.txt"]
    shown = {command: command_shapes(command, in_a_run) for command in commands}
    assert {command: command_shapes(command, in_a_run) for command in commands} == shown

    for name in ("build.sh", "run.sh", "sub/b.mk", "a.txt"):
        (tmp_path / name).write_text("changed, and longer\n")
    now = {command: command_shapes(command, in_a_run) for command in commands}

    for command in commands[:3]:
        assert now[command].keys() == shown[command].keys(), command
        assert now[command] != shown[command], command
    assert now["rm a.txt"] == shown["rm a.txt"] == {(("rm", WORKSPACE_PATHS),): frozenset()}


@posix_only
def test_a_pattern_is_pinned_to_the_names_it_matched(tmp_path, in_a_run):
    # 'always' for `rm -rf build*` covers the build1 it matched, not a build2 made since
    (tmp_path / "build1").mkdir()
    shown = command_shapes("rm -rf build*", in_a_run)
    assert command_shapes("rm -rf build*", in_a_run) == shown

    (tmp_path / "build2").mkdir()
    now = command_shapes("rm -rf build*", in_a_run)

    assert now.keys() == shown.keys() and now != shown


# (command, the files made first, the file a later command changes) where the program reads that
# file though no word is its name alone
NAMED_OTHERWISE = [
    ("make -fb.mk", {"b.mk": "all:\n"}, "b.mk"),  # a short option's value glued to it
    ("awk -fprog.awk a.txt", {"prog.awk": "1\n", "a.txt": ""}, "prog.awk"),
    ("make FILE=b.mk", {"b.mk": "all:\n"}, "b.mk"),  # a value after an = of a word, not an option
    ("bash -c 'sh build.sh'", {"build.sh": "echo a\n"}, "build.sh"),  # a path in a word
    ("python3 -c 'import tasks'", {"tasks.py": "print(1)\n"}, "tasks.py"),
    ("python3 -m tasks", {"tasks.py": "print(1)\n"}, "tasks.py"),  # a module: a name and .py
    ("python3 -m pkg.tasks", {"pkg/tasks.py": "print(1)\n"}, "pkg/tasks.py"),
    ("node build", {"build.js": "1\n"}, "build.js"),
    ("python3 pkg", {"pkg/__main__.py": "print(1)\n"}, "pkg/__main__.py"),  # a folder's files
    ("make -C sub", {"sub/Makefile": "all:\n"}, "sub/Makefile"),
    ("sh s*.sh", {"s1.sh": "echo a\n"}, "s1.sh"),  # a pattern's matches, not only their names
    ("cat */*.sh | sh", {"a/s1.sh": "echo a\n"}, "a/s1.sh"),
]


@posix_only
@pytest.mark.parametrize("command, files, changed", NAMED_OTHERWISE)
def test_a_file_a_word_names_in_another_way_is_pinned_as_it_was(
    command, files, changed, tmp_path, in_a_run
):
    # 'always' for `make -fb.mk` covered whatever was copied over b.mk later, as `python3 -m tasks`
    # did tasks.py and `python3 pkg` pkg/__main__.py: each runs a file no word names alone
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    shown = command_shapes(command, in_a_run)
    assert command_shapes(command, in_a_run) == shown

    (tmp_path / changed).write_text("touch pwned\n")
    now = command_shapes(command, in_a_run)

    assert now.keys() == shown.keys() and now != shown


@posix_only
def test_a_folder_too_big_to_look_through_is_never_covered_again(tmp_path, in_a_run, monkeypatch):
    monkeypatch.setattr(shapes, "WALK_LIMIT", 3)
    for name in "abcd":
        (tmp_path / "pkg" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "pkg" / name).write_text("")

    assert command_shapes("python3 pkg", in_a_run) != command_shapes("python3 pkg", in_a_run)
