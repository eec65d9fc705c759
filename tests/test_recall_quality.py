"""Recall quality with the real default embedder (all-MiniLM-L6-v2 int8) through MemoryIndex.

tests/data/recall_pairs.jsonl: fact/question pairs phrased with little word overlap; every fact is stored,
every question asked. tests/data/recall_codes.jsonl: bare codes and names ("ORA-00942", "Kowalska") whose
fact must come first, among look-alikes (four ORA- errors, two plates, two invoices, Kowalski/Kowalska).
Both are measured with and without the keyword lane (code boost + admission) to show it costs nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from picoora.store import ranking
from picoora.store.base import MemoryRecord
from picoora.store.embedder import MiniLMEmbedder
from picoora.store.files.memory_index import MemoryIndex

pytestmark = pytest.mark.slow  # quality measurements with the real embedder: `pytest -m slow` (.ci/run) runs it

DATA = Path(__file__).parent / "data"
PAIRS = [json.loads(line) for line in (DATA / "recall_pairs.jsonl").read_text().splitlines()]
CODES = [json.loads(line) for line in (DATA / "recall_codes.jsonl").read_text().splitlines()]
FACTS = list(dict.fromkeys([p["fact"] for p in PAIRS] + [c["fact"] for c in CODES]))


@pytest.fixture(scope="module")
def stored():
    embedder = MiniLMEmbedder()
    vectors = embedder.embed(FACTS)

    def build() -> MemoryIndex:
        index = MemoryIndex(embedder)
        for i, (fact, vector) in enumerate(zip(FACTS, vectors, strict=True)):
            index.add(MemoryRecord(id=f"m{i}", content=fact, embedding_model=embedder.model_id), vector)
        return index

    return build


def _rank_of(index: MemoryIndex, query: str, fact: str, limit: int = 5) -> int | None:
    contents = [m.memory.content for m in index.search(query, limit).matches]
    return contents.index(fact) if fact in contents else None


def _measure(index: MemoryIndex) -> tuple[float, float, int]:
    ranks = [_rank_of(index, p["question"], p["fact"]) for p in PAIRS]
    at1 = sum(r == 0 for r in ranks) / len(PAIRS)
    at5 = sum(r is not None for r in ranks) / len(PAIRS)
    codes_first = sum(_rank_of(index, c["query"], c["fact"]) == 0 for c in CODES)
    return at1, at5, codes_first


def test_recall_at_5_on_paraphrases_and_codes_first(stored, monkeypatch):
    assert len(PAIRS) >= 100
    with_lane = _measure(stored())
    monkeypatch.setattr(ranking, "CODE_BOOST", 0.0)
    monkeypatch.setattr(ranking, "CODE_ADMIT", 2.0)  # never reached: the lane admits nothing
    without_lane = _measure(stored())
    for name, (at1, at5, codes_first) in (("with keyword lane", with_lane), ("cosine only", without_lane)):
        print(f"{name}: recall@1={at1:.3f} recall@5={at5:.3f} codes ranked first={codes_first}/{len(CODES)}")

    at1, at5, codes_first = with_lane
    assert at5 >= 0.9
    assert at5 >= without_lane[1] and at1 >= without_lane[0]  # the lane costs no paraphrase recall
    assert codes_first == len(CODES)


def test_a_question_the_store_cannot_answer_finds_little(stored):
    # The floor is a trade-off (see ranking.py); an off-topic question must not drag in the whole store.
    index = stored()
    matches = index.search("How do I center a div in CSS?", 10).matches
    assert len(matches) <= 3
    assert all(m.similarity is not None and m.similarity >= index.floor for m in matches)
