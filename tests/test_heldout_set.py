"""tests/data/heldout: the held-out recall set, written after the ranking was frozen and never tuned on.

It is only useful while it stays unseen: nothing of it may come from the tuning set (tests/data), and each
code query must be answerable by its code alone. The measurement through the real bundled MiniLM is slow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from picoora.store.base import MemoryRecord
from picoora.store.keywords import code_terms, tokenize

DATA = Path(__file__).parent / "data"
HELDOUT = DATA / "heldout"


def load(directory: Path) -> tuple[list[dict], list[dict], list[str]]:
    def rows(name: str) -> list[dict]:
        return [json.loads(line) for line in (directory / name).read_text(encoding="utf-8").splitlines()]

    offtopic = (directory / "recall_offtopic.txt").read_text(encoding="utf-8").splitlines()
    return rows("recall_pairs.jsonl"), rows("recall_codes.jsonl"), offtopic


def texts(directory: Path) -> tuple[set[str], set[str]]:
    """(facts, questions) of a set, normalised for comparison."""
    pairs, codes, offtopic = load(directory)
    facts = {row["fact"].casefold() for row in pairs + codes}
    questions = {p["question"].casefold() for p in pairs} | {c["query"].casefold() for c in codes}
    return facts, questions | {q.casefold() for q in offtopic}


def test_the_heldout_set_shares_no_fact_or_question_with_the_tuning_set():
    held_facts, held_questions = texts(HELDOUT)
    tuning_facts, tuning_questions = texts(DATA)
    background = {line.strip().casefold() for line in
                  (Path(__file__).parent.parent / "picoora/store/data/background_queries.txt").read_text().splitlines()}
    assert not held_facts & tuning_facts
    assert not held_questions & (tuning_questions | background)
    pairs, codes, offtopic = load(HELDOUT)
    assert len(pairs) + len(codes) + len(offtopic) >= 120 and all(q.strip() for q in offtopic)


def test_each_code_query_is_held_exactly_by_its_fact():
    _, codes, _ = load(HELDOUT)
    for row in codes:
        wanted = code_terms(row["query"])
        assert wanted and set(wanted) <= set(tokenize(row["fact"])), row


@pytest.mark.slow  # embeds the whole set with the real bundled MiniLM
def test_pushed_recall_on_the_heldout_set_stays_at_its_measured_level():
    from picoora.store.embedder import MiniLMEmbedder
    from picoora.store.files.memory_index import MemoryIndex

    pairs, codes, offtopic = load(HELDOUT)
    asked = [(p["question"], p["fact"]) for p in pairs] + [(c["query"], c["fact"]) for c in codes]
    facts = list(dict.fromkeys(fact for _, fact in asked))
    embedder = MiniLMEmbedder()
    index = MemoryIndex(embedder)
    for n, (fact, vector) in enumerate(zip(facts, embedder.embed(facts), strict=True)):
        index.add(MemoryRecord(id=f"h{n}", content=fact, embedding_model=embedder.model_id), vector)
    pushed = [[m.memory.content for m in index.search(q, 5, confident_only=True).matches] for q, _ in asked]
    at1 = sum(bool(found) and found[0] == fact for found, (_, fact) in zip(pushed, asked, strict=True)) / len(asked)
    at5 = sum(fact in found for found, (_, fact) in zip(pushed, asked, strict=True)) / len(asked)
    silence = sum(not index.search(q, 5, confident_only=True).matches for q in offtopic) / len(offtopic)
    print(f"held out: pushed recall@1 {at1:.3f} recall@5 {at5:.3f} silence {silence:.3f}")
    # bench/precision_bench.py --set tests/data/heldout measures 0.771 / 0.906 / 0.767; the test keeps a margin
    # (below the targets: this guards against getting worse, it does not claim them).
    assert at1 >= 0.72 and at5 >= 0.86 and silence >= 0.7
