"""Benchmark the command line's start-up: ``picoora --help``, and one ``picoora agent -m`` turn.

The turn runs against an instant fake Ollama in a separate process, with semantic memory on (the
MiniLM embedder) and a few hundred memories stored first, so recall really embeds the question and
ranks every memory. Wall time is measured around the child process; peak RSS is the child's
``ru_maxrss`` from ``wait4``. A last cold run goes through the same steps one by one to show what
costs what.

    .venv/bin/python bench/bench_cli.py [--runs 7] [--help-runs 15] [--memories 300]

Targets (issue 2): --help <= 0.15 s; one-shot turn <= 0.6 s and <= 110 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HELP_TARGET_S = 0.15
TURN_TARGET_S = 0.6
TURN_TARGET_MB = 110
QUESTION = "What programming language do I prefer?"

PEOPLE = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jun"]
TOPICS = [
    ("works on", ["the billing service", "the mobile app", "the data pipeline", "the search index", "the CI runners"]),
    ("likes", ["hiking", "jazz", "chess", "sourdough baking", "cycling"]),
    ("lives in", ["Lyon", "Porto", "Osaka", "Nairobi", "Calgary"]),
    ("is allergic to", ["peanuts", "cats", "penicillin", "pollen", "shellfish"]),
    ("drives", ["a blue Corolla", "an old Vespa", "a red Tesla", "a rented van", "nothing, takes the tram"]),
    ("has a birthday on", ["3 March", "17 June", "9 September", "28 November", "1 January"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="one-shot turns to time (after one warm-up)")
    parser.add_argument("--help-runs", type=int, default=15)
    parser.add_argument("--memories", type=int, default=300)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="picoora-bench-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1"}
        env = {k: v for k, v in env.items() if not k.startswith("PICO_")}
        print(f"Python {sys.version.split()[0]} on {os.cpu_count()} CPUs")
        bench_help(env, args.help_runs)
        fake = start_fake_ollama(env)
        try:
            write_config(home, fake_url=fake_url(fake))
            seed_memories(env, home, args.memories)
            bench_turn(env, args.runs, args.memories)
            phase_breakdown(env)
        finally:
            fake.terminate()
            fake.wait(timeout=10)


def picoora_command() -> list[str]:
    script = Path(sys.executable).with_name("picoora")
    return [str(script)] if script.exists() else [sys.executable, "-m", "picoora"]


def run_child(command: list[str], env: dict[str, str]) -> tuple[float, float, int, str, float]:
    """(wall seconds, peak RSS in MB, exit status, stdout, CPU seconds) of one child process.
    CPU time (user + system) is the steadier number when other work shares the machine."""
    start = time.perf_counter()
    child = subprocess.Popen(
        command, env=env, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen from waiting again
    child.stdout.close()
    return wall, usage.ru_maxrss / 1024, child.returncode, out.decode(errors="replace"), usage.ru_utime + usage.ru_stime


def bench_help(env: dict[str, str], runs: int) -> None:
    commands = (("picoora --help", picoora_command()), ("python -m picoora --help", [sys.executable, "-m", "picoora"]))
    for label, command in commands:
        run_child([*command, "--help"], env)  # warm the page cache and .pyc files
        times = [run_child([*command, "--help"], env)[0] for _ in range(runs)]
        verdict = "OK" if statistics.median(times) <= HELP_TARGET_S else "OVER"
        print(f"{label:<28} median {statistics.median(times) * 1000:6.0f} ms  min {min(times) * 1000:4.0f} ms"
              f"  ({runs} runs; target <= {HELP_TARGET_S * 1000:.0f} ms: {verdict})")


def start_fake_ollama(env: dict[str, str]) -> subprocess.Popen:
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.ollama_server"], env=env, cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    fake.url = fake.stdout.readline().strip()  # type: ignore[attr-defined]
    if not fake.url.startswith("http"):  # type: ignore[attr-defined]
        raise SystemExit("the fake Ollama did not start")
    return fake


def fake_url(fake: subprocess.Popen) -> str:
    return fake.url  # type: ignore[attr-defined]


def write_config(home: Path, fake_url: str) -> None:
    config = {
        "agents": {"defaults": {"model": "qwen3:latest"}},
        "providers": {"ollama": {"api_base": fake_url, "max_retries": 0}},
        "memory": {"embedder": "minilm"},
    }
    (home / "config.json").write_text(json.dumps(config, indent=2))


def seed_memories(env: dict[str, str], home: Path, count: int) -> None:
    facts = [f"{person} {verb} {thing}." for verb, things in TOPICS for thing in things for person in PEOPLE]
    facts.insert(0, "My favorite programming language is Go.")
    contents = [facts[i % len(facts)] + ("" if i < len(facts) else f" (note {i})") for i in range(count)]
    lines = [json.dumps({"id": f"bench{i:05d}", "content": content}) for i, content in enumerate(contents)]
    seed = home / "seed.jsonl"
    seed.write_text("\n".join(lines) + "\n")
    wall, rss, status, out, _ = run_child([*picoora_command(), "memory", "import", str(seed)], env)
    if status != 0:
        raise SystemExit(f"seeding memories failed (exit {status})")
    print(f"seed: {out.strip()} in {wall:.2f} s (peak RSS {rss:.0f} MB)")


def bench_turn(env: dict[str, str], runs: int, memories: int) -> None:
    command = [*picoora_command(), "agent", "--no-stream", "-m", QUESTION]
    run_child(command, env)  # warm-up
    results = [run_child(command, env) for _ in range(runs)]
    if any(r[2] != 0 for r in results):
        raise SystemExit("a one-shot turn failed")
    walls = [r[0] for r in results]
    rss = [r[1] for r in results]
    cpu = [r[4] for r in results]
    wall_ok = "OK" if statistics.median(walls) <= TURN_TARGET_S else "OVER"
    rss_ok = "OK" if max(rss) <= TURN_TARGET_MB else "OVER"
    print(f"{'picoora agent -m':<28} median {statistics.median(walls):6.3f} s  min {min(walls):.3f} s"
          f"  ({runs} runs, {memories} memories, MiniLM; target <= {TURN_TARGET_S} s: {wall_ok})")
    print(f"{'  CPU time of the child':<28} median {statistics.median(cpu):6.3f} s  min {min(cpu):.3f} s")
    print(f"{'  peak RSS of the child':<28} median {statistics.median(rss):6.1f} MB  max {max(rss):.1f} MB"
          f"  (target <= {TURN_TARGET_MB} MB: {rss_ok})")


# Runs in a fresh interpreter: the one-shot path step by step, sequentially (as it would run without the
# overlap build_assistant arranges), with wall time and peak RSS after each step.
PHASES_SCRIPT = r"""
import asyncio, io, resource, sys, time
sys.modules.setdefault("httpx._main", None)  # as picoora.cli.app.main does
start = last = time.perf_counter()
def step(name):
    global last
    now = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  {name:<40} {(now - last) * 1000:6.0f} ms   peak RSS {peak:5.0f} MB")
    last = now
