"""Supersession: does a new value replace the old one, and do look-alike facts stay apart?

    .venv/bin/python bench/supersession_bench.py          # ~20 s on 2 cores (MiniLM)

Sets: tests/data/supersession_pairs.jsonl (the rules were written against it) and
tests/data/supersession_heldout.jsonl (written afterwards, not used for tuning). Each row is an old and a new
fact, whether the new one supersedes the old, and for those that do a question the new one answers.
Printed, per set:
  rules        precision / recall of store/supersession.py's decision on the pairs
  masked-cos   the alternative: the cosine of the value-masked texts (numbers -> #) above a threshold, at the
               threshold with the best F1 on that very set (an optimistic figure for it)
  recall       through a real FileStore with MiniLM: old then new stored, the question asked; "new first"
               counts the new fact ranked first, "old gone" the old one no longer among the 5 recalled
  without      the same with supersession turned off (no candidate search): the baseline and its add cost
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from picoora.store import supersession  # noqa: E402
from picoora.store.embedder import MiniLMEmbedder  # noqa: E402
from picoora.store.files import FileStore  # noqa: E402
from picoora.store.supersession import supersedes  # noqa: E402

SETS = ("supersession_pairs.jsonl", "supersession_heldout.jsonl")


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (ROOT / "tests" / "data" / name).read_text().splitlines()]


def precision_recall(decisions: list[bool], truth: list[bool]) -> tuple[float, float]:
    tp = sum(d and t for d, t in zip(decisions, truth, strict=True))
    fp = sum(d and not t for d, t in zip(decisions, truth, strict=True))
    fn = sum(t and not d for d, t in zip(decisions, truth, strict=True))
    return tp / max(1, tp + fp), tp / max(1, tp + fn)


def masked_cosine(rows: list[dict], embedder: MiniLMEmbedder) -> tuple[float, float, float]:
    """The best-F1 threshold on the cosine of number-masked texts, with its precision and recall."""
    def mask(text: str) -> str:
        return re.sub(r"\S*\d\S*", "#", text)

    old = embedder.embed([mask(r["old"]) for r in rows])
    new = embedder.embed([mask(r["new"]) for r in rows])
    cos = np.sum(old * new, axis=1)
    truth = [r["supersedes"] for r in rows]
    best = (0.0, 0.0, 0.0, 0.0)
    for threshold in np.arange(0.5, 1.0, 0.01):
        p, r = precision_recall([bool(c >= threshold) for c in cos], truth)
        f1 = 2 * p * r / max(1e-9, p + r)
        if f1 > best[0]:
            best = (f1, float(threshold), p, r)
    return best[1], best[2], best[3]


def end_to_end(rows: list[dict], embedder: MiniLMEmbedder) -> tuple[float, float, float]:
    """Share of changing pairs whose question recalls the new fact first, and the old no more; ms per add."""
    changing = [r for r in rows if r["supersedes"]]
    first = gone = 0
    add_ms: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, row in enumerate(changing):
            store = FileStore(Path(tmp) / str(n), embedder=embedder)
            try:
                store.memories.add(row["old"])
                started = time.perf_counter()
                store.memories.add(row["new"])
                add_ms.append((time.perf_counter() - started) * 1000)
                found = [m.memory.content for m in store.memories.recall(row["question"], 5, touch=False).matches]
            finally:
                store.close()
            first += bool(found) and found[0] == row["new"]
            gone += row["old"] not in found
    return first / len(changing), gone / len(changing), float(np.median(add_ms))


def fresh() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    return embedder


def main() -> None:
    embedder = fresh()
    for name in SETS:
        rows = load(name)
        truth = [r["supersedes"] for r in rows]
        p, r = precision_recall([supersedes(row["new"], row["old"]) for row in rows], truth)
        threshold, mp, mr = masked_cosine(rows, embedder)
        # Each run with an embedder of its own: the embedder keeps the vectors of texts it has embedded.
        new_first, old_gone, add_ms = end_to_end(rows, fresh())
        looking, supersession.candidate_query = supersession.candidate_query, lambda text: None
        try:  # the same adds without looking for what they supersede: what supersession costs
            before_first, before_gone, plain_ms = end_to_end(rows, fresh())
        finally:
            supersession.candidate_query = looking
        changing = sum(truth)
        print(f"{name}: {changing} changing pairs, {len(rows) - changing} look-alikes")
        print(f"  rules       precision {p:.3f}  recall {r:.3f}")
        print(f"  masked-cos  precision {mp:.3f}  recall {mr:.3f}  (best threshold {threshold:.2f}, fitted here)")
        print(f"  recall      new first {new_first:.3f}  old gone {old_gone:.3f}  add_memory {add_ms:.1f} ms (median)")
        print(f"  without     new first {before_first:.3f}  old gone {before_gone:.3f}  add_memory {plain_ms:.1f} ms")


if __name__ == "__main__":
    main()
