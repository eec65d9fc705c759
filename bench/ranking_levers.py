"""The ranking levers of issue 22 item 8, each measured on the tuning set (the ranking was frozen on these numbers).

    .venv/bin/python bench/ranking_levers.py      # ~1-2 min on 2 shared cores

Tuning set: tests/data/recall_pairs.jsonl + recall_codes.jsonl (140 queries over 126 facts), as
bench/precision_bench.py stores them. Each lever changes only the order of the memories *returned* (the
`memory search` ranking: cosine floor, code boost, generic shift of ``ranking``); recall@1 / recall@5 are
printed for all queries and for each half (every other query), so a gain that is one fold's noise shows.
The reference row is the shipped rule; a lever had to gain on both folds to be kept. None did.

- keyword lane: ``w * keyword_match`` (the BM25-style share of all query words) added to the relevance;
- query expansion: the query's vector averaged with that of its declarative rewrite ("Which herb should be
  left out?" -> "herb should be left out"), weight ``a``;
- hubness (CSLS): minus ``b`` times a memory's mean cosine with its 10 closest background questions;
- memory centring: memories re-normalised after removing ``t`` of the stored memories' mean vector;
- late-interaction rerank: the first 5 re-scored with ``l`` times MiniLM's token-level MaxSim
  (ColBERT-style, from the same forward pass; costs embedding the candidates again per query).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

from picoora.store import ranking  # noqa: E402
from picoora.store.anchors import background_texts  # noqa: E402
from picoora.store.embedder import MiniLMEmbedder  # noqa: E402
from picoora.store.keywords import KeywordIndex  # noqa: E402
from recall_bench import load_pairs  # noqa: E402

_WH = r"(?:what|which|who|whom|whose|where|when|why|how(?: many| much| long| often| far)?)"
_AUX = r"(?:do|does|did|am|is|are|was|were|have|has|had|can|could|should|would|will)"


def declarative(question: str) -> str:
    """A question without its question words: "How do I take my tea?" -> "I take my tea"."""
    text = re.sub(rf"^{_WH}\b\s*", "", question.strip().rstrip("?").strip(), flags=re.I)
    return re.sub(rf"^{_AUX}\s+", "", text, flags=re.I)


class Tuning:
    """The tuning set embedded once, with what every lever needs."""

    def __init__(self) -> None:
        pairs, codes, self.facts = load_pairs()
        self.queries = [p["question"] for p in pairs] + [c["query"] for c in codes]
        self.truth = np.array([self.facts.index(f) for f in [p["fact"] for p in pairs] + [c["fact"] for c in codes]])
        self.embedder = MiniLMEmbedder()
        self.memories = self.embedder.embed(self.facts)
        self.questions = self.embedder.embed(self.queries)
        self.rewrites = self.embedder.embed([declarative(q) for q in self.queries])
        background = self.embedder.embed(background_texts())
        self.centroid = background.mean(axis=0)
        self.hubness = np.sort(self.memories @ background.T, axis=1)[:, -10:].mean(axis=1)
        keywords = KeywordIndex()
        for row, fact in enumerate(self.facts):
            keywords.add(str(row), fact)
        self.keyword, self.code = (np.zeros((len(self.queries), len(self.facts))) for _ in range(2))
        for i, query in enumerate(self.queries):
            for out, by_row in zip((self.keyword, self.code), keywords.match(query), strict=True):
                for row, value in by_row.items():
                    out[i, int(row)] = value
        self._tokens: dict[str, np.ndarray] = {}

    def tokens(self, text: str) -> np.ndarray:
        """Normalised token states of ``text`` without [CLS] and [SEP]."""
        if text not in self._tokens:
            model, tokenizer = self.embedder._load()
            ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
            states = model.hidden_states(ids, np.ones_like(ids))[0][1:-1]
            self._tokens[text] = states / np.linalg.norm(states, axis=1, keepdims=True)
        return self._tokens[text]

    def maxsim(self, query: str, memory: str) -> float:
        return float((self.tokens(query) @ self.tokens(memory).T).max(axis=1).mean())

    def recall(self, *, keyword=0.0, expansion=0.0, hubness=0.0, centring=0.0, late=0.0,
               fold: int | None = None) -> tuple[float, float]:
        memories = self.memories - centring * self.memories.mean(axis=0)
        memories /= np.linalg.norm(memories, axis=1, keepdims=True)
        questions = self.questions + expansion * self.rewrites
        questions /= np.linalg.norm(questions, axis=1, keepdims=True)
        shift = ranking.generic_shift(self.embedder.model_id)
        at1 = at5 = asked = 0
        for i, query in enumerate(self.queries):
            if fold is not None and i % 2 != fold:
                continue
            cosine = memories @ questions[i]
            score = (memories @ (questions[i] - shift * self.centroid) + ranking.CODE_BOOST * self.code[i]
                     + keyword * self.keyword[i] - hubness * self.hubness)
            found = np.flatnonzero((cosine >= self.embedder.similarity_floor) | (self.code[i] >= ranking.CODE_ADMIT))
            found = found[np.argsort(-score[found])][:5]
            if late and len(found):
                found = found[np.argsort([-(score[r] + late * self.maxsim(query, self.facts[r])) for r in found])]
            asked += 1
            at1 += bool(len(found)) and found[0] == self.truth[i]
            at5 += self.truth[i] in found
        return at1 / asked, at5 / asked


LEVERS = [("shipped rule", {})] + [
    (f"{name} {value}", {key: value}) for name, key, values in (
        ("keyword lane w", "keyword", (0.03, 0.05, 0.1, 0.15)),
        ("query expansion a", "expansion", (0.25, 0.5, 1.0)),
        ("hubness b", "hubness", (0.25, 0.5, 1.0)),
        ("memory centring t", "centring", (0.3, 0.6, 1.0)),
        ("late-interaction rerank l", "late", (0.1, 0.25, 0.5)),
    ) for value in values
]


def main() -> None:
    tuning = Tuning()
    print(f"{len(tuning.queries)} queries over {len(tuning.facts)} facts (returned ranking)\n")
    print("| lever | recall@1 | recall@5 | fold 1 r@1 / r@5 | fold 2 r@1 / r@5 |\n|---|---|---|---|---|")
    for name, lever in LEVERS:
        at1, at5 = tuning.recall(**lever)
        folds = [tuning.recall(**lever, fold=f) for f in (0, 1)]
        print(f"| {name} | {at1:.3f} | {at5:.3f} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in folds) + " |")


if __name__ == "__main__":
    main()
