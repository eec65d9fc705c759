"""Sessions as JSON documents: ``.picoora/sessions/<encoded key>.json``, replaced whole (atomically)."""

from __future__ import annotations

import builtins
import logging
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from picoora import atomic
from picoora.messages import Message
from picoora.store.base import Session, StoreError, time_from_json, time_to_json, without_folded
from picoora.store.files.context import PRIVATE, FileFamily, encode_key, read_document
from picoora.store.fs_errors import report_os_errors

log = logging.getLogger(__name__)


def _session_from_json(document: dict[str, Any], path: Path) -> Session:
    """A session document; the Go version's (``created``/``updated``, OpenAI-style tool calls) reads too."""
    try:
        return Session(
            key=str(document["key"]),
            messages=[Message.from_dict(m) for m in document.get("messages") or []],
            summary=str(document.get("summary") or ""),
            created_at=time_from_json(document.get("created_at") or document.get("created")),
            updated_at=time_from_json(document.get("updated_at") or document.get("updated")),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(f"{path} is not a session picoora can read ({exc!r}): move it away or delete it") from None


@report_os_errors
class FileSessions(FileFamily):
    def _path(self, key: str) -> Path:
        return self.ctx.layout.sessions / f"{encode_key(key)}.json"

    def load(self, key: str) -> Session:
        path = self._path(key)
        document = read_document(path)
        return _session_from_json(document, path) if document is not None else Session(key=key)

    def _write(self, session: Session, *, touch: bool = True) -> None:
        if touch or session.updated_at is None:
            session.updated_at = datetime.now(timezone.utc)
        session.created_at = session.created_at or session.updated_at
        document = {
            "key": session.key,
            "summary": session.summary,
            "messages": [message.to_dict() for message in session.messages],
            "created_at": time_to_json(session.created_at),
            "updated_at": time_to_json(session.updated_at),
        }
        atomic.atomic_write_json(self._path(session.key), document, PRIVATE)

    def append(self, key: str, messages: builtins.list[Message]) -> None:
        if not messages:
            return
        with self.ctx.lock:
            session = self.load(key)
            session.messages.extend(messages)
            self._write(session)

    def compact(self, key: str, summary: str, folded: builtins.list[Message]) -> bool:
        """Replace the leading ``folded`` messages by ``summary``; False (nothing changed) when they no longer
        lead the session. Messages appended since the caller loaded it are at the end, so they are kept."""
        with self.ctx.lock:
            session = self.load(key)
            rest = without_folded(session.messages, folded)
            if rest is None:
                return False
            session.messages, session.summary = rest, summary
            self._write(session)
        return True

    def set_summary(self, key: str, summary: str) -> None:
        with self.ctx.lock:
            session = self.load(key)
            session.summary = summary
            self._write(session)

    def reset(self, key: str) -> None:
        """Forget the model's view of the conversation; its transcript stays."""
        with self.ctx.lock:
            atomic.remove_durably(self._path(key))

    def restore(self, session: Session) -> None:
        with self.ctx.lock:
            self._write(replace(session, messages=builtins.list(session.messages)), touch=False)

    def list(self) -> builtins.list[Session]:
        """Most recently updated first."""
        sessions = []
        for path in self.ctx.layout.sessions.glob("*.json"):
            try:
                document = read_document(path)
                if document is not None:
                    sessions.append(_session_from_json(document, path))
            except StoreError as exc:  # one unreadable file must not hide the other sessions
                log.warning("%s", exc)
        sessions.sort(key=lambda s: (s.updated_at is not None, s.updated_at), reverse=True)
        return sessions
