"""The knowledge base on Oracle: documents in PICO_DOCUMENTS, chunked in the database by
``DBMS_VECTOR_CHAIN.UTL_TO_CHUNKS`` and embedded by ``VECTOR_EMBEDDING`` in one INSERT ... SELECT
(``sql.DOC_CHUNKS_INSERT``), searched by vector distance and Oracle Text ``CONTAINS`` (or a REGEXP scan
where Oracle Text is missing), both with the person filter in the WHERE clause, and fused here with the
file backend's formula (``doc_ranking``).

Why CONTAINS + VECTOR_DISTANCE rather than ``DBMS_HYBRID_VECTOR.SEARCH``: a hybrid vector index chunks
and embeds with its own vectorizer preference, so the chunks would not be the ones ``UTL_TO_CHUNKS`` cut
with the configured parameters, and the person filter would have to be trusted to its filter syntax
instead of sitting in our WHERE clause before ranking (docs/architecture.md, "Documents on Oracle").
"""

from __future__ import annotations

import builtins
import json
import logging
from typing import TYPE_CHECKING, Any

from picoora.store.base import (
    AddDocumentResult,
    DocPage,
    DocumentCounts,
    DocumentHit,
    DocumentRecord,
    NewDocument,
    StoreError,
    content_hash,
    document_id,
)
from picoora.store.doc_ranking import doc_floor, hybrid_scores
from picoora.store.keywords import KeywordIndex, tokenize
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import text, utc_stamp
from picoora.store.oracle.connection import error_codes
from picoora.store.oracle.indexes import TEXT_INDEX_BROKEN
from picoora.store.oracle.query_text import scan_pattern, text_query

if TYPE_CHECKING:
    from picoora.config import DocsConfig
    from picoora.store.families.documents import Progress
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext

log = logging.getLogger(__name__)

OWNER_KEY = "."  # the owner's person column: '' is NULL in Oracle, and no person's name can be "."
CANDIDATES = 40  # rows read from each of the vector and keyword searches before fusing


def person_key(person: str) -> str:
    return person or OWNER_KEY


def chunk_params(settings: DocsConfig) -> str:
    """UTL_TO_CHUNKS's JSON parameters for the docs.chunk_* settings: by words up to ``max`` with
    ``overlap``, split at sentence ends (``sentences``) or anywhere (``words``)."""
    return json.dumps({"by": "words", "max": str(settings.chunk_size), "overlap": str(settings.chunk_overlap),
                       "split": "sentence" if settings.chunk_by == "sentences" else "none",
                       "language": "american", "normalize": "all"})


def _record(row: tuple) -> DocumentRecord:
    doc_id, source, title, digest, chunks, shared, person, added_at = row[:8]
    from datetime import timezone

    return DocumentRecord(str(doc_id), text(source), text(title), text(digest), int(chunks or 0), bool(shared),
                          "" if person == OWNER_KEY else text(person),
                          added_at.replace(tzinfo=timezone.utc) if added_at else None)


