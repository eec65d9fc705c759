"""The Oracle families' async forms: coroutines that await the database's own event loop, built from the same
units of work as the blocking methods (same arguments, results and errors), no thread per call."""

from __future__ import annotations

import asyncio
import inspect
import threading

import pytest

from picoora.messages import Message
from picoora.store.aio import AsyncStore
from picoora.store.base import StoreError
from picoora.store.families.calls import native_form

FAMILIES = {"state": ("get", "set", "delete", "all"), "config": ("get", "set", "all"), "meta": ("get", "set", "all"),
            "prompts": ("list", "get", "set"), "traces": ("append", "get", "last"), "tool_outputs": ("save", "get"),
            "notes": ("append", "recent", "list", "search"),
            "sessions": ("load", "append", "compact", "set_summary", "reset", "list"),
            "transcripts": ("append", "read", "keys", "recent"),
            "memories": ("add", "recall", "get", "list", "forget", "embed_texts", "vector_status")}


def test_every_family_method_has_a_native_coroutine_with_the_blocking_signature(open_store):
    store = open_store()
    for family, names in FAMILIES.items():
        for name in names:
            blocking = getattr(getattr(store, family), name)
            native = native_form(blocking)
            assert native is not None and inspect.iscoroutinefunction(native.func), f"{family}.{name}"  # type: ignore[attr-defined]
            assert inspect.signature(native) == inspect.signature(blocking), f"{family}.{name}"


def test_async_and_blocking_forms_give_the_same_results(open_store):
    store = open_store()
    aio = AsyncStore(store)

    async def scenario() -> None:
        added = await aio.memories.add("The bike lock code is 4412", importance=0.8, category="codes")
        assert added.created and (await aio.memories.get(added.memory.id)) == store.memories.get(added.memory.id)
        assert (await aio.memories.list()) == store.memories.list()
        recalled = await aio.memories.recall("bike lock code", limit=1, touch=False)
        assert recalled.matches[0].memory.id == added.memory.id
        await aio.sessions.append("cli:a", [Message("user", "hi"), Message("assistant", "hello")])
        assert await aio.sessions.compact("cli:a", "greeted", [Message("user", "hi")]) is True
        assert (await aio.sessions.load("cli:a")).messages == store.sessions.load("cli:a").messages
        assert [s.key for s in await aio.sessions.list()] == ["cli:a"]
        assert await aio.transcripts.append("cli:a", [Message("user", "hi")]) == [1]
        assert [e.seq for e in await aio.transcripts.read("cli:a")] == [1]
        await aio.state.set("mode", "quiet")
        assert await aio.state.get("mode") == "quiet" == store.state.get("mode")
        assert await aio.state.delete("mode") is True and store.state.get("mode") is None
        assert await aio.state.delete("mode") is False
        store.prompts.set("SOUL.md", "kind")
        assert await aio.prompts.list() == store.prompts.list()
        await aio.notes.append("Walked the dog.")
        assert await aio.notes.recent(1) == store.notes.recent(1)
        await aio.sessions.reset("cli:a")
        assert (await aio.sessions.load("cli:a")).messages == []
        assert await aio.memories.forget(added.memory.id) is True
        assert await aio.notes.recent(0) == [] and await aio.transcripts.append("x", []) == []

    asyncio.run(scenario())


def test_concurrent_coroutines_from_one_loop_use_no_thread_per_call(fake, open_store):
    store = open_store()
    aio = AsyncStore(store)
    fake.delay["state_get"] = 0.05
    store.state.set("k", "v")
    before = threading.active_count()

    async def many() -> list:
        return await asyncio.gather(*(aio.state.get("k") for _ in range(40)))

    assert asyncio.run(many()) == ["v"] * 40
    assert threading.active_count() == before  # awaited on the database's loop, not on worker threads
    assert fake.most_in_flight > 1  # the coroutines really ran side by side (up to the pool size)


def test_errors_are_mapped_the_same_as_the_blocking_form(fake, open_store):
    store = open_store()
    aio = AsyncStore(store)
    fake.down = True
    with pytest.raises(StoreError) as sync_error:
        store.state.get("k")

    async def attempt() -> None:
        await aio.state.get("k")

    with pytest.raises(StoreError) as async_error:
        asyncio.run(attempt())
    assert str(async_error.value) == str(sync_error.value)
    fake.down = False
    with pytest.raises(ValueError, match="needs some content"):
        asyncio.run(aio.memories.add("   "))


def test_a_closed_store_refuses_async_calls_too(open_store):
    store = open_store()
    aio = AsyncStore(store)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(aio.state.get("k"))
