"""The memory log's line format (``memory/memories.jsonl``, described in ``file_memories``): an ``add`` op for a
record and back, and the base64 form of a float32 vector. Kept apart from the log so the snapshot (which
writes ``add`` lines when it rewrites) and the document library (which stores vectors the same way) read it
without importing the log.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from picoora.store.base import MemoryRecord, Provenance, time_to_json

if TYPE_CHECKING:
    import numpy as np


def encode_vector(vector: np.ndarray) -> str:
    import numpy as np

    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    import numpy as np

    return np.frombuffer(base64.b64decode(text), dtype="<f4")


def add_op(record: MemoryRecord, vec: str | None) -> dict[str, Any]:
    op: dict[str, Any] = {
        "op": "add",
        "id": record.id,
        "content": record.content,
        "importance": record.importance,
        "category": record.category,
        "created_at": time_to_json(record.created_at),
    }
    if record.accessed_at or record.access_count:
        op["accessed_at"] = time_to_json(record.accessed_at)
        op["access_count"] = record.access_count
    if record.provenance != Provenance():  # an absent field reads as "unknown"
        op["provenance"] = record.provenance.to_json()
    if record.expires_at:
        op["expires_at"] = time_to_json(record.expires_at)
    if record.superseded_by:
        op["superseded_by"] = record.superseded_by
    if vec is not None and record.embedding_model:
        op["model"] = record.embedding_model
        op["vec"] = vec
    return op


def record_from_add(op: dict[str, Any]) -> MemoryRecord:
    # The log names the vector's model "model" and keeps it only beside a vector.
    return replace(MemoryRecord.from_json(op), embedding_model=op.get("model") if op.get("vec") else None)
