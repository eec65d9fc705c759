"""What every part of the Oracle store shares: the database, whose rows (``agent_id``), the in-database model
that embeds, the background questions and the health of the Oracle Text index.

The store, its families and its document library all hold one, so none reaches into another. A person's
store (``for_agent``) shares the database, the background anchors and the text-index health with its
opener. ``OracleContext`` is what they rely on; ``OpenContext`` is the one over an open database, and
``awaited.AwaitedContext`` the one over a database that is not reachable yet (``oracle.required``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from picoora.store.oracle import sql as q
from picoora.store.oracle.background import BackgroundAnchors
from picoora.store.oracle.connection import Database, Tx, error_code
from picoora.store.oracle.indexes import TextIndexHealth
from picoora.store.oracle.query_text import embedding_text

if TYPE_CHECKING:
    from picoora.store.oracle.op import Op

T = TypeVar("T")

MODEL_MISSING = frozenset({"ORA-40284", "ORA-00904"})  # no such mining model / identifier unknown


class OracleContext(ABC):
    def __init__(self, agent_id: str):
        self.agent_id = agent_id

    @abstractmethod
    def database(self) -> Database:
        """The database, for a call in this thread."""

    @abstractmethod
    async def adatabase(self) -> Database:
        """The database, for a call on the caller's event loop (never opening a connection on it)."""

    @abstractmethod
    def opened(self) -> OpenContext:
        """The context over the open database: its model, background anchors and text-index health."""

    def run(self, work: Callable[[Tx], Awaitable[T]], what: str, timeout: float | None = None) -> T:
        return self.database().run(work, what=what, timeout=timeout)

    def do(self, op: Op[T]) -> T:
        if op.work is None:
            return cast("T", op.result)
        return self.database().run(op.work, what=op.what, timeout=op.timeout)

    async def ado(self, op: Op[T]) -> T:
        if op.work is None:
            return cast("T", op.result)
        return await (await self.adatabase()).arun(op.work, what=op.what, timeout=op.timeout)


class OpenContext(OracleContext):
    def __init__(self, db: Database, agent_id: str, *, text_index: bool = False,
                 anchors: BackgroundAnchors | None = None, text: TextIndexHealth | None = None):
        super().__init__(agent_id)
        self.db = db
        self.model = db.model  # validated identifier; also the embedding_model recorded with each vector
        self.anchors = anchors or BackgroundAnchors(self.model)
        self.text = text or TextIndexHealth(text_index)
        self.missing_model_note: str | None = None  # why recall is keyword-only, set by the last embed

    def for_agent(self, agent_id: str) -> OpenContext:
        return OpenContext(self.db, agent_id, anchors=self.anchors, text=self.text)

    def database(self) -> Database:
        return self.db

    async def adatabase(self) -> Database:
        return self.db

    def opened(self) -> OpenContext:
        return self

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