import typer
from picoora.cli import app
step("import typer + picoora.cli")
from picoora.config import load_config, workspace_path
config = load_config()
step("load config (pydantic)")
from picoora.store import open_store
store = open_store(config)
step("open the file store")
from picoora.llm import create_llm
llm = create_llm(config)
step("create the LLM (import ollama, httpx)")
from picoora.tools import default_registry
tools = default_registry(config)
step("tool registry")
from picoora.agent import Agent
from picoora.config import secret_values
from picoora.tools.registry import tool_settings
agent = Agent(store=store, llm=llm, tools=tools, settings=config.agents.defaults, workspace=workspace_path(config),
              secrets=secret_values(config), tool_settings=tool_settings(config))
step("agent loop")
store.memories.recall("warm-up question")
step("first recall (loads MiniLM)")
from picoora.cli.render import TurnRenderer
async def turn():
    await agent.run_turn("bench:phases", sys.argv[1], TurnRenderer(io.StringIO(), io.StringIO(), stream=False))
    await llm.close()
asyncio.run(turn())
step("the turn (recall + fake model + saves)")
store.close()
print(f"  {'total (without interpreter start)':<40} {(time.perf_counter() - start) * 1000:6.0f} ms")
"""


def phase_breakdown(env: dict[str, str]) -> None:
    print("where a one-shot turn's time and memory go (one cold run, steps in sequence):")
    subprocess.run([sys.executable, "-c", PHASES_SCRIPT, QUESTION], env=env, cwd=REPO, stdin=subprocess.DEVNULL,
                   check=True)


if __name__ == "__main__":
    main()
