"""Benchmark what each person costs a process: RSS after 1, 5 and 50 people's stores have each embedded.

For each count, a fresh child process (so the counts do not share what an earlier one loaded):
  1. opens the owner's assistant (``build_assistant``) on a temporary workspace, file store, the bundled
     MiniLM embedder, and lets the owner add and recall one memory (the owner's embedder is loaded);
  2. opens that many people's scoped stores and in each adds one memory and runs the automatic recall
     (``confident_only``, which also reads the background vectors) for a query the store embeds; the
     stores stay open, as a gateway keeps them. ``--via store`` opens them with ``open_person_store`` and
     calls them directly; ``--via assistant`` takes ``Assistant.open_for_person`` and awaits its ``astore``, as
     a turn does (so each person's executor threads count too);
  3. reports VmRSS (``/proc/self/status``) after step 1 and after step 2.

    .venv/bin/python bench/people_bench.py [--counts 1 5 50] [--embedder minilm|none] [--via store assistant]

Target (issue 18): 50 people within 20 MB of one person.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET_MB = 20.0


def rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024


def child(count: int, embedder: str, via: str) -> dict:
    home = Path(tempfile.mkdtemp(prefix="picoora-people-bench-"))
    os.environ["PICOORA_HOME"] = str(home)
    for name in list(os.environ):
        if name.startswith("PICO_"):
            del os.environ[name]
    from picoora.assistant import build_assistant
    from picoora.config import Config, save_config
    from picoora.store.scoped import open_person_store

    config = Config.model_validate({
        "providers": {"ollama": {"api_base": "http://127.0.0.1:9", "max_retries": 0}},  # never called
        "memory": {"embedder": embedder},
    })
    save_config(config)
    assistant = build_assistant(config)
    owner = assistant.store
    owner.memories.add("The owner's front door code is 4417", 0.9, "fact")
    owner.memories.recall("what is the door code", confident_only=True)
    base = rss_mb()
    started = time.perf_counter()
    if via == "store":
        stores = []
        for n in range(count):
            store = open_person_store(config, owner, f"guest-{n}")
            stores.append(store)
            store.memories.add(f"Guest {n} drinks green tea with {n} sugars", 0.6, "preference")
            store.memories.recall("what does this guest drink", confident_only=True)
        took = time.perf_counter() - started
        after = rss_mb()
        for store in stores:
            store.close()
    else:
        import asyncio

        guests = []

        async def people() -> None:
            for n in range(count):
                guest = assistant.open_for_person(f"guest-{n}")
                guests.append(guest)
                await guest.astore.memories.add(f"Guest {n} drinks green tea with {n} sugars", 0.6, "preference")
                await guest.astore.memories.recall("what does this guest drink", confident_only=True)

        asyncio.run(people())
        took = time.perf_counter() - started
        after = rss_mb()
    asyncio_close(assistant)
    return {"count": count, "base_mb": base, "after_mb": after, "seconds": took}


def asyncio_close(assistant) -> None:
    import asyncio

    asyncio.run(assistant.aclose())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 5, 50])
    parser.add_argument("--embedder", choices=("minilm", "none"), default="minilm")
    parser.add_argument("--via", choices=("store", "assistant"), nargs="+", default=["store", "assistant"])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.embedder, args.via[0])))
        return

    for via in args.via:
        results = []
        for count in args.counts:
            out = subprocess.run([sys.executable, __file__, "--child", str(count), "--embedder", args.embedder,
                                  "--via", via], capture_output=True, text=True, check=True, cwd=REPO)
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))

        how = "open_person_store" if via == "store" else "Assistant.open_for_person + its astore"
        print(f"people on files ({how}), embedder {args.embedder}: RSS of a process with the owner's assistant")
        for r in results:
            print(f"  {r['count']:>3} people: owner alone {r['base_mb']:.1f} MB, with the people {r['after_mb']:.1f} "
                  f"MB (+{r['after_mb'] - r['base_mb']:.1f} MB, {r['seconds'] * 1000 / r['count']:.0f} ms per person)")
        by_count = {r["count"]: r["after_mb"] for r in results}
        if 1 in by_count and 50 in by_count:
            extra = by_count[50] - by_count[1]
            verdict = "ok" if extra <= TARGET_MB else "over"
            print(f"  50 people vs 1: +{extra:.1f} MB (target <= {TARGET_MB:g} MB: {verdict})")


if __name__ == "__main__":
    main()
