"""An in-memory store with the families the agent loop uses (keyword recall), for agent tests."""

from __future__ import annotations

import itertools
import re
from datetime import date

from picoora.messages import Message
from picoora.store.base import (
    AddMemoryResult,
    DailyNote,
    MemoryRecord,
    Prompt,
    RecallResult,
    ScoredMemory,
    Session,
    TranscriptEntry,
)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class MemoryStore:
    backend = "memory"

    def __init__(self) -> None:
        self.memories: list[MemoryRecord] = []
        self.notes: dict[date, str] = {}
        self.sessions: dict[str, Session] = {}
        self.transcripts: dict[str, list[TranscriptEntry]] = {}
        self.prompts: list[Prompt] = []
        self._ids = itertools.count(1)

    def add_memory(self, content: str, importance: float = 0.7, category: str = "general") -> AddMemoryResult:
        record = MemoryRecord(id=f"m{next(self._ids)}", content=content, importance=importance, category=category)
        self.memories.append(record)
        return AddMemoryResult(record, created=True)

    def recall(self, query: str, limit: int = 5) -> RecallResult:
        query_words = _words(query)
        scored = []
        for memory in self.memories:
            overlap = len(query_words & _words(memory.content))
            if overlap:
                scored.append(ScoredMemory(memory, score=overlap / max(len(query_words), 1)))
        scored.sort(key=lambda s: s.score, reverse=True)
        return RecallResult(scored[:limit], degraded=True, note="keyword-only test store")

    def append_daily_note(self, content: str, day: date | None = None) -> DailyNote:
        day = day or date.today()
        self.notes[day] = (self.notes.get(day, "") + "\n" + content).strip()
        return DailyNote(day, self.notes[day])

    def recent_daily_notes(self, days: int = 3) -> list[DailyNote]:
        return [DailyNote(d, c) for d, c in sorted(self.notes.items())[-days:]]

    def load_session(self, key: str) -> Session:
        stored = self.sessions.get(key)
        if stored is None:
            return Session(key)
        return Session(key, [Message.from_dict(m.to_dict()) for m in stored.messages], stored.summary)

    def append_session(self, key: str, messages: list[Message]) -> None:
        self.sessions.setdefault(key, Session(key)).messages.extend(Message.from_dict(m.to_dict()) for m in messages)

    def compact_session(self, key: str, summary: str, drop_first: int) -> None:
        session = self.sessions.setdefault(key, Session(key))
        session.summary = summary
        del session.messages[:drop_first]

    def append_transcript(self, key: str, messages: list[Message]) -> list[int]:
        entries = self.transcripts.setdefault(key, [])
        seqs = []
        for message in messages:
            entries.append(TranscriptEntry(key, len(entries) + 1, Message.from_dict(message.to_dict())))
            seqs.append(len(entries))
        return seqs

    def read_transcript(self, key: str, limit: int | None = None) -> list[TranscriptEntry]:
        entries = self.transcripts.get(key, [])
        return entries[-limit:] if limit else list(entries)

    def list_prompts(self) -> list[Prompt]:
        return list(self.prompts)
