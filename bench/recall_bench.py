"""Semantic-memory benchmark: embedding throughput, recall latency at 10,000 memories.

    .venv/bin/python bench/recall_bench.py                # all measurements (about a minute on 2 cores)
    .venv/bin/python bench/recall_bench.py --calibrate    # cosine distributions behind ranking.py's constants

Recall latency excludes the query's embedding (the target is p50 <= 30 ms with 10,000 memories): query
vectors are computed first and handed to the index through a caching embedder.
Model load time and memory, against onnxruntime: bench/embedder_bench.py.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from picoora.store import ranking  # noqa: E402
from picoora.store.base import MemoryRecord  # noqa: E402
from picoora.store.embedder import MiniLMEmbedder  # noqa: E402
from picoora.store.files.memory_index import MemoryIndex  # noqa: E402
from picoora.store.keywords import KeywordIndex, tokenize  # noqa: E402

DATA = ROOT / "tests" / "data"

# Questions no stored fact answers: their best cosine is what the similarity floor must stay above.
UNANSWERABLE = [
    "What's the weather going to be like tomorrow?", "How do I reverse a linked list in Python?",
    "Explain quantum entanglement simply", "Who won the football world cup in 1998?",
    "What is the capital of Australia?", "Translate 'good morning' into German", "Write a haiku about autumn leaves",
    "How many calories are in a banana?", "What's the best way to learn guitar chords?", "Summarise the plot of Hamlet",
    "Is it safe to eat raw cookie dough?", "What time is it in New York right now?", "How does a refrigerator work?",
    "Recommend a good podcast about history", "What are black holes made of?", "Convert 100 fahrenheit to celsius",
    "How do vaccines train the immune system?", "What's the difference between TCP and UDP?",
    "Give me a recipe for pancakes", "Why is the sky blue?", "How tall is Mount Everest?",
    "What does the stock market do on holidays?", "Tell me a joke about cats", "How do I fix a flat tyre?",
    "What is the population of Brazil?", "How do I center a div in CSS?", "Which planets have rings?",
    "What's a good name for a goldfish?", "How long should I boil an egg?", "Explain the rules of cricket",
]

_NAMES = "Anna Tomasz Elena Rahul Priya Kenji Marta Sven Hannah Jacques Dario Mia Leo Rosa Okafor Weber Ines".split()
_PLACES = "Lyon Kraków Porto Berlin Helsinki Delft Lisbon Gdansk Tokyo Bangalore Piedmont Algarve Madrid Oslo".split()
_THINGS = [
    "the quarterly report", "the garden shed", "the new laptop", "the billing migration", "the search service",
    "the bathroom tiles", "the marathon plan", "the holiday budget", "the dentist appointment", "the car insurance",
    "the team offsite", "the API latency work", "the data warehouse", "the school concert", "the flat lease",
]
_TEMPLATES = [
    "{name} said {thing} should be finished before {day}",
    "Meeting with {name} in {place} about {thing} on {day}",
    "{name} prefers to discuss {thing} by email, never by phone",
    "Ticket {code} tracks {thing}; {name} owns it",
    "The invoice {code} for {thing} was {n} euros",
    "{name} moved to {place} in {year}",
    "Reminder: pay {n} euros for {thing} by {day}",
    "{name}'s phone PIN hint is {n}",
    "Error {code} appeared while {name} was working on {thing}",
    "We plan to visit {place} with {name} in {year}",
    "{name} recommended a restaurant near the station in {place}",
    "The spare key for {thing} is with {name}",
]
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()


def synthetic_memories(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        template = _TEMPLATES[i % len(_TEMPLATES)]
        out.append(template.format(
            name=rng.choice(_NAMES), place=rng.choice(_PLACES), thing=rng.choice(_THINGS), day=rng.choice(_DAYS),
            code=f"{rng.choice(['ORA', 'INV', 'OPS', 'MOB'])}-{rng.randrange(10**5):05d}", n=rng.randrange(10, 5000),
            year=rng.randrange(1990, 2027),
        ))
    return out


def load_pairs(data: Path = DATA) -> tuple[list[dict], list[dict], list[str]]:
    """(paired questions, code queries, every fact once) of the set in ``data`` (tests/data: the tuning set)."""
    pairs = [json.loads(line) for line in (data / "recall_pairs.jsonl").read_text().splitlines()]
    codes = [json.loads(line) for line in (data / "recall_codes.jsonl").read_text().splitlines()]
    facts = list(dict.fromkeys([p["fact"] for p in pairs] + [c["fact"] for c in codes]))
    return pairs, codes, facts


class CachedEmbedder:
    """Hands out precomputed vectors, so a timed search does not include the query's embedding."""

    def __init__(self, inner: MiniLMEmbedder, texts: list[str]):
        self.model_id, self.dim, self.similarity_floor = inner.model_id, inner.dim, inner.similarity_floor
        self._vectors = dict(zip(texts, inner.embed(texts), strict=True))

    def embed(self, texts):
        import numpy as np

        return np.stack([self._vectors[t] for t in texts])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


# ---------------------------------------------------------------------------- throughput and latency


