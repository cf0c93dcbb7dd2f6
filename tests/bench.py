"""Benchmark: what the agent costs per step on top of its dependencies, with the model answering
instantly. Runs `python harness.py` against the local fake model, and the same conversation as bare
loops of client.post and of client.chat.completions.create on one client, at 10, 20 and 150 steps,
with the agent's progress lines on (as a person at a terminal has them); the first gap, the mean
gap, cold start and peak RSS of the 10-step run beside the bare loop's; a script's run() with 20
tools of its own against the same floor; then what the sandbox adds to a command, what edit_file
costs on a 200 MB file, and how long the allowlist and the escaper take on the longest text; last,
20 arun() at once against one alone, with a ticker on the same event loop; and how long the commands
that send no request take from start to exit, beside a bare Python; and a streamed run's time to its
first answer piece and per step, beside a bare streaming loop. Run `python tests/bench.py`."""

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import typing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fake_model import FakeModel, answer, call_pieces, calls, stream  # noqa: E402

from plainagent.sandbox import process as sandbox  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LENGTHS = (10, 20, 150)  # steps in a run; 150 steps end with about 300 messages
LAST = 20  # per step is the median gap over a run's last 20 steps
RUNS = 5
TARGET = 1.5  # the agent's per step against the bare client.post loop's
# What a person meets in a short run, the agent against the bare client.post loop, 10 steps: the
# first gap (the first progress line, the first tool call) at most this many ms more, the mean gap
# at most this many times, peak RSS at most this many MB more, cold start at most this many ms more.
SHORT_RUN = 10
# Rounds of the short run, more than RUNS: a cold start here moves by 300 ms from one start to the
# next, so the median of 5 moves by about 100 ms, twice the target.
SHORT_RUNS = 15
FIRST_GAP_MS, MEAN_GAP_RATIO, PEAK_RSS_MB, COLD_START_MS = 10, 1.5, 5, 50

# The floor: one client, the same growing history and replies, no harness. __SEND__
# is the one line that differs.
BARE_LOOP = """
import json, openai
from openai.types.chat import ChatCompletion
TOOLS = json.loads(__TOOLS__)
client = openai.OpenAI(base_url="__URL__", api_key="bench")
messages = [
    {"role": "system", "content": __SYSTEM__},
    {"role": "user", "content": "list the files"},
]
while True:
    request = {"model": "openai/gpt-oss-120b", "messages": messages, "tools": TOOLS}
    reply = __SEND__.choices[0].message
    if not reply.tool_calls:
        break
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.function.name, "arguments": c.function.arguments},
        }
        for c in reply.tool_calls
    ]
    messages.append({"role": "assistant", "content": reply.content, "tool_calls": calls})
    messages += [
        {"role": "tool", "tool_call_id": c.id, "content": "a.txt  1 bytes"}
        for c in reply.tool_calls
    ]
"""
POST = 'client.post("/chat/completions", body=request, cast_to=ChatCompletion)'
CREATE = "client.chat.completions.create(**request)"


def list_a_folder(k: int) -> tuple[str, dict]:
    """Step k's call: a different folder each step, so the agent's loop guard never steps in
    and every result is the same."""
    return "list_dir", {"path": f"d{k}"}


def measure(command: list[str], cwd: str, env: dict, steps: int, call=list_a_folder) -> dict:
    """Run one conversation of `steps` requests, call(k) the tool call of step k;
    return cold start, per-step gap (the median of the last LAST), the first and the
    mean gap, connections and peak RSS."""
    fake = FakeModel(keep_bodies=False)
    fake.queue(*[calls(call(k)) for k in range(steps - 1)], answer("done"))
    command = [part.replace("__URL__", fake.url) for part in command]
    # the progress lines, written as to a terminal: never waited on
    with tempfile.TemporaryFile() as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**env, "GROQ_BASE_URL": fake.url, "AGENT_MAX_STEPS": str(steps)},
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        fake.close()
        if process.returncode != 0 or len(fake.requests) != steps:
            stderr.seek(0)
            sys.exit(
                f"bench run failed ({process.returncode}, {len(fake.requests)} requests): "
                f"{stderr.read().decode()}"
            )
    received = [t for kind, t in fake.timeline if kind == "received"]
    sent = [t for kind, t in fake.timeline if kind == "sent"]
    gaps = [received[k + 1] - sent[k] for k in range(steps - 1)]
    rss_kib = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)
    return {
        "cold start": received[0] - started,
        "per step": statistics.median(gaps[-LAST:]),
        "first gap": gaps[0],
        "mean gap": statistics.mean(gaps),
        "connections": fake.connections,
        "peak RSS": rss_kib,
        "cpu": usage.ru_utime + usage.ru_stime,
    }


