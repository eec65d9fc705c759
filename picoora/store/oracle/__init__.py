"""The Oracle AI Database backend: the only package in picoora that knows SQL.

``open_oracle_store(config)`` connects (under a deadline), checks the schema (upgrading an older one with
the additive migrations) and the ONNX embedding model, and returns an ``OracleStore``; when Oracle cannot
be used it raises ``OracleUnavailable`` whose message says why and what to run, so callers can fall back
to file storage with one line.

Importing this package is cheap: python-oracledb is imported only when a connection is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from picoora.store.oracle.connection import OracleUnavailable

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.store.oracle.connection import Database, PoolFactory
    from picoora.store.oracle.store import OracleStore

__all__ = ["OracleUnavailable", "open_database", "open_oracle_store"]


def open_database(config: Config, *, pool_factory: PoolFactory | None = None) -> Database:
    """A :class:`Database` for ``config.oracle`` (nothing is sent until the first operation)."""
    from picoora.store.oracle.connection import Database

    try:
        return Database(config.oracle, pool_factory=pool_factory)
    except ValueError as exc:  # the model name is interpolated into SQL, so it must be an identifier
        raise OracleUnavailable("config", f"{exc}: fix oracle.onnx_model in config.json") from None


def open_oracle_store(config: Config, *, pool_factory: PoolFactory | None = None,
                      require_model: bool = True) -> OracleStore:
    """Connect, upgrade the schema if it is older than this picoora, check the model; raises OracleUnavailable.

    ``require_model=False`` opens a store even without the ONNX model (recall then matches keywords only).
    The upgrade runs outside the short open-time probe, with its own deadline and the migration lock."""
    from picoora.config import secret_values
    from picoora.store.oracle.store import OracleStore

    db = open_database(config, pool_factory=pool_factory)
    try:
        _upgrade_if_needed(db, db.probe(_schema_version))
        text_index = db.probe(lambda tx: _check(tx, db, require_model))
        _follow_database_clock(db)
    except BaseException:
        db.close()
        raise
    return OracleStore(
        db,
        agent_id=config.oracle.agent_id,
        min_similarity=config.memory.min_similarity,
        dedup_similarity=config.memory.dedup_similarity,
        text_index=text_index,
        secrets=secret_values(config),
        docs=config.docs,
        note_zone=config.agents.defaults.timezone,
    )


def _follow_database_clock(db: Database) -> None:
    """Measure how far the database's clock is from this machine's (one round trip, its midpoint) and stamp
    rows on the database's from now on."""
    from datetime import datetime, timezone

    from picoora.store.oracle import codec
    from picoora.store.oracle import sql as q

    async def offset(tx: Any) -> Any:
        before = datetime.now(timezone.utc).replace(tzinfo=None)
        row = await tx.one(q.DATABASE_TIME)
        after = datetime.now(timezone.utc).replace(tzinfo=None)
        return row[0] - (before + (after - before) / 2)

    codec.follow_database_clock(db.probe(offset))


async def _schema_version(tx: Any) -> int | None:
    from picoora.store.oracle import schema

    return await schema.current_version(tx)


def _upgrade_if_needed(db: Database, version: int | None) -> None:
    from picoora.store.base import StoreError
    from picoora.store.oracle import schema

    if version is None:
        raise OracleUnavailable("schema", f"Oracle at {db.target} has no picoora schema (no PICO_META table). "
                                          "Run: picoora setup-oracle")
    if version > schema.LATEST_VERSION:  # a newer picoora on another node upgraded it: its rows may not fit ours
        raise OracleUnavailable("schema", schema.newer_than_understood(version, db.target))
    if version == schema.LATEST_VERSION:
        return
    try:
        schema.upgrade(db)
    except StoreError as exc:
        raise OracleUnavailable("schema", f"Upgrading the picoora schema in {db.target} from version {version} "
                                          f"failed: {exc} Run: picoora setup-oracle") from None


async def _check(tx: Any, db: Database, require_model: bool) -> bool:
    """The model is loaded; returns whether the Oracle Text index exists and is usable."""
    from picoora.store.oracle import sql as q
    from picoora.store.oracle.indexes import text_index_usable

    if require_model:
        row = await tx.one(q.MODEL_LOADED, model_name=db.model)
        if not row or not row[0]:
            raise OracleUnavailable("model", f"The ONNX embedding model {db.model} is not loaded in {db.target}. "
                                             "Run: picoora setup-oracle --onnx-file PATH (or scripts/setup-oracle.sh)")
    return await text_index_usable(tx)
