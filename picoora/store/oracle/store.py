"""OracleStore: the Store protocol on the PICO_ tables, embeddings computed inside the database.

The store is its families (``oracle/<family>.py``) over one ``OpenContext``: the database, the agent whose
rows they read (``agent_id`` everywhere; PICO_META is schema-wide, as in the Go version), the model, the
background anchors and the text-index health. Every family method is one unit of work on
:class:`~picoora.store.oracle.connection.Database` (one pooled connection, one transaction, committed at
the end or rolled back on error), written once (``unit_of_work.py``): the blocking form runs it with
``Database.run``, the async form awaits it with ``Database.arun``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from picoora.store.base import BackendDetails, StoreStats
from picoora.store.oracle import sql as q
from picoora.store.oracle.connection import Database, Tx
from picoora.store.oracle.context import OpenContext
from picoora.store.oracle.families import FamilySettings, OracleFamilies
from picoora.store.oracle.keyvalues import is_schema_key

if TYPE_CHECKING:
    from picoora.config import DocsConfig

_ID_HEX_CHARS = 12


class OracleStore(OracleFamilies):
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
        self._db = db
        self.agent_id = agent_id
        self.model = db.model  # validated identifier; also the embedding_model recorded with each vector
        self._owns_db = True
        self._use(OpenContext(db, agent_id, text_index=text_index),
                  FamilySettings(tuple(secrets), note_zone, min_similarity, dedup_similarity, docs))

    def _use(self, ctx: OpenContext, settings: FamilySettings) -> None:
        self._ctx = ctx
        self._build(ctx, settings)

    def for_agent(self, agent_id: str) -> OracleStore:
        """The rows of ``agent_id`` (a person's scope, ``store.scoped``) over this store's database: the same
        pool, event-loop thread, settings and background anchors, where opening another store would start a
        pool and a thread of its own and probe the schema again. Closing it leaves the database open."""
        other = OracleStore(self._db, agent_id=agent_id)
        other._use(self._ctx.for_agent(agent_id), self.settings)
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

    # ---- everything ----------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        async def work(tx: Tx) -> StoreStats:
            counts = await tx.one(q.STATS, agent_id=self.agent_id)
            assert counts is not None  # an aggregate query always returns its one row
            memories, notes, sessions, transcripts, state, prompts, config, _ = counts
            return StoreStats(backend=self.backend, location=self.location, memories=int(memories),
                              daily_notes=int(notes), sessions=int(sessions), transcript_entries=int(transcripts),
                              state_keys=int(state), prompts=int(prompts), config_keys=int(config))

        return self._ctx.run(work, "count stored items")

    def details(self) -> BackendDetails:
        """Schema bookkeeping rows, loaded ONNX models and the PICO_ vector indexes (by their index type)."""
        async def work(tx: Tx) -> BackendDetails:
            schema_rows = {str(k): str(v) for k, v, _ in await tx.rows(q.META_ALL) if is_schema_key(str(k))}
            models = [(str(n), str(f), str(a)) for n, f, a in await tx.rows(q.MODELS)]
            indexes = [(str(name), str(table), str(status))
                       for name, table, kind, status in await tx.rows(q.PICO_INDEXES) if "VECTOR" in str(kind).upper()]
            return BackendDetails(schema=schema_rows, models=models, indexes=indexes)

        return self._ctx.run(work, "read the catalogue")

    def ping(self) -> None:
        async def work(tx: Tx) -> None:
            await tx.one(q.PING)

        self._ctx.run(work, "answer a ping", timeout=5.0)

    def exclusive_service_lock(self, service: str, details: dict[str, Any]) -> None:
        """None: several gateways on one database are not refused here (a separate question: who runs the jobs)."""
        return None

    def close(self) -> None:
        if self._owns_db:  # a store made by for_agent shares its opener's database
            self._db.close()