def import_openai_time(env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import openai"], env=env, check=True)
    return time.perf_counter() - started


def per_step(folder: str, transcripts: str, env: dict) -> dict:
    """Every variant at every length, RUNS times, interleaved so that whatever else the machine does
    falls on every variant alike; returns {(variant, steps): [measurement per run]}."""
    system, tools = agent_request(folder, env)
    bare = BARE_LOOP.replace("__TOOLS__", repr(json.dumps(tools))).replace(
        "__SYSTEM__", json.dumps(system)
    )
    variants = {
        "harness.py": [
            sys.executable,
            str(ROOT / "harness.py"),
            "list the files",
            "--transcript",
            str(Path(transcripts, "run.jsonl")),
        ],
        "bare loop, client.post": [sys.executable, "-c", bare.replace("__SEND__", POST)],
        "bare loop, create()": [sys.executable, "-c", bare.replace("__SEND__", CREATE)],
    }
    runs = {(name, steps): [] for name in variants for steps in LENGTHS}
    # one run each first, unmeasured: it writes the modules' bytecode, as a first run does
    for name in variants:
        measure(variants[name], folder, env, 2)
    for round_ in range(max(RUNS, SHORT_RUNS)):
        for name, steps in runs:
            if round_ < RUNS or steps == SHORT_RUN and name != "bare loop, create()":
                runs[name, steps].append(measure(variants[name], folder, env, steps))
    return runs


def agent_request(folder: str, env: dict) -> tuple[str, list[dict]]:
    """The agent's own system prompt for this folder and its tool schemas, so the bare loops send
    what it does. Asked of a child process: importing openai here would count in every child's
    peak RSS (each starts as us)."""
    code = (
        f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); "
        "from plainagent.core import settings; "
        "from plainagent.approval.prompt import with_the_sandbox; "
        "from plainagent.model.context import system_prompt; from tools import TOOLS; "
        "config = with_the_sandbox(settings.resolve(require_key=False)); "
        "print(json.dumps([system_prompt(config), TOOLS]))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    system, tools = json.loads(found.stdout)
    return system, tools


def bench_environment() -> dict:
    """This process's environment without the agent's settings (GROQ_*, OPENAI_*, AGENT_*), as a
    person's shell has it: PYTHONDONTWRITEBYTECODE would compile every module of ours at each
    start (openai's were compiled when pip installed it), which costs the agent's cold start about
    100 ms that no person pays."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GROQ_", "OPENAI_", "AGENT_")) and k != "PYTHONDONTWRITEBYTECODE"
    }


def rounds_in_a_child(
    part: str, code: str, router: typing.Callable, timeout: float, files: dict | None = None
) -> list:
    """The rounds (printed as JSON) of `code` run by a child Python in a new folder holding
    `files`, against a fake model whose replies `router` makes from each request's body."""
    fake = FakeModel()
    fake.router = router
    with tempfile.TemporaryDirectory() as folder:
        for name, text in (files or {}).items():
            Path(folder, name).write_text(text)
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**bench_environment(), "GROQ_BASE_URL": fake.url, "GROQ_API_KEY": "bench-key"},
        )
    fake.close()
    if done.returncode != 0:
        sys.exit(f"{part} bench failed: {done.stderr}")
    return json.loads(done.stdout)


def agent_overhead() -> None:
    """Print the per-step table: the agent, a bare client.post loop and a bare create() loop."""
    env = bench_environment()
    # A budget the runs never reach, so the agent sends the same whole history the bare loops do; a
    # key as long as a Groq key (56 characters), so the agent redacts as much as in a real run.
    env.update(
        GROQ_API_KEY="gsk_" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP",
        AGENT_CONTEXT_BUDGET=str(10**9),
    )
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as transcripts:
        for k in range(max(LENGTHS)):
            Path(folder, f"d{k}").mkdir()
            Path(folder, f"d{k}", "a.txt").write_text("a")
        runs = per_step(folder, transcripts, env)
        import_time = statistics.median(import_openai_time(env) for _ in range(RUNS))

    def ms(name: str, steps: int, key: str = "per step") -> list[float]:
        return sorted(run[key] * 1000 for run in runs[name, steps])

    def spread(values: list[float], unit: str = " ms") -> str:
        return f"{statistics.median(values):.2f}{unit} ({min(values):.2f}-{max(values):.2f})"

    print(
        f"Runs of {' and '.join(map(str, LENGTHS))} steps against a local fake model with zero "
        f"latency; medians of {RUNS} runs (min-max; {SHORT_RUNS} of the agent's and client.post's "
        f"at {SHORT_RUN} steps)"
    )
    print(
        "per step: the server's gap between sending reply k and receiving request k+1, median "
        f"over the run's last {LAST} steps\n"
    )
    header = "".join(f"{f'per step, {steps} steps':>27}" for steps in LENGTHS)
    print(f"{'':24}{header} {'cold start':>11} {'connections':>12} {'peak RSS':>10}")
    for name in dict.fromkeys(name for name, _ in runs):
        longest = runs[name, max(LENGTHS)]
        print(
            f"{name:24}{''.join(f'{spread(ms(name, s)):>27}' for s in LENGTHS)} "
            f"{statistics.median(ms(name, LENGTHS[0], 'cold start')):>8.0f} ms "
            f"{statistics.median(r['connections'] for r in longest):>12.0f} "
            f"{statistics.median(r['peak RSS'] for r in longest) / 1024:>7.1f} MB"
        )
    print(
        f"{'python -c ' + repr('import openai'):24}{'':{27 * len(LENGTHS)}} "
        f"{import_time * 1000:>8.0f} ms"
    )
    print(
        f"\nagent / bare client.post loop, per step (target at most {TARGET}x; median of the "
        "per-run ratios):"
    )
    for steps in LENGTHS:
        ratios = [
            a["per step"] / b["per step"]
            for a, b in zip(
                runs["harness.py", steps], runs["bare loop, client.post", steps], strict=True
            )
        ]
        print(f"  {steps} steps: {spread(ratios, 'x')}")
    first, last = LENGTHS[0], LENGTHS[-1]
    cpu = {
        name: [
            (b["cpu"] - a["cpu"]) * 1000 / (last - first)
            for a, b in zip(runs[name, first], runs[name, last], strict=True)
        ]
        for name in dict.fromkeys(name for name, _ in runs)
    }
    print(
        f"\nCPU per step, steps {first + 1}-{last} (the process's CPU time at {last} steps less at "
        f"{first}, per step: it leaves out waiting for a busy CPU, but a cold start's CPU time "
        "moves by tens of ms):"
    )
    for name, values in cpu.items():
        print(f"  {name:24}{spread(sorted(values))}")
    ratios = [a / b for a, b in zip(cpu["harness.py"], cpu["bare loop, client.post"], strict=True)]
    print(f"  agent / bare client.post loop: {spread(sorted(ratios), 'x')}")
    ratio = statistics.median(ms("bare loop, create()", max(LENGTHS))) / statistics.median(
        ms("bare loop, client.post", max(LENGTHS))
    )
    print(f"  (create() / client.post, {max(LENGTHS)} steps: {ratio:.0f}x)")
    short_run(runs)


