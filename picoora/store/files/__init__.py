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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora import atomic
from picoora.secrets import redact_text
from picoora.store.base import (
    AddDocumentResult,
    BackendDetails,
    DocPage,
    DocumentCounts,
    DocumentHit,
    DocumentRecord,
    NewDocument,
    StoreError,
    StoreStats,
    newest_first,
)
from picoora.store.files.context import FileContext
from picoora.store.files.keyvalues import FileKeyValues, FileState
from picoora.store.files.memories import FileMemories
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
    from picoora.store.bulk_embed import Progress
    from picoora.store.embedder import Embedder
    from picoora.store.leases import LocalLeases
    from picoora.store.service_lock import ServiceLock

log = logging.getLogger(__name__)





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
        self._secrets = tuple(secrets)
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
        self.memories = FileMemories(ctx, embedder, min_similarity=min_similarity, dedup_similarity=dedup_similarity)
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

    def ping(self) -> None:
        if not self.workspace.is_dir():
            raise StoreError(f"the workspace {self.workspace} is missing: run `picoora onboard`")

    def details(self) -> BackendDetails:
        return BackendDetails(note="file backend: no ONNX models or vector indexes")

    # ---- everything ----------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        memories = self.memories.count()
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
