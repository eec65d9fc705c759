"""Whole tool outputs in ``.picoora/tool_outputs/`` (``tool_output_files``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from picoora.store import limits
from picoora.store.base import ToolOutput
from picoora.store.files.context import FileContext, FileFamily
from picoora.store.files.tool_output_files import ToolOutputFiles
from picoora.store.fs_errors import report_os_errors


@report_os_errors
class FileToolOutputs(FileFamily):
    def __init__(self, ctx: FileContext):
        super().__init__(ctx)
        self._files = ToolOutputFiles(ctx.layout.tool_outputs)

    def save(self, output: ToolOutput) -> None:
        limits.check_session_key(output.session_key)
        with self.ctx.lock:
            self._files.save(replace(output, created_at=output.created_at or datetime.now(timezone.utc)))

    def get(self, handle: str) -> ToolOutput | None:
        return self._files.get(handle)  # one whole file, written by an atomic replace: no lock needed
