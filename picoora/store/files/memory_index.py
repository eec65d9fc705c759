"""The file backend's in-memory recall index: vectors, keywords, dedup and ranking over all memories.

The store owns persistence; this index owns search. Vectors live in one contiguous float32 matrix (rows
grow by doubling, a removed row is filled by the last one), importance and last-touched times in parallel
arrays, words in an incremental inverted index, so a query costs one matrix-vector product and a few
array operations, never a Python loop over every memory. Ranking rules are ``ranking.py``'s.

Vectors belong to one embedder (``model_id``). A record whose vector came from another model, or that was
stored while the embedder was unavailable, has no vector here: it is found by keywords only until
``picoora memory reindex`` gives it one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from picoora.store import ranking
from picoora.store.anchors import Anchors, anchors_for
from picoora.store.base import MemoryRecord, RecallResult, ScoredMemory
from picoora.store.embedder import Embedder, EmbedderUnavailable
from picoora.store.keywords import KeywordIndex
from picoora.store.ranking import normalise_text

if TYPE_CHECKING:
    import numpy as np

RETRY_EMBEDDER_SECONDS = 30.0  # after a failure, do not pay a timeout per call: try again after this long
DEDUP_PRODUCT = 1 << 22  # similarities held at once by a batched duplicate check: 16 MB
_INITIAL_ROWS = 8  # a person may have a handful of memories: 64 rows of vectors were 98 KB each


def product_batches(rows: int, columns: list[int]) -> Iterator[list[int]]:
    """``columns`` cut into batches whose (rows x batch) float32 similarity matrix stays within
    ``DEDUP_PRODUCT`` elements."""
    size = max(1, DEDUP_PRODUCT // max(rows, 1))
    for start in range(0, len(columns), size):
        yield columns[start : start + size]


class MemoryIndex:
    def __init__(
        self,
        embedder: Embedder | None,
        *,
        min_similarity: float = 0.0,
        dedup_similarity: float = 0.95,
        anchors: Anchors | None = None,
    ):
        self.embedder = embedder
        self.model_id: str | None = embedder.model_id if embedder else None
        # 0 means "the embedder's calibrated floor" (config: memory.min_similarity).
        self.floor = min_similarity or (embedder.similarity_floor if embedder else ranking.GENERIC_SIMILARITY_FLOOR)
        self.dedup_similarity = dedup_similarity
        self._unavailable: str | None = None if embedder else (
            'semantic memory is off (memory.embedder is "none"): recall matches keywords only. '
            'Set memory.embedder to "minilm" for recall by meaning'
        )
        self._retry_at = 0.0
        self._lock = threading.RLock()
        self._records: dict[str, MemoryRecord] = {}
        self._row: dict[str, int] = {}
        self._ids: list[str] = []  # row -> memory id
        # Per-row arrays, allocated with the first row (``_ensure_capacity``): an empty index, the one a turn on
        # an empty store searches, never imports numpy.
        self._capacity = 0
        self._vectors: np.ndarray | None = None  # (capacity, dim); allocated with the first vector
        self._has_vector: np.ndarray
        self._importance: np.ndarray
        self._touched: np.ndarray  # epoch seconds; NaN when unknown
        self._ends: np.ndarray  # epoch seconds after which it is not recalled (superseded: -inf; no end: +inf)
        self._by_text: dict[str, set[str]] = {}
        self._keywords = KeywordIndex()
        self.push_calibration = ranking.file_push_calibration(self.model_id)
        self.generic_shift = ranking.generic_shift(self.model_id)
        self.anchors = anchors or (anchors_for(embedder) if embedder else None)  # one per embedder in a process

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    @property
    def unavailable_reason(self) -> str | None:
        """Why the last embedding attempt failed (or why there is no embedder); None when it works."""
        return self._unavailable

    def embed(self, texts: list[str]) -> np.ndarray | None:
        """Vectors from this index's embedder, or None when none can be had right now (reason kept)."""
        if self.embedder is None or time.monotonic() < self._retry_at:
            return None
        try:
            vectors = self.embedder.embed(texts)
        except EmbedderUnavailable as exc:
            self._unavailable = f"recall by meaning is unavailable, so recall matches keywords only: {exc}"
            self._retry_at = time.monotonic() + RETRY_EMBEDDER_SECONDS
            return None
        self._unavailable = None
        return vectors

    # ------------------------------------------------------------------ changes

    def add(self, record: MemoryRecord, vector: np.ndarray | None) -> None:
        """Index ``record``; ``vector`` must come from ``model_id`` (None: keyword-only until reindex)."""
        if record.embedding_model not in (None, self.model_id):
            vector = None  # another model's vector is never compared with ours
        with self._lock:
            if record.id in self._row:
                self.remove(record.id)
            row = len(self._ids)
            self._ensure_capacity(row + 1, vector)
            self._ids.append(record.id)
            self._row[record.id] = row
            self._set_vector(row, vector)
            self._store(row, record)
            self._keywords.add(record.id, record.content)
            self._by_text.setdefault(normalise_text(record.content), set()).add(record.id)

    def update(self, record: MemoryRecord) -> None:
        """Take a changed record (importance, access time/count); a changed text drops its vector."""
        with self._lock:
            old = self._records.get(record.id)
            if old is None:
                raise KeyError(record.id)
            row = self._row[record.id]
            if old.content != record.content:
                self._forget_text(old)
                self._keywords.add(record.id, record.content)
                self._by_text.setdefault(normalise_text(record.content), set()).add(record.id)
                self._set_vector(row, None)
            self._store(row, record)

    def remove(self, memory_id: str) -> None:
        with self._lock:
            row = self._row.pop(memory_id, None)
            if row is None:
                return
            self._forget_text(self._records.pop(memory_id))
            self._keywords.remove(memory_id)
            last = len(self._ids) - 1
            moved = self._ids.pop()
            if row != last:  # fill the hole with the last row so the live rows stay contiguous
                self._ids[row] = moved
                self._row[moved] = row
                for array in (self._has_vector, self._importance, self._touched, self._ends, self._vectors):
                    if array is not None:
                        array[row] = array[last]

    # ------------------------------------------------------------------ queries

    def find_duplicate(self, content: str, vector: np.ndarray | None) -> MemoryRecord | None:
        """A stored memory ``content`` repeats (``ranking.is_same_fact``), closest first; None when it is new."""
        return self.find_duplicates([content], None if vector is None else vector[None, :])[0]

    def find_duplicates(self, contents: list[str], vectors: np.ndarray | None) -> list[MemoryRecord | None]:
        """``find_duplicate`` for each of ``contents`` (``vectors``: their (k, dim) matrix, or None), against
        the memories stored now (not each other). The vectors are compared in a few matrix products, each
        reading the stored matrix once, where one product per text read it once per text: an import's check
        against a growing store was what made its rate fall."""
        with self._lock:
            found = [self._same_text(content) for content in contents]
            n = len(self._ids)
            if vectors is None or self._vectors is None or n == 0:
                return found
            import numpy as np

            for batch in product_batches(n, [j for j, record in enumerate(found) if record is None]):
                sims = self._vectors[:n] @ vectors[batch].T
                sims[~self._has_vector[:n]] = -np.inf
                for column, j in enumerate(batch):
                    found[j] = ranking.closest_same_fact(contents[j], sims[:, column],
                                                         lambda row: self._records[self._ids[row]],
                                                         self.dedup_similarity)
            return found

    def _same_text(self, content: str) -> MemoryRecord | None:
        same = self._by_text.get(normalise_text(content))
        return self._records[min(same)] if same else None

    def search(self, query: str, limit: int, *, now: datetime | None = None,
               confident_only: bool = False) -> RecallResult:
        """The best ``limit`` memories for ``query``, ranked by ``ranking``'s rules; ``confident_only``: only
        those confident enough to push into a turn unasked (``ranking.push_mask``)."""
        now = now or datetime.now(timezone.utc)
        with self._lock:
            n = len(self._ids)
            wants_vector = self.embedder is not None and n > 0 and bool(self._has_vector[:n].any())
        vectors = self.embed([query]) if wants_vector else None  # outside the lock: embedding is the slow part
        query_vector = None if vectors is None else vectors[0]
        matches = self.rank(query, query_vector, limit, now=now, confident_only=confident_only)
        with self._lock:
            return self.result(matches, query_vector, len(self._ids) - self.vector_count(), len(self._ids))

    def anchor_best(self, query_vector: np.ndarray | None) -> float | None:
        """The query's best cosine against the background questions (``ranking.push_mask``)."""
        return None if query_vector is None or self.anchors is None else self.anchors.best(query_vector)

    def vector_count(self) -> int:
        with self._lock:
            n = len(self._ids)
            return int(self._has_vector[:n].sum()) if n else 0

    def rank(
        self, query: str, query_vector: np.ndarray | None, limit: int, *, now: datetime | None = None,
        confident_only: bool = False, anchor_best: float | None = None,
    ) -> list[ScoredMemory]:
        """``search`` with the query already embedded (None: keywords only). ``anchor_best`` is computed
        when not given and ``confident_only`` needs it."""
        now = now or datetime.now(timezone.utc)
        if confident_only and anchor_best is None:
            anchor_best = self.anchor_best(query_vector)
        with self._lock:
            n = len(self._ids)
            if n == 0 or limit <= 0:
                return []
            import numpy as np

            keyword_by_id, code_by_id = self._keywords.match(query)
            keyword = self._as_row_array(keyword_by_id, n)
            code = self._as_row_array(code_by_id, n)
            comparable = self._has_vector[:n] if query_vector is not None else np.zeros(n, dtype=bool)
            sims = ordering = np.zeros(n, dtype=np.float32)
            if query_vector is not None and self._vectors is not None:  # none: no row has a vector to compare
                sims, ordering = self._similarities(self._vectors[:n], query_vector)
            base = np.where(comparable, ordering, ranking.keyword_only_relevance(keyword))
            ok = np.where(comparable, sims >= self.floor, keyword >= ranking.KEYWORD_ONLY_MIN)
            ok |= code >= ranking.CODE_ADMIT
            ok &= self._ends[:n] > now.timestamp()  # superseded and expired memories are never offered as true
            if confident_only:
                ok &= ranking.push_mask(sims, comparable, keyword, code, anchor_best, self.push_calibration)
            score = ranking.relevance(base, code) + self._adjustments(n, now)
            candidates = np.flatnonzero(ok)
            if len(candidates) > limit:
                candidates = candidates[np.argpartition(-score[candidates], limit - 1)[:limit]]
            candidates = candidates[np.argsort(-score[candidates], kind="stable")]
            return [
                ScoredMemory(
                    memory=self._records[self._ids[row]],
                    score=float(np.clip(score[row], 0.0, 1.0)),
                    similarity=float(sims[row]) if comparable[row] else None,
                )
                for row in candidates
            ]

    def ranking_vector(self, query_vector: np.ndarray) -> np.ndarray:
        """The query as memories are ordered by it (``ranking.ranking_query``): its generic part removed."""
        if not self.generic_shift or self.anchors is None:
            return query_vector
        centroid = self.anchors.centroid()
        return query_vector if centroid is None else ranking.ranking_query(query_vector, centroid, self.generic_shift)

    def _similarities(self, vectors: np.ndarray, query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cosine, ordering relevance) of ``vectors``' rows: one product with both query forms."""
        import numpy as np

        both = vectors @ np.stack([query_vector, self.ranking_vector(query_vector)], axis=1)
        return both[:, 0], both[:, 1]

    def items(self) -> list[tuple[MemoryRecord, np.ndarray | None]]:
        """Every record with its vector (None without one), as copies."""
        with self._lock:
            vectors = self._vectors  # allocated with the first vector: there whenever a row has one
            return [
                (replace(self._records[memory_id]),
                 vectors[row].copy() if vectors is not None and self._has_vector[row] else None)
                for row, memory_id in enumerate(self._ids)
            ]

    # ------------------------------------------------------------------ internals

    def result(self, matches: list[ScoredMemory], query_vector: np.ndarray | None, missing: int,
               total: int) -> RecallResult:
        """``matches`` with why recall was degraded, or how many of ``total`` memories lack a vector."""
        if self.embedder is None or (query_vector is None and self._unavailable):
            return RecallResult(matches, degraded=True, note=self._unavailable)
        note = None
        if missing:
            note = (
                f"{missing} of {total} memories have no {self.model_id} vector (stored by another "
                "embedder or while it was unavailable) and are matched by keywords only: run `picoora memory reindex`"
            )
        return RecallResult(matches, degraded=False, note=note)

    def _adjustments(self, n: int, now: datetime) -> np.ndarray:
        import numpy as np

        age_days = (now.timestamp() - self._touched[:n]) / ranking.SECONDS_PER_DAY
        recency_part = np.nan_to_num(ranking.RECENCY_WEIGHT * ranking.recency(age_days), nan=0.0)
        return ranking.IMPORTANCE_WEIGHT * (self._importance[:n] - 0.5) + recency_part

    def _as_row_array(self, by_id: dict[str, float], n: int) -> np.ndarray:
        import numpy as np

        out = np.zeros(n, dtype=np.float32)
        if by_id:
            rows = [self._row[key] for key in by_id]
            out[rows] = list(by_id.values())
        return out

    def _store(self, row: int, record: MemoryRecord) -> None:
        self._records[record.id] = record
        self._importance[row] = record.importance
        touched = ranking.last_touched(record.created_at, record.accessed_at)
        self._touched[row] = touched.timestamp() if touched else float("nan")
        self._ends[row] = (float("-inf") if record.superseded_by
                           else record.expires_at.timestamp() if record.expires_at else float("inf"))

    def _forget_text(self, record: MemoryRecord) -> None:
        key = normalise_text(record.content)
        ids = self._by_text.get(key, set())
        ids.discard(record.id)
        if not ids:
            self._by_text.pop(key, None)

    def _set_vector(self, row: int, vector: np.ndarray | None) -> None:
        self._has_vector[row] = vector is not None
        if self._vectors is not None:
            self._vectors[row] = 0.0 if vector is None else vector

    def _ensure_capacity(self, rows: int, vector: np.ndarray | None) -> None:
        import numpy as np

        if not self._capacity:  # the first row
            self._capacity = _INITIAL_ROWS
            self._has_vector = np.zeros(_INITIAL_ROWS, dtype=bool)
            self._importance = np.zeros(_INITIAL_ROWS, dtype=np.float32)
            self._touched = np.zeros(_INITIAL_ROWS, dtype=np.float64)
            self._ends = np.zeros(_INITIAL_ROWS, dtype=np.float64)
        if self._vectors is None and vector is not None:
            self._vectors = np.zeros((self._capacity, len(vector)), dtype=np.float32)
        capacity = self._capacity
        if rows <= capacity:
            return
        new_capacity = max(rows, capacity * 2)

        def grown(array: np.ndarray) -> np.ndarray:
            out = np.zeros((new_capacity,) + array.shape[1:], dtype=array.dtype)
            out[:capacity] = array
            return out

        self._has_vector = grown(self._has_vector)
        self._importance = grown(self._importance)
        self._touched = grown(self._touched)
        self._ends = grown(self._ends)
        if self._vectors is not None:
            self._vectors = grown(self._vectors)
        self._capacity = new_capacity
