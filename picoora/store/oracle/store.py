"""OracleStore: the Store protocol on the PICO_ tables, embeddings computed inside the database.

Every method is one unit of work on :class:`~picoora.store.oracle.connection.Database`: one pooled
connection, one transaction, committed at the end or rolled back on error. Rows are scoped by
``agent_id`` everywhere (PICO_META is schema-wide, as in the Go version).

Recall follows the file backend's rules (``picoora.store.ranking``): the database finds candidates
(approximate vector search with ``FETCH APPROX FIRST`` so the vector index is used, plus keyword
matches through Oracle Text when its index exists, else a regular-expression scan); Python scores them
with the same floor, code boost, importance and recency, then records the access. Automatic recall
(``confident_only``) also reads the query's best cosine against the background questions embedded by the
same in-database model (``background.py``), as the file backend's anchors do.

Each public method builds its unit of work once (``_<method>_op`` returns an :class:`Op`); the blocking
method runs it with ``Database.run`` and :meth:`OracleStore.native_async` awaits the same ``Op`` with
``Database.arun``, so the synchronous and asynchronous forms cannot drift apart.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from picoora.secrets import redact_text
from picoora.store import limits, ranking, supersession
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
    ScoredMemory,
    StoreError,
    StoreStats,
    VectorStatus,
)
from picoora.store.keywords import KeywordIndex, tokenize
from picoora.store.oracle import codec
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import content_hash, utc_stamp
from picoora.store.oracle.connection import Database, Tx, error_code, error_codes
from picoora.store.oracle.context import MODEL_MISSING, OpenContext
from picoora.store.oracle.documents import OracleDocuments
from picoora.store.oracle.indexes import TEXT_INDEX_BROKEN
from picoora.store.oracle.keyvalues import CONFIG, META, OracleKeyValues, OracleState, is_schema_key
from picoora.store.oracle.leases import OracleLeases
from picoora.store.oracle.notes import OracleNotes
from picoora.store.oracle.op import Op, known
from picoora.store.oracle.prompts import OraclePrompts
from picoora.store.oracle.query_text import embedding_text, informative_first, scan_pattern, text_query
from picoora.store.oracle.sessions import OracleSessions
from picoora.store.oracle.tool_outputs import OracleToolOutputs
from picoora.store.oracle.traces import OracleTraces
from picoora.store.oracle.transcripts import OracleTranscripts

if TYPE_CHECKING:
    from picoora.config import DocsConfig

log = logging.getLogger(__name__)

_PROMPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\.md")
_ID_HEX_CHARS = 12


def _cosine(a: Any, b: Any) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


@dataclass(frozen=True)
class RecallEvidence:
    """What recall ranks: the candidate memories with their cosines (None: not comparable), whether the query
    could be embedded, and its best cosine against the background questions (None: unknown)."""

    query: str
    candidates: dict[str, tuple[MemoryRecord, float | None]]
    embedded: bool
    anchor_best: float | None


# The Store methods with a native coroutine in ``native_async()``: each has an ``_<name>_op`` builder.
ASYNC_METHODS = (
    "recall", "add_memory", "get_memory", "list_memories", "forget", "stats", )


class NativeAsync:
    """``OracleStore``'s methods as coroutines awaiting the database's own event loop (no thread per call).
    Built from the same ``Op`` builders as the blocking methods: same arguments, results and errors."""

    def __init__(self, store: OracleStore):
        self._store = store
        for name in ASYNC_METHODS:
            setattr(self, name, self._coroutine(name))

    def _coroutine(self, name: str) -> Callable[..., Awaitable[Any]]:
        build = getattr(self._store, f"_{name}_op")

        @functools.wraps(getattr(self._store, name))
        async def method(*args: Any, **kwargs: Any) -> Any:
            op = build(*args, **kwargs)
            if op.work is None:
                return op.result
            return await self._store._db.arun(op.work, what=op.what, timeout=op.timeout)

        return method


class OracleStore:
    """The Store protocol on Oracle AI Database. Open it with :func:`picoora.store.oracle.open_oracle_store`."""

    backend = "oracle"
    display_name = "Oracle AI Database"

    def __init__(
        self,
        db: Database,
        *,
        agent_id: str = "default",
        min_similarity: float = 0.0,
        dedup_similarity: float = 0.95,
        text_index: bool = False,
        secrets: Iterable[str] = (),
        note_zone: str = "",
        docs: DocsConfig | None = None,
    ):
        from picoora.config import DocsConfig

        self._db = db
        self.agent_id = agent_id
        self.model = db.model  # validated identifier; also the embedding_model recorded with each vector
        self.floor = min_similarity or ranking.GENERIC_SIMILARITY_FLOOR
        self.dedup_similarity = dedup_similarity
        self.push_calibration = ranking.oracle_push_calibration(self.model)  # see ranking.ORACLE_PUSH
        self._secrets = tuple(secrets)
        self.note_zone = note_zone  # IANA zone of the daily notes' dates (agents.defaults.timezone); "": the machine's
        self._owns_db = True
        self._docs_settings = docs or DocsConfig()
        self._use(OpenContext(db, agent_id, text_index=text_index))

    def _use(self, ctx: OpenContext) -> None:
        self._ctx = ctx
        self.state = OracleState(ctx)
        self.config = OracleKeyValues(ctx, CONFIG, redact=lambda value: redact_text(value, self._secrets))
        self.meta = OracleKeyValues(ctx, META)
        self.prompts = OraclePrompts(ctx)
        self.traces = OracleTraces(ctx)
        self.tool_outputs = OracleToolOutputs(ctx)
        self.notes = OracleNotes(ctx, self.note_zone)
        self.sessions = OracleSessions(ctx)
        self.transcripts = OracleTranscripts(ctx)
        self._documents = OracleDocuments(ctx, self._docs_settings)

    def for_agent(self, agent_id: str) -> OracleStore:
        """The rows of ``agent_id`` (a person's scope, ``store.scoped``) over this store's database: the same
        pool, event-loop thread, settings and background anchors, where opening another store would start a
        pool and a thread of its own and probe the schema again. Closing it leaves the database open."""
        other = OracleStore(self._db, agent_id=agent_id, min_similarity=self.floor,
                            dedup_similarity=self.dedup_similarity, secrets=self._secrets, note_zone=self.note_zone,
                            docs=self._docs_settings)
        other._use(self._ctx.for_agent(agent_id))
        other._owns_db = False
        return other

    @property
    def context(self) -> OpenContext:
        """What its families share (``oracle/context.py``)."""
        return self._ctx

    @property
    def text_index(self) -> bool:
        """Whether keyword recall uses the Oracle Text index right now (else the plain scan)."""
        return self._ctx.text.usable

    @property
    def location(self) -> str:
        return f"{self._db.target} (agent {self.agent_id})"

    def _run(self, work: Any, what: str, timeout: float | None = None) -> Any:
        return self._db.run(work, what=what, timeout=timeout)

    def _do(self, op: Op) -> Any:
        return op.result if op.work is None else self._db.run(op.work, what=op.what, timeout=op.timeout)

    def native_async(self) -> NativeAsync:
        """Coroutine forms of the Store methods (``ASYNC_METHODS``) for ``picoora.store.aio.AsyncStore``."""
        return NativeAsync(self)

    # ---- documents (the knowledge base: oracle/documents.py) ----------------------------------

    def add_document(self, source: str, title: str, pages: list[DocPage], *, shared: bool = False,
                     person: str = "", progress: Callable[[int, int], None] | None = None) -> AddDocumentResult:
        return self._documents.add(source, title, pages, shared, person)

    def add_documents(self, documents: list[NewDocument], *, shared: bool = False, person: str = "",
                      progress: Callable[[int, int], None] | None = None) -> list[AddDocumentResult]:
        """One at a time: each is chunked and embedded inside the database by its own INSERT ... SELECT."""
        results = []
        for done, doc in enumerate(documents, start=1):
            try:
                results.append(self._documents.add(doc.source, doc.title, doc.pages, shared, person))
            except (StoreError, ValueError) as exc:
                results.append(AddDocumentResult(None, "failed", str(exc)))
            if progress:
                progress(done, len(documents))
        return results

    def list_documents(self, *, person: str = "") -> list[DocumentRecord]:
        return self._documents.documents(person)

    def remove_document(self, id_or_source: str, *, person: str = "") -> DocumentRecord | None:
        return self._documents.remove(id_or_source, person)

    def reindex_documents(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        return self._documents.reindex()

    def search_documents(self, query: str, limit: int = 5, *, person: str = "") -> list[DocumentHit]:
        return self._documents.search(query, limit, person)

    def has_documents(self, *, person: str = "") -> bool:
        return self._documents.any_visible(person)

    def all_documents(self, limit: int | None = None) -> list[DocumentRecord]:
        """Newest first."""
        return self._documents.everyone(q.ALL_ROWS if limit is None else max(limit, 0))

    def document_counts(self) -> DocumentCounts:
        return self._documents.counts()

    # ---- memories ------------------------------------------------------------------------------

    def add_memory(self, content: str, importance: float = 0.7, category: str = "general", *,
                   provenance: Provenance | None = None, expires_at: datetime | None = None) -> AddMemoryResult:
        return self._do(self._add_memory_op(content, importance, category, provenance=provenance,
                                            expires_at=expires_at))

    def _add_memory_op(self, content: str, importance: float = 0.7, category: str = "general", *,
                       provenance: Provenance | None = None, expires_at: datetime | None = None) -> Op:
        content = limits.check_new_memory(content, importance, category, provenance)
        importance = round(importance, 2)  # the column is NUMBER(3,2)
        category = category or "general"

        async def work(tx: Tx) -> AddMemoryResult:
            vector = await self._ctx.embed(tx, content)
            duplicate = await self._find_duplicate(tx, content, vector)
            if duplicate is not None:
                return AddMemoryResult(await self._raise_importance(tx, duplicate, importance), created=False)
            about = supersession.candidate_query(content)  # its subject's words find them by keywords
            nearest = {} if about is None else await self._candidates(tx, about, vector, supersession.CANDIDATES)
            candidates = [m for m, _ in nearest.values()]
            same = supersession.restated_among(content, candidates)
            if same is not None:  # the same fact in other words
                return AddMemoryResult(await self._raise_importance(tx, same, importance), created=False)
            record = MemoryRecord(id=uuid.uuid4().hex[:_ID_HEX_CHARS], content=content, importance=importance,
                                  category=category, provenance=provenance or Provenance(), expires_at=expires_at)
            record = await self._insert(tx, record, vector)
            replaced = []
            for old in supersession.superseded_among(content, candidates):
                if await tx.run(q.MEMORY_SUPERSEDE, agent_id=self.agent_id, memory_id=old.id,
                                superseded_by=record.id, now=utc_stamp()):
                    replaced.append(replace(old, superseded_by=record.id))
            return AddMemoryResult(record, created=True, replaced=replaced)

        return Op(work, "store the memory")

    async def _find_duplicate(self, tx: Tx, content: str, vector: Any | None) -> MemoryRecord | None:
        row = await tx.one(q.MEMORY_BY_HASH, agent_id=self.agent_id, content_hash=content_hash(content),
                           now=utc_stamp())
        if row is not None:
            return codec.memory_from_row(row)
        if vector is None:
            return None
        row = await tx.one(q.MEMORY_NEAREST_EXACT, agent_id=self.agent_id, vector=vector, embedding_model=self.model,
                           now=utc_stamp())
        if row is not None and ranking.is_same_fact(content, codec.text(row[1]),
                                                    1.0 - float(row[codec.MEMORY_WIDTH]), self.dedup_similarity):
            return codec.memory_from_row(row)
        return None

    async def _raise_importance(self, tx: Tx, record: MemoryRecord, importance: float) -> MemoryRecord:
        if importance <= record.importance:
            return record
        await tx.run(q.MEMORY_RAISE_IMPORTANCE, agent_id=self.agent_id, memory_id=record.id,
                     importance=importance, now=utc_stamp())
        return replace(record, importance=importance)

    async def _insert(self, tx: Tx, record: MemoryRecord, vector: Any | None) -> MemoryRecord:
        now = utc_stamp()
        record = replace(
            record,
            importance=round(record.importance, 2),
            created_at=record.created_at or now.replace(tzinfo=timezone.utc),
            embedding_model=self.model if vector is not None else None,
        )
        await tx.run(
            q.MEMORY_INSERT,
            memory_id=record.id,
            agent_id=self.agent_id,
            content=record.content,
            content_hash=content_hash(record.content),
            embedding=vector,
            embedding_model=record.embedding_model,
            importance=record.importance,
            category=record.category,
            access_count=record.access_count,
            created_at=codec.from_utc(record.created_at),
            accessed_at=codec.from_utc(record.accessed_at),
            now=now,
            source_how=record.provenance.how,
            source_person=record.provenance.person or None,
            source_session=record.provenance.session or None,
            source_turn=record.provenance.turn_id or None,
            superseded_by=record.superseded_by,
            expires_at=codec.from_utc(record.expires_at),
        )
        return replace(record, created_at=codec.to_utc(codec.from_utc(record.created_at)),
                       accessed_at=codec.to_utc(codec.from_utc(record.accessed_at)),
                       expires_at=codec.to_utc(codec.from_utc(record.expires_at)))

    def recall(self, query: str, limit: int = 5, *, touch: bool = True, confident_only: bool = False) -> RecallResult:
        """``touch=False`` searches without counting it as an access (the inspector looks, it does not recall)."""
        return self._do(self._recall_op(query, limit, touch=touch, confident_only=confident_only))

    def _recall_op(self, query: str, limit: int = 5, *, touch: bool = True, confident_only: bool = False) -> Op:
        if limit <= 0 or not query.strip():
            return known(RecallResult([]))

        async def work(tx: Tx) -> RecallResult:
            evidence = await self._evidence(tx, query, limit, with_anchors=confident_only)
            matches = self.rank(evidence, limit, confident_only=confident_only)
            touched = matches
            if touch:
                now = utc_stamp()
                await tx.run_many(q.MEMORY_TOUCH, [
                    {"agent_id": self.agent_id, "memory_id": m.memory.id, "now": now} for m in matches
                ])
                touched = [replace(m, memory=replace(m.memory, access_count=m.memory.access_count + 1,
                                                     accessed_at=now.replace(tzinfo=timezone.utc))) for m in matches]
            if not evidence.embedded:
                return RecallResult(touched, degraded=True, note=self._ctx.missing_model_note)
            return RecallResult(touched)

        return Op(work, "recall memories")

    def recall_evidence(self, query: str, limit: int = 5) -> RecallEvidence:
        """The candidates and background cosine a recall of ``query`` would rank, background included, without
        touching anything: ``rank`` then decides for any calibration (bench/oracle_calibrate.py)."""
        async def work(tx: Tx) -> RecallEvidence:
            return await self._evidence(tx, query, limit, with_anchors=True)

        return self._run(work, "gather recall evidence")

    async def _evidence(self, tx: Tx, query: str, limit: int, *, with_anchors: bool) -> RecallEvidence:
        # The background cosine is only worth its query for automatic recall (the recall tool returns weaker
        # matches too); it is read before any write, so a first fill can commit on its own.
        vector = await self._ctx.embed(tx, query)
        anchor_best = await self._ctx.anchors.best(tx, vector) if with_anchors and vector is not None else None
        candidates = await self._candidates(tx, query, vector, max(4 * limit, 20))
        return RecallEvidence(query, candidates, vector is not None, anchor_best)

    async def _candidates(self, tx: Tx, query: str, vector: Any | None,
                          k: int) -> dict[str, tuple[MemoryRecord, float | None]]:
        """Memories worth scoring: the nearest by vector and those holding a query term, with their cosine."""
        found: dict[str, tuple[MemoryRecord, float | None]] = {}
        if vector is not None:
            for row in await tx.rows(q.MEMORY_NEAREST, agent_id=self.agent_id, vector=vector,
                                     embedding_model=self.model, k=k, now=utc_stamp()):
                found[str(row[0])] = (codec.memory_from_row(row), 1.0 - float(row[codec.MEMORY_WIDTH]))
        terms = informative_first(query, list(dict.fromkeys(tokenize(query))))
        if terms:
            for row in await self._keyword_rows(tx, terms, k):
                record = codec.memory_from_row(row)
                if record.id in found:
                    continue
                stored = row[codec.MEMORY_WIDTH]
                comparable = vector is not None and stored is not None and record.embedding_model == self.model
                found[record.id] = (record, _cosine(vector, stored) if comparable else None)
        return found

    async def _keyword_rows(self, tx: Tx, terms: list[str], k: int) -> list[tuple]:
        """Memories holding a query term: through the Oracle Text index while it works, else the plain scan
        (also for this very query when the index fails under it)."""
        if await self._ctx.text.use(tx):
            try:
                return await tx.rows(q.MEMORY_KEYWORD_TEXT, agent_id=self.agent_id, text_query=text_query(terms), k=k,
                                     now=utc_stamp())
            except Exception as exc:
                if not TEXT_INDEX_BROKEN & set(error_codes(exc)):
                    raise
                self._ctx.text.failed()
                log.warning("the Oracle Text index failed (%s); keyword recall scans until it is VALID again "
                            "(run picoora setup-oracle)", error_code(exc))
        return await tx.rows(q.MEMORY_KEYWORD_SCAN, agent_id=self.agent_id, pattern=scan_pattern(terms), k=k,
                             now=utc_stamp())

    def rank(self, evidence: RecallEvidence, limit: int, *, confident_only: bool = False) -> list[ScoredMemory]:
        """The matches recall returns (``confident_only``: pushes, by ``push_calibration``), best first."""
        query, candidates = evidence.query, evidence.candidates
        # Keyword evidence is computed over the candidates (the file backend uses all memories): IDF from a
        # smaller sample, same rules.
        keywords = KeywordIndex()
        for memory_id, (record, _) in candidates.items():
            keywords.add(memory_id, record.content)
        keyword_by_id, code_by_id = keywords.match(query)
        now = datetime.now(timezone.utc)
        scored = []
        for memory_id, (record, similarity) in candidates.items():
            keyword, code = keyword_by_id.get(memory_id, 0.0), code_by_id.get(memory_id, 0.0)
            if not ranking.is_match(similarity, keyword, code, self.floor):
                continue
            if confident_only and not ranking.should_push(similarity, keyword, code, evidence.anchor_best,
                                                          self.push_calibration):
                continue
            score = ranking.final_score(similarity, keyword, code, record.importance, record.created_at,
                                        record.accessed_at, now)
            scored.append(ScoredMemory(record, score, similarity))
        scored.sort(key=lambda m: m.score, reverse=True)
        return scored[:limit]

    def get_memory(self, memory_id: str) -> MemoryRecord | None:
        return self._do(self._get_memory_op(memory_id))

    def _get_memory_op(self, memory_id: str) -> Op:
        async def work(tx: Tx) -> MemoryRecord | None:
            row = await tx.one(q.MEMORY_GET, agent_id=self.agent_id, memory_id=memory_id)
            return codec.memory_from_row(row) if row else None

        return Op(work, "read the memory")

    def list_memories(self, limit: int | None = None) -> list[MemoryRecord]:
        """Newest first."""
        return self._do(self._list_memories_op(limit))

    def _list_memories_op(self, limit: int | None = None) -> Op:
        async def work(tx: Tx) -> list[MemoryRecord]:
            rows = await tx.rows(q.MEMORY_LIST, agent_id=self.agent_id,
                                 k=q.ALL_ROWS if limit is None else max(limit, 0))
            return [codec.memory_from_row(row) for row in rows]

        return Op(work, "list memories")

    def forget(self, memory_id: str) -> bool:
        return self._do(self._forget_op(memory_id))

    def _forget_op(self, memory_id: str) -> Op:
        async def work(tx: Tx) -> bool:
            return await tx.run(q.MEMORY_DELETE, agent_id=self.agent_id, memory_id=memory_id) > 0

        return Op(work, "forget the memory")

    def reindex(self, batch: int = 100, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every memory with the configured model, ``batch`` memories per transaction, then rebuild
        the vector index so its partitions are computed from the data now there."""
        async def contents(tx: Tx) -> list[tuple]:
            return await tx.rows(q.MEMORY_CONTENTS, agent_id=self.agent_id)

        rows = self._run(contents, "read memories to re-embed")
        done = 0
        for start in range(0, len(rows), batch):
            async def work(tx: Tx, chunk: list[tuple] = rows[start:start + batch]) -> int:
                count = 0
                for memory_id, content in chunk:
                    try:
                        count += await tx.run(q.MEMORY_SET_EMBEDDING, agent_id=self.agent_id, memory_id=memory_id,
                                              text=embedding_text(codec.text(content)), embedding_model=self.model,
                                              now=utc_stamp())
                    except Exception as exc:
                        if error_code(exc) in MODEL_MISSING:
                            raise StoreError(f"cannot re-embed memories: the ONNX model {self.model} is not loaded "
                                             f"in {self._db.target}. Run: picoora setup-oracle --onnx-file PATH"
                                             ) from None
                        raise
                return count

            done += self._run(work, "re-embed memories", timeout=300.0)
            if progress:
                progress(min(start + batch, len(rows)), len(rows))
        if done:
            from picoora.store.oracle.indexes import rebuild_memory_index

            rebuild_memory_index(self._db)
        return done

    async def _free_memory_id(self, tx: Tx, wanted: str) -> str | None:
        """``wanted`` if no memory has it, a new id if another agent's memory does (memory_id is the table's
        key across agents), None if this agent already has it."""
        row = await tx.one(q.MEMORY_ID_TAKEN, memory_id=wanted)
        if row is None:
            return wanted
        return None if row[0] == self.agent_id else uuid.uuid4().hex[:_ID_HEX_CHARS]

    def import_memories(self, records: Iterable[MemoryRecord], batch: int = 50, *,
                        progress: Callable[[int, int], None] | None = None) -> int:
        """Add records keeping their ids and fields; skips existing ids, duplicates and empty texts. An id
        another agent uses already gets a fresh one."""
        pending = [r for r in records if r.content.strip()]
        for record in pending:
            limits.check_chars(record.category or "general", limits.KEY_CHARS, "the memory category")
        imported = 0
        for start in range(0, len(pending), batch):
            async def work(tx: Tx, chunk: list[MemoryRecord] = pending[start:start + batch]) -> int:
                count = 0
                for source in chunk:
                    content = source.content.strip()
                    memory_id = await self._free_memory_id(tx, source.id or uuid.uuid4().hex[:_ID_HEX_CHARS])
                    if memory_id is None:
                        continue
                    vector = await self._ctx.embed(tx, content)
                    if await self._find_duplicate(tx, content, vector) is not None:
                        continue
                    record = replace(source, id=memory_id, content=content, category=source.category or "general")
                    await self._insert(tx, record, vector)
                    count += 1
                return count

            imported += self._run(work, "import memories", timeout=300.0)
            if progress:
                progress(min(start + batch, len(pending)), len(pending))
        return imported

    # ---- everything ----------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        return self._do(self._stats_op())

    def _stats_op(self) -> Op:
        async def work(tx: Tx) -> StoreStats:
            counts = await tx.one(q.STATS, agent_id=self.agent_id)
            assert counts is not None  # an aggregate query always returns its one row
            memories, notes, sessions, transcripts, state, prompts, config, _ = counts
            return StoreStats(backend=self.backend, location=self.location, memories=int(memories),
                              daily_notes=int(notes), sessions=int(sessions), transcript_entries=int(transcripts),
                              state_keys=int(state), prompts=int(prompts), config_keys=int(config))

        return Op(work, "count stored items")

    def details(self) -> BackendDetails:
        """Schema bookkeeping rows, loaded ONNX models and the PICO_ vector indexes (by their index type)."""
        async def work(tx: Tx) -> BackendDetails:
            schema_rows = {str(k): str(v) for k, v, _ in await tx.rows(q.META_ALL) if is_schema_key(str(k))}
            models = [(str(n), str(f), str(a)) for n, f, a in await tx.rows(q.MODELS)]
            indexes = [(str(name), str(table), str(status))
                       for name, table, kind, status in await tx.rows(q.PICO_INDEXES) if "VECTOR" in str(kind).upper()]
            return BackendDetails(schema=schema_rows, models=models, indexes=indexes)

        return self._run(work, "read the catalogue")

    def embed_texts(self, texts: list[str]) -> Embeddings:
        async def work(tx: Tx) -> list[list[float]]:
            vectors = []
            for text in texts:
                vector = await self._ctx.embed(tx, text)
                if vector is None:
                    raise NoEmbedder(self._ctx.missing_model_note or f"the ONNX model {self.model} is not loaded")
                vectors.append([float(x) for x in vector])
            return vectors

        return Embeddings(self.model, self._run(work, "embed texts"))

    def vector_status(self) -> VectorStatus:
        async def work(tx: Tx) -> int:
            row = await tx.one(q.MEMORY_VECTORS_MISSING, agent_id=self.agent_id, embedding_model=self.model)
            return int(row[0]) if row else 0

        return VectorStatus(embedder=self.model, where="in the database", missing=self._run(work, "count vectors"))

    def ping(self) -> None:
        async def work(tx: Tx) -> None:
            await tx.one(q.PING)

        self._run(work, "answer a ping", timeout=5.0)

    def leases(self) -> OracleLeases:
        """Leases in PICO_LEASES, scoped by this store's agent id (a person's store: theirs)."""
        return OracleLeases(self._db, self.agent_id)

    def exclusive_service_lock(self, service: str, details: dict[str, Any]) -> None:
        """None: several gateways on one database are not refused here (a separate question: who runs the jobs)."""
        return None

    def close(self) -> None:
        if self._owns_db:  # a store made by for_agent shares its opener's database
            self._db.close()

