"""Memory at scale on files: one-shot turn time and RSS, `memory search` and recall latency, by store size.

    .venv/bin/python bench/scale_bench.py                        # turns at 0 / 1 / 1,000 / 10,000;
                                                                 # search at 10,000 / 100,000
    .venv/bin/python bench/scale_bench.py --turn-sizes 0 10000 --search-sizes 10000 --runs 5
    .venv/bin/python bench/scale_bench.py --turn-sizes --search-sizes --rewrite-sizes 10000 100000

Stores are written straight into the memory log (the format ``file_memories`` reads) with random unit
vectors tagged as the bundled MiniLM's, so seeding 100,000 memories takes seconds instead of the hours
embedding them would (search cost does not depend on what the vectors say; bulk embedding speed is
measured by bench/bulk_bench.py). The first command after seeding builds the index; the timed runs
after it are what every later process pays.

* one-shot turn: ``picoora agent --no-stream -m`` against the fake Ollama, wall time, CPU time (steadier
  when other work shares the machine) and peak RSS of the child. With 0 memories recall embeds nothing, so
  the model is not even loaded; the cost of the store's size is the difference between 1,000 and 10,000.
* ``memory search`` command: the whole ``picoora memory search`` child (start-up, the store, the embedder, the
  query, ``vector_status`` and printing): wall, CPU and peak RSS
* ``memory search`` step: wall time of ``store.memories.recall(..., touch=False)`` in a fresh process that opened
  the store (query embedding included: the model is loaded first and not counted)
* recall excluding the query's embedding: ``MemoryIndex.search`` with a precomputed query vector
* snapshot: the first open of a seeded log (no snapshot yet: the whole log is folded and written), then the
  rewrite a process pays when ``SNAPSHOT_TAIL_OPS`` lines have piled up after the snapshot (a mix of adds,
  touches, importance updates and forgets appended by another process, read and folded into a new generation)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_cli import QUESTION, picoora_command, run_child, start_fake_ollama, write_config  # noqa: E402
from picoora.store.files.file_memories import SNAPSHOT_TAIL_OPS  # noqa: E402
from recall_bench import synthetic_memories  # noqa: E402

# Runs in a fresh interpreter: opens the store, loads the model, then times recall steps.
SEARCH_SCRIPT = r"""
import json, sys, time
from picoora.config import load_config
from picoora.store import open_store
started = time.perf_counter()
store = open_store(load_config())
from picoora.store.embedder import MiniLMEmbedder
MiniLMEmbedder().embed(["load the model first"])  # the model load is not the search step
queries = json.loads(sys.argv[1])
first = None
times, cpu = [], []
for query in queries:
    t, c = time.perf_counter(), time.process_time()
    result = store.memories.recall(query, limit=5, touch=False)
    times.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
    if first is None:
        first = time.perf_counter() - started
print(json.dumps({"first": first, "times": times, "cpu": cpu}))
"""

# In-process: recall excluding the query's embedding.
INDEX_SCRIPT = r"""
import json, sys, time
import numpy as np
from picoora.config import load_config
from picoora.store import open_store
store = open_store(load_config())
from picoora.store.embedder import MiniLMEmbedder
queries = json.loads(sys.argv[1])
vectors = dict(zip(queries, MiniLMEmbedder().embed(queries)))
index = store.memories.log.searchable()
index.embed = lambda texts: np.stack([vectors[t] for t in texts])
times, cpu = [], []
for query in queries * 3:
    t, c = time.perf_counter(), time.process_time()
    index.search(query, 5)
    times.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
