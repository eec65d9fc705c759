"""The PICO_ schema as an ordered list of versioned, additive, idempotent migrations.

Version 1 is the Go PicoOraClaw schema (it recorded ``schema_version = 1.0.0``), so an existing Go
database starts at 1 and gets only what picoora adds. Every DDL statement names the error codes that
mean "already done" (``Sql.tolerate``), so a migration interrupted half-way, or run by two processes
at once, simply runs again. Each applied migration is recorded in PICO_META as ``schema_version`` plus a
``migration.NNN`` row saying what it did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from picoora.store.base import StoreError
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import content_hash, text, utc_stamp
from picoora.store.oracle.connection import Tx, error_code

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Database

VERSION_KEY = "schema_version"
EMBEDDING_DIMENSIONS = 384  # the typed VECTOR(384, FLOAT32) columns (all_MiniLM_L12_v2)
MIGRATION_SECONDS = 900.0  # a large Go database takes a while; never run inside the 30 s open probe
_BUSY = "ORA-00054"  # resource busy: another session holds the table (DDL_LOCK_TIMEOUT waited already)
_BUSY_ATTEMPTS = 5


async def _backfill_hashes(tx: Tx, embedding_model: str) -> None:
    rows = await tx.rows(q.UNHASHED_MEMORIES)
    await tx.run_many(q.SET_MEMORY_HASH, [
        {"memory_id": memory_id, "content_hash": content_hash(content or "")} for memory_id, content in rows
    ])
    # Go rows were embedded by the configured ONNX model when they have its dimension; record it so only
    # same-model vectors are compared.
    await tx.run(q.BACKFILL_MEMORY_MODEL, embedding_model=embedding_model, dimensions=EMBEDDING_DIMENSIONS)


async def _unknown_provenance(tx: Tx, embedding_model: str) -> None:
    await tx.run(q.BACKFILL_MEMORY_PROVENANCE)


async def _renumber_transcripts(tx: Tx, embedding_model: str) -> None:
    await tx.run(q.RENUMBER_TRANSCRIPTS)


async def _merge_same_day_notes(tx: Tx, embedding_model: str) -> None:
    """One note per agent and day: the oldest keeps its id and gets the others' text appended in order."""
    keep: dict[tuple, tuple[str, list[str]]] = {}
    extra: list[str] = []
    for note_id, agent_id, day, content in await tx.rows(q.NOTES_SAME_DAY):
        if (agent_id, day) in keep:
            keep[(agent_id, day)][1].append(text(content))
            extra.append(str(note_id))
        else:
            keep[(agent_id, day)] = (str(note_id), [text(content)])
    now = utc_stamp()
    for note_id, parts in keep.values():
        await tx.run(q.NOTE_SET_CONTENT, note_id=note_id, content="\n".join(p for p in parts if p), now=now)
    for note_id in extra:
        await tx.run(q.NOTE_DELETE, note_id=note_id)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[q.Sql, ...]
    backfill: Callable[[Tx, str], Awaitable[None]] | None = field(default=None, compare=False)
    prepare: Callable[[Tx, str], Awaitable[None]] | None = field(default=None, compare=False)  # before the DDL


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "PicoOraClaw tables (typed VECTOR(384, FLOAT32) on new installs) and indexes", (
        q.CREATE_META, q.CREATE_MEMORIES, q.CREATE_DAILY_NOTES, q.CREATE_SESSIONS, q.CREATE_STATE,
        q.CREATE_CONFIG, q.CREATE_PROMPTS, q.CREATE_TRANSCRIPTS,
        q.INDEX_MEMORIES_AGENT, q.INDEX_DAILY_AGENT_DATE, q.INDEX_SESSIONS_AGENT, q.INDEX_TRANSCRIPTS_SESSION,
        q.INDEX_STATE_AGENT, q.INDEX_MEMORIES_AGENT_CAT,
    )),
    Migration(2, "memories: content_hash for exact dedup, embedding_model per vector", (
        q.ADD_MEMORIES_HASH, q.ADD_MEMORIES_MODEL, q.INDEX_MEMORIES_HASH,
    ), _backfill_hashes),
    Migration(3, "sessions keyed by (agent_id, session_key)", (q.DROP_SESSIONS_KEY, q.ADD_SESSIONS_KEY)),
    Migration(4, "transcripts: whole message JSON, unique sequence per session", (
        q.ADD_TRANSCRIPTS_MESSAGE, q.ADD_TRANSCRIPTS_SEQ_KEY,
    ), prepare=_renumber_transcripts),
    Migration(5, "daily notes: one per agent and day", (q.ADD_DAILY_NOTES_DAY_KEY,), prepare=_merge_same_day_notes),
    Migration(6, "turn traces: PICO_TRACES", (q.CREATE_TRACES, q.INDEX_TRACES_SESSION)),
    Migration(7, "key columns sized in characters: session keys 1000, names 255, roles 32", (
        q.WIDEN_SESSIONS, q.WIDEN_TRANSCRIPTS, q.WIDEN_MEMORIES, q.WIDEN_STATE, q.WIDEN_CONFIG, q.WIDEN_PROMPTS,
        q.WIDEN_META,
    )),
    Migration(8, "background questions for automatic recall: PICO_BACKGROUND_QUESTIONS", (q.CREATE_BACKGROUND,)),
    Migration(9, "turn traces: an index for the newest trace of an agent", (q.INDEX_TRACES_RECENT,)),
    Migration(10, "leases for a fleet of gateways: PICO_LEASES", (q.CREATE_LEASES,)),
    Migration(11, "memories: provenance (how, person, session, turn), superseded_by, expires_at",
              q.ADD_MEMORIES_PROVENANCE, _unknown_provenance),
    Migration(12, "whole tool outputs for read_tool_output: PICO_TOOL_OUTPUTS", (
        q.CREATE_TOOL_OUTPUTS, q.INDEX_TOOL_OUTPUTS_AGE,
    )),
    Migration(13, "the knowledge base: PICO_DOCUMENTS and PICO_DOC_CHUNKS (chunked by UTL_TO_CHUNKS)", (
        q.CREATE_DOCUMENTS, q.CREATE_DOC_CHUNKS, q.INDEX_DOCUMENTS_SCOPE, q.INDEX_DOC_CHUNKS_SCOPE,
        q.TEXT_INDEX_DOC_CHUNKS,
    )),
)
LATEST_VERSION = MIGRATIONS[-1].version


