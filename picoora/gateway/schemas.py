"""Request and response bodies of the HTTP API (they make its OpenAPI document)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SESSION_ID = r"^[A-Za-z0-9._@-]{1,128}$"  # the part after "web:"
SESSION_KEY = r"^[A-Za-z0-9._@-]{1,64}:[A-Za-z0-9._@:-]{1,128}$"  # "web:abc", "cli:default", "openai:bob"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # JSON types as documented: no "0" for a bool


class ChatRequest(_Body):
    session_id: str = Field("default", pattern=SESSION_ID, description="the session is web:<session_id>")
    text: str = Field(min_length=1)
    stream: bool = Field(False, description="answer as server-sent events (also: Accept: text/event-stream)")


class ChatResponse(BaseModel):
    session_key: str
    turn_id: str
    text: str
    stop_reason: str = Field(description="answer, or why the turn stopped without one")
    iterations: int
    tool_calls: int


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    uptime_seconds: float


class ReadyCheck(BaseModel):
    name: str
    ok: bool
    detail: str


class Ready(BaseModel):
    ready: bool
    checks: list[ReadyCheck]


class SessionInfo(BaseModel):
    key: str
    messages: int
    summary: str
    created_at: str | None
    updated_at: str | None


class HistoryEntry(BaseModel):
    seq: int
    created_at: str | None
    message: dict[str, Any]


class SessionHistory(BaseModel):
    key: str
    entries: list[HistoryEntry]


class ModelBody(_Body):
    model: str = Field(min_length=1, max_length=200)
    provider: Literal["ollama", "openai", "anthropic"] | None = None


class ModelInfo(BaseModel):
    provider: str
    model: str


class MemoryIn(_Body):
    content: str = Field(min_length=1)
    importance: float = Field(0.7, ge=0.0, le=1.0)
    category: str = Field("general", min_length=1, max_length=64)
    until: str | None = Field(None, max_length=40, description="when it stops being true: a date, tomorrow, friday")


class Provenance(BaseModel):
    how: str  # told, inferred, imported, by hand, unknown
    person: str
    session: str
    turn_id: str


class Memory(BaseModel):
    id: str
    content: str
    importance: float
    category: str
    created_at: str | None
    accessed_at: str | None
    access_count: int
    embedding_model: str | None
    provenance: Provenance
    superseded_by: str | None = None
    expires_at: str | None = None


class ScoredMemoryOut(BaseModel):
    memory: Memory
    score: float
    similarity: float | None


class MemorySearch(BaseModel):
    query: str
    matches: list[ScoredMemoryOut]
    degraded: bool
    note: str | None


class MemoryList(BaseModel):
    memories: list[Memory]


class MemoryAdded(BaseModel):
    memory: Memory
    created: bool
    replaced: list[Memory]  # what it superseded


class Deleted(BaseModel):
    deleted: str


class Stopped(BaseModel):
    session_key: str
    stopped: bool  # false: the session was running no turn


# -- documents (the knowledge base) -------------------------------------------------------------------

class DocUrlIn(_Body):
    url: str = Field(min_length=8, max_length=2000, pattern=r"^https?://", description="an http(s) page to add")
    shared: bool = Field(False, description="everyone may search it (the owner only)")


class Document(BaseModel):
    id: str
    source: str
    title: str
    content_hash: str
    chunks: int
    shared: bool
    person: str
    added_at: str | None


class DocAdded(BaseModel):
    source: str
    status: Literal["added", "replaced", "unchanged", "failed"]
    document: Document | None
    error: str


class DocList(BaseModel):
    documents: list[Document]


class DocHit(BaseModel):
    text: str
    source: str
    title: str
    score: float
    chunk: int
    page: int | None
    document_id: str
    shared: bool


class DocSearch(BaseModel):
    query: str
    hits: list[DocHit]
