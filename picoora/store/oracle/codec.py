"""Rows of the PICO_ tables to picoora's records and back.

Session messages stay in the Go version's JSON shape (OpenAI style: ``tool_calls[].function.arguments``
as a JSON string), so a PicoOraClaw schema reads and writes the same rows; picoora's own fields
(``name``, ``reasoning``, ``cancelled``) ride along as extra keys. Timestamps are stored as naive UTC.
"""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import date, datetime, timedelta, timezone
from typing import Any

from picoora.messages import Message, ToolCall, images_from
from picoora.store.base import MemoryRecord, Provenance
from picoora.store.ranking import normalise_text

_clock_lock = threading.Lock()
_last_stamp = datetime.min
_database_offset = timedelta()  # the database's UTC clock minus this machine's (``follow_database_clock``)


def follow_database_clock(offset: timedelta) -> None:
    """Stamp rows on the database's clock from now on: ``offset`` is its UTC time minus this machine's, as
    measured when the store opened. Gateways whose clocks disagree then still order rows as one clock
    would (``updated_at``, ``created_at``, the last trace); stamps stay strictly increasing either way."""
    global _database_offset
    with _clock_lock:
        _database_offset = offset


def utc_stamp() -> datetime:
    """Naive UTC now on the database's clock, strictly increasing within the process, so "newest first" has
    no ties."""
    global _last_stamp
    with _clock_lock:
        now = datetime.now(timezone.utc).replace(tzinfo=None) + _database_offset
        _last_stamp = max(now, _last_stamp + timedelta(microseconds=1))
        return _last_stamp


def content_hash(content: str) -> str:
    """What exact dedup compares (a CLOB cannot be compared with ``=``): the text normalised as the file
    backend does (case, spacing, final punctuation ignored), hashed."""
    return hashlib.sha256(normalise_text(content).encode("utf-8")).hexdigest()


def to_utc(value: datetime | None) -> datetime | None:
    """A fetched TIMESTAMP (naive, UTC by our convention) as an aware datetime."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def from_utc(value: datetime | None) -> datetime | None:
    """An aware (or naive UTC) datetime as the naive UTC value a TIMESTAMP column holds."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value


def as_date(value: date | datetime) -> date:
    return value.date() if isinstance(value, datetime) else value


def text(value: Any) -> str:
    """A VARCHAR2/CLOB value: Oracle stores '' as NULL, so NULL reads back as ''."""
    return "" if value is None else str(value)


MEMORY_WIDTH = 14  # the columns memory_from_row reads; a query's extra columns (distance, vector) follow


def memory_from_row(row: tuple) -> MemoryRecord:
    """A row of ``sql._MEMORY_COLUMNS``: the Go columns, then provenance, supersession and expiry (NULL in rows
    older than schema version 11: provenance "unknown")."""
    memory_id, content, importance, category, created_at, accessed_at, access_count, model = row[:8]
    how, person, session, turn_id, superseded_by, expires_at = row[8:MEMORY_WIDTH]
    return MemoryRecord(
        id=str(memory_id),
        content=text(content),
        importance=float(importance if importance is not None else 0.5),
        category=category or "general",
        created_at=to_utc(created_at),
        accessed_at=to_utc(accessed_at),
        access_count=int(access_count or 0),
        embedding_model=model or None,
        provenance=Provenance.from_json({"how": how, "person": person, "session": session, "turn_id": turn_id}),
        superseded_by=superseded_by or None,
        expires_at=to_utc(expires_at),
    )


def message_to_json(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        data["name"] = message.name
    if message.reasoning:
        data["reasoning"] = message.reasoning
    if message.cancelled:
        data["cancelled"] = True
    if message.images:
        data["images"] = [image.to_dict() for image in message.images]
    return data


def message_from_json(data: dict[str, Any]) -> Message:
    return Message(
        role=str(data.get("role") or "user"),
        content=text(data.get("content")),
        tool_calls=[ToolCall.from_dict(call) for call in data.get("tool_calls") or []],
        tool_call_id=data.get("tool_call_id"),
        name=data.get("name"),
        reasoning=data.get("reasoning"),
        cancelled=data.get("cancelled") is True,
        images=images_from(data.get("images")),
    )


def messages_to_clob(messages: list[Message]) -> str:
    return json.dumps([message_to_json(m) for m in messages], ensure_ascii=False)


def messages_from_clob(value: Any) -> list[Message]:
    """The Go version fell back to an empty history on unparsable JSON; so do we (the transcript keeps all)."""
    try:
        data = json.loads(value) if value else []
    except ValueError:
        return []
    return [message_from_json(item) for item in data if isinstance(item, dict)] if isinstance(data, list) else []