def parse_version(value: str | None) -> int:
    """``"1.0.0"`` (written by the Go version) and ``"5"`` (written here) both give their major number."""
    try:
        return int(str(value).split(".")[0]) if value else 0
    except ValueError:
        return 0


async def current_version(tx: Tx) -> int | None:
    """The recorded schema version, 0 when PICO_META has none, None when there is no PICO_META at all."""
    try:
        row = await tx.one(q.META_GET, meta_key=VERSION_KEY)
    except Exception as exc:
        if error_code(exc) == "ORA-00942":  # table or view does not exist
            return None
        raise
    return parse_version(row[0] if row else None)


async def run_ddl(tx: Tx, stmt: q.Sql) -> bool:
    """Run one DDL statement; False when Oracle says it was already done (a tolerated error code).
    A table busy beyond the session's DDL_LOCK_TIMEOUT (ORA-00054) is tried again a few times; an ONLINE
    index build the database refuses is run in its plain form (``Sql.offline``)."""
    for attempt in range(_BUSY_ATTEMPTS):
        try:
            await tx.run(stmt)
        except Exception as exc:
            code = error_code(exc)
            if code in stmt.tolerate:
                return False
            if stmt.offline is not None and code in q.ONLINE_REFUSED:
                return await run_ddl(tx, stmt.offline)
            if code != _BUSY or attempt == _BUSY_ATTEMPTS - 1:
                raise
            await asyncio.sleep(1.0 + attempt)
        else:
            return True
    return True  # not reached: the last attempt returns or raises


def newer_than_understood(version: int, target: str) -> str:
    """Why this picoora must not use (or "upgrade") a schema a newer picoora on another node upgraded."""
    return (f"The picoora schema in {target} is version {version}, newer than this picoora understands "
            f"({LATEST_VERSION}): another node runs a newer picoora. Upgrade picoora here (pip install -U picoora)")


async def migrate(tx: Tx, embedding_model: str) -> list[Migration]:
    """Bring the schema to ``LATEST_VERSION``; returns the migrations applied (empty when up to date).
    Raises StoreError for a schema newer than this picoora: its rows may not fit ours."""
    version = await current_version(tx) or 0
    if version > LATEST_VERSION:
        raise StoreError(newer_than_understood(version, "the database"))
    applied = []
    if version < LATEST_VERSION:
        await tx.run(q.DDL_WAIT)
    for migration in MIGRATIONS:
        if migration.version <= version:
            continue
        if migration.prepare is not None:
            await migration.prepare(tx, embedding_model)
        for stmt in migration.statements:
            await run_ddl(tx, stmt)
        if migration.backfill is not None:
            await migration.backfill(tx, embedding_model)
        now = utc_stamp()
        await tx.run(q.META_SET, meta_key=f"migration.{migration.version:03d}", meta_value=migration.description,
                     now=now)
        await tx.run(q.META_SET, meta_key=VERSION_KEY, meta_value=str(migration.version), now=now)
        await tx.commit()  # DDL commits on its own; this makes the backfill and the record durable with it
        applied.append(migration)
    return applied


async def take_migration_lock(tx: Tx) -> None:
    """Hold the migration lock until ``tx`` ends, so one process migrates at a time (the others wait, then
    find the schema current)."""
    await run_ddl(tx, q.CREATE_MIGRATION_LOCK)
    await tx.run(q.TAKE_MIGRATION_LOCK)


def upgrade(db: Database, embedding_model: str | None = None) -> tuple[int, list[Migration]]:
    """Migrate ``db`` to ``LATEST_VERSION`` under the migration lock and a deadline of its own; returns the
    version found (0: none) and the migrations applied. Raises StoreError."""
    model = embedding_model or db.model

    async def work(tx: Tx) -> tuple[int, list[Migration]]:
        before = await current_version(tx) or 0
        return before, await migrate(tx, model)

    return db.run_holding(take_migration_lock, work, what="create or upgrade the PICO_ schema",
                          timeout=MIGRATION_SECONDS)