def short_run(runs: dict) -> None:
    """Print what a person meets in a SHORT_RUN-step run, progress lines on: the agent's first
    gap, mean gap, peak RSS and cold start beside the bare client.post loop's (medians of the
    runs), each against its target."""
    agent, bare = runs["harness.py", SHORT_RUN], runs["bare loop, client.post", SHORT_RUN]

    def median(measured: list[dict], key: str, scale: float) -> float:
        return statistics.median(run[key] for run in measured) * scale

    print(
        f"\na {SHORT_RUN}-step run as a person meets it (progress lines on; medians of "
        f"{SHORT_RUNS} runs):"
    )
    print(f"  {'':16}{'harness.py':>12}{'bare loop':>12}   target")
    rows = (
        (
            "first gap",
            1000,
            " ms",
            lambda a, b: a - b <= FIRST_GAP_MS,
            f"at most {FIRST_GAP_MS} ms more",
        ),
        (
            "mean gap",
            1000,
            " ms",
            lambda a, b: a <= MEAN_GAP_RATIO * b,
            f"at most {MEAN_GAP_RATIO}x",
        ),
        (
            "peak RSS",
            1 / 1024,
            " MB",
            lambda a, b: a - b <= PEAK_RSS_MB,
            f"at most {PEAK_RSS_MB} MB more",
        ),
        (
            "cold start",
            1000,
            " ms",
            lambda a, b: a - b <= COLD_START_MS,
            f"at most {COLD_START_MS} ms more",
        ),
    )
    for key, scale, unit, within, target in rows:
        a, b = median(agent, key, scale), median(bare, key, scale)
        print(
            f"  {key:16}{a:>9.2f}{unit}{b:>9.2f}{unit}   {target}: "
            f"{'ok' if within(a, b) else 'OVER TARGET'}"
        )


START_RUNS = 15
LOCAL_COMMANDS = (["--help"], ["--runs"], ["--undo"])  # each sends no request


def start_of_local_commands() -> None:
    """Print how long the commands that send no request take to answer, from start to exit (the
    median of START_RUNS each, in a workspace with no runs, no key set), beside a bare
    `python -c pass` and `python -c "import openai"`, the SDK they do without."""
    env = {**os.environ, "GROQ_API_KEY": ""}
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import openai'": [sys.executable, "-c", "import openai"],
        **{
            f"harness.py {' '.join(flags)}": [sys.executable, str(ROOT / "harness.py"), *flags]
            for flags in LOCAL_COMMANDS
        },
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as folder:
        env["XDG_STATE_HOME"] = folder  # no runs of this workspace
        for _ in range(START_RUNS):  # interleaved, so that load on the machine falls on all alike
            for name, command in commands.items():
                started = time.perf_counter()
                subprocess.run(command, cwd=folder, env=env, capture_output=True)
                times[name].append(time.perf_counter() - started)
    print(f"\nstart to exit, median of {START_RUNS}:")
    for name, spent in times.items():
        print(f"  {statistics.median(spent) * 1000:7.1f} ms  {name}")