def measure_recall(count: int, n_queries: int) -> None:
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    texts = synthetic_memories(count)
    started = time.perf_counter()
    vectors = embedder.embed(texts)
    elapsed = time.perf_counter() - started
    tokens = sum(len(tokenize(t)) for t in texts) / len(texts)
    print(f"Embedding throughput: {count} memories ({tokens:.0f} terms each) in {elapsed:.1f} s "
          f"= {count / elapsed:.0f}/s")
    singles = []
    for i in range(30):
        t = time.perf_counter()
        embedder.embed([f"What did {_NAMES[i % len(_NAMES)]} say about the budget?"])
        singles.append(time.perf_counter() - t)
    print(f"Single query embedding: p50 {statistics.median(singles) * 1000:.1f} ms")

    pairs, codes, facts = load_pairs()
    queries = ([p["question"] for p in pairs] + [c["query"] for c in codes]) * (n_queries // 140 + 1)
    queries = queries[:n_queries]
    cached = CachedEmbedder(embedder, list(dict.fromkeys(queries + facts)))
    for label, index in (("semantic", MemoryIndex(cached)), ("keyword-only (degraded)", MemoryIndex(None))):
        started = time.perf_counter()
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            index.add(MemoryRecord(id=f"s{i}", content=text, embedding_model=cached.model_id), vector)
        for i, fact in enumerate(facts):
            index.add(MemoryRecord(id=f"f{i}", content=fact, embedding_model=cached.model_id), cached.embed([fact])[0])
        build = time.perf_counter() - started
        latencies = []
        for query in queries:
            t = time.perf_counter()
            index.search(query, 5)
            latencies.append(time.perf_counter() - t)
        print(f"Recall over {len(index)} memories, {label}: index build {build:.2f} s; per query "
              f"p50 {percentile(latencies, 50) * 1000:.2f} ms  p95 {percentile(latencies, 95) * 1000:.2f} ms  "
              f"max {max(latencies) * 1000:.2f} ms (query embedding excluded)")


# ---------------------------------------------------------------------------- calibration


def calibrate() -> None:
    import numpy as np

    pairs, codes, facts = load_pairs()
    embedder = MiniLMEmbedder()
    fact_vectors = embedder.embed(facts)
    where = {f: i for i, f in enumerate(facts)}
    questions = [p["question"] for p in pairs]
    sims = embedder.embed(questions) @ fact_vectors.T
    truth = np.array([where[p["fact"]] for p in pairs])
    true_cos = sims[np.arange(len(pairs)), truth]
    unanswered_best = (embedder.embed(UNANSWERABLE) @ fact_vectors.T).max(axis=1)
    print(f"{len(pairs)} pairs over {len(facts)} facts, model {embedder.model_id}")
    print("true pairs cosine:            " + "  ".join(
        f"p{q} {np.percentile(true_cos, q):.3f}" for q in (1, 5, 10, 50)) + f"  min {true_cos.min():.3f}")
    print("best cosine, unanswerable:    " + "  ".join(
        f"p{q} {np.percentile(unanswered_best, q):.3f}" for q in (10, 50, 90)) + f"  max {unanswered_best.max():.3f}")
    for floor in (0.15, 0.2, 0.25, 0.3):
        print(f"  floor {floor:.2f}: keeps {np.mean(true_cos >= floor):.1%} of true pairs; "
              f"{np.mean(unanswered_best >= floor):.0%} of unanswerable questions still return something")

    keywords = KeywordIndex()
    for i, fact in enumerate(facts):
        keywords.add(str(i), fact)

    def recall_at(order_of) -> tuple[float, float]:
        ranks = [list(order_of(i, q)).index(truth[i]) for i, q in enumerate(questions)]
        return float(np.mean([r == 0 for r in ranks])), float(np.mean([r < 5 for r in ranks]))

    def bm25(q: str) -> np.ndarray:
        out = np.zeros(len(facts))
        for key, value in keywords.scores(tokenize(q)).items():
            out[int(key)] = value
        return out

    def rrf(i: int, q: str) -> np.ndarray:
        rank_cos = np.argsort(np.argsort(-sims[i]))
        rank_bm25 = np.argsort(np.argsort(-bm25(q), kind="stable"))
        return np.argsort(-(1 / (60 + rank_cos) + 1 / (60 + rank_bm25)))

    index = MemoryIndex(CachedEmbedder(embedder, facts + questions))
    for i, fact in enumerate(facts):
        index.add(MemoryRecord(id=str(i), content=fact, embedding_model=embedder.model_id), fact_vectors[i])

    def ours(i: int, q: str) -> list[int]:
        found = [int(m.memory.id) for m in index.search(q, len(facts)).matches]
        return found + [j for j in range(len(facts)) if j not in found]  # below the floor: never returned

    for label, order_of in (("cosine only", lambda i, q: np.argsort(-sims[i])),
                            ("equal-weight RRF cosine+BM25 (k=60)", rrf),
                            ("picoora ranking (floor, code boost, adjustments)", ours)):
        at1, at5 = recall_at(order_of)
        print(f"  {label:50s} recall@1 {at1:.3f}  recall@5 {at5:.3f}")
    print(f"constants: floor {embedder.similarity_floor}, CODE_BOOST {ranking.CODE_BOOST}, "
          f"CODE_ADMIT {ranking.CODE_ADMIT}, MAX_ADJUSTMENT {ranking.MAX_ADJUSTMENT}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=280)
    parser.add_argument("--calibrate", action="store_true", help="print the floor / ranking calibration instead")
    args = parser.parse_args()
    if args.calibrate:
        calibrate()
    else:
        measure_recall(args.memories, args.queries)


if __name__ == "__main__":
    main()
