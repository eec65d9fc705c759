"""The vector indexes: built when there are vectors to build them from, rebuilt after a re-embed.

An IVF index computes its partition centroids from the rows present when it is created and never moves
them, so one created on an empty table sends every later row to arbitrary partitions and approximate
search misses neighbours. So an index is created only once its table holds vectors (``setup-oracle``
defers it otherwise and says so), and ``memory reindex`` rebuilds the memories' index (drop, create) from
the data now there. Which organisation an index has (IVF or HNSW) is read from the dictionary
(USER_INDEXES.INDEX_SUBTYPE), never remembered by picoora: an index dropped or made by hand is then
reported as it is. IVF builds ONLINE where the database takes it (``sql.ONLINE_REFUSED`` falls back).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from picoora.store.base import StoreError
from picoora.store.oracle import sql as q
from picoora.store.oracle.connection import Database, Tx
from picoora.store.oracle.schema import run_ddl

INDEX_SECONDS = 300.0


@dataclass
class IndexOutcome:
    name: str
    created: bool  # False: it already existed (or was deferred)
    error: str | None = None  # set when it could not be created
    deferred: bool = False  # the table has no vectors yet: built by a later setup-oracle or memory reindex
    kind: str | None = None  # "IVF" / "HNSW" as the dictionary says (or its INDEX_SUBTYPE when neither)


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


def organisation(subtype: str | None) -> str | None:
    """"HNSW" or "IVF" from USER_INDEXES.INDEX_SUBTYPE (INMEMORY_NEIGHBOR_GRAPH_HNSW, NEIGHBOR_PARTITIONS_IVF);
    another subtype is returned as it is, so it is shown rather than guessed."""
    if not subtype:
        return None
    upper = subtype.upper()
    return "HNSW" if "GRAPH" in upper or "HNSW" in upper else "IVF" if "PARTITION" in upper or "IVF" in upper \
        else subtype


@dataclass(frozen=True)
class _Found:
    kind: str | None
    status: str


async def _dictionary(tx: Tx) -> dict[str, _Found]:
    return {str(name): _Found(organisation(subtype), str(status))
            for name, subtype, status in await tx.rows(q.VECTOR_INDEX_KINDS)}


def _vector_counts(db: Database) -> tuple[int, int]:
    async def work(tx: Tx) -> tuple[int, int]:
        row = await tx.one(q.VECTORS_STORED)
        return (int(row[0]), int(row[1])) if row else (0, 0)

    return db.run(work, what="count stored vectors")


def _build(db: Database, index: _VectorIndex, hnsw: bool, rebuild: bool) -> bool:
    """True when the index was created; False when one existed (whatever its organisation: an existing IVF
    index is never reported, or silently rebuilt, as the HNSW one asked for)."""
    async def work(tx: Tx) -> bool:
        if rebuild:
            await run_ddl(tx, index.drop)
        return await run_ddl(tx, index.hnsw if hnsw else index.ivf)

    return db.run(work, what=f"{'rebuild' if rebuild else 'create'} index {index.name}", timeout=INDEX_SECONDS)


def found_indexes(db: Database) -> dict[str, _Found]:
    return db.run(_dictionary, what="read the vector indexes from USER_INDEXES")


def build_vector_indexes(db: Database, hnsw: bool = False, rebuild: bool = False) -> list[IndexOutcome]:
    """Create the memories' and daily notes' vector indexes where their tables hold vectors. An existing
    index of another organisation than an asked-for HNSW is kept unless ``rebuild`` (drop, create from the
    data now there, which ``rebuild`` does for any existing index). A failure is an outcome with ``error``
    (recall still works without an index, only slower)."""
    outcomes = []
    for index, count in zip((MEMORIES, DAILY_NOTES), _vector_counts(db), strict=True):
        if not count:
            outcomes.append(IndexOutcome(index.name, False, deferred=True))
            continue
        try:
            before = found_indexes(db).get(index.name)
            created = _build(db, index, hnsw, rebuild=rebuild and before is not None)
            found = found_indexes(db).get(index.name) or _Found(None, "MISSING")
            problem = None if found.status == "VALID" else (
                f"it exists but its status is {found.status}: run `picoora setup-oracle --rebuild-indexes`")
            outcomes.append(IndexOutcome(index.name, created, problem, kind=found.kind))
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
    """Drop and create the memories' vector index with the organisation it has (IVF if there is none)."""
    try:
        found = found_indexes(db).get(MEMORIES.name)
        _build(db, MEMORIES, found is not None and found.kind == "HNSW", rebuild=True)
    except StoreError as exc:
        raise StoreError(f"The memories were re-embedded, but rebuilding their vector index failed: {exc} "
                         "Run: picoora setup-oracle") from None
