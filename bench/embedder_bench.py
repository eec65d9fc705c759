"""MiniLM embedder benchmark: picoora's numpy encoder against onnxruntime on the same int8 model.

    .venv/bin/python bench/embedder_bench.py            # both engines, 5 fresh processes each (~1 min on 2 cores)
    .venv/bin/python bench/embedder_bench.py --runs 1

Every figure comes from a fresh process that does one thing, so RSS is the engine's own:
  load      imports excluded: reading the model and tokenizer, up to the first vector
  RSS       after loading and embedding one query, with the model still loaded; peak = ru_maxrss
  query     p50 of 30 single-sentence embeds (wall, and the thread's CPU: steadier on a shared machine)
  RSS+30    RSS after those 30: from the second pass on the numpy engine keeps the encoder's float32 weights
  repeat    a query embedded again (answered from the recent queries)
  batch     100 stored-memory-like sentences in one embed call
  +agent    the same process after first importing what a one-shot `picoora agent -m` turn imports
            (pydantic, httpx, ollama), to show the whole budget
``numpy-transient`` is the numpy engine as it was before issue 26, dequantising every matrix on every pass.
onnxruntime is no longer a picoora dependency; its column is measured only when it is installed, with the
session options the previous implementation used (2 threads, no spinning, no arena; folded in memory).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.recall_bench import synthetic_memories  # noqa: E402
from picoora.store.embedder import MiniLMEmbedder  # noqa: E402

QUERY = "What programming language do I prefer?"


def rss_mb() -> float:
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS")) / 1024


class OnnxruntimeModel:
    """The replaced engine behind MiniLMEmbedder's own tokenizer, batching and pooling."""

    def __init__(self):
        import onnxruntime as ort

        from picoora.store.embedder import _bundled_model_path

        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = 2, 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.enable_cpu_mem_arena = False
        self._session = ort.InferenceSession(str(_bundled_model_path()), sess_options=options,
                                             providers=["CPUExecutionProvider"])

    def hidden_states(self, input_ids, attention_mask):
        import numpy as np

        feeds = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": np.zeros_like(input_ids)}
        return self._session.run(None, feeds)[0]


def child(engine: str, agent_imports: bool) -> None:
    if agent_imports:
        import httpx  # noqa: F401
        import ollama  # noqa: F401
        import pydantic  # noqa: F401
    import numpy  # noqa: F401
    import tokenizers  # noqa: F401

    if engine == "numpy-transient":
        import picoora.store.minilm

        picoora.store.minilm.KEEP_AFTER_USES = 1 << 62
    base = rss_mb()
    started = time.perf_counter()
    embedder = MiniLMEmbedder()
    if engine == "onnxruntime":
        embedder._load()  # the tokenizer; the numpy model it maps is dropped before it is used
        embedder._model = OnnxruntimeModel()
    embedder.embed([QUERY])
    load = time.perf_counter() - started
    after_query, peak_query = rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    singles, cpu = [], []
    for i in range(30):
        t, c = time.perf_counter(), time.thread_time()
        embedder.embed([f"{QUERY} ({i})"])
        singles.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    after_queries = rss_mb()
    t = time.perf_counter()
    embedder.embed([f"{QUERY} (3)"])
    repeat = time.perf_counter() - t
    texts = synthetic_memories(100)
    t = time.perf_counter()
    embedder.embed(texts)
    batch = time.perf_counter() - t
    print(json.dumps({
        "base_mb": base, "load_s": load, "rss_mb": after_query, "peak_mb": peak_query,
        "query_ms": statistics.median(singles) * 1000, "query_cpu_ms": statistics.median(cpu) * 1000,
        "rss_after_queries_mb": after_queries, "repeat_us": repeat * 1e6, "batch_s": batch,
        "peak_after_batch_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def run(engine: str, agent_imports: bool, runs: int) -> dict | None:
    results = []
    for _ in range(runs):
        argv = [sys.executable, __file__, "--child", engine] + (["--agent-imports"] if agent_imports else [])
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  {engine}: failed: {done.stderr.strip().splitlines()[-1]}")
            return None
        results.append(json.loads(done.stdout))
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per engine (medians are shown)")
    parser.add_argument("--child", choices=["numpy", "numpy-transient", "onnxruntime"], help=argparse.SUPPRESS)
    parser.add_argument("--agent-imports", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.agent_imports)
        return
    import importlib.util

    engines = ["numpy", "numpy-transient"] + (["onnxruntime"] if importlib.util.find_spec("onnxruntime") else [])
    print(f"MiniLM-L6 int8, medians of {args.runs} fresh processes")
    print(f"  {'engine':31s} {'base':>6s} {'load':>7s} {'RSS':>6s} {'peak':>6s} {'query':>8s} {'CPU':>7s} "
          f"{'RSS+30':>6s} {'repeat':>7s} {'100 texts':>9s} {'peak':>6s}")
    for engine in engines:
        for agent_imports in (False, True):
            m = run(engine, agent_imports, args.runs)
            if m is None:
                continue
            label = engine + (" +agent imports" if agent_imports else "")
            print(f"  {label:31s} {m['base_mb']:4.0f}MB {m['load_s'] * 1000:5.0f}ms {m['rss_mb']:4.0f}MB "
                  f"{m['peak_mb']:4.0f}MB {m['query_ms']:6.1f}ms {m['query_cpu_ms']:5.1f}ms "
                  f"{m['rss_after_queries_mb']:4.0f}MB {m['repeat_us']:5.0f}us {m['batch_s']:8.2f}s "
                  f"{m['peak_after_batch_mb']:4.0f}MB")
    print("  (base: RSS after imports; RSS/peak: after load + one query; last peak: after the 100-text batch)")


if __name__ == "__main__":
    main()
