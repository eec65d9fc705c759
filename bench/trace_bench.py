"""Turn traces on files: `picoora trace last` and `picoora trace <id>` latency by the number of traces kept.

    .venv/bin/python bench/trace_bench.py                     # 10,000 and 50,000 traces
    .venv/bin/python bench/trace_bench.py --sizes 1000 --runs 50

Traces are appended through ``FileStore.traces.append`` (what every turn does), about 1 KB each as a turn
with recall and a tool call leaves them, over 40 sessions; one session ("rare") has a single trace near the
start. Each lookup is timed on a freshly opened store, as the CLI opens one per command; the open itself
is not counted. Cases:

* ``last``: ``last_trace()``; ``last -s``: the last turn of a busy session, and of the rare one (after
  rotation it has no trace left, the worst case: every generation is asked);
* ``<id> newest`` / ``<id> 5,000 back``: a recent turn, and one in an older generation once the file has
  rotated; ``<id> missing``: an id no turn has (every generation is asked);
* ``last, index lost``: ``last_trace()`` with the current generation's index deleted first, what the first
  lookup after a crash or a reboot pays (the index is rebuilt from the log).

Target (issue 18): under 20 ms at 50,000 traces. The append cost per turn is printed too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from picoora.store.base import RecalledMemory, ToolCallTrace, TurnTrace  # noqa: E402
from picoora.store.files import FileStore  # noqa: E402

SESSIONS = 40
TARGET_MS = 20.0


def synthetic_trace(n: int) -> TurnTrace:
    session = "rare:one" if n == 10 else f"web:session-{n % SESSIONS}"
    recalled = [RecalledMemory(f"m{n % 97:04d}{k}", 0.61 - k / 20, 0.55 - k / 20,
                               f"The user mentioned fact number {n}-{k} about the garden shed and the bike")
                for k in range(3)]
    tools = [ToolCallTrace(f"call_{n}", "recall", {"query": f"garden shed {n}"}, 3.2, True,
                           ("Found 3 memories: " + "the garden shed is painted green; " * 8)[:300])]
    return TurnTrace(f"{n:012x}", session, started_at=datetime.now(timezone.utc), provider="ollama",
                     model="qwen3:latest", prompt_tokens=1800 + n % 300, completion_tokens=120, model_calls=2,
                     first_token_ms=240.0, latency_ms=1830.5, recalled=recalled, tool_calls=tools,
                     stop_reason="answer")


def timed(workspace: Path, runs: int, call, prepare=None) -> tuple[float, float, object]:
    times, found = [], None
    for _ in range(runs):
        if prepare:
            prepare()
        store = FileStore(workspace)
        started = time.perf_counter()
        found = call(store)
        times.append((time.perf_counter() - started) * 1000)
        store.close()
    return min(times), statistics.median(times), found


def bench(size: int, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="picoora-trace-") as tmp:
        workspace = Path(tmp)
        store = FileStore(workspace)
        started = time.perf_counter()
        for n in range(size):
            store.traces.append(synthetic_trace(n))
        append_us = (time.perf_counter() - started) / size * 1e6
        store.close()
        traces = workspace / ".picoora" / "traces"
        files = sorted(traces.iterdir())
        on_disk = sum(f.stat().st_blocks * 512 for f in files) / 2**20
        print(f"{size:,} traces: {append_us:.0f} µs per append; on disk {on_disk:.1f} MB in "
              f"{', '.join(f.name for f in files)}")
        newest, busy = f"{size - 1:012x}", f"web:session-{(size - 1) % SESSIONS}"
        cases = [
            ("last", lambda s: s.traces.last(), newest),
            ("last -s busy session", lambda s: s.traces.last(busy), newest),
            ("last -s rare session", lambda s: s.traces.last("rare:one"), None),
            ("<id> newest", lambda s: s.traces.get(newest), newest),
            ("<id> 5,000 back", lambda s: s.traces.get(f"{size - 5000:012x}"), f"{size - 5000:012x}"),
            ("<id> missing", lambda s: s.traces.get("no-such-turn"), None),
        ]

        def lose_index() -> None:
            (traces / "turns.idx").unlink(missing_ok=True)

        for label, call, expected in cases:
            low, median, found = timed(workspace, runs, call)
            got = getattr(found, "turn_id", None)
            note = "" if expected is None or got == expected else f"  (WRONG: {got})"
            if expected is None and label.startswith("last -s"):
                note = f"  ({'found' if got else 'none kept'})"
            mark = "ok" if median < TARGET_MS else "over target"
            print(f"  trace {label:<22} min {low:8.2f} ms  median {median:8.2f} ms  {mark}{note}")
        low, median, _ = timed(workspace, max(runs // 3, 1), lambda s: s.traces.last(), prepare=lose_index)
        print(f"  trace {'last, index lost':<22} min {low:8.2f} ms  median {median:8.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 50_000])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]} on {os.cpu_count()} CPUs; target median < {TARGET_MS:.0f} ms")
    for size in args.sizes:
        bench(size, args.runs)


if __name__ == "__main__":
    main()
