"""What the store keeps and returns: the records of every family, and its errors (``Store`` itself:
``store/protocol.py``).

Everything the assistant keeps goes through ``Store``. Callers pass and get back the dataclasses
below; how a backend lays them out (JSON Lines, Markdown, PICO_ tables) is its own business.
Embedding is the backend's business too: the file backend runs a local embedder, the Oracle
backend calls VECTOR_EMBEDDING in the database. Callers only ever pass text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from typing import Any

from picoora.messages import Message

# The workspace prompt files, in the order they form the system prompt. AGENTS.md is what the Go
# version reads; it comes last so a Go user's file still counts without displacing AGENT.md.
PROMPT_NAMES = ("IDENTITY.md", "SOUL.md", "AGENT.md", "USER.md", "AGENTS.md")


class StoreError(Exception):
    """A storage operation failed; the message says what and what to do."""


class NoEmbedder(StoreError):
    """The store has no embedding model to embed with (none configured, or not loaded in the database)."""


def without_folded(messages: list[Message], folded: list[Message]) -> list[Message] | None:
    """``messages`` minus the leading ``folded`` ones, or None when they no longer lead the session (another
    compaction got there first): compaction removes messages by identity, never by count."""
    head = messages[: len(folded)]
    if len(head) < len(folded) or [m.to_dict() for m in head] != [m.to_dict() for m in folded]:
        return None
    return messages[len(folded):]


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


UNKNOWN = "unknown"
HOW = ("told", "inferred", "imported", "by hand", UNKNOWN)  # how a memory came to be believed


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from: who said it, in which session and turn, and how it was taken."""

    how: str = UNKNOWN  # one of HOW
    person: str = ""  # "" when not known (memories older than provenance, imports from elsewhere)
    session: str = ""
    turn_id: str = ""

    def describe(self) -> str:
        """One short line: ``told by owner in cli:default (turn 3f2a...)``."""
        parts = [self.how]
        if self.person:
            parts.append(f"by {self.person}")
        if self.session:
            parts.append(f"in {self.session}")
        if self.turn_id:
            parts.append(f"(turn {self.turn_id})")
        return " ".join(parts)

    def to_json(self) -> dict[str, str]:
        return {"how": self.how, "person": self.person, "session": self.session, "turn_id": self.turn_id}

    @classmethod
    def from_json(cls, data: Any) -> Provenance:
        if not isinstance(data, dict):
            return cls()
        how = str(data.get("how") or UNKNOWN)
        return cls(how=how if how in HOW else UNKNOWN, person=str(data.get("person") or ""),
                   session=str(data.get("session") or ""), turn_id=str(data.get("turn_id") or ""))


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
    provenance: Provenance = field(default_factory=Provenance)
    superseded_by: str | None = None  # the id of the memory that states this one's subject anew
    expires_at: datetime | None = None  # after this it is no longer true ("until Friday")

    def is_current(self, now: datetime | None = None) -> bool:
        """Whether recall may offer it as true now: not superseded, not expired."""
        if self.superseded_by:
            return False
        return self.expires_at is None or self.expires_at > (now or datetime.now(timezone.utc))

    def status(self, now: datetime | None = None) -> str:
        """"current", "superseded by ID" or "expired", for listings."""
        if self.superseded_by:
            return f"superseded by {self.superseded_by}"
        return "current" if self.is_current(now) else "expired"

    def to_json(self) -> dict[str, Any]:
        """The JSON form used by exports and the file backend's log (times in ISO 8601)."""
        data: dict[str, Any] = {
            "id": self.id,
            "content": self.content,
            "importance": self.importance,
            "category": self.category,
            "created_at": time_to_json(self.created_at),
            "accessed_at": time_to_json(self.accessed_at),
            "access_count": self.access_count,
            "embedding_model": self.embedding_model,
            "provenance": self.provenance.to_json(),
        }
        if self.superseded_by:
            data["superseded_by"] = self.superseded_by
        if self.expires_at:
            data["expires_at"] = time_to_json(self.expires_at)
        return data

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
            provenance=Provenance.from_json(data.get("provenance")),
            superseded_by=data.get("superseded_by") or None,
            expires_at=time_from_json(data.get("expires_at")),
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
    replaced: list[MemoryRecord] = field(default_factory=list)  # the memories this one superseded


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
class ToolCallTrace:
    call_id: str
    name: str
    arguments: dict[str, Any]  # secrets scrubbed
    duration_ms: float
    ok: bool
    result_preview: str = ""  # the start of the result (scrubbed), so a bad tool output can be seen
    output_handle: str | None = None  # the model got the start of a longer output, kept whole under this handle
    used: list[dict[str, Any]] = field(default_factory=list)  # what it used: search_docs' chunks with scores


@dataclass
class RecalledMemory:
    memory_id: str
    score: float
    similarity: float | None
    content: str  # scrubbed, shortened
    provenance: str = ""  # Provenance.describe(): why it is believed


