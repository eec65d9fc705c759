"""The knowledge base (``PICO_DOCUMENTS``, ``PICO_DOC_CHUNKS``): documents added by a person (or shared), chunked
and embedded, searched by meaning and keywords (``picoora docs``).

``person`` is whose documents ("" the owner's); a search sees that person's own documents and the shared
ones, filtered before any ranking. A person's store (``scoped.PersonDocuments``) passes its person.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from picoora.store.families.calls import Caller

if TYPE_CHECKING:
    from picoora.store.base import (
        AddDocumentResult,
        DocPage,
        DocumentCounts,
        DocumentHit,
        DocumentRecord,
        NewDocument,
    )

Progress = Callable[[int, int], None]


class Documents(Protocol):
    def add(self, source: str, title: str, pages: builtins.list[DocPage], *, shared: bool = False,
            person: str = "", progress: Progress | None = None) -> AddDocumentResult: ...
    # Many at once (a folder): on files their chunks are embedded together, by the bulk workers when there are
    # enough; one result per document in order, a document that cannot be stored "failed" with its reason.
    def add_many(self, documents: builtins.list[NewDocument], *, shared: bool = False, person: str = "",
                 progress: Progress | None = None) -> builtins.list[AddDocumentResult]: ...
    def list(self, *, person: str = "") -> builtins.list[DocumentRecord]: ...  # own and shared, by source
    def remove(self, id_or_source: str, *, person: str = "") -> DocumentRecord | None: ...  # own only
    # re-chunk (current chunk settings) and re-embed every document; how many chunks
    def reindex(self, *, progress: Progress | None = None) -> int: ...
    def search(self, query: str, limit: int = 5, *, person: str = "") -> builtins.list[DocumentHit]: ...
    def has_any(self, *, person: str = "") -> bool: ...  # whether search_docs is worth offering
    # What is stored, for status and the inspector: every person's documents in this store, newest first (a
    # person's store: only what that person sees); the counts in one aggregate.
    def all(self, limit: int | None = None) -> builtins.list[DocumentRecord]: ...
    def counts(self) -> DocumentCounts: ...


class AsyncDocuments:
    def __init__(self, family: Documents, call: Caller):
        self.add = call.wrap(family.add)
        self.add_many = call.wrap(family.add_many)
        self.list = call.wrap(family.list)
        self.remove = call.wrap(family.remove)
        self.reindex = call.wrap(family.reindex)
        self.search = call.wrap(family.search)
        self.has_any = call.wrap(family.has_any)
        self.all = call.wrap(family.all)
        self.counts = call.wrap(family.counts)
