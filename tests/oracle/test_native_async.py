"""OracleStore.native_async(): coroutines that await the database's own event loop, built from the same
units of work as the blocking methods (same arguments, results and errors), no thread per call."""

from __future__ import annotations

import asyncio
import inspect
import threading

import pytest

from picoora.messages import Message
from picoora.store.base import StoreError
from picoora.store.oracle.store import ASYNC_METHODS, OracleStore

REQUIRED = {"recall", "add_memory", "get_memory", "list_memories", "forget", "load_session", "append_session",
            "compact_session", "reset_session", "list_sessions", "append_transcript", "read_transcript",
            "list_prompts", "recent_daily_notes", "get_state", "set_state"}


def test_every_required_method_is_a_coroutine_with_the_blocking_signature(open_store):
    store = open_store()
    aio = store.native_async()
    assert REQUIRED <= set(ASYNC_METHODS)
    for name in ASYNC_METHODS:
        method = getattr(aio, name)
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(getattr(store, name)), name
        assert hasattr(OracleStore, f"_{name}_op"), name


def test_async_and_blocking_forms_give_the_same_results(open_store):
    store = open_store()
    aio = store.native_async()

    async def scenario() -> None:
        added = await aio.add_memory("The bike lock code is 4412", importance=0.8, category="codes")
        assert added.created and (await aio.get_memory(added.memory.id)) == store.get_memory(added.memory.id)
        assert (await aio.list_memories()) == store.list_memories()
        recalled = await aio.recall("bike lock code", limit=1, touch=False)
        assert recalled.matches[0].memory.id == added.memory.id
        await aio.append_session("cli:a", [Message("user", "hi"), Message("assistant", "hello")])
        assert await aio.compact_session("cli:a", "greeted", [Message("user", "hi")]) is True
        assert (await aio.load_session("cli:a")).messages == store.load_session("cli:a").messages
        assert [s.key for s in await aio.list_sessions()] == ["cli:a"]
        assert await aio.append_transcript("cli:a", [Message("user", "hi")]) == [1]
        assert [e.seq for e in await aio.read_transcript("cli:a")] == [1]
        await aio.set_state("mode", "quiet")
        assert await aio.get_state("mode") == "quiet" == store.get_state("mode")
        assert await aio.delete_state("mode") is True and store.get_state("mode") is None
        assert await aio.delete_state("mode") is False
        store.set_prompt("SOUL.md", "kind")
        assert await aio.list_prompts() == store.list_prompts()
        await aio.append_daily_note("Walked the dog.")
        assert await aio.recent_daily_notes(1) == store.recent_daily_notes(1)
        await aio.reset_session("cli:a")
        assert (await aio.load_session("cli:a")).messages == []
        assert await aio.forget(added.memory.id) is True
        assert await aio.recent_daily_notes(0) == [] and await aio.append_transcript("x", []) == []

    asyncio.run(scenario())


def test_concurrent_coroutines_from_one_loop_use_no_thread_per_call(fake, open_store):
    store = open_store()
    aio = store.native_async()
    fake.delay["state_get"] = 0.05
    store.set_state("k", "v")
    before = threading.active_count()

    async def many() -> list:
        return await asyncio.gather(*(aio.get_state("k") for _ in range(40)))

    assert asyncio.run(many()) == ["v"] * 40
    assert threading.active_count() == before  # awaited on the database's loop, not on worker threads
    assert fake.most_in_flight > 1  # the coroutines really ran side by side (up to the pool size)


def test_errors_are_mapped_the_same_as_the_blocking_form(fake, open_store):
    store = open_store()
    aio = store.native_async()
    fake.down = True
    with pytest.raises(StoreError) as sync_error:
        store.get_state("k")

    async def attempt() -> None:
        await aio.get_state("k")

    with pytest.raises(StoreError) as async_error:
        asyncio.run(attempt())
    assert str(async_error.value) == str(sync_error.value)
    fake.down = False
    with pytest.raises(ValueError, match="needs some content"):
        asyncio.run(aio.add_memory("   "))


def test_a_closed_store_refuses_async_calls_too(open_store):
    store = open_store()
    aio = store.native_async()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        asyncio.run(aio.get_state("k"))
