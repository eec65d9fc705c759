"""Memories on PICO_MEMORIES, embedded inside the database (VECTOR_EMBEDDING).

Recall follows the file backend's rules (``picoora.store.ranking``): the database finds candidates
(approximate vector search with ``FETCH APPROX FIRST`` so the vector index is used, plus keyword
matches through Oracle Text when its index exists, else a regular-expression scan); Python scores them
with the same floor, code boost, importance and recency, then records the access. Automatic recall
(``confident_only``) also reads the query's best cosine against the background questions embedded by the
same in-database model (``background.py``), as the file backend's anchors do.
"""

from __future__ import annotations

import builtins
import logging
import math
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from picoora.store import limits, ranking, supersession
from picoora.store.base import (
    AddMemoryResult,
    Embeddings,
    MemoryRecord,
    NoEmbedder,
    Provenance,
    RecallResult,
    ScoredMemory,
    StoreError,
    VectorStatus,
)
from picoora.store.keywords import KeywordIndex, tokenize
from picoora.store.oracle import codec
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import content_hash, utc_stamp
from picoora.store.oracle.connection import error_code, error_codes
from picoora.store.oracle.context import MODEL_MISSING
from picoora.store.oracle.indexes import TEXT_INDEX_BROKEN
from picoora.store.oracle.op import Op, known
from picoora.store.oracle.query_text import embedding_text, informative_first, scan_pattern, text_query
from picoora.store.oracle.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext

log = logging.getLogger(__name__)

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


