"""The vector indexes: built when there are vectors to build them from, rebuilt after a re-embed.

An IVF index computes its partition centroids from the rows present when it is created and never moves
them, so one created on an empty table sends every later row to arbitrary partitions and approximate
search misses neighbours. So an index is created only once its table holds vectors (``setup-oracle``
defers it otherwise and says so), and ``memory reindex`` rebuilds the memories' index (drop, create) from
the data now there. Which organisation was chosen (IVF or HNSW) is recorded in PICO_META, because
USER_INDEXES reports only "VECTOR" and guessing from the index name would be wrong.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from picoora.store.base import StoreError
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import utc_stamp
from picoora.store.oracle.connection import Database, Tx
from picoora.store.oracle.schema import run_ddl

KIND_PREFIX = "schema.index_kind."  # + index name -> "IVF" or "HNSW", in PICO_META
INDEX_SECONDS = 300.0


@dataclass
class IndexOutcome:
    name: str
    created: bool  # False: it already existed (or was deferred)
    error: str | None = None  # set when it could not be created
    deferred: bool = False  # the table has no vectors yet: built by a later setup-oracle or memory reindex
    kind: str | None = None  # "IVF" / "HNSW" as created or as recorded; None: an index picoora did not record


@dataclass(frozen=True)
class _VectorIndex:
    name: str
    drop: q.Sql
    ivf: q.Sql
    hnsw: q.Sql


MEMORIES = _VectorIndex("IDX_PICO_MEMORIES_VEC", q.DROP_MEMORIES_VECTOR_INDEX, q.IVF_MEMORIES, q.HNSW_MEMORIES)
DAILY_NOTES = _VectorIndex("IDX_PICO_DAILY_NOTES_VEC", q.DROP_DAILY_NOTES_VECTOR_INDEX, q.IVF_DAILY_NOTES,
                           q.HNSW_DAILY_NOTES)


def create_statements(hnsw: bool) -> tuple[q.Sql, ...]:
    return tuple(index.hnsw if hnsw else index.ivf for index in (MEMORIES, DAILY_NOTES))


def _vector_counts(db: Database) -> tuple[int, int]:
    async def work(tx: Tx) -> tuple[int, int]:
        row = await tx.one(q.VECTORS_STORED)
        return (int(row[0]), int(row[1])) if row else (0, 0)

    return db.run(work, what="count stored vectors")


def _build(db: Database, index: _VectorIndex, hnsw: bool, rebuild: bool) -> bool:
    """True when the index was created; False when one existed (its kind is then left as recorded: an
    existing IVF index must not be reported, or rebuilt, as the HNSW one asked for)."""
    async def work(tx: Tx) -> bool:
        if rebuild:
            await run_ddl(tx, index.drop)
        created = await run_ddl(tx, index.hnsw if hnsw else index.ivf)
        if created:
            await tx.run(q.META_SET, meta_key=_kind_key(index), meta_value="HNSW" if hnsw else "IVF", now=utc_stamp())
        return created

    return db.run(work, what=f"{'rebuild' if rebuild else 'create'} index {index.name}", timeout=INDEX_SECONDS)


def _kind_key(index: _VectorIndex) -> str:
    return f"{KIND_PREFIX}{index.name}"


def _status(db: Database, index: _VectorIndex) -> str:
    """USER_INDEXES.status of ``index`` ("VALID", "UNUSABLE", ...; "MISSING" when there is none)."""
    async def work(tx: Tx) -> str:
        return next((str(row[3]) for row in await tx.rows(q.PICO_INDEXES) if row[0] == index.name), "MISSING")

    return db.run(work, what=f"check index {index.name}")


def recorded_kind(db: Database, index: _VectorIndex) -> str | None:
    async def work(tx: Tx) -> str | None:
        row = await tx.one(q.META_GET, meta_key=_kind_key(index))
        return str(row[0]) if row and row[0] else None

    return db.run(work, what="read the vector index kind")


def build_vector_indexes(db: Database, hnsw: bool = False) -> list[IndexOutcome]:
    """Create the memories' and daily notes' vector indexes where their tables hold vectors. A failure is an
    outcome with ``error`` (recall still works without an index, only slower)."""
    outcomes = []
    for index, count in zip((MEMORIES, DAILY_NOTES), _vector_counts(db), strict=True):
        if not count:
            outcomes.append(IndexOutcome(index.name, False, deferred=True))
            continue
        try:
            created = _build(db, index, hnsw, rebuild=False)
            kind = ("HNSW" if hnsw else "IVF") if created else recorded_kind(db, index)
            status = _status(db, index)
            problem = None if status == "VALID" else (f"it exists but its status is {status}: run `picoora memory "
                                                      "reindex` (memories) or drop it and run setup-oracle again")
            outcomes.append(IndexOutcome(index.name, created, problem, kind=kind))
        except StoreError as exc:
            outcomes.append(IndexOutcome(index.name, False, str(exc)))
    return outcomes


async def text_index_usable(tx: Tx) -> bool:
    """Whether the Oracle Text index keyword recall uses exists and is VALID (index and domain status)."""
    row = await tx.one(q.TEXT_INDEX_USABLE)
    return bool(row and row[0])


# What a query on a text index that is not usable raises: the domain index is marked FAILED or UNUSABLE
# (ORA-29861), or its ODCIIndexStart routine fails with an Oracle Text error (ORA-29902 / DRG-10599).
TEXT_INDEX_BROKEN = frozenset({"ORA-29861", "ORA-29902", "DRG-10599"})
TEXT_INDEX_RECHECK_SECONDS = 300.0


class TextIndexHealth:
    """Whether keyword recall may use CONTAINS now, shared by a store and its people's stores.

    A query that fails on the index (it broke after the store opened) switches recall to the plain scan at
    once, for everyone; the dictionary (USER_INDEXES) is asked again at most every
    ``TEXT_INDEX_RECHECK_SECONDS``, and the index is used again once it is VALID (after ``setup-oracle``)."""

    def __init__(self, usable: bool, clock: Callable[[], float] = time.monotonic):
        self.usable = usable
        self._clock = clock
        self._checked = clock()

    async def use(self, tx: Tx) -> bool:
        if not self.usable and self._clock() - self._checked >= TEXT_INDEX_RECHECK_SECONDS:
            self._checked = self._clock()
            self.usable = await text_index_usable(tx)
        return self.usable

    def failed(self) -> None:
        self.usable = False
        self._checked = self._clock()


def rebuild_memory_index(db: Database) -> None:
    """Drop and create the memories' vector index with the recorded organisation (IVF if none was)."""
    try:
        _build(db, MEMORIES, recorded_kind(db, MEMORIES) == "HNSW", rebuild=True)
    except StoreError as exc:
        raise StoreError(f"The memories were re-embedded, but rebuilding their vector index failed: {exc} "
                         "Run: picoora setup-oracle") from None