print(json.dumps({"times": times, "cpu": cpu}))
"""

# In a fresh interpreter: time the first open (full fold) and the rewrite after a tail of ops.
REWRITE_SCRIPT = r"""
import json, random, sys, time, tracemalloc
from pathlib import Path
import numpy as np
from picoora.store.base import MemoryRecord
from picoora.store.embedder import MINILM_DIM, MINILM_MODEL_ID, MiniLMEmbedder
from picoora.store.files.file_memories import SNAPSHOT_TAIL_OPS, MemoryLog
from picoora.store.files.memory_ops import add_op, encode_vector
from picoora.store.files.memory_index import MemoryIndex
path, count = Path(sys.argv[1]), int(sys.argv[2])
memories = MemoryLog(path, lambda anchors=None: MemoryIndex(MiniLMEmbedder(), anchors=anchors), MINILM_MODEL_ID)
t = time.perf_counter()
memories.refresh()
first = time.perf_counter() - t
memories.searchable()  # the tail index exists, as in a process that has recalled
rng, vectors = random.Random(11), np.random.default_rng(11)
reading = []
read_tail = MemoryLog._read_tail
def timed_read_tail(self):
    t = time.perf_counter()
    read_tail(self)
    reading.append(time.perf_counter() - t)
MemoryLog._read_tail = timed_read_tail
def append_tail(cycle):
    # another process's turns: adds, forgets, importance updates and touches of random memories
    ops = []
    for n in range(cycle * 10_000, cycle * 10_000 + SNAPSHOT_TAIL_OPS + 1):
        kind = n % 10
        if kind < 2:
            vector = vectors.standard_normal(MINILM_DIM).astype(np.float32)
            record = MemoryRecord(id=f"t{n:07d}", content=f"tail memory {n} about invoice INV-{n:05d}",
                                  embedding_model=MINILM_MODEL_ID)
            ops.append(add_op(record, encode_vector(vector / np.linalg.norm(vector))))
        elif kind == 2:
            ops.append({"op": "forget", "id": f"s{rng.randrange(count):07d}", "at": "2026-11-30T10:00:00+00:00"})
        elif kind == 3:
            ops.append({"op": "update", "id": f"s{rng.randrange(count):07d}", "importance": 0.9,
                        "at": "2026-11-30T10:00:00+00:00"})
        else:
            ops.append({"op": "touch", "ids": [f"s{rng.randrange(count):07d}" for _ in range(3)],
                        "at": "2026-11-30T10:00:00+00:00"})
    with open(path, "a", encoding="utf-8") as out:
        out.writelines(json.dumps(op) + "\n" for op in ops)
refreshes, rewrites = [], []
for cycle in range(3):
    append_tail(cycle)
    reading.clear()
    t = time.perf_counter()
    memories.refresh()
    refreshes.append(time.perf_counter() - t)
    rewrites.append(refreshes[-1] - sum(reading))
    assert memories._tail_ops == 0, "the snapshot was not rewritten"
