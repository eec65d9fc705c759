"""FileStore: the embedded default backend, plain files in the workspace.

Layout (``picoora.store.layout`` owns the paths; people read the Markdown, the rest is JSON a person
can still open, kept under ``.picoora/`` where no tool reaches):
  IDENTITY.md SOUL.md AGENT.md USER.md [AGENTS.md]  prompts, in system-prompt order
  memory/YYYYMM/YYYYMMDD.md                         daily notes, same format as the Go version
  .picoora/memory/memories.jsonl                    memories: append-only op log (see file_memories)
  .picoora/sessions/<encoded key>.json              the model's view of a conversation (atomic replace)
  .picoora/transcripts/<encoded key>.jsonl          every message ever, append-only, numbered
  .picoora/traces/turns[.N].{jsonl,idx}             what each turn cost and why, rotated, indexed (trace_log)
  .picoora/docs/{documents,<id>}.json              the knowledge base (doc_library)
  .picoora/state/{state,config,meta}.json           small key/value documents (config rows redacted)
  .picoora/store.lock                               the cross-process lock
A workspace in the older layout (the same files at the top) is moved once, on open.

Every write, and every read that a write depends on, happens under the workspace lock and starts
from what is on disk now, because ``picoora agent`` and ``picoora gateway`` may share the workspace.
Plain reads of documents need no lock: a document is only ever replaced whole, by rename.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from picoora import atomic
from picoora.secrets import redact_text
from picoora.store.base import BackendDetails, StoreError, StoreStats
from picoora.store.files.context import FileContext
from picoora.store.files.documents import FileDocuments
from picoora.store.files.keyvalues import FileKeyValues, FileState
from picoora.store.files.locking import WorkspaceLock
from picoora.store.files.memories import FileMemories
from picoora.store.files.notes import FileNotes
from picoora.store.files.prompts import FilePrompts
from picoora.store.files.sessions import FileSessions
from picoora.store.files.tool_outputs import FileToolOutputs
from picoora.store.files.traces import FileTraces
from picoora.store.files.transcripts import FileTranscripts
from picoora.store.fs_errors import report_os_errors
from picoora.store.layout import FileLayout, migrate
from picoora.store.leases import LocalLeases

if TYPE_CHECKING:
    from picoora.config import DocsConfig
    from picoora.store.embedder import Embedder
    from picoora.store.files.service_lock import ServiceLock

log = logging.getLogger(__name__)





@report_os_errors
class FileStore:
    """The Store protocol on plain files. Thread-safe and safe with other processes on the same workspace.

    ``embedder``: what makes memory vectors (``picoora.store.embedder.create_embedder``); None keeps
    recall keyword-only. Nothing is embedded, or even loaded, until a memory operation needs it.
    ``secrets``: known secret values, never written in clear to a config row.
    """

    backend = "files"
    display_name = "File Storage"

    def __init__(
        self,
        workspace: Path,
        *,
        embedder: Embedder | None = None,
        min_similarity: float = 0.0,
        dedup_similarity: float = 0.95,
        secrets: Iterable[str] = (),
        docs: DocsConfig | None = None,
    ):
        from picoora.config import DocsConfig

        self.workspace = Path(workspace).expanduser()
        self.layout = FileLayout(self.workspace)
        self._lock = WorkspaceLock(self.layout.lock)
        self._embedder = embedder
        self._secrets = tuple(secrets)
        ctx = FileContext(self.workspace, self.layout, self._lock)
        self.state = FileState(ctx)
        self.config = FileKeyValues(ctx, "config", redact=lambda value: redact_text(value, self._secrets))
        self.meta = FileKeyValues(ctx, "meta")
        self.prompts = FilePrompts(ctx)
        self.traces = FileTraces(ctx)
        self.tool_outputs = FileToolOutputs(ctx)
        self.notes = FileNotes(ctx, embedder)
        self.sessions = FileSessions(ctx)
        self.transcripts = FileTranscripts(ctx)
        self.memories = FileMemories(ctx, embedder, min_similarity=min_similarity, dedup_similarity=dedup_similarity)
        self.documents = FileDocuments(ctx, embedder, docs or DocsConfig())
        self.leases = LocalLeases()  # one gateway per workspace (the service lock): every duty is this process's
        layout = self.layout
        with self._lock:  # every writer holds the lock, so temporary files found now are leftovers of a crash
            migrate(layout)
            for directory in [self.workspace, layout.sessions, layout.state, layout.memory, layout.notes,
                              layout.traces, layout.tool_outputs, layout.docs]:
                atomic.remove_stale_temp_files(directory)
            for month in layout.notes.glob("[0-9]*"):
                atomic.remove_stale_temp_files(month)
            for index in layout.memory.glob("*.index"):  # the memory snapshot's manifest is written there
                atomic.remove_stale_temp_files(index)

    def ping(self) -> None:
        if not self.workspace.is_dir():
            raise StoreError(f"the workspace {self.workspace} is missing: run `picoora onboard`")

    def details(self) -> BackendDetails:
        return BackendDetails(note="file backend: no ONNX models or vector indexes")

    # ---- everything ----------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        memories = self.memories.count()
        notes = [p for p in self.layout.notes.glob("[0-9]*/[0-9]*.md") if re.fullmatch(r"\d{8}\.md", p.name)]
        transcript_lines = sum(_count_lines(p) for p in self.layout.transcripts.glob("*.jsonl"))
        return StoreStats(
            backend=self.backend,
            location=str(self.workspace),
            memories=memories,
            daily_notes=len(notes),
            sessions=len(list(self.layout.sessions.glob("*.json"))),
            transcript_entries=transcript_lines,
            state_keys=len(self.state.all()),
            prompts=len(self.prompts.list()),
            config_keys=len(self.config.all()),
        )

    def exclusive_service_lock(self, service: str, details: dict[str, Any]) -> ServiceLock:
        """One ``service`` (the gateway) per workspace: ``store/files/service_lock.py``."""
        from picoora.store.files.service_lock import ServiceLock

        return ServiceLock(self.layout.private, service, details, workspace=self.workspace)

    def close(self) -> None:
        self._lock.close()



def _count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
