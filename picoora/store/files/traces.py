"""Turn traces in ``.picoora/traces/`` (``trace_log``). Reads take the lock too: a lookup may index another
process's append."""

from __future__ import annotations

from picoora.store.base import TurnTrace
from picoora.store.files.context import FileContext, FileFamily
from picoora.store.files.trace_log import TraceLog
from picoora.store.fs_errors import report_os_errors


@report_os_errors
class FileTraces(FileFamily):
    def __init__(self, ctx: FileContext):
        super().__init__(ctx)
        self.log = TraceLog(ctx.layout.traces)

    def append(self, trace: TurnTrace) -> None:
        with self.ctx.lock:
            self.log.append(trace)

    def get(self, turn_id: str) -> TurnTrace | None:
        with self.ctx.lock:
            return self.log.get(turn_id)

    def last(self, session_key: str | None = None) -> TurnTrace | None:
        with self.ctx.lock:
            return self.log.last(session_key)
