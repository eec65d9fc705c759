"""The file backend's knowledge base: documents chunked, embedded and searched, under ``.picoora/docs/``.

  documents.json   every document's record (who added it, shared or not, its content hash), replaced whole
  <id>.json        one document: its pages' text (for ``reindex``), its chunks and their vectors

Both are written atomically under the workspace lock. Another process may add a document at any time, so
every operation first compares ``documents.json``'s identity with what was loaded and reloads when it
changed (adding documents is rare; searching is what must be fast). In memory, the chunks' vectors form
one matrix and their words one ``KeywordIndex``; a search first narrows the rows to the documents the
person may see (their own and the shared ones), then ranks only those (``doc_ranking``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora import atomic
from picoora.store.base import (
    AddDocumentResult,
    DocPage,
    DocumentHit,
    DocumentRecord,
    StoreError,
    document_id,
)
from picoora.store.chunker import Chunk, WordTokens, chunk_pages
from picoora.store.doc_ranking import doc_floor, hybrid_scores
from picoora.store.embedder import CountsTokens, EmbedderUnavailable
from picoora.store.files.memory_ops import decode_vector, encode_vector
from picoora.store.keywords import KeywordIndex

if TYPE_CHECKING:
    import numpy as np

    from picoora.config import DocsConfig
    from picoora.store.embedder import Embedder

Progress = Callable[[int, int], None]
PRIVATE = 0o600
# A chunk is about eight memories' worth of tokens, so the bulk workers pay for their start (a model load each)
# from far fewer texts than memory import's threshold: bench/docs_bench.py measures adding with them.
PARALLEL_CHUNKS = 64


def visible(document: DocumentRecord, person: str) -> bool:
    return document.person == person or document.shared


@dataclass
class _Stored:
    pages: list[DocPage]
    chunks: list[Chunk]
    model: str | None  # the embedder that made ``vectors``
    vectors: np.ndarray | None


@dataclass
class _Rows:
    keys: list[tuple[str, int]]  # row -> (document id, chunk number)
    row_of: dict[str, int]  # "<document id>#<chunk number>" (the KeywordIndex key) -> row
    doc_ids: list[str]
    doc_of_row: np.ndarray  # row -> index in doc_ids
    matrix: np.ndarray | None  # the chunks' vectors (zeros where a document has none of this dimension)
    comparable: np.ndarray  # row -> made by the current embedder

    @classmethod
    def of(cls, stored: dict[str, _Stored], model: str) -> _Rows:
        import numpy as np

        keys = [(doc_id, n) for doc_id, item in stored.items() for n in range(len(item.chunks))]
        doc_ids = list(stored)
        doc_of_row = np.repeat(np.arange(len(doc_ids)), [len(stored[d].chunks) for d in doc_ids])
        dims = {item.vectors.shape[1] for item in stored.values() if item.vectors is not None and item.model == model}
        matrix, comparable = None, np.zeros(len(keys), dtype=bool)
        if len(dims) == 1:
            dim = dims.pop()
            usable = [item.vectors is not None and item.model == model for item in stored.values()]
            matrix = np.vstack([item.vectors if ok and item.vectors is not None else
                                np.zeros((len(item.chunks), dim), "float32")
                                for item, ok in zip(stored.values(), usable, strict=True)]) if keys else None
            comparable = np.repeat(np.array(usable, dtype=bool), [len(stored[d].chunks) for d in doc_ids])
        return cls(keys, {f"{d}#{n}": row for row, (d, n) in enumerate(keys)}, doc_ids, doc_of_row, matrix,
                   comparable)


class DocLibrary:
    def __init__(self, folder: Path, embedder: Embedder | None, settings: DocsConfig):
        self.folder = folder
        self._embedder = embedder
        self._settings = settings
        self._loaded_as: tuple[int, int, int] | None = None
        self._docs: dict[str, DocumentRecord] = {}
        self._stored: dict[str, _Stored] = {}
        self._keywords = KeywordIndex()
        self._rows: _Rows | None = None  # built on the first search after a change

    # ---- reading what is on disk ------------------------------------------------------------------

    @property
    def _index_path(self) -> Path:
        return self.folder / "documents.json"

    def refresh(self) -> None:
        """Catch up with the files (call under the workspace lock)."""
        try:
            st = os.stat(self._index_path)
            identity = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            identity = (0, 0, 0)
        if identity == self._loaded_as:
            return
        data = atomic.read_json(self._index_path) or {}
        docs = {r["id"]: DocumentRecord.from_json(r) for r in data.get("documents", [])}
        # Only what changed is read and (re)indexed: unchanged documents keep their chunks and keyword entries.
        kept = {doc_id for doc_id in docs if doc_id in self._stored and self._docs.get(doc_id) == docs[doc_id]}
        for doc_id in self._stored.keys() - kept:
            for number in range(len(self._stored[doc_id].chunks)):
                self._keywords.remove(f"{doc_id}#{number}")
        stored = {doc_id: self._stored[doc_id] for doc_id in kept}
        for doc_id in docs.keys() - kept:
            stored[doc_id] = item = self._read(doc_id)
            for number, chunk in enumerate(item.chunks):
                self._keywords.add(f"{doc_id}#{number}", chunk.text)
        self._docs, self._stored, self._loaded_as = docs, stored, identity
        self._rows = None

    def _read(self, doc_id: str) -> _Stored:
        data = atomic.read_json(self.folder / f"{doc_id}.json") or {}
        pages = [DocPage(text, page) for text, page in data.get("pages", [])]
        chunks = [Chunk(text, page) for text, page in data.get("chunks", [])]
        vectors = None
        if data.get("vectors") and chunks:
            import numpy as np

            vectors = np.asarray(decode_vector(data["vectors"])).reshape(len(chunks), -1)
        return _Stored(pages, chunks, data.get("model"), vectors)

    # ---- changing -------------------------------------------------------------------------------

    def check_size(self, pages: list[DocPage]) -> None:
        total = sum(len(page.text) for page in pages)
        if total > self._settings.max_document_chars:
            raise StoreError(f"the document's text is {total} characters, more than docs.max_document_chars "
                             f"({self._settings.max_document_chars})")

    def prepare(self, pages: list[DocPage], progress: Progress | None = None) -> _Stored:
        return self.prepare_many([pages], progress)[0]

    def prepare_many(self, documents: list[list[DocPage]], progress: Progress | None = None) -> list[_Stored]:
        """Chunk every document and embed all their chunks in one go, so a folder of small files reaches the
        bulk workers too (outside the lock: embedding takes a while, the first call loads the model)."""
        s = self._settings
        count, limit = self._token_counter()
        chunked = [chunk_pages(pages, s.chunk_by, s.chunk_size, s.chunk_overlap, count, limit) for pages in documents]
        model, vectors = self._embed([c.text for chunks in chunked for c in chunks], progress)
        prepared, start = [], 0
        for pages, chunks in zip(documents, chunked, strict=True):
            part = None if vectors is None else vectors[start:start + len(chunks)]
            prepared.append(_Stored(pages, chunks, model if part is not None else None, part))
            start += len(chunks)
        return prepared

    def _token_counter(self) -> tuple[WordTokens | None, int]:
        """The embedder's tokens per word, so no chunk runs past what it reads (none: chunks by words only)."""
        embedder = self._embedder
        if not isinstance(embedder, CountsTokens):
            return None, 0

        def count(words: list[str]) -> list[int]:
            try:
                return embedder.word_tokens(words)
            except EmbedderUnavailable:  # no model now: cut by words, found by keywords until a reindex
                return [0] * len(words)

        return count, embedder.max_tokens

    def _embed(self, texts: list[str], progress: Progress | None) -> tuple[str | None, np.ndarray | None]:
        if self._embedder is None or not texts:
            return None, None
        import numpy as np

        from picoora.store.bulk_embed import embed_chunks

        try:
            parts = [vectors for _, vectors in embed_chunks(self._embedder, texts, progress=progress,
                                                            parallel_min=PARALLEL_CHUNKS)]
        except EmbedderUnavailable:
            return None, None  # found by keywords until `picoora docs reindex` with a working embedder
        return self._embedder.model_id, np.vstack(parts).astype("float32")

    def unchanged(self, source: str, person: str, digest: str) -> DocumentRecord | None:
        found = self._docs.get(document_id(person, source))
        return found if found is not None and found.content_hash == digest else None

    def put(self, source: str, title: str, prepared: _Stored, *, shared: bool, person: str,
            digest: str) -> AddDocumentResult:
        """Store a prepared document (under the lock, after ``refresh``)."""
        doc_id = document_id(person, source)
        old = self._docs.get(doc_id)
        if old is not None and old.content_hash == digest and old.shared == shared:
            return AddDocumentResult(old, "unchanged")
        record = DocumentRecord(doc_id, source, title, digest, len(prepared.chunks), shared, person,
                                datetime.now(timezone.utc))
        self._write_document(doc_id, prepared)
        self._write_index({**self._docs, doc_id: record})
        return AddDocumentResult(record, "added" if old is None else "replaced")

    def remove(self, id_or_source: str, person: str) -> DocumentRecord | None:
        found = self._docs.get(id_or_source)
        if found is None or found.person != person:
            found = self._docs.get(document_id(person, id_or_source))
        if found is None or found.person != person:
            return None
        self._write_index({k: v for k, v in self._docs.items() if k != found.id})
        atomic.remove_durably(self.folder / f"{found.id}.json")
        return found

    def reindex(self, progress: Progress | None, lock: Any) -> int:
        """Re-chunk and re-embed every document (each written as it is done: an interrupted run keeps them)."""
        with lock:
            self.refresh()
            todo = [(doc_id, item.pages) for doc_id, item in self._stored.items()]
        done = 0
        for position, (doc_id, pages) in enumerate(todo, start=1):
            prepared = self.prepare(pages)
            with lock:
                self.refresh()
                record = self._docs.get(doc_id)
                if record is None:
                    continue  # removed meanwhile
                self._write_document(doc_id, prepared)
                self._write_index({**self._docs, doc_id: replace(record, chunks=len(prepared.chunks))})
            done += len(prepared.chunks)
            if progress:
                progress(position, len(todo))
        return done

    def _write_document(self, doc_id: str, item: _Stored) -> None:
        document: dict[str, Any] = {
            "pages": [[p.text, p.page] for p in item.pages],
            "chunks": [[c.text, c.page] for c in item.chunks],
            "model": item.model,
            "vectors": encode_vector(item.vectors.reshape(-1)) if item.vectors is not None else None,
        }
        atomic.ensure_dir(self.folder)
        atomic.atomic_write_json(self.folder / f"{doc_id}.json", document, mode=PRIVATE)

    def _write_index(self, docs: dict[str, DocumentRecord]) -> None:
        atomic.ensure_dir(self.folder)
        ordered = sorted(docs.values(), key=lambda r: (r.person, r.source))
        atomic.atomic_write_json(self._index_path, {"documents": [r.to_json() for r in ordered]}, mode=PRIVATE)
        self.refresh()

    # ---- reading --------------------------------------------------------------------------------

    def documents(self, person: str) -> list[DocumentRecord]:
        return sorted((d for d in self._docs.values() if visible(d, person)), key=lambda d: d.source)

    def any_visible(self, person: str) -> bool:
        return any(visible(d, person) for d in self._docs.values())

    def everyone(self) -> list[DocumentRecord]:
        """Every person's documents (the inspector's and status's view of the whole library)."""
        return list(self._docs.values())

    def searchable(self) -> _Rows:
        """Every chunk as a row: its document and number, the vectors (rows of another model are never
        compared), built once per change of the library."""
        if self._rows is None:
            self._rows = _Rows.of(self._stored, self._embedder.model_id if self._embedder else "")
        return self._rows

    def search(self, query: str, limit: int, person: str, query_vector: np.ndarray | None,
               anchor_best: float | None = None) -> list[DocumentHit]:
        """The best chunks of the documents ``person`` may see, at or above the floor (under the lock, after
        ``refresh``; ``query_vector`` and ``anchor_best`` from ``query_vector``, made outside it)."""
        import numpy as np

        rows = self.searchable()
        allowed = [n for n, doc_id in enumerate(rows.doc_ids) if visible(self._docs[doc_id], person)]
        candidates = np.flatnonzero(np.isin(rows.doc_of_row, allowed))  # the person filter, before any score
        if not len(candidates) or not query.strip():
            return []
        keyword, code = self._keywords.match(query)
        kw, cd = np.zeros(len(rows.keys)), np.zeros(len(rows.keys))
        for key, value in keyword.items():
            kw[rows.row_of[key]] = value
        for key, value in code.items():
            cd[rows.row_of[key]] = value
        similarity = None
        if query_vector is not None and rows.matrix is not None:
            similarity = np.where(rows.comparable[candidates], rows.matrix[candidates] @ query_vector, -1.0)
        scores = hybrid_scores(similarity, kw[candidates], cd[candidates], anchor_best)
        floor = doc_floor(self._settings.min_score, similarity is not None)
        best = np.argpartition(-scores, min(limit, len(scores)) - 1)[:limit] if len(scores) > limit else \
            np.arange(len(scores))
        hits = []
        for at in sorted(best, key=lambda i: (-scores[i], i)):
            if scores[at] < floor:
                break
            doc_id, number = rows.keys[candidates[at]]
            chunk = self._stored[doc_id].chunks[number]
            hits.append(DocumentHit(self._docs[doc_id], number, chunk.page, chunk.text, float(scores[at]),
                                    None if similarity is None else float(similarity[at])))
        return hits

    def query_vector(self, query: str) -> tuple[np.ndarray | None, float | None]:
        """The question's vector and its best cosine against the background questions (``doc_ranking``)."""
        if self._embedder is None:
            return None, None
        from picoora.store.anchors import anchors_for

        try:
            vector = self._embedder.embed([query])[0]
            return vector, anchors_for(self._embedder).best(vector)
        except EmbedderUnavailable:
            return None, None