class OracleMemories:
    """``min_similarity``: the recall floor (0: the generic one); ``dedup_similarity``: how close a new memory
    must be to an existing one to be the same fact."""

    def __init__(self, ctx: OracleContext, *, min_similarity: float = 0.0, dedup_similarity: float = 0.95):
        self.ctx = ctx
        self.floor = min_similarity or ranking.GENERIC_SIMILARITY_FLOOR
        self.dedup_similarity = dedup_similarity
        self._push: ranking.PushCalibration | None = None

    @property
    def push_calibration(self) -> ranking.PushCalibration:
        """What automatic recall pushes by (ranking.ORACLE_PUSH for the database's model, unless set: the
        calibration bench tries others)."""
        return self._push or ranking.oracle_push_calibration(self.ctx.opened().model)

    @push_calibration.setter
    def push_calibration(self, calibration: ranking.PushCalibration) -> None:
        self._push = calibration

    @unit_of_work
    def add(self, content: str, importance: float = 0.7, category: str = "general", *,
            provenance: Provenance | None = None, expires_at: datetime | None = None) -> Op[AddMemoryResult]:
        content = limits.check_new_memory(content, importance, category, provenance)
        importance = round(importance, 2)  # the column is NUMBER(3,2)
        category = category or "general"

        async def work(tx: Tx) -> AddMemoryResult:
            vector = await self.ctx.opened().embed(tx, content)
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
                if await tx.run(q.MEMORY_SUPERSEDE, agent_id=self.ctx.agent_id, memory_id=old.id,
                                superseded_by=record.id, now=utc_stamp()):
                    replaced.append(replace(old, superseded_by=record.id))
            return AddMemoryResult(record, created=True, replaced=replaced)

        return Op(work, "store the memory")

    async def _find_duplicate(self, tx: Tx, content: str, vector: Any | None) -> MemoryRecord | None:
        agent_id = self.ctx.agent_id
        row = await tx.one(q.MEMORY_BY_HASH, agent_id=agent_id, content_hash=content_hash(content), now=utc_stamp())
        if row is not None:
            return codec.memory_from_row(row)
        if vector is None:
            return None
        row = await tx.one(q.MEMORY_NEAREST_EXACT, agent_id=agent_id, vector=vector,
                           embedding_model=self.ctx.opened().model, now=utc_stamp())
        if row is not None and ranking.is_same_fact(content, codec.text(row[1]),
                                                    1.0 - float(row[codec.MEMORY_WIDTH]), self.dedup_similarity):
            return codec.memory_from_row(row)
        return None

    async def _raise_importance(self, tx: Tx, record: MemoryRecord, importance: float) -> MemoryRecord:
        if importance <= record.importance:
            return record
        await tx.run(q.MEMORY_RAISE_IMPORTANCE, agent_id=self.ctx.agent_id, memory_id=record.id,
                     importance=importance, now=utc_stamp())
        return replace(record, importance=importance)

    async def _insert(self, tx: Tx, record: MemoryRecord, vector: Any | None) -> MemoryRecord:
        now = utc_stamp()
        record = replace(
            record,
            importance=round(record.importance, 2),
            created_at=record.created_at or now.replace(tzinfo=timezone.utc),
            embedding_model=self.ctx.opened().model if vector is not None else None,
        )
        await tx.run(
            q.MEMORY_INSERT,
            memory_id=record.id,
            agent_id=self.ctx.agent_id,
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

    @unit_of_work
    def recall(self, query: str, limit: int = 5, *, touch: bool = True,
               confident_only: bool = False) -> Op[RecallResult]:
        """``touch=False`` searches without counting it as an access (the inspector looks, it does not recall)."""
        if limit <= 0 or not query.strip():
            return known(RecallResult([]))

        async def work(tx: Tx) -> RecallResult:
            evidence = await self._evidence(tx, query, limit, with_anchors=confident_only)
            matches = self.rank(evidence, limit, confident_only=confident_only)
            touched = matches
            if touch:
                now = utc_stamp()
                await tx.run_many(q.MEMORY_TOUCH, [
                    {"agent_id": self.ctx.agent_id, "memory_id": m.memory.id, "now": now} for m in matches
                ])
                touched = [replace(m, memory=replace(m.memory, access_count=m.memory.access_count + 1,
                                                     accessed_at=now.replace(tzinfo=timezone.utc))) for m in matches]
            if not evidence.embedded:
                return RecallResult(touched, degraded=True, note=self.ctx.opened().missing_model_note)
            return RecallResult(touched)

        return Op(work, "recall memories")

    def recall_evidence(self, query: str, limit: int = 5) -> RecallEvidence:
        """The candidates and background cosine a recall of ``query`` would rank, background included, without
        touching anything: ``rank`` then decides for any calibration (bench/oracle_calibrate.py)."""
        async def work(tx: Tx) -> RecallEvidence:
            return await self._evidence(tx, query, limit, with_anchors=True)

        return self.ctx.run(work, "gather recall evidence")

    async def _evidence(self, tx: Tx, query: str, limit: int, *, with_anchors: bool) -> RecallEvidence:
        # The background cosine is only worth its query for automatic recall (the recall tool returns weaker
        # matches too); it is read before any write, so a first fill can commit on its own.
        ctx = self.ctx.opened()
        vector = await ctx.embed(tx, query)
        anchor_best = await ctx.anchors.best(tx, vector) if with_anchors and vector is not None else None
        candidates = await self._candidates(tx, query, vector, max(4 * limit, 20))
        return RecallEvidence(query, candidates, vector is not None, anchor_best)

    async def _candidates(self, tx: Tx, query: str, vector: Any | None,
                          k: int) -> dict[str, tuple[MemoryRecord, float | None]]:
        """Memories worth scoring: the nearest by vector and those holding a query term, with their cosine."""
        model = self.ctx.opened().model
        found: dict[str, tuple[MemoryRecord, float | None]] = {}
        if vector is not None:
            for row in await tx.rows(q.MEMORY_NEAREST, agent_id=self.ctx.agent_id, vector=vector,
                                     embedding_model=model, k=k, now=utc_stamp()):
                found[str(row[0])] = (codec.memory_from_row(row), 1.0 - float(row[codec.MEMORY_WIDTH]))
        terms = informative_first(query, builtins.list(dict.fromkeys(tokenize(query))))
        if terms:
            for row in await self._keyword_rows(tx, terms, k):
                record = codec.memory_from_row(row)
                if record.id in found:
                    continue
                stored = row[codec.MEMORY_WIDTH]
                comparable = vector is not None and stored is not None and record.embedding_model == model
                found[record.id] = (record, _cosine(vector, stored) if comparable else None)
        return found

    async def _keyword_rows(self, tx: Tx, terms: builtins.list[str], k: int) -> builtins.list[tuple]:
        """Memories holding a query term: through the Oracle Text index while it works, else the plain scan
        (also for this very query when the index fails under it)."""
        text = self.ctx.opened().text
        if await text.use(tx):
            try:
                return await tx.rows(q.MEMORY_KEYWORD_TEXT, agent_id=self.ctx.agent_id, text_query=text_query(terms),
                                     k=k, now=utc_stamp())
            except Exception as exc:
                if not TEXT_INDEX_BROKEN & set(error_codes(exc)):
                    raise
                text.failed()
                log.warning("the Oracle Text index failed (%s); keyword recall scans until it is VALID again "
                            "(run picoora setup-oracle)", error_code(exc))
        return await tx.rows(q.MEMORY_KEYWORD_SCAN, agent_id=self.ctx.agent_id, pattern=scan_pattern(terms), k=k,
                             now=utc_stamp())

    def rank(self, evidence: RecallEvidence, limit: int, *,
             confident_only: bool = False) -> builtins.list[ScoredMemory]:
        """The matches recall returns (``confident_only``: pushes, by ``push_calibration``), best first."""
        query, candidates = evidence.query, evidence.candidates
        # Keyword evidence is computed over the candidates (the file backend uses all memories): IDF from a
        # smaller sample, same rules.
        keywords = KeywordIndex()
        for memory_id, (record, _) in candidates.items():
            keywords.add(memory_id, record.content)
        keyword_by_id, code_by_id = keywords.match(query)
        now = datetime.now(timezone.utc)
        calibration = self.push_calibration
        scored = []
        for memory_id, (record, similarity) in candidates.items():
            keyword, code = keyword_by_id.get(memory_id, 0.0), code_by_id.get(memory_id, 0.0)
            if not ranking.is_match(similarity, keyword, code, self.floor):
                continue
            if confident_only and not ranking.should_push(similarity, keyword, code, evidence.anchor_best,
                                                          calibration):
                continue
            score = ranking.final_score(similarity, keyword, code, record.importance, record.created_at,
                                        record.accessed_at, now)
            scored.append(ScoredMemory(record, score, similarity))
        scored.sort(key=lambda m: m.score, reverse=True)
        return scored[:limit]

    @unit_of_work
    def get(self, memory_id: str) -> Op[MemoryRecord | None]:
        async def work(tx: Tx) -> MemoryRecord | None:
            row = await tx.one(q.MEMORY_GET, agent_id=self.ctx.agent_id, memory_id=memory_id)
            return codec.memory_from_row(row) if row else None

        return Op(work, "read the memory")

    @unit_of_work
    def list(self, limit: int | None = None) -> Op[builtins.list[MemoryRecord]]:
        """Newest first."""
        async def work(tx: Tx) -> builtins.list[MemoryRecord]:
            rows = await tx.rows(q.MEMORY_LIST, agent_id=self.ctx.agent_id,
                                 k=q.ALL_ROWS if limit is None else max(limit, 0))
            return [codec.memory_from_row(row) for row in rows]

        return Op(work, "list memories")

    @unit_of_work
    def forget(self, memory_id: str) -> Op[bool]:
        async def work(tx: Tx) -> bool:
            return await tx.run(q.MEMORY_DELETE, agent_id=self.ctx.agent_id, memory_id=memory_id) > 0

        return Op(work, "forget the memory")

    def reindex(self, batch: int = 100, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every memory with the configured model, ``batch`` memories per transaction, then rebuild
        the vector index so its partitions are computed from the data now there."""
        agent_id = self.ctx.agent_id

        async def contents(tx: Tx) -> builtins.list[tuple]:
            return await tx.rows(q.MEMORY_CONTENTS, agent_id=agent_id)

        rows = self.ctx.run(contents, "read memories to re-embed")
        ctx = self.ctx.opened()
        done = 0
        for start in range(0, len(rows), batch):
            async def work(tx: Tx, chunk: builtins.list[tuple] = rows[start:start + batch]) -> int:
                count = 0
                for memory_id, content in chunk:
                    try:
                        count += await tx.run(q.MEMORY_SET_EMBEDDING, agent_id=agent_id, memory_id=memory_id,
                                              text=embedding_text(codec.text(content)), embedding_model=ctx.model,
                                              now=utc_stamp())
                    except Exception as exc:
                        if error_code(exc) in MODEL_MISSING:
                            raise StoreError(f"cannot re-embed memories: the ONNX model {ctx.model} is not loaded "
                                             f"in {ctx.db.target}. Run: picoora setup-oracle --onnx-file PATH"
                                             ) from None
                        raise
                return count

            done += self.ctx.run(work, "re-embed memories", timeout=300.0)
            if progress:
                progress(min(start + batch, len(rows)), len(rows))
        if done:
            from picoora.store.oracle.indexes import rebuild_memory_index

            rebuild_memory_index(ctx.db)
        return done

    async def _free_memory_id(self, tx: Tx, wanted: str) -> str | None:
        """``wanted`` if no memory has it, a new id if another agent's memory does (memory_id is the table's
        key across agents), None if this agent already has it."""
        row = await tx.one(q.MEMORY_ID_TAKEN, memory_id=wanted)
        if row is None:
            return wanted
        return None if row[0] == self.ctx.agent_id else uuid.uuid4().hex[:_ID_HEX_CHARS]

    def import_records(self, records: Iterable[MemoryRecord], batch: int = 50, *,
                       progress: Callable[[int, int], None] | None = None) -> int:
        """Add records keeping their ids and fields; skips existing ids, duplicates and empty texts. An id
        another agent uses already gets a fresh one."""
        pending = [r for r in records if r.content.strip()]
        for record in pending:
            limits.check_chars(record.category or "general", limits.KEY_CHARS, "the memory category")
        imported = 0
        for start in range(0, len(pending), batch):
            async def work(tx: Tx, chunk: builtins.list[MemoryRecord] = pending[start:start + batch]) -> int:
                count = 0
                for source in chunk:
                    content = source.content.strip()
                    memory_id = await self._free_memory_id(tx, source.id or uuid.uuid4().hex[:_ID_HEX_CHARS])
                    if memory_id is None:
                        continue
                    vector = await self.ctx.opened().embed(tx, content)
                    if await self._find_duplicate(tx, content, vector) is not None:
                        continue
                    record = replace(source, id=memory_id, content=content, category=source.category or "general")
                    await self._insert(tx, record, vector)
                    count += 1
                return count

            imported += self.ctx.run(work, "import memories", timeout=300.0)
            if progress:
                progress(min(start + batch, len(pending)), len(pending))
        return imported

    @unit_of_work
    def embed_texts(self, texts: builtins.list[str]) -> Op[Embeddings]:
        async def work(tx: Tx) -> Embeddings:
            ctx = self.ctx.opened()
            vectors = []
            for text in texts:
                vector = await ctx.embed(tx, text)
                if vector is None:
                    raise NoEmbedder(ctx.missing_model_note or f"the ONNX model {ctx.model} is not loaded")
                vectors.append([float(x) for x in vector])
            return Embeddings(ctx.model, vectors)

        return Op(work, "embed texts")

    @unit_of_work
    def vector_status(self) -> Op[VectorStatus]:
        async def work(tx: Tx) -> VectorStatus:
            model = self.ctx.opened().model
            row = await tx.one(q.MEMORY_VECTORS_MISSING, agent_id=self.ctx.agent_id, embedding_model=model)
            return VectorStatus(embedder=model, where="in the database", missing=int(row[0]) if row else 0)

        return Op(work, "count vectors")
