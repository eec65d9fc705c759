"""The knowledge base in ``.picoora/docs/`` (``doc_library``): a document's chunks and vectors in one file,
replaced whole, so plain reads need no lock."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from picoora.store.base import (
    AddDocumentResult,
    DocPage,
    DocumentCounts,
    DocumentHit,
    DocumentRecord,
    NewDocument,
    StoreError,
    content_hash,
    newest_first,
)
from picoora.store.files.context import FileContext, FileFamily
from picoora.store.files.doc_library import DocLibrary
from picoora.store.fs_errors import report_os_errors

if TYPE_CHECKING:
    from picoora.config import DocsConfig
    from picoora.store.bulk_embed import Progress
    from picoora.store.embedder import Embedder


@report_os_errors
class FileDocuments(FileFamily):
    def __init__(self, ctx: FileContext, embedder: Embedder | None, settings: DocsConfig):
        super().__init__(ctx)
        self.library = DocLibrary(ctx.layout.docs, embedder, settings)

    def add(self, source: str, title: str, pages: builtins.list[DocPage], *, shared: bool = False,
            person: str = "", progress: Progress | None = None) -> AddDocumentResult:
        result = self.add_many([NewDocument(source, title, pages)], shared=shared, person=person,
                               progress=progress)[0]
        if result.status == "failed":
            raise StoreError(result.error)
        return result

    def add_many(self, documents: builtins.list[NewDocument], *, shared: bool = False, person: str = "",
                 progress: Progress | None = None) -> builtins.list[AddDocumentResult]:
        library, lock = self.library, self.ctx.lock
        results: builtins.list[AddDocumentResult | None] = [None] * len(documents)
        digests = [content_hash(d.pages) for d in documents]
        with lock:
            library.refresh()
            for at, (doc, digest) in enumerate(zip(documents, digests, strict=True)):
                same = library.unchanged(doc.source, person, digest)
                if same is not None and same.shared == shared:
                    results[at] = AddDocumentResult(same, "unchanged")
        for at, doc in enumerate(documents):
            if results[at] is None:
                try:
                    if not doc.source.strip():
                        raise ValueError("a document needs a source (its path or URL)")
                    library.check_size(doc.pages)
                except (StoreError, ValueError) as exc:
                    results[at] = AddDocumentResult(None, "failed", str(exc))
        todo = [at for at, result in enumerate(results) if result is None]
        prepared = library.prepare_many([documents[at].pages for at in todo], progress)
        with lock:
            library.refresh()
            for at, item in zip(todo, prepared, strict=True):
                doc = documents[at]
                results[at] = library.put(doc.source, doc.title, item, shared=shared, person=person,
                                          digest=digests[at])
        return [r for r in results if r is not None]

    def list(self, *, person: str = "") -> builtins.list[DocumentRecord]:
        with self.ctx.lock:
            self.library.refresh()
            return self.library.documents(person)

    def remove(self, id_or_source: str, *, person: str = "") -> DocumentRecord | None:
        with self.ctx.lock:
            self.library.refresh()
            return self.library.remove(id_or_source, person)

    def reindex(self, *, progress: Progress | None = None) -> int:
        return self.library.reindex(progress, self.ctx.lock)

    def search(self, query: str, limit: int = 5, *, person: str = "") -> builtins.list[DocumentHit]:
        query_vector, anchor_best = self.library.query_vector(query)  # outside the lock: it may load the model
        with self.ctx.lock:
            self.library.refresh()
            return self.library.search(query, limit, person, query_vector, anchor_best)

    def has_any(self, *, person: str = "") -> bool:
        with self.ctx.lock:
            self.library.refresh()
            return self.library.any_visible(person)

    def all(self, limit: int | None = None) -> builtins.list[DocumentRecord]:
        """Newest first."""
        with self.ctx.lock:
            self.library.refresh()
            return newest_first(self.library.everyone(), limit)

    def counts(self) -> DocumentCounts:
        with self.ctx.lock:
            self.library.refresh()
            return DocumentCounts.of(self.library.everyone())
