"""The Oracle backend's families over one context: what an open ``OracleStore`` and an ``AwaitedOracleStore``
(``oracle.required`` before the database answers) both are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from picoora.secrets import redact_text
from picoora.store.oracle.documents import OracleDocuments
from picoora.store.oracle.keyvalues import CONFIG, META, OracleKeyValues, OracleState
from picoora.store.oracle.leases import OracleLeases
from picoora.store.oracle.memories import OracleMemories
from picoora.store.oracle.notes import OracleNotes
from picoora.store.oracle.prompts import OraclePrompts
from picoora.store.oracle.sessions import OracleSessions
from picoora.store.oracle.tool_outputs import OracleToolOutputs
from picoora.store.oracle.traces import OracleTraces
from picoora.store.oracle.transcripts import OracleTranscripts

if TYPE_CHECKING:
    from picoora.config import DocsConfig
    from picoora.store.oracle.context import OracleContext


@dataclass(frozen=True)
class FamilySettings:
    """``secrets``: known secret values, never stored in clear in a config row; ``note_zone``: IANA zone of the
    daily notes' dates (agents.defaults.timezone; "": the machine's); the recall floor and dedup similarity of
    memories; the docs.* settings."""

    secrets: tuple[str, ...] = ()
    note_zone: str = ""
    min_similarity: float = 0.0
    dedup_similarity: float = 0.95
    docs: DocsConfig | None = field(default=None)


class OracleFamilies:
    def _build(self, ctx: OracleContext, settings: FamilySettings) -> None:
        from picoora.config import DocsConfig

        self.settings = settings
        self.state = OracleState(ctx)
        self.config = OracleKeyValues(ctx, CONFIG, redact=lambda value: redact_text(value, settings.secrets))
        self.meta = OracleKeyValues(ctx, META)
        self.prompts = OraclePrompts(ctx)
        self.traces = OracleTraces(ctx)
        self.tool_outputs = OracleToolOutputs(ctx)
        self.notes = OracleNotes(ctx, settings.note_zone)
        self.sessions = OracleSessions(ctx)
        self.transcripts = OracleTranscripts(ctx)
        self.memories = OracleMemories(ctx, min_similarity=settings.min_similarity,
                                       dedup_similarity=settings.dedup_similarity)
        self.documents = OracleDocuments(ctx, settings.docs or DocsConfig())
        self.leases = OracleLeases(ctx)  # in PICO_LEASES, scoped by the context's agent id (a person's: theirs)
