"""The PICO_ schema as an ordered list of versioned, additive, idempotent migrations.

Version 1 is the Go PicoOraClaw schema (it recorded ``schema_version = 1.0.0``), so an existing Go
database starts at 1 and gets only what picoora adds. Every DDL statement names the error codes that
mean "already done" (``Sql.tolerate``), so a migration interrupted half-way, or run by two processes
at once, simply runs again. Each applied migration is recorded in PICO_META as ``schema_version`` plus a
``migration.NNN`` row saying what it did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable

from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import content_hash, utc_stamp
from picoora.store.oracle.connection import Tx, error_code

VERSION_KEY = "schema_version"


async def _backfill_hashes(tx: Tx, embedding_model: str) -> None:
    rows = await tx.rows(q.UNHASHED_MEMORIES)
    await tx.run_many(q.SET_MEMORY_HASH, [
        {"memory_id": memory_id, "content_hash": content_hash(content or "")} for memory_id, content in rows
    ])
    # Go rows were embedded by the configured ONNX model; record it so only same-model vectors are compared.
    await tx.run(q.BACKFILL_MEMORY_MODEL, embedding_model=embedding_model)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[q.Sql, ...]
    backfill: Callable[[Tx, str], Awaitable[None]] | None = field(default=None, compare=False)


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
    )),
    Migration(5, "daily notes: one per agent and day", (q.ADD_DAILY_NOTES_DAY_KEY,)),
    Migration(6, "turn traces: PICO_TRACES", (q.CREATE_TRACES, q.INDEX_TRACES_SESSION)),
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
    """Run one DDL statement; False when Oracle says it was already done (a tolerated error code)."""
    try:
        await tx.run(stmt)
    except Exception as exc:
        if error_code(exc) in stmt.tolerate:
            return False
        raise
    return True


async def migrate(tx: Tx, embedding_model: str) -> list[Migration]:
    """Bring the schema to ``LATEST_VERSION``; returns the migrations applied (empty when up to date)."""
    version = await current_version(tx) or 0
    applied = []
    for migration in MIGRATIONS:
        if migration.version <= version:
            continue
        for stmt in migration.statements:
            await run_ddl(tx, stmt)
        if migration.backfill is not None:
            await migration.backfill(tx, embedding_model)
        now = utc_stamp()
        await tx.run(q.META_SET, meta_key=f"migration.{migration.version:03d}", meta_value=migration.description, now=now)
        await tx.run(q.META_SET, meta_key=VERSION_KEY, meta_value=str(migration.version), now=now)
        await tx.commit()  # DDL commits on its own; this makes the backfill and the record durable with it
        applied.append(migration)
    return applied


def fresh_install_statements() -> list[q.Sql]:
    """The DDL a fresh database gets, in order (for ``setup-oracle --dry-run``)."""
    return [stmt for migration in MIGRATIONS for stmt in migration.statements]
