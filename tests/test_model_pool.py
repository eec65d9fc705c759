"""ModelPool shares one client per model and closes it only when no session has it and nothing is in flight;
AsyncStore prefers a backend's native coroutines and otherwise uses its bounded executor."""

from __future__ import annotations

import asyncio
import threading

from picoora.llm.pool import ModelChoice, ModelPool
from picoora.store.aio import AsyncStore
from picoora.store.families.calls import with_native_form
from tests.fakes.scripted_llm import ScriptedLLM

DEFAULT, OTHER = ModelChoice("scripted", "default"), ModelChoice("scripted", "other")


def _pool():
    made: list[ScriptedLLM] = []

    def factory(choice):
        made.append(ScriptedLLM(model=choice.model))
        return made[-1]

    return ModelPool(factory, default=DEFAULT), made


def test_a_client_in_flight_is_never_closed_and_an_idle_one_is():
    async def scenario():
        pool, made = _pool()
        pool.select(OTHER)
        async with pool.lease(OTHER) as llm:
            pool.deselect(OTHER)  # the session moved on while its request runs
            await asyncio.sleep(0)
            closed_during = llm.closed
        await asyncio.sleep(0)  # the close runs as a task
        return pool, made, closed_during, llm.closed

    pool, made, closed_during, closed_after = asyncio.run(scenario())
    assert (closed_during, closed_after) == (False, True)
    assert len(made) == 1  # one client for the model, shared


def test_sessions_on_one_model_share_a_client_and_the_default_stays_open():
    async def scenario():
        pool, made = _pool()
        pool.select(OTHER)
        pool.select(OTHER)
        pool.deselect(OTHER)
        async with pool.lease(DEFAULT):
            pass
        await asyncio.sleep(0)  # a close would run as a task
        closed_before = [m.closed for m in made]
        await pool.aclose()
        return made, closed_before

    made, closed_before = asyncio.run(scenario())
    assert closed_before == [False, False]  # OTHER still selected once, DEFAULT always kept
    assert [m.model for m in made] == ["other", "default"] and all(m.closed for m in made)


class _BlockingState:
    """A state family whose reads say which thread ran them."""

    def __init__(self, threads: list[str]):
        self.threads = threads

    def get(self, key):
        self.threads.append(threading.current_thread().name)
        return f"sync {key}"

    set = all = delete = get


class _NativeMeta:
    """A meta family whose reads have a coroutine form of their own."""

    def get(self, key):
        raise AssertionError("the native form is awaited instead")

    async def _native_get(self, key):
        return f"native {key}"

    with_native_form(get, _native_get)
    set = all = get


class _Store:
    def __init__(self):
        self.threads: list[str] = []
        self.state = _BlockingState(self.threads)
        self.meta = _NativeMeta()


def test_async_store_uses_native_coroutines_and_a_bounded_executor_otherwise():
    store = _Store()
    astore = AsyncStore(store, workers=2)  # type: ignore[arg-type]

    async def scenario():
        return await astore.meta.get("k"), await asyncio.gather(*(astore.state.get(str(i)) for i in range(20)))

    native, synced = asyncio.run(scenario())
    astore.close()
    assert native == "native k" and synced[3] == "sync 3"
    assert len(set(store.threads)) <= 2 and all(name.startswith("picoora-store") for name in store.threads)