@dataclass
class TurnTrace:
    """What one turn cost and why it answered as it did (``picoora trace``)."""

    turn_id: str
    session_key: str
    started_at: datetime | None = None
    provider: str = ""
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0
    first_token_ms: float | None = None  # from the turn's start to the first streamed token (None: not streamed)
    latency_ms: float = 0.0
    recalled: list[RecalledMemory] = field(default_factory=list)
    recall_note: str | None = None  # why recall was degraded, if it was
    tool_calls: list[ToolCallTrace] = field(default_factory=list)
    stop_reason: str = ""
    error: str | None = None
    stop_detail: str | None = None  # a turn stopped by a limit or a stop condition: why, as the user was told

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["started_at"] = time_to_json(self.started_at)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnTrace:
        fields = {**data, "started_at": time_from_json(data.get("started_at"))}
        fields["recalled"] = [RecalledMemory(**r) for r in data.get("recalled") or []]
        fields["tool_calls"] = [ToolCallTrace(**c) for c in data.get("tool_calls") or []]
        return cls(**fields)


@dataclass
class ToolOutput:
    """A tool's whole output, kept when the model was given only its start (``read_tool_output`` reads the rest).
    ``handle`` is unguessable (``tools.tool_outputs.new_handle``) and looked up only in its person's store."""

    handle: str
    session_key: str
    turn_id: str
    tool: str
    content: str  # scrubbed of secrets, at most ``limits.TOOL_OUTPUT_CHARS``
    created_at: datetime | None = None


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


@dataclass
class DailyNoteRow:
    """A daily note as the inspector lists it."""

    day: date
    note_id: str
    content: str
    updated_at: datetime | None
    has_vector: bool


@dataclass
class Embeddings:
    """Texts embedded by the store's embedder (the OpenAI endpoint's ``/v1/embeddings``)."""

    model: str
    vectors: list[list[float]]


@dataclass
class VectorStatus:
    """Whether recall by meaning can use the stored vectors (``status``, ``/ready``)."""

    embedder: str  # the model that embeds ("" when none: keyword-only recall)
    where: str  # "local", "ollama", "in the database"
    missing: int  # memories with no vector from that embedder (``picoora memory reindex`` fixes it)
    note: str | None = None  # a problem loading the embedder, if any


@dataclass
class BackendDetails:
    """What only some backends have, for the inspector: schema rows, loaded models, vector indexes."""

    schema: dict[str, str] = field(default_factory=dict)
    models: list[tuple[str, str, str]] = field(default_factory=list)  # name, function, algorithm
    indexes: list[tuple[str, str, str]] = field(default_factory=list)  # name, table, status
    note: str = ""  # e.g. "file backend: no ONNX models or vector indexes"


@dataclass
class DocPage:
    """Text of one page of a document (``page`` None: the format has no pages)."""

    text: str
    page: int | None = None


@dataclass
class DocumentRecord:
    id: str
    source: str  # the path or URL as added
    title: str
    content_hash: str  # sha256 of the extracted text: re-adding the same text does nothing
    chunks: int = 0
    shared: bool = False  # seen by everyone (only the owner shares)
    person: str = ""  # who added it ("" the owner)
    added_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "title": self.title, "content_hash": self.content_hash,
                "chunks": self.chunks, "shared": self.shared, "person": self.person,
                "added_at": time_to_json(self.added_at)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DocumentRecord:
        return cls(id=str(data["id"]), source=str(data["source"]), title=str(data.get("title") or ""),
                   content_hash=str(data.get("content_hash") or ""), chunks=int(data.get("chunks") or 0),
                   shared=bool(data.get("shared")), person=str(data.get("person") or ""),
                   added_at=time_from_json(data.get("added_at")))


def document_id(person: str, source: str) -> str:
    """Stable per (person, source): re-adding a path replaces that person's copy, nobody else's."""
    return hashlib.sha256(f"{person}\0{source}".encode()).hexdigest()[:12]


def content_hash(pages: list[DocPage]) -> str:
    digest = hashlib.sha256()
    for page in pages:
        digest.update(f"{page.page}\0{page.text}\0".encode())
    return digest.hexdigest()


def newest_first(records: Iterable[DocumentRecord], limit: int | None = None) -> list[DocumentRecord]:
    """Documents by when they were added, newest first (undated ones last), at most ``limit``."""
    ordered = sorted(records, key=lambda r: (r.added_at is not None, r.added_at, r.id), reverse=True)
    return ordered if limit is None else ordered[:limit]


@dataclass
class DocumentCounts:
    """What the knowledge base holds (``status``, the inspector): documents, their chunks, how many are shared."""

    documents: int = 0
    chunks: int = 0
    shared: int = 0

    @classmethod
    def of(cls, documents: Iterable[DocumentRecord]) -> DocumentCounts:
        listed = list(documents)
        return cls(len(listed), sum(d.chunks for d in listed), sum(d.shared for d in listed))


@dataclass
class NewDocument:
    source: str  # the path or URL as added (with the person, it names the document: re-adding replaces)
    title: str
    pages: list[DocPage]


@dataclass
class AddDocumentResult:
    document: DocumentRecord | None  # None when it failed
    status: str  # "added", "replaced" (its text changed), "unchanged" or "failed"
    error: str = ""  # why it failed


@dataclass
class DocumentHit:
    """One chunk that answers a search, with where it comes from (what an answer cites)."""

    document: DocumentRecord
    chunk: int  # 0-based position of the chunk in its document
    page: int | None  # 1-based page (PDFs), None for formats without pages
    text: str
    score: float  # hybrid rank score in [0, 1]; only hits at or above the calibrated floor are returned
    similarity: float | None = None  # raw cosine, None when the search was keyword-only

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "source": self.document.source, "title": self.document.title,
                "score": round(self.score, 4), "chunk": self.chunk, "page": self.page,
                "document_id": self.document.id, "shared": self.document.shared}
