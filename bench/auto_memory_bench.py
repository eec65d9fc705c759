"""Automatic memory: how precise the rules are, and what they add to a turn.

    .venv/bin/python bench/auto_memory_bench.py           # ~15 s on 2 cores (MiniLM)

Sets: tests/data/auto_memory_messages.jsonl (the rules were written against it) and
tests/data/auto_memory_heldout.jsonl (written afterwards, not used for tuning): a person's messages, each with
the facts it states (distinctive substrings). Printed, per set: precision (kept sentences that are facts the
person stated) and recall (stated facts kept); then the cost per turn, over every message of both sets in
order, through ``AutoMemory.remember`` on a real FileStore with MiniLM: reading the message (the rules) and
storing what it states (embedding, dedup, supersession). That work runs after the answer is sent, in the
background; the reply waits for none of it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from picoora.agent.auto_memory import AutoMemory, facts_in  # noqa: E402
from picoora.store.aio import AsyncStore  # noqa: E402
from picoora.store.embedder import MiniLMEmbedder  # noqa: E402
from picoora.store.files import FileStore  # noqa: E402

SETS = ("auto_memory_messages.jsonl", "auto_memory_heldout.jsonl")


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (ROOT / "tests" / "data" / name).read_text().splitlines()]


def quality(rows: list[dict]) -> tuple[float, float, int]:
    good = bad = found = labels = 0
    for row in rows:
        got = facts_in(row["message"])
        matched = [any(label.lower() in fact.lower() for label in row["facts"]) for fact in got]
        good, bad = good + sum(matched), bad + len(matched) - sum(matched)
        labels += len(row["facts"])
        found += sum(any(label.lower() in fact.lower() for fact in got) for label in row["facts"])
    return good / max(1, good + bad), found / max(1, labels), good + bad


async def cost(messages: list[str]) -> tuple[float, float, float, int]:
    """Median µs of the rules per message; median and 95th percentile ms of a whole turn's memory work."""
    rules_us = []
    for message in messages:
        started = time.perf_counter()
        facts_in(message)
        rules_us.append((time.perf_counter() - started) * 1e6)
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        store = FileStore(Path(tmp), embedder=embedder)
        astore = AsyncStore(store)
        memory = AutoMemory(astore, "owner")
        turn_ms, stored = [], 0
        try:
            for n, message in enumerate(messages):
                started = time.perf_counter()
                stored += len(await memory.remember(message, "bench:1", f"t{n}"))
                turn_ms.append((time.perf_counter() - started) * 1000)
        finally:
            astore.close()
            store.close()
    return float(np.median(rules_us)), float(np.median(turn_ms)), float(np.percentile(turn_ms, 95)), stored


def main() -> None:
    messages = []
    for name in SETS:
        rows = load(name)
        messages += [row["message"] for row in rows]
        precision, recall, kept = quality(rows)
        print(f"{name}: {len(rows)} messages, {kept} facts kept: precision {precision:.3f}  recall {recall:.3f}")
    rules_us, median_ms, p95_ms, stored = asyncio.run(cost(messages))
    print(f"cost per turn ({len(messages)} turns, {stored} memories stored): rules {rules_us:.0f} µs (median); "
          f"rules + storing {median_ms:.1f} ms median, {p95_ms:.1f} ms p95, after the answer")


if __name__ == "__main__":
    main()
