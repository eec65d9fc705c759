"""``Store``: everything the assistant keeps, as typed families (``store/families/``) and the methods of the
families not yet split out, plus what concerns the whole store (stats, ping, the service lock, close).

Families and what they mirror in Oracle:
  memories     PICO_MEMORIES     long-term facts recalled by meaning
  daily notes  PICO_DAILY_NOTES  one journal entry per day, appended to
  sessions     PICO_SESSIONS     the model's view of a conversation: summary + recent messages
  transcripts  PICO_TRANSCRIPTS  append-only log of every message of every turn (never compacted)
  state        PICO_STATE        small key/value facts (last channel, ...)
  prompts      PICO_PROMPTS      the workspace prompt files (IDENTITY, SOUL, AGENT, USER, ...)
  config       PICO_CONFIG       redacted config snapshots and settings
  meta         PICO_META         schema version, embedder in use, ...
  traces       PICO_TRACES       what each turn cost and why
  tool outputs PICO_TOOL_OUTPUTS whole tool outputs the model saw only the start of
  documents    PICO_DOCUMENTS    the knowledge base: documents added by a person (or shared), chunked and
               PICO_DOC_CHUNKS   embedded, searched by meaning and keywords (``picoora docs``)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from picoora.store.base import (
        BackendDetails,
        StoreStats,
    )
    from picoora.store.families.documents import Documents
    from picoora.store.families.keyvalues import KeyValues, State
    from picoora.store.families.memories import Memories
    from picoora.store.families.notes import Notes
    from picoora.store.families.prompts import Prompts
    from picoora.store.families.sessions import Sessions
    from picoora.store.families.tool_outputs import ToolOutputs
    from picoora.store.families.traces import Traces
    from picoora.store.families.transcripts import Transcripts
    from picoora.store.leases import Leases


# One small interface per family; ``Store`` composes them. The agent needs only a few of them.


@runtime_checkable
class Store(Protocol):
    """Everything the assistant keeps. Both backends pass the same contract tests; callers never ask
    which backend they have (``display_name`` is for titles only)."""

    @property
    def backend(self) -> str: ...  # "files", "oracle"
    @property
    def display_name(self) -> str: ...  # "File Storage", "Oracle AI Database"

    @property
    def state(self) -> State: ...
    @property
    def config(self) -> KeyValues: ...  # secrets are redacted before storing
    @property
    def meta(self) -> KeyValues: ...
    @property
    def prompts(self) -> Prompts: ...
    @property
    def traces(self) -> Traces: ...
    @property
    def tool_outputs(self) -> ToolOutputs: ...
    @property
    def notes(self) -> Notes: ...
    @property
    def sessions(self) -> Sessions: ...
    @property
    def transcripts(self) -> Transcripts: ...
    @property
    def memories(self) -> Memories: ...
    @property
    def documents(self) -> Documents: ...
    @property
    def leases(self) -> Leases: ...  # who of the processes sharing this store does a singleton duty now

    def stats(self) -> StoreStats: ...  # counts of every family (one query each; fine for status, not /ready)
    def ping(self) -> None: ...  # cheap liveness check; raises StoreError when the store cannot answer
    def details(self) -> BackendDetails: ...
    # A lock only one process may hold for a long-lived ``service`` ("gateway") on this store, entered for the
    # service's life; entering raises StoreError (naming the holder, from ``details``) when another holds it.
    # None where the backend lets several run (Oracle); on files, one gateway per workspace.
    def exclusive_service_lock(self, service: str, details: dict[str, Any]) -> AbstractContextManager[Any] | None: ...
    def close(self) -> None: ...
