"""FileStore: the embedded default backend, plain files in the workspace.

Layout (``picoora.store.layout`` owns the paths; people read the Markdown, the rest is JSON a person
can still open, kept under ``.picoora/`` where no tool reaches):
  IDENTITY.md SOUL.md AGENT.md USER.md [AGENTS.md]  prompts, in system-prompt order
  memory/YYYYMM/YYYYMMDD.md                         daily notes, same format as the Go version
  .picoora/memory/memories.jsonl                    memories: append-only op log (see file_memories)
  .picoora/sessions/<encoded key>.json              the model's view of a conversation (atomic replace)
  .picoora/transcripts/<encoded key>.jsonl          every message ever, append-only, numbered
  .picoora/traces/turns[.N].{jsonl,idx}             what each turn cost and why, rotated, indexed (trace_log)
  .picoora/docs/{documents,<id>}.json              the knowledge base (doc_library)
  .picoora/state/{state,config,meta}.json           small key/value documents (config rows redacted)
  .picoora/store.lock                               the cross-process lock
A workspace in the older layout (the same files at the top) is moved once, on open.

Every write, and every read that a write depends on, happens under the workspace lock and starts
from what is on disk now, because ``picoora agent`` and ``picoora gateway`` may share the workspace.
Plain reads of documents need no lock: a document is only ever replaced whole, by rename.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora import atomic
from picoora.secrets import redact_text
from picoora.store import limits, supersession
from picoora.store.base import (
    AddDocumentResult,
    AddMemoryResult,
    BackendDetails,
    DocPage,
    DocumentCounts,
    DocumentHit,
    DocumentRecord,
    Embeddings,
    MemoryRecord,
    NewDocument,
    NoEmbedder,
    Provenance,
    RecallResult,
    StoreError,
    StoreStats,
    VectorStatus,
    newest_first,
)
from picoora.store.embedder import EmbedderUnavailable
from picoora.store.file_memories import MemoryLog, embed
from picoora.store.files.context import FileContext
from picoora.store.files.keyvalues import FileKeyValues, FileState
from picoora.store.files.notes import FileNotes
from picoora.store.files.prompts import FilePrompts
from picoora.store.files.sessions import FileSessions
from picoora.store.files.tool_outputs import FileToolOutputs
from picoora.store.files.traces import FileTraces
from picoora.store.files.transcripts import FileTranscripts
from picoora.store.fs_errors import report_os_errors
from picoora.store.layout import FileLayout, migrate
from picoora.store.locking import WorkspaceLock

if TYPE_CHECKING:
    from picoora.config import DocsConfig
    from picoora.store.anchors import Anchors
    from picoora.store.bulk_embed import Progress
    from picoora.store.embedder import Embedder
    from picoora.store.leases import LocalLeases
    from picoora.store.memory_index import MemoryIndex
    from picoora.store.service_lock import ServiceLock

log = logging.getLogger(__name__)



_NO_EMBEDDER = "no embedding model is available to re-embed memories with"


@report_os_errors
class FileStore:
    """The Store protocol on plain files. Thread-safe and safe with other processes on the same workspace.

    ``embedder``: what makes memory vectors (``picoora.store.embedder.create_embedder``); None keeps
    recall keyword-only. Nothing is embedded, or even loaded, until a memory operation needs it.
    ``secrets``: known secret values, never written in clear to a config row.
    """

    backend = "files"
    display_name = "File Storage"

    def __init__(
        self,
        workspace: Path,
        *,
        embedder: Embedder | None = None,
        min_similarity: float = 0.0,
        dedup_similarity: float = 0.95,
        secrets: Iterable[str] = (),
        docs: DocsConfig | None = None,
    ):
        from picoora.config import DocsConfig
        from picoora.store.doc_library import DocLibrary

        self.workspace = Path(workspace).expanduser()
        self.layout = FileLayout(self.workspace)
        self._lock = WorkspaceLock(self.layout.lock)
        self._embedder = embedder
        self._min_similarity = min_similarity
        self._dedup_similarity = dedup_similarity
        self._secrets = tuple(secrets)
        self._memories = MemoryLog(self.layout.memory_log, self._new_index, embedder.model_id if embedder else None)
        ctx = FileContext(self.workspace, self.layout, self._lock)
        self.state = FileState(ctx)
        self.config = FileKeyValues(ctx, "config", redact=lambda value: redact_text(value, self._secrets))
        self.meta = FileKeyValues(ctx, "meta")
        self.prompts = FilePrompts(ctx)
        self.traces = FileTraces(ctx)
        self.tool_outputs = FileToolOutputs(ctx)
        self.notes = FileNotes(ctx, embedder)
        self.sessions = FileSessions(ctx)
        self.transcripts = FileTranscripts(ctx)
        self._docs = DocLibrary(self.layout.docs, embedder, docs or DocsConfig())
        layout = self.layout
        with self._lock:  # every writer holds the lock, so temporary files found now are leftovers of a crash
            migrate(layout)
            for directory in [self.workspace, layout.sessions, layout.state, layout.memory, layout.notes,
                              layout.traces, layout.tool_outputs, layout.docs]:
                atomic.remove_stale_temp_files(directory)
            for month in layout.notes.glob("[0-9]*"):
                atomic.remove_stale_temp_files(month)
            for index in layout.memory.glob("*.index"):  # the memory snapshot's manifest is written there
                atomic.remove_stale_temp_files(index)

    def _new_index(self, anchors: Anchors | None = None) -> MemoryIndex:
        from picoora.store.memory_index import MemoryIndex

        return MemoryIndex(self._embedder, min_similarity=self._min_similarity, dedup_similarity=self._dedup_similarity,
                           anchors=anchors)

    # ---- memories ------------------------------------------------------------------------------

    def add_memory(self, content: str, importance: float = 0.7, category: str = "general", *,
                   provenance: Provenance | None = None, expires_at: datetime | None = None) -> AddMemoryResult:
        content = limits.check_new_memory(content, importance, category, provenance)
        with self._lock:
            index = self._memories.searchable()
        (vector,), model = embed(index, [content])  # outside the lock: the first call loads the model
        about = supersession.candidate_query(content)
        if about is not None and vector is not None:
            about = content  # by meaning, the fact itself finds them, and its vector is already made (cached)
        nearest = index.search(about, supersession.CANDIDATES).matches if about else []
        with self._lock:
            same = supersession.restated_among(content, [m.memory for m in nearest])
            repeated = self._memories.repeat(same.id, importance) if same is not None else None
            if repeated is not None:  # the same fact in other words
                return repeated
            added = self._memories.add(content, importance, category or "general", vector, model,
                                       provenance=provenance or Provenance(), expires_at=expires_at)
            if not added.created:
                return added
            old = supersession.superseded_among(content, [m.memory for m in nearest if m.memory.id != added.memory.id])
            return replace(added, replaced=self._memories.supersede([m.id for m in old], added.memory.id))

    def recall(self, query: str, limit: int = 5, *, touch: bool = True, confident_only: bool = False) -> RecallResult:
        """``touch=False`` looks without counting an access; ``confident_only`` keeps only the matches
        sure enough to push into a turn unasked (``ranking.push_mask``)."""
        with self._lock:
            index = self._memories.searchable()
        result = index.search(query, limit, confident_only=confident_only)  # outside the lock: embeds the query
        if not touch:
            return result
        with self._lock:
            touched = self._memories.touch([match.memory.id for match in result.matches])
        matches = [replace(match, memory=touched[match.memory.id]) for match in result.matches
                   if match.memory.id in touched]
        return replace(result, matches=matches)

    def get_memory(self, memory_id: str) -> MemoryRecord | None:
        with self._lock:
            return self._memories.get(memory_id)

    def list_memories(self, limit: int | None = None) -> list[MemoryRecord]:
        """Newest first."""
        with self._lock:
            records = self._memories.records()
        records.sort(key=lambda r: (r.created_at is not None, r.created_at))
        records.reverse()  # rather than reverse=True: equal times then list the later insertion first
        return records if limit is None else records[:limit]

    def forget(self, memory_id: str) -> bool:
        with self._lock:
            return self._memories.forget(memory_id)

    def reindex(self, *, progress: Progress | None = None) -> int:
        """Re-embed every memory, chunk by chunk, each chunk stored before the next is embedded. An
        interrupted run resumes: the memories its finished chunks re-embedded are not embedded again."""
        from picoora.store.bulk_embed import embed_chunks

        with self._lock:
            self._memories.refresh()
            if self._embedder is None:
                if not self._memories.count():
                    return 0
                raise StoreError(f"{_NO_EMBEDDER}: check `memory.embedder` in config.json (it is \"none\")")
            expected = self._memories.reindex_pending(self._embedder.model_id)
        ids, texts = list(expected), list(expected.values())
        try:
            with self._memories.bulk(self._lock):
                for start, vectors in embed_chunks(self._embedder, texts, progress=progress):
                    chunk = {memory_id: expected[memory_id] for memory_id in ids[start : start + len(vectors)]}
                    with self._lock:
                        self._memories.store_reembedded(chunk, list(vectors), self._embedder.model_id)
        except EmbedderUnavailable as exc:
            raise StoreError(f"{_NO_EMBEDDER} (run the reindex again to continue where it stopped): {exc}") from None
        with self._lock:
            return self._memories.finish_reindex(self._embedder.model_id)

    def import_memories(self, records: Iterable[MemoryRecord], *, progress: Progress | None = None) -> int:
        """Add records chunk by chunk, each chunk stored before the next is embedded (a rerun after an
        interruption skips what is already stored, before embedding it)."""
        from picoora.store.bulk_embed import embed_chunks

        with self._lock:
            self._memories.refresh()
            records = [r for r in records if r.content.strip() and not self._memories.holds(r)]
            index = self._memories.searchable()
        texts = [r.content.strip() for r in records]
        added = 0
        if self._embedder is None or index.embed(texts[:1]) is None:  # keyword-only: nothing to embed
            with self._lock:
                return self._memories.import_records(records, [None] * len(records), None)
        try:
            with self._memories.bulk(self._lock):
                for start, vectors in embed_chunks(self._embedder, texts, progress=progress):
                    with self._lock:
                        added += self._memories.import_records(records[start : start + len(vectors)],
                                                               list(vectors), self._embedder.model_id)
        except EmbedderUnavailable as exc:
            raise StoreError(f"memory import stopped after {added} memories (run it again to continue): "
                             f"{exc}") from None
        return added

    # ---- documents (the knowledge base) ---------------------------------------------------------

    def add_document(self, source: str, title: str, pages: list[DocPage], *, shared: bool = False,
                     person: str = "", progress: Progress | None = None) -> AddDocumentResult:
        result = self.add_documents([NewDocument(source, title, pages)], shared=shared, person=person,
                                    progress=progress)[0]
        if result.status == "failed":
            raise StoreError(result.error)
        return result

    def add_documents(self, documents: list[NewDocument], *, shared: bool = False, person: str = "",
                      progress: Progress | None = None) -> list[AddDocumentResult]:
        from picoora.store.doc_library import content_hash

        results: list[AddDocumentResult | None] = [None] * len(documents)
        digests = [content_hash(d.pages) for d in documents]
        with self._lock:
            self._docs.refresh()
            for at, (doc, digest) in enumerate(zip(documents, digests, strict=True)):
                same = self._docs.unchanged(doc.source, person, digest)
                if same is not None and same.shared == shared:
                    results[at] = AddDocumentResult(same, "unchanged")
        for at, doc in enumerate(documents):
            if results[at] is None:
                try:
                    if not doc.source.strip():
                        raise ValueError("a document needs a source (its path or URL)")
                    self._docs.check_size(doc.pages)
                except (StoreError, ValueError) as exc:
                    results[at] = AddDocumentResult(None, "failed", str(exc))
        todo = [at for at, result in enumerate(results) if result is None]
        prepared = self._docs.prepare_many([documents[at].pages for at in todo], progress)
        with self._lock:
            self._docs.refresh()
            for at, item in zip(todo, prepared, strict=True):
                doc = documents[at]
                results[at] = self._docs.put(doc.source, doc.title, item, shared=shared, person=person,
                                             digest=digests[at])
        return [r for r in results if r is not None]

    def list_documents(self, *, person: str = "") -> list[DocumentRecord]:
        with self._lock:
            self._docs.refresh()
            return self._docs.documents(person)

    def remove_document(self, id_or_source: str, *, person: str = "") -> DocumentRecord | None:
        with self._lock:
            self._docs.refresh()
            return self._docs.remove(id_or_source, person)

    def reindex_documents(self, *, progress: Progress | None = None) -> int:
        return self._docs.reindex(progress, self._lock)

    def search_documents(self, query: str, limit: int = 5, *, person: str = "") -> list[DocumentHit]:
        query_vector, anchor_best = self._docs.query_vector(query)  # outside the lock: it may load the model
        with self._lock:
            self._docs.refresh()
            return self._docs.search(query, limit, person, query_vector, anchor_best)

    def has_documents(self, *, person: str = "") -> bool:
        with self._lock:
            self._docs.refresh()
            return self._docs.any_visible(person)

    def all_documents(self, limit: int | None = None) -> list[DocumentRecord]:
        """Newest first."""
        with self._lock:
            self._docs.refresh()
            return newest_first(self._docs.everyone(), limit)

    def document_counts(self) -> DocumentCounts:
        with self._lock:
            self._docs.refresh()
            return DocumentCounts.of(self._docs.everyone())

    # ---- what the front doors ask for ------------------------------------------------------------

    def embed_texts(self, texts: list[str]) -> Embeddings:
        if self._embedder is None:
            raise NoEmbedder(f"{_NO_EMBEDDER}: check `memory.embedder` in config.json (it is \"none\")")
        if not texts:
            return Embeddings(self._embedder.model_id, [])
        try:
            vectors = self._embedder.embed(texts)
        except EmbedderUnavailable as exc:
            raise NoEmbedder(f"the embedder cannot run: {exc}") from exc
        return Embeddings(self._embedder.model_id, vectors.astype(float).tolist())

    def vector_status(self) -> VectorStatus:
        if self._embedder is None:
            return VectorStatus(embedder="", where="", missing=0)
        model_id = self._embedder.model_id
        with self._lock:
            missing = self._memories.without_vector(model_id)
        where = "via Ollama" if model_id.startswith("ollama:") else "local, CPU"
        return VectorStatus(embedder=model_id, where=where, missing=missing)

    def ping(self) -> None:
        if not self.workspace.is_dir():
            raise StoreError(f"the workspace {self.workspace} is missing: run `picoora onboard`")

    def details(self) -> BackendDetails:
        return BackendDetails(note="file backend: no ONNX models or vector indexes")

    # ---- everything ----------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        with self._lock:
            memories = self._memories.count()
        notes = [p for p in self.layout.notes.glob("[0-9]*/[0-9]*.md") if re.fullmatch(r"\d{8}\.md", p.name)]
        transcript_lines = sum(_count_lines(p) for p in self.layout.transcripts.glob("*.jsonl"))
        return StoreStats(
            backend=self.backend,
            location=str(self.workspace),
            memories=memories,
            daily_notes=len(notes),
            sessions=len(list(self.layout.sessions.glob("*.json"))),
            transcript_entries=transcript_lines,
            state_keys=len(self.state.all()),
            prompts=len(self.prompts.list()),
            config_keys=len(self.config.all()),
        )

    def exclusive_service_lock(self, service: str, details: dict[str, Any]) -> ServiceLock:
        """One ``service`` (the gateway) per workspace: ``store/service_lock.py``."""
        from picoora.store.service_lock import ServiceLock

        return ServiceLock(self.layout.private, service, details, workspace=self.workspace)

    def leases(self) -> LocalLeases:
        """One gateway per workspace (the service lock above): every duty is this process's."""
        from picoora.store.leases import LocalLeases

        return LocalLeases()

    def close(self) -> None:
        self._lock.close()



def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
