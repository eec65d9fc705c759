"""Recall over the file backend's two tiers: the memory-mapped snapshot and the memories changed since.

A query scores every snapshot vector with one matrix-vector product over the mapped file, keeps the
``VECTOR_CANDIDATES`` nearest and the ``KEYWORD_CANDIDATES`` rows holding the most IDF-weighted query
terms (from the snapshot's postings), and ranks those together with every memory added since the snapshot in a small
``MemoryIndex`` with ``ranking``'s rules. Nothing is decoded or parsed for the other rows. Keyword
weights (IDF) then come from the candidates, as on the Oracle backend; a store smaller than the candidate
budget is ranked exactly as one in-memory index would rank it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from picoora.store import ranking
from picoora.store.base import MemoryRecord, RecallResult
from picoora.store.blas import one_blas_thread
from picoora.store.files.memory_index import MemoryIndex, product_batches
from picoora.store.keywords import idf, tokenize

if TYPE_CHECKING:
    import numpy as np

    from picoora.store.files.memory_snapshot import Snapshot

# Ranking a candidate costs tokenizing it (~0.2 ms): these bound a query's work at any store size.
VECTOR_CANDIDATES = 24  # nearest snapshot rows by cosine (at least 4x the limit)
# A duplicate check of at least this many texts at once (an import's) goes through the snapshot's projection
# first (``dedup_prefilter``); one remember scans the matrix once, which costs no kept projection.
PREFILTER_QUERIES = 8
KEYWORD_CANDIDATES = 24  # rows holding the most IDF-weighted query terms (codes and names are rare, so weigh most)


@dataclass
class Overlay:
    """What the log says about snapshot rows since the snapshot. Guarded by ``lock``: the store changes it
    under the workspace lock while searches read it from other threads."""

    dead: set[int] = field(default_factory=set)  # rows forgotten, replaced or moved to the tail index
    changed: dict[int, MemoryRecord] = field(default_factory=dict)  # rows whose record changed (access, importance)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def copy_state(self) -> tuple[list[int], dict[int, MemoryRecord]]:
        """The dead rows and changed records as they are now, for a search to read without the lock."""
        with self.lock:
            return list(self.dead), dict(self.changed)


class LogIndex:
    """What ``MemoryLog.searchable`` hands out: embed, search and find duplicates without the workspace lock."""

    def __init__(self, base: Snapshot | None, overlay: Overlay, tail: MemoryIndex):
        self._base = base if base is not None and base.rows else None
        self._overlay = overlay
        self._tail = tail
        self.model_id = tail.model_id
        self._base_vectors = (self._base is not None and self._base.model == tail.model_id
                              and self._base.vector_rows > 0)

    @property
    def unavailable_reason(self) -> str | None:
        return self._tail.unavailable_reason

    def embed(self, texts: list[str]) -> np.ndarray | None:
        return self._tail.embed(texts)

    def search(self, query: str, limit: int, *, now: datetime | None = None,
               confident_only: bool = False) -> RecallResult:
        base = self._base
        if base is None:
            with one_blas_thread():
                return self._tail.search(query, limit, now=now, confident_only=confident_only)
        wants_vector = self._tail.model_id is not None and (self._base_vectors or self._tail.vector_count() > 0)
        vectors = self.embed([query]) if wants_vector else None
        query_vector = None if vectors is None else vectors[0]
        dead, changed = self._overlay.copy_state()
        with one_blas_thread():
            return self._rank(base, query, query_vector, limit, now, confident_only, dead, changed)

    def _rank(self, base: Snapshot, query: str, query_vector: np.ndarray | None, limit: int, now: datetime | None,
              confident_only: bool, dead: list[int], changed: dict[int, MemoryRecord]) -> RecallResult:
        ranker = MemoryIndex(self._tail.embedder, min_similarity=self._tail.floor,
                             dedup_similarity=self._tail.dedup_similarity, anchors=self._tail.anchors)
        ranker.push_calibration, ranker.generic_shift = self._tail.push_calibration, self._tail.generic_shift
        for row in self._candidates(base, query, query_vector, limit, dead):
            record = changed.get(row) or base.record(row)
            ranker.add(replace(record), base.vectors[row] if base.has_vector[row] and self._base_vectors else None)
        for record, vector in self._tail.items():
            ranker.add(record, vector)
        matches = ranker.rank(query, query_vector, limit, now=now, confident_only=confident_only)
        live_base = base.rows - len(dead)
        base_with_vector = base.vector_rows - base.vector_rows_among(dead) if self._base_vectors else 0
        total = live_base + len(self._tail)
        return self._tail.result(matches, query_vector, total - base_with_vector - self._tail.vector_count(), total)

    def _candidates(self, base: Snapshot, query: str, query_vector: np.ndarray | None, limit: int,
                    dead: list[int]) -> list[int]:
        import numpy as np

        rows: dict[int, None] = {}
        if query_vector is not None and self._base_vectors:
            sims = self._base_similarities(base, self._tail.ranking_vector(query_vector), dead)
            k = min(max(VECTOR_CANDIDATES, 4 * limit), len(sims))
            nearest = np.argpartition(-sims, k - 1)[:k]
            rows.update((int(r), None) for r in nearest if sims[r] > -np.inf)
        # Keyword candidates: the rows holding the most (IDF-weighted) query terms, rare codes and names first.
        weights = np.zeros(base.rows, dtype=np.float32)
        for term in set(tokenize(query)):
            found = base.term_rows(term)
            if len(found):
                weights[found] += idf(len(found), base.rows)
        if dead:
            weights[dead] = 0.0
        held = np.flatnonzero(weights)
        if len(held) > KEYWORD_CANDIDATES:
            held = held[np.argpartition(-weights[held], KEYWORD_CANDIDATES - 1)[:KEYWORD_CANDIDATES]]
        rows.update((int(r), None) for r in held)
        return list(rows)

    @staticmethod
    def _base_similarities(base: Snapshot, vectors: np.ndarray, dead: list[int]) -> np.ndarray:
        """Cosine of ``vectors`` ((dim,) or (k, dim)) to every snapshot row, by row; -inf for dead rows and
        rows without a vector."""
        import numpy as np

        sims = base.similarities(vectors)
        sims[~base.has_vector] = -np.inf
        if dead:
            sims[dead] = -np.inf
        return sims

    def find_duplicate(self, content: str, vector: np.ndarray | None) -> MemoryRecord | None:
        """A live memory ``content`` repeats (``ranking.is_same_fact``): exact text first, then the closest."""
        return self.find_duplicates([content], None if vector is None else vector[None, :])[0]

    def find_duplicates(self, contents: list[str], vectors: np.ndarray | None) -> list[MemoryRecord | None]:
        """``find_duplicate`` for each of ``contents`` against the live memories (``MemoryIndex.find_duplicates``:
        the snapshot's matrix is scanned once per batch of texts, not once per text)."""
        with one_blas_thread():
            return self._find_duplicates(contents, vectors)

    def _find_duplicates(self, contents: list[str], vectors: np.ndarray | None) -> list[MemoryRecord | None]:
        base = self._base
        found: list[MemoryRecord | None] = [None] * len(contents)
        dead, changed = self._overlay.copy_state() if base is not None else ([], {})
        if base is not None:
            gone = set(dead)
            for j, content in enumerate(contents):
                row = next((r for r in base.rows_with_text(content) if r not in gone), None)
                if row is not None:
                    found[j] = replace(changed.get(row) or base.record(row))
        rest = [j for j, record in enumerate(found) if record is None]
        in_tail = self._tail.find_duplicates([contents[j] for j in rest], None if vectors is None else vectors[rest])
        for j, record in zip(rest, in_tail, strict=True):
            found[j] = record
        if vectors is None or base is None or not self._base_vectors:
            return found
        unknown = [j for j, record in enumerate(found) if record is None]
        if len(unknown) >= PREFILTER_QUERIES:
            self._find_near_duplicates(base, contents, vectors, unknown, found, dead, changed)
            return found
        for batch in product_batches(base.rows, unknown):
            sims = self._base_similarities(base, vectors[batch], dead)
            for column, j in enumerate(batch):
                record = ranking.closest_same_fact(contents[j], sims[:, column],
                                                   lambda row: changed.get(row) or base.record(row),
                                                   self._tail.dedup_similarity)
                found[j] = None if record is None else replace(record)
        return found

    def _find_near_duplicates(self, base: Snapshot, contents: list[str], vectors: np.ndarray, unknown: list[int],
                              found: list[MemoryRecord | None], dead: list[int],
                              changed: dict[int, MemoryRecord]) -> None:
        """The snapshot's part of a batched check (an import's): only the rows the projection lets through are
        compared in full, so a record's cost no longer grows with the store's size."""
        import numpy as np

        threshold = self._tail.dedup_similarity
        gone = set(dead)
        sims = np.full(base.rows, -np.inf, dtype=np.float32)
        for batch in product_batches(base.rows, unknown):
            for j, rows in zip(batch, base.near_rows(vectors[batch], threshold), strict=True):
                rows = rows[[int(r) not in gone for r in rows]] if gone else rows
                if not len(rows):
                    continue
                sims[rows] = base.vectors[rows] @ vectors[j]
                record = ranking.closest_same_fact(contents[j], sims, lambda row: changed.get(row) or base.record(row),
                                                   threshold)
                sims[rows] = -np.inf
                found[j] = None if record is None else replace(record)
