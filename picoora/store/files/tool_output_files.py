"""Whole tool outputs on files: one JSON document per output under the store's private ``tool_outputs/``.

A handle is checked against ``limits.HANDLE_PATTERN`` before it becomes a file name, so no handle a model
makes up can name another path. Each save drops what is past ``limits.TOOL_OUTPUT_DAYS`` and, oldest first,
what is beyond ``limits.TOOL_OUTPUT_TOTAL_BYTES``, so the folder stays bounded without a background job.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from picoora import atomic
from picoora.store import limits
from picoora.store.base import ToolOutput, time_from_json, time_to_json

_HANDLE = re.compile(limits.HANDLE_PATTERN)


class ToolOutputFiles:
    def __init__(self, directory: Path):
        self.directory = directory

    def _path(self, handle: str) -> Path | None:
        return self.directory / f"{handle}.json" if _HANDLE.fullmatch(handle) else None

    def save(self, output: ToolOutput) -> None:
        path = self._path(output.handle)
        if path is None:
            raise ValueError(f"{output.handle[:40]!r} is not a tool output handle")
        atomic.ensure_dir(self.directory)
        atomic.atomic_write_json(path, {
            "session_key": output.session_key, "turn_id": output.turn_id, "tool": output.tool,
            "content": output.content[: limits.TOOL_OUTPUT_CHARS], "created_at": time_to_json(output.created_at),
        }, mode=0o600)
        self._prune()

    def get(self, handle: str) -> ToolOutput | None:
        path = self._path(handle)
        if path is None:
            return None
        try:
            document = atomic.read_json(path)
        except ValueError:  # torn or damaged: as good as gone
            return None
        if not isinstance(document, dict) or self._expired(path):
            return None
        return ToolOutput(handle, str(document.get("session_key", "")), str(document.get("turn_id", "")),
                          str(document.get("tool", "")), str(document.get("content", "")),
                          time_from_json(document.get("created_at")))

    @staticmethod
    def _expired(path: Path) -> bool:
        try:
            return path.stat().st_mtime < time.time() - limits.TOOL_OUTPUT_DAYS * 86400
        except FileNotFoundError:
            return True

    def _prune(self) -> None:
        entries = []
        for entry in os.scandir(self.directory):
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                entries.append((info.st_mtime_ns / 1e9, info.st_size, Path(entry.path)))
        entries.sort(reverse=True)  # newest first
        oldest_kept, total = time.time() - limits.TOOL_OUTPUT_DAYS * 86400, 0
        for mtime, size, path in entries:
            total += size
            if mtime < oldest_kept or total > limits.TOOL_OUTPUT_TOTAL_BYTES:
                path.unlink(missing_ok=True)
