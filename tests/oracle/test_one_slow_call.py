"""One slow call is cut off alone, and a text index that breaks after open stops only its own queries.

Both fail on a store that throws its whole pool away at the first timeout (its healthy neighbours' calls
die with it) or keeps sending CONTAINS to a FAILED text index until restart."""

from __future__ import annotations

import asyncio

import pytest

from picoora.store.base import StoreError
from picoora.store.oracle import indexes
from picoora.store.oracle import sql as q
from picoora.store.oracle.connection import Database
from picoora.store.oracle.schema import run_ddl
from tests.oracle.conftest import scenario, set_up_schema


async def _ping(tx):
    return await tx.rows(q.PING)


async def _state(tx):
    return await tx.rows(q.STATE_GET, agent_id="default", state_key="k")


@scenario
async def test_a_slow_call_is_cut_off_alone_and_its_neighbour_finishes(fake, config):
    set_up_schema(fake, config)
    db = Database(config.oracle, pool_factory=fake.pool_factory)
    pools = len(fake.pools)
    try:
        fake.delay["ping"] = 30.0  # never answers in time
        fake.delay["state_get"] = 1.0  # healthy, but still running when the slow one is cut off
        slow = asyncio.ensure_future(db.arun(_ping, what="ping", timeout=0.2))
        healthy = asyncio.ensure_future(db.arun(_state, what="read state", timeout=10))
        with pytest.raises(StoreError, match="in time|call timeout"):
            await slow
        assert await healthy == []  # its connection was not closed under it
        pool = fake.pools[-1]
        assert len(fake.pools) == pools + 1 and not pool.closed  # the one pool this database opened serves on
        assert len(pool.dropped) == 1
        del fake.delay["ping"]
        assert await db.arun(_ping, what="ping") == [(1,)]  # a fresh session replaces the dropped one
    finally:
        db.close()


def test_a_text_index_that_fails_after_open_falls_back_to_the_scan_and_is_checked_again(fake, config, open_store,
                                                                                        monkeypatch):
    set_up_schema(fake, config)
    db = Database(config.oracle, pool_factory=fake.pool_factory)
    try:
        db.run(lambda tx: run_ddl(tx, q.TEXT_INDEX_MEMORIES), what="create the text index")
    finally:
        db.close()
    store = open_store()
    person = store.for_agent("default.ana")
    assert store.text_index and person.text_index
    store.memories.add("Locker code A7-4421 is for the gym")
    fake.unusable_indexes.add("IDX_PICO_MEMORIES_TEXT")  # a sync or rebuild failed after the store opened
    fake.executed.clear()
    assert store.memories.recall("locker A7-4421", limit=1).matches  # answered by the scan in the same query
    assert [e.name for e in fake.executed if e.name.startswith("memory_keyword")] == [
        "memory_keyword_text", "memory_keyword_scan"]
    assert not store.text_index and not person.text_index  # for everyone on this database
    fake.executed.clear()
    store.memories.recall("locker", limit=1)
    assert "memory_keyword_text" not in [e.name for e in fake.executed]  # not sent again meanwhile

    fake.unusable_indexes.clear()  # setup-oracle rebuilt it
    monkeypatch.setattr(indexes, "TEXT_INDEX_RECHECK_SECONDS", 0.0)
    fake.executed.clear()
    assert store.memories.recall("locker A7-4421", limit=1).matches
    assert [e.name for e in fake.executed if e.name in ("text_index_usable", "memory_keyword_text")] == [
        "text_index_usable", "memory_keyword_text"]
    assert store.text_index
