"""State, config and meta as small JSON documents: ``.picoora/state/{state,config,meta}.json``."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from picoora import atomic
from picoora.store import limits
from picoora.store.base import StoreError
from picoora.store.files.context import PRIVATE, FileContext, FileFamily, read_document
from picoora.store.fs_errors import report_os_errors

log = logging.getLogger(__name__)


@report_os_errors
class FileKeyValues(FileFamily):
    """``family``: "state", "config" or "meta"; ``redact``: what a value becomes before it is stored."""

    def __init__(self, ctx: FileContext, family: str, redact: Callable[[str], str] = lambda value: value):
        super().__init__(ctx)
        self._family = family
        self._redact = redact
        self._path = ctx.layout.state / f"{family}.json"

    def get(self, key: str) -> str | None:
        return self.all().get(key)

    def set(self, key: str, value: str) -> None:
        value = self._redact(value)
        limits.check_key_value(self._family, key, value)
        with self.ctx.lock:
            document = self.all()
            document[key] = value
            atomic.atomic_write_json(self._path, document, PRIVATE)

    def all(self) -> dict[str, str]:
        path = self._path
        try:
            document = read_document(path) or {}
        except StoreError as exc:
            document = self._set_aside(path, str(exc))
        if not isinstance(document, dict):
            document = self._set_aside(path, f"{path} is not a JSON object")
        return {str(k): v if isinstance(v, str) else str(v) for k, v in document.items()}

    def _set_aside(self, path: Path, problem: str) -> dict[str, Any]:
        """A broken state/config/meta document (a hand edit, a bad disk) is moved aside, kept for the user,
        and the store goes on empty for that family: one clear line, never a stopped gateway or CLI."""
        with self.ctx.lock:
            try:  # under the lock again: another thread may have set it aside already
                current = atomic.read_json(path)
                if current is None or isinstance(current, dict):
                    return current or {}
            except (ValueError, RecursionError):
                pass
            kept = path.with_name(f"{path.name}.broken-{datetime.now(timezone.utc):%Y%m%dT%H%M%S%f}")
            os.replace(path, kept)
            atomic.fsync_dir(path.parent)
        log.warning("%s; it was moved to %s and picoora goes on without what it held (pairings, jobs, offsets: "
                    "copy back what you need)", problem.removesuffix(": fix it or delete it"), kept.name)
        return {}


@report_os_errors
class FileState(FileKeyValues):
    def __init__(self, ctx: FileContext):
        super().__init__(ctx, "state")

    def delete(self, key: str) -> bool:
        with self.ctx.lock:
            document = self.all()
            if document.pop(key, None) is None:
                return False
            atomic.atomic_write_json(self._path, document, PRIVATE)
        return True
