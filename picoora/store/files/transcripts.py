"""Transcripts as JSON Lines: ``.picoora/transcripts/<encoded key>.jsonl``, appended to, numbered, never
rewritten."""

from __future__ import annotations

import builtins
import json
import logging
from datetime import datetime, timezone
from pathlib import Path

from picoora import atomic
from picoora.messages import Message
from picoora.store import limits
from picoora.store.base import TranscriptEntry, time_from_json, time_to_json
from picoora.store.files.context import FileFamily, encode_key
from picoora.store.fs_errors import report_os_errors

log = logging.getLogger(__name__)


def _last_seq(path: Path) -> int:
    """The highest seq in a transcript (0 when empty). Read from the end; a last line without a
    usable seq (hand-edited, or written by something else) costs one full scan, never a crash."""
    last = atomic.last_jsonl_record(path)
    if last is None:
        return 0
    try:
        return int(last["seq"])
    except (KeyError, TypeError, ValueError):
        log.warning("%s: the last line has no usable seq; numbering continues after the highest one", path)
    seqs = [line.get("seq") for line in atomic.read_jsonl(path)]
    return max((seq for seq in seqs if isinstance(seq, int)), default=0)


@report_os_errors
class FileTranscripts(FileFamily):
    def _path(self, key: str) -> Path:
        return self.ctx.layout.transcripts / f"{encode_key(key)}.jsonl"

    def append(self, key: str, messages: builtins.list[Message]) -> builtins.list[int]:
        if not messages:
            return []
        for message in messages:
            limits.check_chars(message.role, limits.ROLE_CHARS, "the message role")
        path = self._path(key)
        with self.ctx.lock:  # the last seq is read and extended under the lock: no two writers reuse one
            first_seq = _last_seq(path) + 1
            at = time_to_json(datetime.now(timezone.utc))
            seqs = builtins.list(range(first_seq, first_seq + len(messages)))
            lines = [
                {"seq": seq, "created_at": at, "session_key": key, "message": message.to_dict()}
                for seq, message in zip(seqs, messages, strict=True)
            ]
            atomic.append_jsonl(path, lines)
        return seqs

    def read(self, key: str, limit: int | None = None) -> builtins.list[TranscriptEntry]:
        """In seq order; with ``limit``, the most recent ``limit`` entries."""
        path = self._path(key)
        entries = []
        for line in atomic.read_jsonl(path):
            try:
                entries.append(
                    TranscriptEntry(
                        session_key=str(line.get("session_key", key)),
                        seq=int(line["seq"]),
                        message=Message.from_dict(line["message"]),
                        created_at=time_from_json(line.get("created_at")),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:  # a hand-edited line; the rest still reads
                log.warning("%s: a transcript line without %s was skipped", path, exc)
        return entries if limit is None else entries[-limit:] if limit > 0 else []

    def keys(self) -> builtins.list[str]:
        """Sorted; a transcript's first line names its key (file names of long keys end in a hash)."""
        keys = set()
        for path in self.ctx.layout.transcripts.glob("*.jsonl"):
            try:
                with open(path, encoding="utf-8") as handle:
                    first = json.loads(handle.readline() or "{}")
            except (OSError, ValueError):  # unreadable or torn first line: nothing to list for it
                continue
            if isinstance(first, dict) and first.get("session_key"):
                keys.add(str(first["session_key"]))
        return sorted(keys)

    def recent(self, limit: int) -> builtins.list[TranscriptEntry]:
        """The latest entries over all sessions, newest first (for the inspector)."""
        entries = [e for key in self.keys() for e in self.read(key, limit=limit)]
        entries.sort(key=lambda e: (e.created_at is not None, e.created_at, e.seq), reverse=True)
        return entries[: max(limit, 0)]
