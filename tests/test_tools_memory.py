"""Memory tools over a store: formats, validation, dedup, degraded recall, store calls off the event loop."""

from __future__ import annotations

import threading
from datetime import date
from typing import Any

import pytest

from picoora.store.base import AddMemoryResult, DailyNote, MemoryRecord, RecallResult, ScoredMemory
from picoora.tools.memory import Forget, Recall, Remember, WriteDailyNote, format_recall
from tests.tools_support import call, make_ctx


class MiniStore:
    """The four memory calls, keyword-only, recording the thread each ran on."""

    backend = "mini"

    def __init__(self) -> None:
        self.memories: list[MemoryRecord] = []
        self.notes: list[str] = []
        self.threads: list[tuple[str, str]] = []

    def _record(self, method: str) -> None:
        self.threads.append((method, threading.current_thread().name))

    def add_memory(self, content: str, importance: float = 0.7, category: str = "general") -> AddMemoryResult:
        self._record("add_memory")
        for existing in self.memories:
            if existing.content.lower() == content.lower():
                return AddMemoryResult(existing, created=False)
        record = MemoryRecord(id=f"m{len(self.memories) + 1}", content=content, importance=importance, category=category)
        self.memories.append(record)
        return AddMemoryResult(record, created=True)

    def recall(self, query: str, limit: int = 5) -> RecallResult:
        self._record("recall")
        words = set(query.lower().split())
        scored = [
            ScoredMemory(m, score=len(words & set(m.content.lower().split())) / len(words)) for m in self.memories
        ]
        matches = sorted((s for s in scored if s.score > 0), key=lambda s: -s.score)[:limit]
        return RecallResult(matches, degraded=True, note=None)

    def forget(self, memory_id: str) -> bool:
        self._record("forget")
        before = len(self.memories)
        self.memories = [m for m in self.memories if m.id != memory_id]
        return len(self.memories) < before

    def append_daily_note(self, content: str, day: date | None = None) -> DailyNote:
        self._record("append_daily_note")
        self.notes.append(content)
        return DailyNote(day or date.today(), "\n".join(self.notes))


@pytest.fixture
def store() -> MiniStore:
    return MiniStore()


def ctx_for(tmp_path, store: Any):
    return make_ctx(tmp_path, store=store)


def test_remember_then_recall_then_forget(tmp_path, store):
    ctx = ctx_for(tmp_path, store)
    added = call(Remember(), ctx, text="My favorite language is Go", importance=0.8, category="preference")
    memory_id = store.memories[0].id
    assert added.content == f"Remembered (ID: {memory_id}, importance: 0.8, category: preference): My favorite language is Go"
    found = call(Recall(), ctx, query="favorite language").content
    assert found.startswith("Found 1 matching memories:\n\n1. [")
    assert f"(ID: {memory_id}, category: preference, importance: 0.8)\n   My favorite language is Go" in found
    assert call(Forget(), ctx, id=memory_id).content == f"Forgot memory {memory_id}"
    assert store.memories == []
    missing = call(Forget(), ctx, id=memory_id)
    assert missing.is_error and "no memory with ID" in missing.content


def test_remember_reports_a_near_duplicate(tmp_path, store):
    ctx = ctx_for(tmp_path, store)
    call(Remember(), ctx, text="The cat is called Tom")
    again = call(Remember(), ctx, text="the cat is called tom")
    assert again.content.startswith("Already remembered: a near-identical memory exists (ID: ")
    assert len(store.memories) == 1


def test_defaults_and_long_text_preview(tmp_path, store):
    ctx = ctx_for(tmp_path, store)
    text = "x" * 150
    result = call(Remember(), ctx, text=text)
    assert result.content.endswith(": " + "x" * 100 + "...")
    assert (store.memories[0].importance, store.memories[0].category) == (0.7, "general")


@pytest.mark.parametrize("importance", [1.5, -0.1])
def test_importance_out_of_range_is_a_validation_error(tmp_path, store, importance):
    result = call(Remember(), ctx_for(tmp_path, store), text="fact", importance=importance)
    assert result.is_error and "importance" in result.content
    assert store.memories == []


@pytest.mark.parametrize("max_results", [0, 21])
def test_max_results_bounds(tmp_path, store, max_results):
    result = call(Recall(), ctx_for(tmp_path, store), query="q", max_results=max_results)
    assert result.is_error and "max_results" in result.content


def test_recall_respects_max_results_and_says_when_degraded(tmp_path, store):
    ctx = ctx_for(tmp_path, store)
    for i in range(4):
        call(Remember(), ctx, text=f"project note number {i}")
    found = call(Recall(), ctx, query="project note", max_results=2).content
    assert found.startswith("Found 2 matching memories:")
    assert "\n3. " not in found
    assert found.endswith("Note: recall is keyword-only right now (no embedding model available), so matches are by words, not meaning")


def test_no_matches_line(tmp_path, store):
    found = call(Recall(), ctx_for(tmp_path, store), query="anything").content
    assert found.startswith("No matching memories found for: anything")


def test_format_recall_indents_multiline_memories_and_shows_store_note():
    memory = MemoryRecord(id="a1", content="line one\nline two", importance=0.5, category="c")
    text = format_recall("q", RecallResult([ScoredMemory(memory, score=0.873)], degraded=True, note="embedder missing"))
    assert text == "Found 1 matching memories:\n\n1. [87% match] (ID: a1, category: c, importance: 0.5)\n   line one\n   line two\n\nNote: embedder missing"
    assert "Note" not in format_recall("q", RecallResult([ScoredMemory(memory, score=0.5)]))


def test_write_daily_note(tmp_path, store):
    result = call(WriteDailyNote(), ctx_for(tmp_path, store), content="Shipped the tools")
    assert result.content == f"Daily note written for {date.today().isoformat()}: Shipped the tools"
    assert store.notes == ["Shipped the tools"]


def test_store_calls_run_off_the_event_loop_thread(tmp_path, store):
    ctx = ctx_for(tmp_path, store)
    call(Remember(), ctx, text="fact")
    call(Recall(), ctx, query="fact")
    call(Forget(), ctx, id="m1")
    call(WriteDailyNote(), ctx, content="note")
    assert [m for m, _ in store.threads] == ["add_memory", "recall", "forget", "append_daily_note"]
    assert all(thread != threading.main_thread().name for _, thread in store.threads)
