"""Bulk embedding throughput: `picoora memory import` and `picoora memory reindex` of N short memories.

    .venv/bin/python bench/bulk_bench.py [--memories 10000]
    .venv/bin/python bench/bulk_bench.py --memories 100000 --steps 10   # rate per 10,000 as the store grows
    .venv/bin/python bench/bulk_bench.py --memories 100000 --store-side  # the part that grew, without embedding

Target (issue 12): 10,000 short memories in under 40 s on this 2-core machine. Target (issue 26): with
``--steps``, the memories go in as that many successive imports into the same store (the reindex is left out),
and the rate of each should not fall as the store grows (it fell from 336/s to 124/s over 100,000). The memories are the
synthetic ones of bench/recall_bench.py (8-12 words each; about a fifth repeat an earlier one exactly or differ
only in wording, and import skips those). Peak RSS is the largest of the command and its worker processes.
``--store-side`` times only what the store does per imported chunk (the duplicate check, the append, the
index update), with random unit vectors instead of embeddings, in a fresh process of the code on PYTHONPATH,
into one store taken from empty to the given size (a snapshot of what was there at each 10 % point, as
successive imports leave it): that is the per-record cost that grew with the store. Each
command runs as a real child process; its wall time includes start-up, worker start and the durable per-chunk
writes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_cli import picoora_command, run_child  # noqa: E402
from recall_bench import synthetic_memories  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=0, help="import in this many parts, timing each")
    parser.add_argument("--store-side", action="store_true", help="time the store's part only (no embedding)")
    args = parser.parse_args()
    if args.store_side:
        subprocess.run([sys.executable, "-c", STORE_SIDE_SCRIPT, str(args.memories)], cwd=tempfile.gettempdir(),
                       check=True)
        return
    with tempfile.TemporaryDirectory(prefix="picoora-bulk-") as tmp:
        home = Path(tmp)
        env = {k: v for k, v in {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1"}.items()
               if not k.startswith("PICO_")}
        config = {"agents": {"defaults": {"model": "qwen3:latest"}}, "memory": {"embedder": "minilm"}}
        (home / "config.json").write_text(json.dumps(config))
        seed = home / "seed.jsonl"
        texts = synthetic_memories(args.memories)
        seed.write_text("".join(json.dumps({"id": f"b{i:06d}", "content": t}) + "\n" for i, t in enumerate(texts)))
        print(f"Python {sys.version.split()[0]} on {os.cpu_count()} CPUs; {args.memories:,} memories")
        if args.steps:
            import_in_steps(env, home, texts, args.steps)
            return
        for label, command in (("memory import", ["memory", "import", str(seed)]),
                               ("memory reindex", ["memory", "reindex"])):
            wall, rss, status, out, cpu = run_child([*picoora_command(), *command], env)
            if status != 0:
                raise SystemExit(f"{label} failed (exit {status})")
            done = int(re.search(r"(\d+) memories", out).group(1))  # import skips exact repeats in the set
            print(f"  {label:<15} {wall:6.1f} s  = {done / wall:5.0f} memories/s  (CPU {cpu:.1f} s, "
                  f"peak RSS {rss:.0f} MB): {out.strip()}")


# In a fresh interpreter (the picoora on PYTHONPATH): chunks of CHUNK records with random vectors go through
# MemoryLog.import_records, as `memory import` stores them; every tenth of the way the log is snapshotted, as
# the end of one import and the start of the next would.
STORE_SIDE_SCRIPT = r"""
import sys, tempfile, time
from pathlib import Path
import numpy as np
from picoora.store.base import MemoryRecord
from picoora.store.bulk_embed import CHUNK
from picoora.store.embedder import MINILM_MODEL_ID, MiniLMEmbedder
from picoora.store.files.file_memories import MemoryLog
from picoora.store.files.memory_index import MemoryIndex
total = int(sys.argv[1])
log = Path(tempfile.mkdtemp()) / "memories.jsonl"
memories = MemoryLog(log, lambda anchors=None: MemoryIndex(MiniLMEmbedder(), anchors=anchors), MINILM_MODEL_ID)
rng = np.random.default_rng(5)
step, done, spent = max(CHUNK, total // 10 // CHUNK * CHUNK), 0, 0.0
while done < total:
    vectors = rng.standard_normal((CHUNK, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = [MemoryRecord(id=f"r{done + i:07d}", content=f"imported memory {done + i} about item {i}")
               for i in range(CHUNK)]
    t = time.process_time()
    memories.import_records(records, list(vectors), MINILM_MODEL_ID)
    spent += time.process_time() - t
    done += CHUNK
    if done % step == 0:
        print(f"  store side, memories {done - step:>7,} to {done:>7,}: {spent / step * 1000:.2f} ms CPU per record",
              flush=True)
        spent = 0.0
        memories.compact()  # what the next import starts from: a snapshot of everything before it
"""


def import_in_steps(env: dict[str, str], home: Path, texts: list[str], steps: int) -> None:
    """``steps`` imports of an equal share each into one growing store, with each one's rate."""
    size = -(-len(texts) // steps)
    stored = 0
    for step in range(steps):
        part = home / f"part{step}.jsonl"
        part.write_text("".join(json.dumps({"id": f"b{i:06d}", "content": texts[i]}) + "\n"
                                for i in range(step * size, min((step + 1) * size, len(texts)))))
        wall, rss, status, out, cpu = run_child([*picoora_command(), "memory", "import", str(part)], env)
        if status != 0:
            raise SystemExit(f"memory import of part {step} failed (exit {status})")
        done = int(re.search(r"(\d+) memories", out).group(1))
        print(f"  import {step + 1:>2}/{steps} into a store of {stored:>7,}: {wall:6.1f} s = "
              f"{done / wall:5.0f} memories/s (CPU {cpu:.1f} s, peak RSS {rss:.0f} MB): {out.strip()}", flush=True)
        stored += done


if __name__ == "__main__":
    main()
