"""Transcripts (``PICO_TRANSCRIPTS``): every message of every turn, numbered per session; append-only, never
compacted."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Protocol

from picoora.store.families.calls import Caller

if TYPE_CHECKING:
    from picoora.messages import Message
    from picoora.store.base import TranscriptEntry


class Transcripts(Protocol):
    def append(self, key: str, messages: builtins.list[Message]) -> builtins.list[int]: ...  # their seqs
    # seq order; the last `limit` when given
    def read(self, key: str, limit: int | None = None) -> builtins.list[TranscriptEntry]: ...
    def keys(self) -> builtins.list[str]: ...  # sorted; every key with a transcript, reset sessions too
    def recent(self, limit: int) -> builtins.list[TranscriptEntry]: ...  # newest first, all sessions


class AsyncTranscripts:
    def __init__(self, family: Transcripts, call: Caller):
        self.append = call.wrap(family.append)
        self.read = call.wrap(family.read)
        self.keys = call.wrap(family.keys)
        self.recent = call.wrap(family.recent)