def main() -> None:
    """Every part, or only those named: `python tests/bench.py steps sandbox` (steps, script-tools,
    sandbox, edit, checks, async, start, undo, mcp, stream; undo-small is undo on a tenth of
    the workspace)."""
    parts = {
        "steps": agent_overhead,
        "script-tools": script_tools_overhead,
        "sandbox": sandbox_overhead,
        "edit": big_file_edit,
        "checks": checks_of_long_text,
        "async": runs_at_once,
        "start": start_of_local_commands,
        "undo": undo_overhead,
        "undo-small": lambda: undo_overhead(UNDO_FILES // 10, UNDO_MB // 10),
        "mcp": mcp_servers,
        "stream": streaming_overhead,
    }
    if unknown := [name for name in sys.argv[1:] if name not in parts]:
        sys.exit(f"no part of the bench is named {' '.join(unknown)}; the parts: {' '.join(parts)}")
    for name in sys.argv[1:] or parts:
        parts[name]()


SCRIPT_TOOLS = 20
SCRIPT_STEPS = 50
# A script's own tools, each with the hints people write (a list, a Literal, an
# optional value, a dataclass), all answering what list_dir answers in the bare loop,
# so the two histories are the same.
TOOLS_MODULE = """
import dataclasses
from typing import Literal


@dataclasses.dataclass
class Window:
    start: str
    days: int = 7


def make(k):
    def tool(
        query: str,
        tags: list[str],
        mode: Literal["fast", "slow"] = "fast",
        limit: int | None = None,
        window: Window | None = None,
    ) -> str:
        \"\"\"Look something up in source number K; return the files that match.

        Args:
            query: the words to look for
            tags: labels the files must carry
        \"\"\"
        return "a.txt  1 bytes"
    tool.__name__ = tool.__qualname__ = f"lookup_{k}"
    tool.__doc__ = tool.__doc__.replace("K", str(k))
    return tool


TOOLS = [make(k) for k in range(__COUNT__)]
"""
SCRIPT_RUN = """
import sys
sys.path.append(__ROOT__)
from plainagent import run
from script_tools import TOOLS
run("list the files", tools=TOOLS)
"""
SCHEMAS = """
import json, sys
sys.path.append(__ROOT__)
from plainagent.calls.schema import schema
from script_tools import TOOLS
print(json.dumps([schema(tool) for tool in TOOLS]))
"""


def script_tools_overhead() -> None:
    """Print what a step costs a script's run() with SCRIPT_TOOLS tools of its own, each called
    in turn with a list, a Literal and a dataclass to check and convert, against the bare
    client.post loop sending the same schemas and history: the wire's floor. Target: at most
    TARGET times it, as for the command line."""
    env = bench_environment()
    env.update(
        GROQ_API_KEY="gsk_" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP",
        AGENT_CONTEXT_BUDGET=str(10**9),
        AGENT_MAX_STEPS=str(SCRIPT_STEPS),
    )

    def call(k: int) -> tuple[str, dict]:
        return f"lookup_{k % SCRIPT_TOOLS}", {
            "query": f"q{k}",
            "tags": ["src"],
            "mode": "slow",
            "window": {"start": "mon"},
        }

    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as code:
        Path(code, "script_tools.py").write_text(
            TOOLS_MODULE.replace("__COUNT__", str(SCRIPT_TOOLS))
        )
        Path(code, "script.py").write_text(SCRIPT_RUN.replace("__ROOT__", repr(str(ROOT))))
        found = subprocess.run(
            [sys.executable, "-c", SCHEMAS.replace("__ROOT__", repr(str(ROOT)))],
            cwd=code,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        system, _ = agent_request(folder, env)
        bare = BARE_LOOP.replace("__TOOLS__", repr(found.stdout.strip())).replace(
            "__SYSTEM__", json.dumps(system)
        )
        variants = {
            "run(tools=...)": [sys.executable, str(Path(code, "script.py"))],
            "bare loop, client.post": [sys.executable, "-c", bare.replace("__SEND__", POST)],
        }
        # unmeasured: it writes the modules' bytecode, as a first run does
        for command in variants.values():
            measure(command, folder, env, 2, call)
        runs: dict[str, list[dict]] = {name: [] for name in variants}
        for _ in range(RUNS):
            for name, command in variants.items():
                runs[name].append(measure(command, folder, env, SCRIPT_STEPS, call))
    ratios = sorted(
        a["per step"] / b["per step"]
        for a, b in zip(runs["run(tools=...)"], runs["bare loop, client.post"], strict=True)
    )
    print(
        f"\n{SCRIPT_TOOLS} tools of a script's own, {SCRIPT_STEPS} steps (medians of {RUNS} runs, "
        "per step as above):"
    )
    for name, measured in runs.items():
        print(f"  {name:24}{statistics.median(r['per step'] for r in measured) * 1000:8.2f} ms")
    ratio = statistics.median(ratios)
    verdict = "ok" if ratio <= TARGET else "OVER TARGET"
    print(
        f"  run() / bare client.post loop: {ratio:.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}; target "
        f"at most {TARGET}x)  {verdict}"
    )


SANDBOX_RUNS = 200


def sandbox_overhead() -> None:
    """Print what the Linux sandbox adds to one command as the agent runs it: the median
    wall time of tools.run_shell('true') (a private TMPDIR, the ruleset, the child's setup,
    the sweep for leftovers) with the sandbox on against --sandbox off, and a plain Popen of
    the same command for scale."""
    import tools
    from plainagent.core import settings

    if sandbox.landlock_missing():
        print(f"\nsandbox overhead: not measured ({sandbox.landlock_missing()})")
        return
    times: dict[str, list[float]] = {"auto": [], "off": [], "plain": []}
    with tempfile.TemporaryDirectory() as folder:
        runs = {
            mode: settings.resolve(require_key=False, workspace=folder, sandbox=mode)
            for mode in ("auto", "off")
        }
        for _ in range(SANDBOX_RUNS):  # interleaved, so that load on the machine falls on all alike
            for name in times:
                started = time.perf_counter()
                if name == "plain":
                    subprocess.run("true", shell=True, cwd=folder, start_new_session=True)
                else:
                    tools.run_shell("true", settings=runs[name])
                times[name].append(time.perf_counter() - started)
    on, off, plain = (statistics.median(times[name]) * 1000 for name in times)
    print(
        f"\nsandbox: adds {on - off:+.2f} ms per command (target under 5 ms): median of "
        f"{SANDBOX_RUNS} run_shell('true') {on:.2f} ms in the sandbox, {off:.2f} ms with --sandbox "
        f"off; plain Popen {plain:.2f} ms"
    )


BIG_FILE_MB = 200
EDIT_TARGET_SECONDS = 3.0
# One run in a child: the model asks to edit the last line of big.log; approved as at the
# prompt (the preview is built, as the terminal shows it) or as with --yes. Prints the wall
# time from the call to its result.
EDIT_RUN = """
import json, sys, time
sys.path.insert(0, __ROOT__)
import harness
from plainagent.approval import prompt as approval, previews
from plainagent.core import screen
from plainagent.core.settings import resolve
config = resolve()
times = {}
def timed(event):
    if event["type"] in ("call", "tool"):
        times[event["type"]] = time.perf_counter()
        times["result"] = event.get("result")
def at_the_prompt(name, arguments):
    print(previews.describe(name, arguments, screen.shown, config), file=sys.stderr)
    return True
approve = at_the_prompt if sys.argv[1] == "prompt" else approval.approve_all
harness.run("edit the last line", approve=approve, on_event=timed, settings=config)
print(json.dumps({"seconds": times["tool"] - times["call"], "result": times["result"]}))
"""


def big_file_edit() -> None:
    """Print what edit_file costs on one line of a BIG_FILE_MB file, at the prompt (the preview,
    then the edit) and with everything approved: wall time from the call to its result, and the
    child's peak RSS against the same run on a file of one line. Target: under EDIT_TARGET_SECONDS
    and at most 2x the file + 50 MB."""
    env = bench_environment()
    env.update(GROQ_API_KEY="bench-key")
    code = EDIT_RUN.replace("__ROOT__", repr(str(ROOT)))
    line = b"2024-05-01 12:00:00 INFO worker-7 handled request in 12 ms\n"
    with tempfile.TemporaryDirectory() as folder:
        rows = {}
        for size_mb in (0, BIG_FILE_MB):
            for how in ("prompt", "yes"):
                with open(Path(folder, "big.log"), "wb") as file:
                    for _ in range(size_mb * 1_000_000 // (len(line) * 10_000)):
                        file.write(line * 10_000)
                    file.write(b"the last line\n")
                size = os.path.getsize(Path(folder, "big.log"))
                fake = FakeModel(keep_bodies=False)
                fake.queue(
                    calls(
                        (
                            "edit_file",
                            {
                                "path": "big.log",
                                "old_text": "the last line\n",
                                "new_text": "the new last line\n",
                            },
                        )
                    ),
                    answer("done"),
                )
                process = subprocess.Popen(
                    [sys.executable, "-c", code, how],
                    cwd=folder,
                    env={**env, "GROQ_BASE_URL": fake.url},
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
                _, status, usage = os.wait4(process.pid, 0)
                fake.close()
                measured = json.loads(process.stdout.read() or "null")
                if os.waitstatus_to_exitcode(status) != 0 or not measured["result"].startswith(
                    "edited big.log"
                ):
                    sys.exit(f"edit bench run failed: {measured}")
                rss_mb = usage.ru_maxrss / (1024 if sys.platform != "darwin" else 1024 * 1024)
                rows[size_mb, how] = size, measured["seconds"], rss_mb
    print(
        f"\nedit_file of one line in a {BIG_FILE_MB} MB file (target: under "
        f"{EDIT_TARGET_SECONDS:g} s, peak RSS at most 2x the file + 50 MB):"
    )
    for how, label in (
        ("prompt", "at the prompt (preview + edit)"),
        ("yes", "with --yes (the edit)"),
    ):
        size, seconds, rss = rows[BIG_FILE_MB, how]
        base = rows[0, how][2]
        limit = 2 * size / 2**20 + 50
        verdict = "ok" if seconds < EDIT_TARGET_SECONDS and rss <= limit else "OVER TARGET"
        print(
            f"  {label:32} {seconds:6.2f} s  peak RSS {rss:6.0f} MB (limit {limit:.0f} MB; "
            f"{base:.0f} MB on a one-line file)  {verdict}"
        )


CHECK_TARGETS = {"allowlist": 2.0, "escape": 1.0, "preview": 1.0}  # seconds


# In a fresh process: the seconds the escaper's first call takes, or (traced, which
# slows it) the most it allocates.
FIRST_CALL = """
import sys, time, tracemalloc
sys.path.insert(0, __ROOT__)
from plainagent.core import screen
if sys.argv[2] == "memory":
    tracemalloc.start()
began = time.perf_counter()
screen.shown(sys.argv[1])
print(time.perf_counter() - began if sys.argv[2] == "time" else tracemalloc.get_traced_memory()[1])
"""


def escaper_first_call() -> None:
    """Print what the escaper's first call in a process costs (a run's first progress line):
    a line of ASCII, and one that is not (its characters' blocks are looked up then);
    medians of 5 fresh processes."""
    code = FIRST_CALL.replace("__ROOT__", repr(str(ROOT)))

    def median(line: str, what: str) -> float:
        return statistics.median(
            float(
                subprocess.run(
                    [sys.executable, "-c", code, line, what],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            for _ in range(5)
        )

    print("\nthe escaper's first call in a process (median of 5):")
    for label, line in (
        ("ASCII", '[1] list_dir {"path": "d0"}'),
        ("not ASCII", '[1] read_file {"path": "café/日本.md"}'),
    ):
        print(
            f"  {label:10} {median(line, 'time') * 1000:6.2f} ms, "
            f"{median(line, 'memory') / 2**20:5.2f} MB allocated at most"
        )


def checks_of_long_text() -> None:
    """Print how long the two checks that see everything the model writes take on their longest
    input: the allowlist on a 10,000-character command and on a 200,000-character one (which asks at
    once), and the terminal escaper on 2 MB of mixed text, and the write prompt's preview of a 20 MB
    one-line text (only its ends are shown). Targets: CHECK_TARGETS."""
    from plainagent.approval import previews
    from plainagent.core import settings
    from plainagent.core.screen import shown
    from plainagent.shell import allowlist, words

    longest, longer = "ls" + " a" * ((words.MAX_UNASKED_CHARS - 2) // 2), "ls" + " a" * 100_000
    line = '    return f"{name}: {value!r}"  # café 日本 😀 ok\n'
    text = line * (2_000_000 // len(line)) + "\x1b[2J"
    one_line = text.replace("\n", " ") * 10
    escaper_first_call()
    shown("warm up")
    print("\nchecks of the longest text the model can send (median of 5):")
    config = settings.resolve(require_key=False, workspace=tempfile.gettempdir())
    for label, key, check in (
        (
            "allowlist, 10,000 + 200,000 characters",
            "allowlist",
            lambda: (
                allowlist.command_mode(words.parse(longest), config),
                allowlist.command_mode(words.parse(longer), config),
            ),
        ),
        ("terminal escaper, 2 MB", "escape", lambda: shown(text)),
        (
            "write prompt, a 20 MB line",
            "preview",
            lambda: previews.describe(
                "write_file", {"path": "new.txt", "content": one_line}, shown, config
            ),
        ),
    ):
        times = []
        for _ in range(5):
            began = time.perf_counter()
            check()
            times.append(time.perf_counter() - began)
        seconds = statistics.median(times)
        verdict = "ok" if seconds < CHECK_TARGETS[key] else "OVER TARGET"
        print(f"  {label:40} {seconds:6.3f} s (target under {CHECK_TARGETS[key]:g} s)  {verdict}")


AT_ONCE, REPLY_SECONDS, AT_ONCE_ROUNDS = 20, 0.2, 5
AT_ONCE_RATIO, TICK_MS, MOST_GAP_MS = 2.0, 5, 50
# In a fresh process, against the stand-in (in this process, as the steps' is): a run to warm up,
# then per round one run alone and AT_ONCE at once, while a ticker on the same loop wakes every
# TICK_MS, and the ticker alone as long (what the machine's load alone makes it miss); prints the
# seconds of each and the ticker's longest gaps, per round, as JSON.
ARUN_RUNS = """
import asyncio, json, sys, time
sys.path.insert(0, __ROOT__)
from harness import arun
async def timed(runs, idle=0):
    ticks = []
    async def tick():
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(__TICK__ / 1000)
    ticker = asyncio.get_running_loop().create_task(tick())
    await asyncio.sleep(0)
    started = time.perf_counter()
    answers = await asyncio.gather(*(arun(f"task {n}") for n in range(runs)), asyncio.sleep(idle))
    seconds = time.perf_counter() - started
    ticker.cancel()
    assert answers == ["done"] * runs + [None], answers
    return seconds, max(b - a for a, b in zip(ticks, ticks[1:]))
asyncio.run(timed(1))
rounds = []
for _ in range(__ROUNDS__):
    one, _ = asyncio.run(timed(1))
    many, gap = asyncio.run(timed(__AT_ONCE__))
    _, alone = asyncio.run(timed(0, many))
    rounds.append({"one": one, "many": many, "gap": gap, "alone": alone})
print(json.dumps(rounds))
"""


def three_steps(body: dict) -> dict:
    """A run of three replies, each REPLY_SECONDS late: list_dir, read_file, the answer."""
    turns = sum(message["role"] == "tool" for message in body["messages"])
    step = [calls(("list_dir", {})), calls(("read_file", {"path": "a.txt"})), answer("done")][turns]
    return {**step, "delay": REPLY_SECONDS}


def runs_at_once() -> None:
    """Print what AT_ONCE arun() at once cost against one run alone, with replies that take
    REPLY_SECONDS, and the longest a ticker on the same event loop waited meanwhile. Targets: at
    most AT_ONCE_RATIO times one run's time, and no gap over MOST_GAP_MS."""
    code = (
        ARUN_RUNS.replace("__ROOT__", repr(str(ROOT)))
        .replace("__TICK__", str(TICK_MS))
        .replace("__ROUNDS__", str(AT_ONCE_ROUNDS))
        .replace("__AT_ONCE__", str(AT_ONCE))
    )
    rounds = rounds_in_a_child("arun", code, three_steps, 600, {"a.txt": "a"})
    one = statistics.median(r["one"] for r in rounds)
    many = statistics.median(r["many"] for r in rounds)
    ratios = sorted(r["many"] / r["one"] for r in rounds)
    gaps = sorted(r["gap"] * 1000 for r in rounds)
    alone = sorted(r["alone"] * 1000 for r in rounds)
    ratio_ok = statistics.median(ratios) <= AT_ONCE_RATIO
    gap_ok = max(gaps) <= MOST_GAP_MS
    print(
        f"\narun(): {AT_ONCE} runs at once against one alone, each reply "
        f"{REPLY_SECONDS * 1000:.0f} ms, 3 a run (medians of {AT_ONCE_ROUNDS} rounds in one "
        "process, after a run to warm up):"
    )
    print(
        f"  one run {one:.2f} s, {AT_ONCE} at once {many:.2f} s: {statistics.median(ratios):.2f}x "
        f"({ratios[0]:.2f}-{ratios[-1]:.2f}; target at most {AT_ONCE_RATIO:g}x): "
        f"{'ok' if ratio_ok else 'OVER TARGET'}"
    )
    print(
        f"  a ticker on the same loop every {TICK_MS} ms: longest gap {gaps[-1]:.1f} ms "
        f"(rounds {gaps[0]:.1f}-{gaps[-1]:.1f}; target at most {MOST_GAP_MS} ms): "
        f"{'ok' if gap_ok else 'OVER TARGET'}; with no run going, as long: {alone[-1]:.1f} ms "
        f"({alone[0]:.1f}-{alone[-1]:.1f}, the machine's own)"
    )


UNDO_FILES, UNDO_MB, UNDO_COMMANDS = 10_000, 200, 20
# Targets: the first keep within this many times a copy of the workspace; a command adds at most
# this many ms (the median over UNDO_COMMANDS), plus, if it changed one file, that file's copy; the
# store after UNDO_COMMANDS commands that each changed one file within this many times the workspace
FIRST_KEEP_RATIO, ADDED_MS, STORE_RATIO = 1.5, 100, 1.05


def undo_overhead(files: int = UNDO_FILES, megabytes: int = UNDO_MB) -> None:
    """Print what keeping a workspace for undo costs around an approved command, on a generated
    workspace of `files` files and `megabytes` MB in 100 folders: the first keep against copying it
    (cp -r), the median time a command that changes nothing adds against undo off, the same for a
    command that changes one file, and the store's size after those commands."""
    import dataclasses
    import shutil

    from plainagent.core import settings as agent_settings
    from plainagent.shell.command import run_command
    from plainagent.shell.decision import decide
    from plainagent.workspace import store, walk

    with tempfile.TemporaryDirectory() as top:
        workspace, state = Path(top) / "ws", Path(top) / "state"
        size = megabytes * 1_000_000 // files
        for k in range(files):
            folder = workspace / f"d{k % 100}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{k}.txt").write_bytes(os.urandom(size))
        time.sleep(1.1)  # older than the racy window, as a person's files are
        os.environ["XDG_STATE_HOME"] = str(state)
        config = agent_settings.resolve(require_key=False, workspace=workspace)

        def settled() -> None:
            """The last copy and keep removed, and the disk given what is pending (a file system
            that discards freed blocks does it at its next commit), so each starts alike."""
            shutil.rmtree(Path(top) / "copy", ignore_errors=True)
            shutil.rmtree(state, ignore_errors=True)
            os.sync()

        # In turns, three times each (a shared disk's speed moves from one second to the next)
        copies, keeps = [], []
        for _ in range(3):
            settled()
            started = time.perf_counter()
            subprocess.run(["cp", "-r", str(workspace), str(Path(top) / "copy")], check=True)
            copies.append(time.perf_counter() - started)
            settled()
            started = time.perf_counter()
            walk.look(config)
            keeps.append(time.perf_counter() - started)
        copying, first = statistics.median(copies), statistics.median(keeps)
        kept = dataclasses.replace(config, undo=config.runs_folder / "bench.jsonl.undo" / "1")
        one = workspace / "d0" / "f0.txt"

        def added(command: str) -> tuple[float, float]:
            """The median of what undo adds to `command`, run with undo on and off in turns: wall
            time, and this process's CPU time (what a machine with cores to spare would wait)."""
            on, off, cpu_on, cpu_off = [], [], [], []
            decided = decide(command, config).approved()
            for _ in range(UNDO_COMMANDS):
                for settings, times, cpu in ((kept, on, cpu_on), (config, off, cpu_off)):
                    started, used = time.perf_counter(), time.process_time()
                    run_command(decided, settings)
                    times.append(time.perf_counter() - started)
                    cpu.append(time.process_time() - used)
            wall = statistics.median(on) - statistics.median(off)
            return wall * 1000, (statistics.median(cpu_on) - statistics.median(cpu_off)) * 1000

        def bare_walk() -> float:
            """One pass of scandir and lstat over the workspace, no work in Python: the floor
            of each of the two walks undo adds to a command, on this machine."""
            started = time.perf_counter()
            for folder in os.scandir(workspace):
                for entry in os.scandir(folder.path):
                    entry.stat(follow_symlinks=False)
            return time.perf_counter() - started

        floor = statistics.median(bare_walk() for _ in range(UNDO_COMMANDS)) * 2000
        nothing, nothing_cpu = added("true")
        changing, changing_cpu = added(f"echo more >> {one}")
        started = time.perf_counter()
        shutil.copyfile(one, Path(top) / "one")
        copy_ms = (time.perf_counter() - started) * 1000
        held = store.size(config.runs_folder)
        total = sum(p.stat().st_size for p in workspace.rglob("*") if p.is_file())
    ratio = first / copying
    print(
        f"\nundo of commands on {files:,} files, {megabytes} MB:\n"
        f"  first keep {first:.2f} s, cp -r {copying:.2f} s (medians of 3): {ratio:.2f}x (target "
        f"at most "
        f"{FIRST_KEEP_RATIO}x): {'ok' if ratio <= FIRST_KEEP_RATIO else 'OVER TARGET'}\n"
        f"  a command that changed nothing: adds {nothing:.1f} ms ({nothing_cpu:.1f} ms of CPU; "
        f"medians of {UNDO_COMMANDS}; "
        f"target at most {ADDED_MS} ms): {'ok' if nothing <= ADDED_MS else 'OVER TARGET'}; two "
        f"bare passes of scandir and lstat over it take {floor:.1f} ms here\n"
        f"  a command that changed one file: adds {changing:.1f} ms ({changing_cpu:.1f} ms of CPU; "
        f"target at most {ADDED_MS} ms "
        f"+ its copy, {copy_ms:.1f} ms): "
        f"{'ok' if changing <= ADDED_MS + copy_ms else 'OVER TARGET'}\n"
        f"  the store after {2 * UNDO_COMMANDS} commands: {held / 1e6:.1f} MB for a workspace of "
        f"{total / 1e6:.1f} MB, {held / total:.3f}x (target at most {STORE_RATIO}x): "
        f"{'ok' if held <= STORE_RATIO * total else 'OVER TARGET'}"
    )


MCP_ROUNDS = 5
MCP_CALLS = 50
# The reference servers (requirements-dev.txt), run by this Python
MCP_SERVERS = {
    name: {"command": sys.executable, "args": ["-m", f"mcp_server_{name}"]}
    for name in ("time", "git", "fetch")
}
MCP_CALL = {"name": "get_current_time", "arguments": {"timezone": "UTC"}}
# Three servers' start against the sum of each alone (one after the other), at most: a Python
# server's start is mostly its imports, on the CPU, so on 2 cores the floor is about half the sum
MCP_PARALLEL_RATIO = 0.8
MCP_CALL_MS = 2.0  # what a call through the agent may add to a bare round trip, at most


def mcp_start_seconds(servers: dict, settings) -> float:
    """How long a run's start waits for these servers: started, initialized, their tools listed."""
    from plainagent.mcp.servers import served

    started = time.perf_counter()
    with served(dataclasses.replace(settings, mcp={"mcpServers": servers})):
        took = time.perf_counter() - started
    return took


def bare_round_trips(calls: int) -> list[float]:
    """The time server's own time: tools/call written and its answer read on a pipe, no sandbox, no
    thread, no checks, the floor of any client."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server_time"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None

    def send(message: dict) -> None:
        process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        process.stdin.flush()

    offer = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b"}}
    send({"id": 0, "method": "initialize", "params": offer})
    process.stdout.readline()
    send({"method": "notifications/initialized"})
    times = []
    for number in range(1, calls + 1):
        started = time.perf_counter()
        send({"id": number, "method": "tools/call", "params": MCP_CALL})
        process.stdout.readline()
        times.append(time.perf_counter() - started)
    process.stdin.close()
    process.wait()
    return times


def mcp_servers() -> None:
    """Print how long a run's start waits for three reference servers started in parallel, against
    each alone, and what one MCP tool call costs through the agent (the checked call, the
    JSON-RPC client, the sandboxed server) over the server's own time on a bare pipe."""
    from plainagent.approval.prompt import with_the_sandbox
    from plainagent.core.settings import resolve
    from plainagent.mcp.servers import Servers

    with tempfile.TemporaryDirectory() as folder:
        settings = with_the_sandbox(resolve(require_key=False, workspace=folder))
        together, alone = [], {name: [] for name in MCP_SERVERS}
        for _ in range(MCP_ROUNDS):
            together.append(mcp_start_seconds(MCP_SERVERS, settings))
            for name, server in MCP_SERVERS.items():
                alone[name].append(mcp_start_seconds({name: server}, settings))
        servers = Servers(read_config_of({"time": MCP_SERVERS["time"]}), settings)
        try:
            [tool] = [t for t in servers.served.tools if t.name == "time__get_current_time"]
            through = []
            for _ in range(MCP_CALLS):
                started = time.perf_counter()
                tool.function(**MCP_CALL["arguments"])
                through.append(time.perf_counter() - started)
        finally:
            servers.close()
    bare = bare_round_trips(MCP_CALLS)
    both = statistics.median(together) * 1000
    each = {name: statistics.median(times) * 1000 for name, times in alone.items()}
    ratio = both / sum(each.values())
    added = (statistics.median(through) - statistics.median(bare)) * 1000
    sandboxed = "under the sandbox" if settings.confined else "without a sandbox here"
    print(f"\nMCP servers ({sandboxed}; medians of {MCP_ROUNDS} starts, {MCP_CALLS} calls):")
    print(
        f"  a run's start waits {both:.0f} ms for time, git and fetch at once; alone: "
        + ", ".join(f"{name} {ms:.0f} ms" for name, ms in each.items())
        + f" (one after the other {sum(each.values()):.0f} ms): {ratio:.2f}x (target at most "
        f"{MCP_PARALLEL_RATIO:g}x): {'ok' if ratio <= MCP_PARALLEL_RATIO else 'OVER TARGET'}"
    )
    print(
        f"  time__get_current_time through the agent {statistics.median(through) * 1000:.2f} ms, "
        f"the server's own on a bare pipe {statistics.median(bare) * 1000:.2f} ms: "
        f"{added:+.2f} ms (target at most {MCP_CALL_MS:g} ms): "
        f"{'ok' if added <= MCP_CALL_MS else 'OVER TARGET'}"
    )


def read_config_of(servers: dict) -> tuple:
    from plainagent.mcp.config import read_config

    return read_config({"mcpServers": servers})


STREAM_STEPS = 20  # requests in a streamed run: 19 tool calls, then the answer
ANSWER_PIECES = 40  # the answer's pieces, a word each
STREAM_ROUNDS = 9
STREAM_RATIO = 1.5  # the agent's first piece and per step, each against the bare streaming loop's
# Both in one process, taking turns: the agent (run(stream=True), its pieces through the command
# line's display, Live, with its progress lines) and a bare loop of client.post(..., stream=True)
# that puts tool calls together by index and writes each answer piece. A round's first piece is
# timed from the moment the last tool results are in the history to the first piece written.
STREAMED_RUNS = """
import io, json, os, sys, time
sys.path.insert(0, __ROOT__)
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
import harness, tools
from plainagent.approval.prompt import with_the_sandbox
from plainagent.cli.live import Live
from plainagent.cli.progress import progress
from plainagent.model.context import system_prompt
from plainagent.core.redaction import redactor
from plainagent.core.settings import resolve

class Screen(io.StringIO):
    def write(self, text):
        if text and self.first is None and self.since is not None:
            self.first = time.perf_counter() - self.since
        return super().write(text)

screen = Screen()
screen.first = screen.since = None
sys.stdout, sys.stderr = screen, open(os.devnull, "w")
sys.excepthook = lambda *error: __import__("traceback").print_exception(*error, file=sys.__stderr__)

def agent():
    settings = resolve()
    live, redact = Live(settings, False, False), redactor(settings.secrets)
    def show(event):
        if not live.see(event):
            progress(event, redact)
        if event["type"] == "tool" and event["step"] == __STEPS__ - 1:
            screen.since = time.perf_counter()
    answer = harness.run(
        "list the folders", stream=True, on_event=show, approve=lambda *a: True,
        max_steps=__STEPS__,
    )
    assert answer.reason == "answer", answer

client = openai.OpenAI(base_url=os.environ["GROQ_BASE_URL"], api_key="bench")
system = system_prompt(with_the_sandbox(resolve()))

def bare():
    messages = [
        {"role": "system", "content": system}, {"role": "user", "content": "list the folders"}
    ]
    while True:
        request = {"model": "openai/gpt-oss-120b", "messages": messages, "tools": tools.TOOLS,
                   "stream": True, "stream_options": {"include_usage": True}}
        chunks = client.post("/chat/completions", body=request, cast_to=ChatCompletion,
                             stream=True, stream_cls=openai.Stream[ChatCompletionChunk])
        text, calls = [], {}
        for chunk in chunks:
            for choice in chunk.choices:
                if choice.delta.content:
                    text.append(choice.delta.content)
                    sys.stdout.write(choice.delta.content)
                    sys.stdout.flush()
                for c in choice.delta.tool_calls or []:
                    part = calls.setdefault(c.index, {"id": c.id, "type": "function",
                                                      "function": {"name": "", "arguments": ""}})
                    part["function"]["name"] = c.function.name or part["function"]["name"]
                    part["function"]["arguments"] += c.function.arguments or ""
        if not calls:
            sys.stdout.write("\\n")
            return
        turn = [calls[i] for i in sorted(calls)]
        messages.append({"role": "assistant", "content": "".join(text) or None, "tool_calls": turn})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "error: no such folder"}
                     for c in turn]
        if len(messages) == 2 + 2 * (__STEPS__ - 1):
            screen.since = time.perf_counter()

rounds = []
for n in range(__ROUNDS__ + 1):
    round = {}
    turns = [("agent", agent), ("bare", bare)]
    for name, loop in turns if n % 2 else turns[::-1]:
        screen.first = screen.since = None
        started = time.perf_counter()
        loop()
        round[name] = {"step": (time.perf_counter() - started) / __STEPS__, "first": screen.first}
    if n:  # the first round warms up
        rounds.append(round)
print(json.dumps(rounds), file=sys.__stdout__)
"""


def streamed_step(body: dict) -> dict:
    """A streamed run's replies: STREAM_STEPS - 1 tool calls, each listing another folder, its
    arguments in three pieces; then the answer in ANSWER_PIECES pieces."""
    turns = sum(message["role"] == "tool" for message in body["messages"])
    if turns < STREAM_STEPS - 1:
        arguments = json.dumps({"path": f"d{turns}"})
        pieces = call_pieces(0, f"call_{turns}", "list_dir", arguments, 3)
        return stream(*pieces, finish_reason="tool_calls")
    return stream(*(f"word{k} " for k in range(ANSWER_PIECES)))


def streaming_overhead() -> None:
    """Print the agent's time to its first answer piece and its per-step cost, streaming, each
    against a bare client.post(..., stream=True) loop in the same process (target STREAM_RATIO)."""
    code = (
        STREAMED_RUNS.replace("__ROOT__", repr(str(ROOT)))
        .replace("__STEPS__", str(STREAM_STEPS))
        .replace("__ROUNDS__", str(STREAM_ROUNDS))
    )
    rounds = rounds_in_a_child("stream", code, streamed_step, 900)
    print(
        f"\nstreaming: {STREAM_STEPS} steps, the answer in {ANSWER_PIECES} pieces, the agent "
        f"(run(stream=True) shown by the command line's display) against a bare client.post(..., "
        f"stream=True) loop in the same process (medians of {STREAM_ROUNDS} rounds, taking turns):"
    )
    for key, what in (("first", "time to the first answer piece"), ("step", "per step")):
        agent = statistics.median(r["agent"][key] for r in rounds) * 1000
        bare = statistics.median(r["bare"][key] for r in rounds) * 1000
        ratio = agent / bare
        print(
            f"  {what}: agent {agent:.2f} ms, bare {bare:.2f} ms: {ratio:.2f}x (target at most "
            f"{STREAM_RATIO:g}x): {'ok' if ratio <= STREAM_RATIO else 'OVER TARGET'}"
        )


if __name__ == "__main__":
    main()