refresh, rewrite = sorted(refreshes)[1], sorted(rewrites)[1]
append_tail(3)  # once more, untimed, for the memory it allocates (numpy's arrays are traced too)
tracemalloc.start()
memories.refresh()
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"first": first, "refresh": refresh, "rewrite": rewrite, "peak": peak}))
"""

QUERIES = ["What did Anna say about the quarterly report?", "invoice INV-00421", "Who moved to Porto?",
           "When is the dentist appointment?", "What programming language do I prefer?", "hi there",
           "Error ORA-01234 while working on the billing migration", "spare key for the garden shed"]


def seed(home: Path, count: int) -> None:
    """A memory log of ``count`` memories with random unit vectors, as `file_memories` writes it."""
    import numpy as np

    from picoora.store.base import MemoryRecord
    from picoora.store.embedder import MINILM_DIM, MINILM_MODEL_ID
    from picoora.store.files.memory_ops import add_op, encode_vector
    from picoora.store.layout import FileLayout

    path = FileLayout(home / "workspace").memory_log
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    texts = synthetic_memories(count)
    with open(path, "w", encoding="utf-8") as out:
        for i, text in enumerate(texts):
            vector = rng.standard_normal(MINILM_DIM).astype(np.float32)
            vector /= np.linalg.norm(vector)
            record = MemoryRecord(id=f"s{i:07d}", content=text, embedding_model=MINILM_MODEL_ID)
            out.write(json.dumps(add_op(record, encode_vector(vector)), ensure_ascii=False) + "\n")


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def bench_size(env: dict, home: Path, count: int, turn: bool, search: bool, runs: int) -> None:
    from picoora.store.layout import FileLayout

    target = FileLayout(home / "workspace").memory
    if target.exists():
        subprocess.run(["rm", "-rf", str(target)], check=True)
    seed(home, count)
    run_child([*picoora_command(), "memory", "search", "warm up the index"], env)  # builds whatever is cached
    if turn:
        command = [*picoora_command(), "agent", "--no-stream", "-m", QUESTION]
        run_child(command, env)
        results = [run_child(command, env) for _ in range(runs)]
        walls, rss, cpu = [r[0] for r in results], [r[1] for r in results], [r[4] for r in results]
        print(f"  agent -m, {count:>7,} memories: median {statistics.median(walls):.3f} s  "
              f"CPU {statistics.median(cpu):.3f} s  "
              f"peak RSS median {statistics.median(rss):.1f} MB (max {max(rss):.1f})")
    if search:
        command = [*picoora_command(), "memory", "search", QUERIES[0]]
        results = [run_child(command, env) for _ in range(runs)]
        walls, rss, cpu = [r[0] for r in results], [r[1] for r in results], [r[4] for r in results]
        print(f"  `memory search` command, {count:>7,} memories: median {statistics.median(walls):.3f} s  "
              f"CPU {statistics.median(cpu):.3f} s  peak RSS median {statistics.median(rss):.1f} MB")
        out = subprocess.run([sys.executable, "-c", SEARCH_SCRIPT, json.dumps(QUERIES)], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True)
        data = json.loads(out.stdout)
        print(f"  memory search step, {count:>7,} memories: first {data['first'] * 1000:.0f} ms after start; "
              f"p50 {p50(data['times']):.1f} ms, CPU p50 {p50(data['cpu']):.1f} ms (query embedding included)")
        out = subprocess.run([sys.executable, "-c", INDEX_SCRIPT, json.dumps(QUERIES)], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=True)
        data = json.loads(out.stdout)
        print(f"  recall excluding the query's embedding, {count:>7,} memories: p50 {p50(data['times']):.1f} ms  "
              f"max {max(data['times']) * 1000:.1f} ms, CPU p50 {p50(data['cpu']):.1f} ms")


def bench_rewrite(env: dict, home: Path, count: int) -> None:
    from picoora.store.layout import FileLayout

    layout = FileLayout(home / "workspace")
    if layout.memory.exists():
        subprocess.run(["rm", "-rf", str(layout.memory)], check=True)
    seed(home, count)
    out = subprocess.run([sys.executable, "-c", REWRITE_SCRIPT, str(layout.memory_log), str(count)], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    print(f"  snapshot, {count:>7,} memories: first open (fold the log, write) {data['first']:.2f} s; "
          f"after {SNAPSHOT_TAIL_OPS:,} more ops, the refresh {data['refresh']:.2f} s, of which the rewrite "
          f"{data['rewrite']:.2f} s (the rest reads and folds those lines; medians of 3); "
          f"peak allocation during one {data['peak'] / 2**20:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turn-sizes", type=int, nargs="*", default=[0, 1, 1000, 10_000])
    parser.add_argument("--search-sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--rewrite-sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    random.seed(7)
    with tempfile.TemporaryDirectory(prefix="picoora-scale-") as tmp:
        home = Path(tmp)
        env = {k: v for k, v in {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1"}.items()
               if not k.startswith("PICO_")}
        fake = start_fake_ollama(env)
        try:
            write_config(home, fake_url=fake.url)  # type: ignore[attr-defined]
            print(f"Python {sys.version.split()[0]} on {os.cpu_count()} CPUs")
            for count in sorted(set(args.turn_sizes) | set(args.search_sizes)):
                bench_size(env, home, count, count in args.turn_sizes, count in args.search_sizes, args.runs)
            for count in args.rewrite_sizes:
                bench_rewrite(env, home, count)
        finally:
            fake.terminate()
            fake.wait(timeout=10)


if __name__ == "__main__":
    main()
