"""The background questions in the database, embedded by its own model (``PICO_BACKGROUND_QUESTIONS``).

Automatic recall measures a query against the texts of ``store/data/background_queries.txt`` before it
pushes a memory (``ranking.push_mask``). On Oracle the query is embedded by the in-database ONNX model, so
the background questions must be too: one row per model and question, tagged with a hash of the whole set
so that changed texts are embedded again. ``picoora setup-oracle`` fills them; a recall that finds them
missing fills them once in its own transaction (one executemany, the database embedding as it inserts).
"""

from __future__ import annotations

import functools
import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from picoora.store.anchors import background_texts
from picoora.store.oracle import schema
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import utc_stamp
from picoora.store.oracle.connection import Tx, error_code

log = logging.getLogger(__name__)

_TABLE_MISSING = "ORA-00942"
_BUSY = frozenset({"ORA-30006", "ORA-00054"})  # another session is filling: try again on a later turn


@dataclass(frozen=True)
class BackgroundSet:
    texts: tuple[str, ...]
    set_hash: str


@functools.lru_cache(maxsize=1)
def current_set() -> BackgroundSet:
    """The bundled texts and their version (a hash of the whole list, in order)."""
    texts = tuple(background_texts())
    return BackgroundSet(texts, hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest())


async def stored_count(tx: Tx, model: str) -> int | None:
    """How many of the current set ``model`` has; None when the table does not exist."""
    try:
        row = await tx.one(q.BACKGROUND_COUNT, embedding_model=model, set_hash=current_set().set_hash)
    except Exception as exc:
        if error_code(exc) != _TABLE_MISSING:
            raise
        return None
    return int(row[0]) if row else 0


async def fill(tx: Tx, model: str) -> int:
    """Embed the current set for ``model`` unless it is there already; returns the rows written (0: complete).
    Rows of older sets of the model are replaced; other models' rows are left alone. Creates the table when
    an older schema lacks it. Holds the table lock until ``tx`` ends. Raises the database's error (the model
    missing: ORA-40284; another filler holding the lock over 10 s: ORA-30006)."""
    background = current_set()
    count = await stored_count(tx, model)
    if count == len(background.texts):
        return 0
    if count is None:
        await schema.run_ddl(tx, q.CREATE_BACKGROUND)  # ORA-00955 (created meanwhile) counts as done
    await tx.run(q.BACKGROUND_LOCK)
    if await stored_count(tx, model) == len(background.texts):
        return 0  # another session filled it while we waited for the lock
    await tx.run(q.BACKGROUND_CLEAR, embedding_model=model)
    now = utc_stamp()
    await tx.run_many(q.BACKGROUND_INSERT, [
        {"embedding_model": model, "question_no": number, "set_hash": background.set_hash, "content": text,
         "now": now} for number, text in enumerate(background.texts, start=1)
    ])
    return len(background.texts)


class BackgroundAnchors:
    """The query's best cosine against the background questions, for one store's model.

    Filling is tried once per process: when it fails (no CREATE TABLE privilege, a model that is not loaded,
    a full tablespace), or reading fails, automatic recall decides by the push floor alone, as it did before
    anchors existed; only a lost connection fails the recall."""

    def __init__(self, model: str):
        self.model = model
        self.unavailable: str | None = None  # why recall goes without anchors (logged once)

    async def best(self, tx: Tx, vector: Any) -> float | None:
        """Called before the recall writes anything: a failure here is rolled back without loss."""
        if self.unavailable is not None:
            return None
        background = current_set()
        try:
            found = await self._best(tx, vector, background)
            if found is None and await fill(tx, self.model):
                await tx.commit()  # the set is shared: keep it even if the rest of this recall fails
            return found if found is not None else await self._best(tx, vector, background)
        except Exception as exc:
            if not error_code(exc).startswith("ORA-"):
                raise  # the connection is gone: the recall fails as any other would
            await tx.rollback()  # no half-filled set
            if error_code(exc) in _BUSY:
                return None  # another session is filling: the next turn finds the set
            self.unavailable = f"the background questions of {self.model} cannot be used: {exc}"
            log.info("automatic recall decides by the similarity floor alone: %s (picoora setup-oracle fills "
                     "PICO_BACKGROUND_QUESTIONS)", self.unavailable)
            return None

    async def _best(self, tx: Tx, vector: Any, background: BackgroundSet) -> float | None:
        """The best cosine when the model's set is complete, None when it is not (or the table is missing)."""
        try:
            row = await tx.one(q.BACKGROUND_BEST, vector=vector, embedding_model=self.model,
                               set_hash=background.set_hash)
        except Exception as exc:
            if error_code(exc) != _TABLE_MISSING:
                raise
            return None
        if not row or int(row[0]) != len(background.texts) or row[1] is None:
            return None
        return float(row[1])