class OracleDocuments:
    def __init__(self, ctx: OracleContext, settings: DocsConfig):
        self._ctx = ctx
        self._settings = settings

    def add(self, source: str, title: str, pages: builtins.list[DocPage], *, shared: bool = False,
            person: str = "", progress: Progress | None = None) -> AddDocumentResult:
        if not source.strip():
            raise ValueError("a document needs a source (its path or URL)")
        total = sum(len(p.text) for p in pages)
        if total > self._settings.max_document_chars:
            raise StoreError(f"the document's text is {total} characters, more than docs.max_document_chars "
                             f"({self._settings.max_document_chars})")
        ctx = self._ctx
        doc_id, digest = document_id(person, source), content_hash(pages)
        binds = {"agent_id": ctx.agent_id, "doc_id": doc_id}

        async def work(tx: Tx) -> AddDocumentResult:
            row = await tx.one(q.DOC_GET, **binds)
            old = _record(row) if row else None
            if old is not None and old.content_hash == digest and old.shared == shared:
                return AddDocumentResult(old, "unchanged")
            await tx.run(q.DOC_CHUNKS_DELETE, **binds)
            await tx.run(q.DOC_DELETE, **binds)
            await tx.run(q.DOC_INSERT, **binds, person=person_key(person), source=source, title=title[:1000],
                         content_hash=digest, shared=int(shared),
                         pages=json.dumps([{"page": p.page, "text": p.text} for p in pages], ensure_ascii=False),
                         now=utc_stamp())
            await self._chunk(tx, doc_id)
            await tx.commit()
            row = await tx.one(q.DOC_GET, **binds)
            assert row is not None, "inserted in this transaction"
            return AddDocumentResult(_record(row), "added" if old is None else "replaced")

        return ctx.run(work, f"add the document {source}")

    def add_many(self, documents: builtins.list[NewDocument], *, shared: bool = False, person: str = "",
                 progress: Progress | None = None) -> builtins.list[AddDocumentResult]:
        """One at a time: each is chunked and embedded inside the database by its own INSERT ... SELECT."""
        results = []
        for done, doc in enumerate(documents, start=1):
            try:
                results.append(self.add(doc.source, doc.title, doc.pages, shared=shared, person=person))
            except (StoreError, ValueError) as exc:
                results.append(AddDocumentResult(None, "failed", str(exc)))
            if progress:
                progress(done, len(documents))
        return results

    async def _chunk(self, tx: Tx, doc_id: str) -> None:
        binds = {"agent_id": self._ctx.agent_id, "doc_id": doc_id}
        await tx.run(q.DOC_CHUNKS_INSERT, **binds, params=chunk_params(self._settings),
                     embedding_model=self._ctx.opened().model)
        await tx.run(q.DOC_SET_CHUNKS, **binds)

    def list(self, *, person: str = "") -> builtins.list[DocumentRecord]:
        async def work(tx: Tx) -> builtins.list[DocumentRecord]:
            rows = await tx.rows(q.DOC_LIST, agent_id=self._ctx.agent_id, person=person_key(person))
            return [_record(r) for r in rows]

        return self._ctx.run(work, "list documents")

    def has_any(self, *, person: str = "") -> bool:
        async def work(tx: Tx) -> bool:
            row = await tx.one(q.DOC_ANY, agent_id=self._ctx.agent_id, person=person_key(person))
            return bool(row and row[0])

        return self._ctx.run(work, "look for documents")

    def all(self, limit: int | None = None) -> builtins.list[DocumentRecord]:
        """Newest first."""
        k = q.ALL_ROWS if limit is None else max(limit, 0)

        async def work(tx: Tx) -> builtins.list[DocumentRecord]:
            return [_record(r) for r in await tx.rows(q.DOC_ALL, agent_id=self._ctx.agent_id, k=k)]

        return self._ctx.run(work, "list documents")

    def counts(self) -> DocumentCounts:
        async def work(tx: Tx) -> DocumentCounts:
            row = await tx.one(q.DOC_COUNTS, agent_id=self._ctx.agent_id)
            assert row is not None  # an aggregate query always returns its one row
            documents, chunks, shared = row
            return DocumentCounts(int(documents), int(chunks), int(shared))

        return self._ctx.run(work, "count documents")

    def remove(self, id_or_source: str, *, person: str = "") -> DocumentRecord | None:
        agent_id = self._ctx.agent_id

        async def work(tx: Tx) -> DocumentRecord | None:
            for doc_id in (id_or_source, document_id(person, id_or_source)):
                row = await tx.one(q.DOC_GET, agent_id=agent_id, doc_id=doc_id)
                if row and row[6] == person_key(person):  # another person's document is not theirs to remove
                    await tx.run(q.DOC_CHUNKS_DELETE, agent_id=agent_id, doc_id=doc_id)
                    await tx.run(q.DOC_DELETE, agent_id=agent_id, doc_id=doc_id)
                    await tx.commit()
                    return _record(row)
            return None

        return self._ctx.run(work, "remove a document")

    def reindex(self, *, progress: Progress | None = None) -> int:
        agent_id = self._ctx.agent_id

        async def work(tx: Tx) -> int:
            total = 0
            for (doc_id,) in await tx.rows(q.DOC_IDS, agent_id=agent_id):
                await tx.run(q.DOC_CHUNKS_DELETE, agent_id=agent_id, doc_id=str(doc_id))
                await self._chunk(tx, str(doc_id))
                await tx.commit()  # each document durable as it is done
                row = await tx.one(q.DOC_CHUNK_COUNT, agent_id=agent_id, doc_id=str(doc_id))
                total += int(row[0]) if row else 0
            return total

        return self._ctx.run(work, "reindex documents", timeout=3600.0)

    def search(self, query: str, limit: int = 5, *, person: str = "") -> builtins.list[DocumentHit]:
        if limit <= 0 or not query.strip():
            return []
        ctx = self._ctx
        scope = {"agent_id": ctx.agent_id, "person": person_key(person)}

        async def work(tx: Tx) -> builtins.list[DocumentHit]:
            opened = ctx.opened()
            vector = await opened.embed(tx, query)
            found: dict[tuple[str, int], tuple] = {}
            if vector is not None:
                for row in await tx.rows(q.DOC_NEAREST, **scope, vector=vector, embedding_model=opened.model,
                                         k=CANDIDATES):
                    found[(str(row[0]), int(row[1]))] = row
            for row in await self._keyword_rows(tx, query, scope, vector):
                found.setdefault((str(row[0]), int(row[1])), row)
            anchor_best = await opened.anchors.best(tx, vector) if vector is not None else None
            hits = self._rank(query, list(found.values()), vector is not None, limit, anchor_best)
            documents: dict[str, DocumentRecord] = {}
            for doc_id in {h[0] for h in hits}:
                record = await tx.one(q.DOC_GET, agent_id=ctx.agent_id, doc_id=doc_id)
                if record:
                    documents[doc_id] = _record(record)
            return [DocumentHit(documents[d], n, page, chunk, score, sim) for d, n, page, chunk, score, sim in hits
                    if d in documents]

        return ctx.run(work, "search documents")

    async def _keyword_rows(self, tx: Tx, query: str, scope: dict[str, Any], vector: Any) -> builtins.list[tuple]:
        terms = list(dict.fromkeys(tokenize(query)))
        if not terms:
            return []
        try:
            return await tx.rows(q.DOC_KEYWORD_TEXT, **scope, vector=vector, text_query=text_query(terms),
                                 k=CANDIDATES)
        except Exception as exc:
            if not TEXT_INDEX_BROKEN & set(error_codes(exc)):
                raise
            log.info("no usable Oracle Text index on PICO_DOC_CHUNKS (%s): scanning", exc)
        return await tx.rows(q.DOC_KEYWORD_SCAN, **scope, vector=vector, pattern=scan_pattern(terms), k=CANDIDATES)

    def _rank(self, query: str, rows: builtins.list[tuple], embedded: bool, limit: int,
              anchor_best: float | None) -> builtins.list[tuple[str, int, int | None, str, float, float | None]]:
        import numpy as np

        if not rows:
            return []
        index = KeywordIndex()  # keyword evidence over the candidates, as the file backend scores every chunk
        for row in rows:
            index.add(f"{row[0]}#{row[1]}", text(row[3]))
        keyword, code = index.match(query)
        keys = [f"{r[0]}#{r[1]}" for r in rows]
        kw = np.array([keyword.get(k, 0.0) for k in keys])
        cd = np.array([code.get(k, 0.0) for k in keys])
        similarity = np.array([1.0 - float(r[4]) if r[4] is not None else -1.0 for r in rows]) if embedded else None
        scores = hybrid_scores(similarity, kw, cd, anchor_best)
        floor = doc_floor(self._settings.min_score, embedded)
        out = []
        for at in np.argsort(-scores, kind="stable")[:limit]:
            if scores[at] < floor:
                break
            row = rows[at]
            out.append((str(row[0]), int(row[1]), None if row[2] is None else int(row[2]), text(row[3]),
                        float(scores[at]), None if similarity is None else float(similarity[at])))
        return out
