"""Benchmark: what the harness costs on top of its dependencies, with the model answering instantly.
Runs `python harness.py` against the local fake model for a 20-step run, and the same for a bare loop of
client.chat.completions.create calls on one reused client. Run `python tests/bench.py`; it prints a table."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fake_model import FakeModel, answer, calls  # noqa: E402
from tools import TOOLS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STEPS = 20
RUNS = 7

# The floor our dependencies set: one client, the same growing history, no harness.
BARE_LOOP = """
import json, openai
TOOLS = json.loads(__TOOLS__)
client = openai.OpenAI(base_url="__URL__", api_key="bench")
messages = [{"role": "system", "content": "bench"}, {"role": "user", "content": "list"}]
while True:
    reply = client.chat.completions.create(model="openai/gpt-oss-120b", messages=messages,
                                           tools=TOOLS).choices[0].message
    if not reply.tool_calls:
        break
    messages.append({"role": "assistant", "content": reply.content, "tool_calls": [
        {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
        for c in reply.tool_calls]})
    messages += [{"role": "tool", "tool_call_id": c.id, "content": "a.txt  1 bytes"} for c in reply.tool_calls]
"""

BARE_LOOP = BARE_LOOP.replace("__TOOLS__", repr(json.dumps(TOOLS)))

# What the tutorial does: a new client, so a new connection, for every call.
CLIENT_PER_CALL = BARE_LOOP.replace("    reply = client.", """    client = openai.OpenAI(base_url="__URL__", api_key="bench")
    reply = client.""")


def measure(command: list[str], cwd: str, env: dict) -> dict:
    """Run one 20-step conversation; return cold start, per-step gap, connections and peak RSS."""
    fake = FakeModel()
    fake.queue(*[calls(("list_dir", {}))] * (STEPS - 1), answer("done"))
    command = [part.replace("__URL__", fake.url) for part in command]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env={**env, "GROQ_BASE_URL": fake.url},
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    fake.close()
    if process.returncode != 0 or len(fake.requests) != STEPS:
        sys.exit(f"bench run failed ({process.returncode}, {len(fake.requests)} requests): "
                 f"{process.stderr.read().decode()}")
    received = [t for kind, t in fake.timeline if kind == "received"]
    sent = [t for kind, t in fake.timeline if kind == "sent"]
    gaps = [received[k + 1] - sent[k] for k in range(STEPS - 1)]
    rss_kib = usage.ru_maxrss / (1024 if sys.platform == "darwin" else 1)
    return {"cold start": received[0] - started, "per step": statistics.median(gaps),
            "connections": fake.connections, "peak RSS": rss_kib}


def import_openai_time(env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import openai"], env=env, check=True)
    return time.perf_counter() - started


def median_of(runs: list[dict]) -> dict:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def main() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GROQ_", "OPENAI_", "AGENT_"))}
    env.update(GROQ_API_KEY="bench-key", AGENT_MAX_STEPS=str(STEPS))
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "a.txt").write_text("a")
        variants = {
            "harness.py": [sys.executable, str(ROOT / "harness.py"), "list the files"],
            "bare loop, one client": [sys.executable, "-c", BARE_LOOP],
            "tutorial, client per call": [sys.executable, "-c", CLIENT_PER_CALL],
        }
        # Interleaved, so that whatever else the machine does falls on every variant alike.
        runs = {name: [] for name in variants}
        for _ in range(RUNS):
            for name, command in variants.items():
                runs[name].append(measure(command, folder, env))
        results = {name: median_of(measured) for name, measured in runs.items()}
        import_time = statistics.median(import_openai_time(env) for _ in range(RUNS))

    print(f"{STEPS}-step run against a local fake model with zero latency; medians of {RUNS} runs each")
    print("per step: the server's gap between sending reply k and receiving request k+1 (median over the run)\n")
    print(f"{'':28} {'cold start':>11} {'per step':>10} {'connections':>12} {'peak RSS':>10}")
    for name, r in results.items():
        print(f"{name:28} {r['cold start'] * 1000:>8.0f} ms {r['per step'] * 1000:>7.2f} ms "
              f"{r['connections']:>12.0f} {r['peak RSS'] / 1024:>7.1f} MB")
    print(f"{'python -c ' + repr('import openai'):28} {import_time * 1000:>8.0f} ms")
    ours, floor = results["harness.py"], results["bare loop, one client"]
    print("\nharness against its floor (targets: 1 connection; per step within 15% of the bare loop;"
          " cold start within 10% of importing openai; peak RSS within 10% of the bare loop):")
    print(f"  connections {ours['connections']:.0f}; per step {ours['per step'] / floor['per step'] - 1:+.0%}; "
          f"cold start {ours['cold start'] / import_time - 1:+.0%}; peak RSS {ours['peak RSS'] / floor['peak RSS'] - 1:+.0%}")
    sandbox_overhead()


import sandbox  # noqa: E402

SANDBOX_RUNS = 200


def sandbox_overhead() -> None:
    """Print what the Linux sandbox adds to one command: the median wall time of popen('true'), wait and finish
    in read-only mode against mode=None (and against a plain Popen in its own session, as run_shell did before)."""
    if sandbox.available():
        print(f"\nsandbox overhead: not measured ({sandbox.available()})")
        return
    times: dict[str, list[float]] = {"read-only": [], "none": [], "plain": []}
    with tempfile.TemporaryDirectory() as folder:
        tmp = sandbox.make_tmp()
        quiet = {"cwd": folder, "stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL}
        try:
            for _ in range(SANDBOX_RUNS):  # interleaved, so that load on the machine falls on all alike
                for name in times:
                    started = time.perf_counter()
                    if name == "plain":
                        process = subprocess.Popen("true", shell=True, start_new_session=True, **quiet)
                        process.wait()
                    else:
                        mode = sandbox.READ_ONLY if name == "read-only" else None
                        process = sandbox.popen("true", mode=mode, workspace=Path(folder), tmp=tmp, **quiet)
                        process.wait()
                        sandbox.finish(process)
                    times[name].append(time.perf_counter() - started)
        finally:
            sandbox.remove_tmp(tmp)
    read_only, none, plain = (statistics.median(times[name]) * 1000 for name in times)
    print(f"\nsandbox: read-only adds {read_only - none:.2f} ms per command (target under 5 ms): median of "
          f"{SANDBOX_RUNS} runs of `true` {read_only:.2f} ms read-only, {none:.2f} ms mode=None, "
          f"{plain:.2f} ms plain Popen")


if __name__ == "__main__":
    main()
