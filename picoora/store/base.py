"""The storage interface: eight record families, one contract, two backends (files, Oracle).

Everything the assistant keeps goes through ``Store``. Callers pass and get back the dataclasses
below; how a backend lays them out (JSON Lines, Markdown, PICO_ tables) is its own business.
Embedding is the backend's business too: the file backend runs a local embedder, the Oracle
backend calls VECTOR_EMBEDDING in the database. Callers only ever pass text.

Families and what they mirror in Oracle:
  memories     PICO_MEMORIES     long-term facts recalled by meaning
  daily notes  PICO_DAILY_NOTES  one journal entry per day, appended to
  sessions     PICO_SESSIONS     the model's view of a conversation: summary + recent messages
  transcripts  PICO_TRANSCRIPTS  append-only log of every message of every turn (never compacted)
  state        PICO_STATE        small key/value facts (last channel, ...)
  prompts      PICO_PROMPTS      the workspace prompt files (IDENTITY, SOUL, AGENT, USER, ...)
  config       PICO_CONFIG       redacted config snapshots and settings
  meta         PICO_META         schema version, embedder in use, ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any, Iterable, Protocol, runtime_checkable

from picoora.messages import Message


# The workspace prompt files, in the order they form the system prompt. AGENTS.md is what the Go
# version reads; it comes last so a Go user's file still counts without displacing AGENT.md.
PROMPT_NAMES = ("IDENTITY.md", "SOUL.md", "AGENT.md", "USER.md", "AGENTS.md")


class StoreError(Exception):
    """A storage operation failed; the message says what and what to do."""


def time_to_json(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


_RFC3339_TAIL = re.compile(r"(\.\d{6})\d+|Z$")


def time_from_json(value: Any) -> datetime | None:
    """An ISO 8601 / RFC 3339 time as an aware datetime (naive times are taken as UTC)."""
    if not value:
        return None
    text = str(value)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:  # Python 3.10 rejects Go's RFC 3339 ("Z", nanoseconds)
        parsed = datetime.fromisoformat(_RFC3339_TAIL.sub(lambda m: m.group(1) or "+00:00", text))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


@dataclass
class MemoryRecord:
    id: str
    content: str
    importance: float = 0.7
    category: str = "general"
    created_at: datetime | None = None
    accessed_at: datetime | None = None
    access_count: int = 0
    embedding_model: str | None = None  # which embedder made the stored vector (None: no vector)

    def to_json(self) -> dict[str, Any]:
        """The JSON form used by exports and the file backend's log (times in ISO 8601)."""
        return {
            "id": self.id,
            "content": self.content,
            "importance": self.importance,
            "category": self.category,
            "created_at": time_to_json(self.created_at),
            "accessed_at": time_to_json(self.accessed_at),
            "access_count": self.access_count,
            "embedding_model": self.embedding_model,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MemoryRecord:
        """The inverse of ``to_json``; missing optional fields take their defaults."""
        return cls(
            id=str(data["id"]),
            content=str(data["content"]),
            importance=float(data.get("importance", 0.7)),
            category=str(data.get("category") or "general"),
            created_at=time_from_json(data.get("created_at")),
            accessed_at=time_from_json(data.get("accessed_at")),
            access_count=int(data.get("access_count") or 0),
            embedding_model=data.get("embedding_model"),
        )


@dataclass
class ScoredMemory:
    memory: MemoryRecord
    score: float  # final rank score in [0, 1]; what "61.3% match" shows
    similarity: float | None = None  # raw cosine similarity, None when recall is keyword-only


@dataclass
class RecallResult:
    matches: list[ScoredMemory]
    degraded: bool = False  # True when no embedder was available and recall fell back to keywords
    note: str | None = None  # why it is degraded, for the user


@dataclass
class AddMemoryResult:
    memory: MemoryRecord
    created: bool  # False when an existing near-identical memory was returned instead (dedup)


@dataclass
class DailyNote:
    day: date
    content: str


@dataclass
class Session:
    key: str
    messages: list[Message] = field(default_factory=list)
    summary: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass
class TranscriptEntry:
    session_key: str
    seq: int  # 1-based, strictly increasing within a session
    message: Message
    created_at: datetime | None = None


@dataclass
class Prompt:
    name: str  # e.g. "IDENTITY.md"
    content: str


@dataclass
class StoreStats:
    backend: str  # "files" or "oracle"
    location: str  # workspace path or DSN (never with a password)
    memories: int
    daily_notes: int
    sessions: int
    transcript_entries: int
    state_keys: int
    prompts: int
    config_keys: int


@runtime_checkable
class Store(Protocol):
    """What the agent, tools and CLI know about storage. Both backends pass the same contract tests."""

    backend: str

    # memories
    def add_memory(self, content: str, importance: float = 0.7, category: str = "general") -> AddMemoryResult: ...
    def recall(self, query: str, limit: int = 5) -> RecallResult: ...
    def get_memory(self, memory_id: str) -> MemoryRecord | None: ...
    def list_memories(self, limit: int | None = None) -> list[MemoryRecord]: ...
    def forget(self, memory_id: str) -> bool: ...
    def reindex(self) -> int: ...  # re-embed every memory with the current embedder; returns how many
    def import_memories(self, records: Iterable[MemoryRecord]) -> int: ...

    # daily notes
    def append_daily_note(self, content: str, day: date | None = None) -> DailyNote: ...
    def recent_daily_notes(self, days: int = 3) -> list[DailyNote]: ...  # today and days-1 before, newest first

    # sessions (the model's view; compaction rewrites it)
    def load_session(self, key: str) -> Session: ...
    def append_session(self, key: str, messages: list[Message]) -> None: ...
    def compact_session(self, key: str, summary: str, drop_first: int) -> None: ...
    def reset_session(self, key: str) -> None: ...
    def list_sessions(self) -> list[Session]: ...

    # transcripts (append-only, never rewritten)
    def append_transcript(self, key: str, messages: list[Message]) -> list[int]: ...
    def read_transcript(self, key: str, limit: int | None = None) -> list[TranscriptEntry]: ...  # seq order; last `limit`
    def transcript_keys(self) -> list[str]: ...  # sorted; every key with a transcript, reset sessions too

    # state, config, meta: small key/value families
    def get_state(self, key: str) -> str | None: ...
    def set_state(self, key: str, value: str) -> None: ...
    def all_state(self) -> dict[str, str]: ...
    def get_config(self, key: str) -> str | None: ...
    def set_config(self, key: str, value: str) -> None: ...
    def all_config(self) -> dict[str, str]: ...
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def all_meta(self) -> dict[str, str]: ...

    # prompts
    def list_prompts(self) -> list[Prompt]: ...  # the PROMPT_NAMES that exist, in that order
    def get_prompt(self, name: str) -> Prompt | None: ...
    def set_prompt(self, name: str, content: str) -> None: ...

    def stats(self) -> StoreStats: ...
    def close(self) -> None: ...
