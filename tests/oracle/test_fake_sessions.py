"""The fake behaves like several sessions of one database: what multi-node tests rely on.

Each test drives the fake's connections directly with statements of the registry, the way the driver
would; the last one opens two stores (two ``Database`` objects, each on its own event loop) over one fake.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime

import oracledb
import pytest

from picoora.messages import Message
from picoora.store.oracle import sql as q
from tests.oracle.conftest import oracle_config, scenario, set_up_schema
from tests.oracle.fake_db import MODEL, FakeOracle


def code_of(exc: BaseException) -> str:
    return exc.args[0].full_code


@pytest.fixture
def db(fake: FakeOracle, config) -> FakeOracle:
    set_up_schema(fake, config)
    return fake


async def run(conn, stmt: q.Sql, **binds) -> list[tuple] | int:
    cursor = conn.cursor()
    await cursor.execute(stmt.render(MODEL), binds, **({"fetch_lobs": False} if stmt.kind == "query" else {}))
    return await cursor.fetchall() if stmt.kind == "query" else cursor.rowcount


def state(key: str, value: str) -> dict:
    return {"state_key": key, "agent_id": "a", "state_value": value, "now": datetime(2026, 1, 1)}


async def read_state(conn, key: str) -> list[tuple]:
    return await run(conn, q.STATE_GET, agent_id="a", state_key=key)


async def sessions(db: FakeOracle, n: int = 2):
    pool = db.pool_factory(max=n + 1)
    return pool, [await pool.acquire() for _ in range(n)]


@scenario
async def test_uncommitted_rows_are_invisible_to_other_sessions(db):
    _, (writer, reader) = await sessions(db)
    await run(writer, q.STATE_SET, **state("k", "v1"))
    assert await read_state(writer, "k") == [("v1",)]  # a session sees its own work
    assert await read_state(reader, "k") == []
    await writer.commit()
    assert await read_state(reader, "k") == [("v1",)]

    await run(writer, q.STATE_SET, **state("k", "v2"))
    assert await read_state(reader, "k") == [("v1",)]  # the committed image until the writer commits
    await writer.rollback()
    assert await read_state(reader, "k") == await read_state(writer, "k") == [("v1",)]

    await run(writer, q.STATE_DELETE, agent_id="a", state_key="k")
    assert await read_state(reader, "k") == [("v1",)]
    await writer.commit()
    assert await read_state(reader, "k") == []


@scenario
async def test_an_insert_of_a_key_waits_for_the_session_holding_it():
    for outcome in ("commit", "rollback"):
        db = FakeOracle()
        set_up_schema(db, oracle_config())
        _, (first, second) = await sessions(db)
        await run(first, q.STATE_SET, **state("k", "first"))
        racing = asyncio.ensure_future(run(second, q.STATE_SET, **state("k", "second")))
        await asyncio.sleep(0.05)
        assert not racing.done(), "the second insert of the key must wait for the first session"
        await getattr(first, outcome)()
        if outcome == "commit":
            with pytest.raises(oracledb.IntegrityError) as caught:
                await racing
            assert code_of(caught.value) == "ORA-00001"
        else:
            assert await racing == 1
            await second.commit()
            assert await read_state(first, "k") == [("second",)]


async def insert_session(conn, key: str) -> None:
    await run(conn, q.SESSION_INSERT, session_key=key, agent_id="a", messages="[]", summary="",
              now=datetime(2026, 1, 1))
    await conn.commit()


@scenario
async def test_for_update_wait_gives_ora_30006_and_a_plain_update_the_call_timeout(db):
    _, (holder, waiter) = await sessions(db)
    await insert_session(holder, "s")
    key = {"agent_id": "a", "session_key": "s"}
    await run(holder, q.SESSION_LOCK, **key)  # FOR UPDATE WAIT 10

    db.wait_scale = 0.01  # ten "seconds" of WAIT 10 in 0.1 s
    waiting = asyncio.ensure_future(run(waiter, q.SESSION_LOCK, **key))
    await asyncio.sleep(0.02)
    assert not waiting.done(), "a locked row makes FOR UPDATE wait"
    with pytest.raises(oracledb.DatabaseError) as caught:
        await waiting
    assert code_of(caught.value) == "ORA-30006"

    waiter.call_timeout = 50  # ms: a plain UPDATE waits for the lock until the call timeout
    update = {"messages": "[]", "summary": "", "now": datetime(2026, 1, 2), **key}
    with pytest.raises(oracledb.DatabaseError) as caught:
        await run(waiter, q.SESSION_UPDATE, **update)
    assert code_of(caught.value) == "DPY-4024"
    await holder.commit()
    assert await run(waiter, q.SESSION_UPDATE, **update) == 1


@scenario
async def test_a_lock_wait_ends_when_the_holder_commits(db):
    _, (holder, waiter) = await sessions(db)
    await insert_session(holder, "s")
    key = {"agent_id": "a", "session_key": "s"}
    await run(holder, q.SESSION_UPDATE, messages='["newer"]', summary="", now=datetime(2026, 1, 2), **key)
    waiting = asyncio.ensure_future(run(waiter, q.SESSION_LOCK, **key))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    await holder.commit()
    assert await waiting == [('["newer"]', None)]  # the row as committed while it waited


@scenario
async def test_closing_the_pool_breaks_a_call_in_flight_and_rolls_its_work_back(db):
    pool, (busy, other) = await sessions(db)
    await run(busy, q.STATE_SET, **state("k", "uncommitted"))
    db.delay["state_get"] = 30.0
    in_flight = asyncio.ensure_future(read_state(busy, "k"))
    await asyncio.sleep(0.05)
    await pool.close(force=True)
    with pytest.raises(oracledb.DatabaseError) as caught:
        await in_flight
    assert code_of(caught.value) == "DPY-4011"
    del db.delay["state_get"]
    fresh = await db.pool_factory(max=1).acquire()
    assert await read_state(fresh, "k") == []  # the killed session's transaction was rolled back


@scenario
async def test_a_pool_with_connections_out_refuses_a_plain_close(db):
    pool, _ = await sessions(db, 1)
    with pytest.raises(oracledb.Error) as caught:
        await pool.close()
    assert code_of(caught.value) == "DPY-1005"


@scenario
async def test_not_null_and_is_json_are_checked(db):
    _, (conn,) = await sessions(db, 1)
    with pytest.raises(oracledb.IntegrityError) as caught:  # '' is NULL in Oracle
        await run(conn, q.STATE_SET, **state("", "v"))
    assert code_of(caught.value) == "ORA-01400"
    with pytest.raises(oracledb.IntegrityError) as caught:
        await run(conn, q.TRACE_INSERT, trace_id="t", agent_id="a", session_key="s", trace_json="{not json",
                  now=datetime(2026, 1, 1))
    assert code_of(caught.value) == "ORA-02290"
    await insert_session(conn, "s")
    with pytest.raises(oracledb.IntegrityError) as caught:  # agent_id NOT NULL: '' cannot be written
        await run(conn, q.STATE_SET, **{**state("k", "v"), "agent_id": ""})
    assert code_of(caught.value) == "ORA-01400"


@scenario
async def test_contains_is_refused_on_a_failed_text_index(db):
    _, (conn,) = await sessions(db, 1)
    await run(conn, q.TEXT_INDEX_MEMORIES)
    query = {"agent_id": "a", "text_query": "{oracle}", "k": 5, "now": datetime(2026, 1, 1)}
    assert await run(conn, q.MEMORY_KEYWORD_TEXT, **query) == []
    db.unusable_indexes.add("IDX_PICO_MEMORIES_TEXT")
    with pytest.raises(oracledb.DatabaseError) as caught:
        await run(conn, q.MEMORY_KEYWORD_TEXT, **query)
    assert code_of(caught.value) == "ORA-29902"
    assert "DRG-10599" in str(caught.value)


def test_two_stores_on_two_event_loops_share_one_fake(open_store, fake):
    """Two ``Database`` objects (two private loops, two threads) write the same rows at once: no hang,
    nothing lost, and each sees the other's committed work."""
    stores = [open_store(), open_store()]
    errors: list[BaseException] = []

    def writer(store, n: int) -> None:
        try:
            for i in range(20):
                store.transcripts.append("shared", [Message(role="user", content=f"{n}-{i}")])
                store.sessions.append("shared", [Message(role="user", content=f"{n}-{i}")])  # a row lock
                store.state.set(f"k{n}", str(i))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(store, n)) for n, store in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)  # a hang guard: before the shared database loop, the lock waits hung for 30 s
    assert not errors and not any(t.is_alive() for t in threads)
    contents = [e.message.content for e in stores[0].transcripts.read("shared", 100)]
    expected = sorted(f"{n}-{i}" for n in range(2) for i in range(20))
    assert sorted(contents) == expected
    assert sorted(m.content for m in stores[1].sessions.load("shared").messages) == expected
    assert stores[1].state.get("k0") == stores[0].state.get("k1") == "19"
