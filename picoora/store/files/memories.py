"""Memories in ``.picoora/memory/memories.jsonl``: the append-only op log (``file_memories``), its snapshot and
the search index fed from it; vectors made by the local embedder (``picoora.store.embedder``)."""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from picoora.store import limits, supersession
from picoora.store.base import (
    AddMemoryResult,
    Embeddings,
    MemoryRecord,
    NoEmbedder,
    Provenance,
    RecallResult,
    StoreError,
    VectorStatus,
)
from picoora.store.embedder import EmbedderUnavailable
from picoora.store.files.context import FileContext, FileFamily
from picoora.store.files.file_memories import MemoryLog, embed
from picoora.store.fs_errors import report_os_errors

if TYPE_CHECKING:
    from picoora.store.anchors import Anchors
    from picoora.store.bulk_embed import Progress
    from picoora.store.embedder import Embedder
    from picoora.store.files.memory_index import MemoryIndex

NO_EMBEDDER = "no embedding model is available to re-embed memories with"


@report_os_errors
class FileMemories(FileFamily):
    """``embedder``: what makes memory vectors (``picoora.store.embedder.create_embedder``); None keeps
    recall keyword-only. Nothing is embedded, or even loaded, until a memory operation needs it."""

    def __init__(self, ctx: FileContext, embedder: Embedder | None, *, min_similarity: float = 0.0,
                 dedup_similarity: float = 0.95):
        super().__init__(ctx)
        self.embedder = embedder
        self._min_similarity = min_similarity
        self._dedup_similarity = dedup_similarity
        self.log = MemoryLog(ctx.layout.memory_log, self._new_index, embedder.model_id if embedder else None)

    def _new_index(self, anchors: Anchors | None = None) -> MemoryIndex:
        from picoora.store.files.memory_index import MemoryIndex

        return MemoryIndex(self.embedder, min_similarity=self._min_similarity,
                           dedup_similarity=self._dedup_similarity, anchors=anchors)

    def add(self, content: str, importance: float = 0.7, category: str = "general", *,
            provenance: Provenance | None = None, expires_at: datetime | None = None) -> AddMemoryResult:
        content = limits.check_new_memory(content, importance, category, provenance)
        lock = self.ctx.lock
        with lock:
            index = self.log.searchable()
        (vector,), model = embed(index, [content])  # outside the lock: the first call loads the model
        about = supersession.candidate_query(content)
        if about is not None and vector is not None:
            about = content  # by meaning, the fact itself finds them, and its vector is already made (cached)
        nearest = index.search(about, supersession.CANDIDATES).matches if about else []
        with lock:
            same = supersession.restated_among(content, [m.memory for m in nearest])
            repeated = self.log.repeat(same.id, importance) if same is not None else None
            if repeated is not None:  # the same fact in other words
                return repeated
            added = self.log.add(content, importance, category or "general", vector, model,
                                 provenance=provenance or Provenance(), expires_at=expires_at)
            if not added.created:
                return added
            old = supersession.superseded_among(content, [m.memory for m in nearest if m.memory.id != added.memory.id])
            return replace(added, replaced=self.log.supersede([m.id for m in old], added.memory.id))

    def recall(self, query: str, limit: int = 5, *, touch: bool = True, confident_only: bool = False) -> RecallResult:
        """``touch=False`` looks without counting an access; ``confident_only`` keeps only the matches
        sure enough to push into a turn unasked (``ranking.push_mask``)."""
        with self.ctx.lock:
            index = self.log.searchable()
        result = index.search(query, limit, confident_only=confident_only)  # outside the lock: embeds the query
        if not touch:
            return result
        with self.ctx.lock:
            touched = self.log.touch([match.memory.id for match in result.matches])
        matches = [replace(match, memory=touched[match.memory.id]) for match in result.matches
                   if match.memory.id in touched]
        return replace(result, matches=matches)

    def get(self, memory_id: str) -> MemoryRecord | None:
        with self.ctx.lock:
            return self.log.get(memory_id)

    def list(self, limit: int | None = None) -> builtins.list[MemoryRecord]:
        """Newest first."""
        with self.ctx.lock:
            records = self.log.records()
        records.sort(key=lambda r: (r.created_at is not None, r.created_at))
        records.reverse()  # rather than reverse=True: equal times then list the later insertion first
        return records if limit is None else records[:limit]

    def forget(self, memory_id: str) -> bool:
        with self.ctx.lock:
            return self.log.forget(memory_id)

    def count(self) -> int:
        with self.ctx.lock:
            return self.log.count()

    def reindex(self, *, progress: Progress | None = None) -> int:
        """Re-embed every memory, chunk by chunk, each chunk stored before the next is embedded. An
        interrupted run resumes: the memories its finished chunks re-embedded are not embedded again."""
        from picoora.store.bulk_embed import embed_chunks

        lock = self.ctx.lock
        with lock:
            self.log.refresh()
            if self.embedder is None:
                if not self.log.count():
                    return 0
                raise StoreError(f"{NO_EMBEDDER}: check `memory.embedder` in config.json (it is \"none\")")
            expected = self.log.reindex_pending(self.embedder.model_id)
        ids, texts = builtins.list(expected), builtins.list(expected.values())
        try:
            with self.log.bulk(lock):
                for start, vectors in embed_chunks(self.embedder, texts, progress=progress):
                    chunk = {memory_id: expected[memory_id] for memory_id in ids[start : start + len(vectors)]}
                    with lock:
                        self.log.store_reembedded(chunk, builtins.list(vectors), self.embedder.model_id)
        except EmbedderUnavailable as exc:
            raise StoreError(f"{NO_EMBEDDER} (run the reindex again to continue where it stopped): {exc}") from None
        with lock:
            return self.log.finish_reindex(self.embedder.model_id)

    def import_records(self, records: Iterable[MemoryRecord], *, progress: Progress | None = None) -> int:
        """Add records chunk by chunk, each chunk stored before the next is embedded (a rerun after an
        interruption skips what is already stored, before embedding it)."""
        from picoora.store.bulk_embed import embed_chunks

        lock = self.ctx.lock
        with lock:
            self.log.refresh()
            records = [r for r in records if r.content.strip() and not self.log.holds(r)]
            index = self.log.searchable()
        texts = [r.content.strip() for r in records]
        added = 0
        if self.embedder is None or index.embed(texts[:1]) is None:  # keyword-only: nothing to embed
            with lock:
                return self.log.import_records(records, [None] * len(records), None)
        try:
            with self.log.bulk(lock):
                for start, vectors in embed_chunks(self.embedder, texts, progress=progress):
                    with lock:
                        added += self.log.import_records(records[start : start + len(vectors)],
                                                         builtins.list(vectors), self.embedder.model_id)
        except EmbedderUnavailable as exc:
            raise StoreError(f"memory import stopped after {added} memories (run it again to continue): "
                             f"{exc}") from None
        return added

    def embed_texts(self, texts: builtins.list[str]) -> Embeddings:
        if self.embedder is None:
            raise NoEmbedder(f"{NO_EMBEDDER}: check `memory.embedder` in config.json (it is \"none\")")
        if not texts:
            return Embeddings(self.embedder.model_id, [])
        try:
            vectors = self.embedder.embed(texts)
        except EmbedderUnavailable as exc:
            raise NoEmbedder(f"the embedder cannot run: {exc}") from exc
        return Embeddings(self.embedder.model_id, vectors.astype(float).tolist())

    def vector_status(self) -> VectorStatus:
        if self.embedder is None:
            return VectorStatus(embedder="", where="", missing=0)
        model_id = self.embedder.model_id
        with self.ctx.lock:
            missing = self.log.without_vector(model_id)
        where = "via Ollama" if model_id.startswith("ollama:") else "local, CPU"
        return VectorStatus(embedder=model_id, where=where, missing=missing)
