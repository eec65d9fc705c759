"""The workspace prompt files, at the workspace's top where the user edits them (IDENTITY.md, SOUL.md, ...)."""

from __future__ import annotations

import builtins
import re
from pathlib import Path

from picoora import atomic
from picoora.store.base import PROMPT_NAMES, Prompt
from picoora.store.files.context import FileFamily, read_text
from picoora.store.fs_errors import report_os_errors

_PROMPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\.md")


@report_os_errors
class FilePrompts(FileFamily):
    def _path(self, name: str) -> Path:
        if not _PROMPT_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a prompt file name (expected something like USER.md)")
        return self.ctx.layout.prompt_path(name)

    def list(self) -> builtins.list[Prompt]:
        prompts = (self.get(name) for name in PROMPT_NAMES)
        return [prompt for prompt in prompts if prompt is not None]

    def get(self, name: str) -> Prompt | None:
        text = read_text(self._path(name))
        return Prompt(name=name, content=text) if text is not None else None

    def set(self, name: str, content: str) -> None:
        path = self._path(name)
        with self.ctx.lock:
            atomic.atomic_write_text(path, content)
