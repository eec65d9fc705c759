"""How far the knowledge base's ranking can go with the signals an embedder gives, on the two development
sets (tests/data/docs_quality dev and dev2; the held-out sets are never used here).

    .venv/bin/python bench/docs_levers.py          # the bundled MiniLM, ~1 min on 2 cores
    (bench/mpnet_ceiling.py runs the same report with all-mpnet-base-v2)

For every question and chunk: the chunk's cosine (what ships), the best cosine of one of its sentences
(sentences embedded on their own), the keyword share and the code match, and the question's best background
cosine (the anchor penalty). Each signal is put through doc_ranking's formula over a grid of its constants
(cosine range, vector weight, anchor penalty on or off) and of the floor, and the report gives, for each
silence a setting reaches on both sets (share of unanswerable questions that get nothing), the best mean
hit@5 (and its hit@1) any setting reaches there. The issue's targets on unseen documents are hit@5 >= 0.90
with >= 80 % silent; a signal that cannot reach them on the sets it is tuned on cannot on unseen ones.
"""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from picoora.config import DocsConfig  # noqa: E402
from picoora.docs.parsers import parse_file  # noqa: E402
from picoora.store.anchors import Anchors  # noqa: E402
from picoora.store.chunker import _SENTENCE_END, chunk_pages  # noqa: E402
from picoora.store.doc_ranking import CODE_BONUS  # noqa: E402
from picoora.store.keywords import KeywordIndex  # noqa: E402

DATA = ROOT / "tests" / "data" / "docs_quality"
SETS = ("dev", "dev2")
SILENCES = (0.6, 0.7, 0.8)


@dataclass
class Question:
    answerable: bool
    truth: np.ndarray  # chunk -> holds the answer
    chunk: np.ndarray  # cosines
    sentence: np.ndarray  # best sentence's cosine per chunk
    keyword: np.ndarray
    code: np.ndarray
    anchor: float


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def features(name: str, embedder) -> list[Question]:
    settings = DocsConfig()
    chunks, docs = [], []
    for path in sorted((DATA / name).iterdir()):
        for chunk in chunk_pages(parse_file(path, 10**7)[1], settings.chunk_by, settings.chunk_size,
                                 settings.chunk_overlap):
            chunks.append(chunk.text)
            docs.append(path.name)
    keywords = KeywordIndex()
    for number, text in enumerate(chunks):
        keywords.add(str(number), text)
    sentences = [[s for s in _SENTENCE_END.split(text) if s and s.strip()] or [text] for text in chunks]
    owner = np.repeat(np.arange(len(chunks)), [len(s) for s in sentences])
    chunk_vectors = embedder.embed(chunks)
    sentence_vectors = embedder.embed([s for group in sentences for s in group])
    anchors = Anchors(embedder)
    out = []
    asked = [(q, True) for q in _rows(DATA / f"{name}.jsonl")] + \
        [(q, False) for q in _rows(DATA / f"unanswerable_{name}.jsonl")]
    for question, answerable in asked:
        vector = embedder.embed([question["question"]])[0]
        best = np.full(len(chunks), -1.0)
        np.maximum.at(best, owner, sentence_vectors @ vector)
        keyword, code = keywords.match(question["question"])
        out.append(Question(
            answerable,
            np.array([answerable and docs[i] == question["doc"] and _norm(question["answer"]) in _norm(chunks[i])
                      for i in range(len(chunks))]),
            chunk_vectors @ vector, best,
            np.array([keyword.get(str(i), 0.0) for i in range(len(chunks))]),
            np.array([code.get(str(i), 0.0) for i in range(len(chunks))]),
            anchors.best(vector) or 0.0))
    return out


SIGNALS = {
    "chunk cosine (shipped)": lambda q: q.chunk,
    "best sentence": lambda q: q.sentence,
    "max(chunk, best sentence)": lambda q: np.maximum(q.chunk, q.sentence),
}


def _measure(questions: list[Question], similarity, low: float, high: float, weight: float, anchor: bool,
             floors: np.ndarray) -> np.ndarray:
    """(floor, [hit@1, hit@5, silent]) for every floor at once."""
    out = np.zeros((len(floors), 3))
    answerable = sum(q.answerable for q in questions)
    for q in questions:
        meaning = np.clip((similarity(q) - low) / (high - low), 0.0, 1.0)
        generic = max(q.anchor - 0.30, 0.0) if anchor else 0.0
        scores = np.clip(weight * meaning + (1 - weight) * q.keyword + CODE_BONUS * q.code - generic, 0.0, 1.0)
        order = np.argsort(-scores)[:5]
        for f, floor in enumerate(floors):
            kept = [i for i in order if scores[i] >= floor]
            if q.answerable:
                out[f, 0] += bool(kept and q.truth[kept[0]]) / answerable
                out[f, 1] += any(q.truth[i] for i in kept) / answerable
            else:
                out[f, 2] += (not kept) / (len(questions) - answerable)
    return out


def report(embedder, label: str) -> None:
    measured = {name: features(name, embedder) for name in SETS}
    floors = np.arange(0.10, 0.80, 0.02)
    for signal, similarity in SIGNALS.items():
        best = {s: (0.0, 0.0) for s in SILENCES}
        for (low, high), weight, anchor in itertools.product(
                [(0.1, 0.6), (0.2, 0.7), (0.3, 0.8)], [0.7, 0.8, 0.9, 1.0], [False, True]):
            per_set = np.stack([_measure(measured[n], similarity, low, high, weight, anchor, floors) for n in SETS])
            silent, hit1, hit5 = per_set[:, :, 2].min(0), per_set[:, :, 0].mean(0), per_set[:, :, 1].mean(0)
            for s in SILENCES:
                for f in np.flatnonzero(silent >= s):
                    best[s] = max(best[s], (hit5[f], hit1[f]))
        print(f"{label}, {signal}: " + "; ".join(f"silent >= {s:.0%}: hit@5 {h5:.2f} hit@1 {h1:.2f}"
                                                   for s, (h5, h1) in best.items()))


def main() -> None:
    from picoora.store.embedder import MiniLMEmbedder

    report(MiniLMEmbedder(), "MiniLM-L6 (bundled)")


if __name__ == "__main__":
    main()
