"""What every part of the Oracle store shares: the database, whose rows (``agent_id``), the in-database model
that embeds, the background questions and the health of the Oracle Text index.

The store and its document library both hold one, so neither reaches into the other. A person's store
(``for_agent``) shares the database, the background anchors and the text-index health with its opener.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from picoora.store.oracle import sql as q
from picoora.store.oracle.background import BackgroundAnchors
from picoora.store.oracle.connection import Database, Tx, error_code
from picoora.store.oracle.indexes import TextIndexHealth
from picoora.store.oracle.query_text import embedding_text

T = TypeVar("T")

MODEL_MISSING = frozenset({"ORA-40284", "ORA-00904"})  # no such mining model / identifier unknown


class OracleContext:
    def __init__(self, db: Database, agent_id: str, *, text_index: bool = False,
                 anchors: BackgroundAnchors | None = None, text: TextIndexHealth | None = None):
        self.db = db
        self.agent_id = agent_id
        self.model = db.model  # validated identifier; also the embedding_model recorded with each vector
        self.anchors = anchors or BackgroundAnchors(self.model)
        self.text = text or TextIndexHealth(text_index)
        self.missing_model_note: str | None = None  # why recall is keyword-only, set by the last embed

    def for_agent(self, agent_id: str) -> OracleContext:
        return OracleContext(self.db, agent_id, anchors=self.anchors, text=self.text)

    def run(self, work: Callable[[Tx], Awaitable[T]], what: str, timeout: float | None = None) -> T:
        return self.db.run(work, what=what, timeout=timeout)

    async def embed(self, tx: Tx, text: str) -> Any | None:
        """The model's vector for ``text``, or None when the model is not loaded (recall degrades to keywords)."""
        try:
            row = await tx.one(q.EMBED, text=embedding_text(text))
        except Exception as exc:
            if error_code(exc) not in MODEL_MISSING:
                raise
            self.missing_model_note = (
                f"recall by meaning is unavailable, so recall matches keywords only: the ONNX model {self.model} "
                f"is not loaded in {self.db.target}. Run: picoora setup-oracle --onnx-file PATH"
            )
            return None
        self.missing_model_note = None
        return row[0] if row else None
