"""Memories (``PICO_MEMORIES``): long-term facts recalled by meaning and keywords.

A new memory that states a new value for a current one's subject supersedes it (``supersession.py``);
``expires_at`` is when it stops being true. Embedding is the backend's business: callers pass text.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from picoora.store.families.calls import Caller

if TYPE_CHECKING:
    from picoora.store.base import AddMemoryResult, Embeddings, MemoryRecord, Provenance, RecallResult, VectorStatus


class Memories(Protocol):
    def add(self, content: str, importance: float = 0.7, category: str = "general", *,
            provenance: Provenance | None = None, expires_at: datetime | None = None) -> AddMemoryResult: ...
    # touch: count an access (the agent's use does, looking does not); confident_only: only what is really about
    # the query (the automatic recall into every turn), see ranking.should_push
    def recall(self, query: str, limit: int = 5, *, touch: bool = True,
               confident_only: bool = False) -> RecallResult: ...
    def get(self, memory_id: str) -> MemoryRecord | None: ...
    def list(self, limit: int | None = None) -> builtins.list[MemoryRecord]: ...  # superseded and expired too
    def forget(self, memory_id: str) -> bool: ...
    # progress: called with (done, total) as the work goes, for a progress bar
    def reindex(self, *, progress: Callable[[int, int], None] | None = None) -> int: ...  # re-embed all; how many
    def import_records(self, records: Iterable[MemoryRecord], *,
                       progress: Callable[[int, int], None] | None = None) -> int: ...
    def vector_status(self) -> VectorStatus: ...
    def embed_texts(self, texts: builtins.list[str]) -> Embeddings: ...  # NoEmbedder when there is none


class AsyncMemories:
    def __init__(self, family: Memories, call: Caller):
        self.add = call.wrap(family.add)
        self.recall = call.wrap(family.recall)
        self.get = call.wrap(family.get)
        self.list = call.wrap(family.list)
        self.forget = call.wrap(family.forget)
        self.reindex = call.wrap(family.reindex)
        self.import_records = call.wrap(family.import_records)
        self.vector_status = call.wrap(family.vector_status)
        self.embed_texts = call.wrap(family.embed_texts)
