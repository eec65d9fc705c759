"""``oracle.required``: a gateway whose database is down does not fall back to files. ``/ready`` and the API
answer 503 naming the database (a load balancer sends traffic elsewhere), no file store appears, and the
node serves from the database as soon as it answers again."""

from __future__ import annotations

import httpx

from picoora.store import open_store
from picoora.store.base import StoreError
from tests.fakes.gateway_kit import RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.oracle.conftest import oracle_config, set_up_schema
from tests.oracle.fake_db import FakeOracle


def _fake_database(monkeypatch) -> FakeOracle:
    fake = FakeOracle()
    set_up_schema(fake, oracle_config())
    monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
    monkeypatch.setattr("picoora.store.oracle.awaited.RETRY_SECONDS", 0.0)  # every call tries again
    return fake


def test_a_required_database_down_at_start_gives_503_and_no_file_store_then_recovers(isolated_home, monkeypatch):
    fake = _fake_database(monkeypatch)
    fake.down = True
    with FakeOllama(responder=lambda body: Reply(content="from the database node")) as ollama:
        config = gateway_config(isolated_home, ollama.url)
        config.oracle = oracle_config(required=True).oracle
        with RunningGateway(config) as gw:
            ready = httpx.get(gw.url + "/ready", headers=gw.headers, timeout=30)
            assert ready.status_code == 503
            [store_check] = [c for c in ready.json()["checks"] if c["name"] == "store"]
            assert not store_check["ok"] and "Cannot reach Oracle at localhost:1521/FREEPDB1" in store_check["detail"]
            assert "does not fall back to files" in store_check["detail"]
            sessions = httpx.get(gw.url + "/v1/sessions", headers=gw.headers, timeout=30)
            assert sessions.status_code == 503 and "Oracle" in sessions.text
            assert gw.gateway.on_fallback == []  # nothing said "using file storage instead"
            assert not (isolated_home / "workspace" / ".picoora" / "sessions").exists()

            fake.down = False  # the database is back
            assert httpx.get(gw.url + "/ready", headers=gw.headers, timeout=30).status_code == 200
            chat = httpx.post(gw.url + "/v1/chat", headers=gw.headers, json={"text": "hello"}, timeout=60)
            assert chat.status_code == 200 and "from the database node" in chat.text
    assert any(r["session_key"] for r in fake.rows("PICO_SESSIONS"))  # the turn went to the database
    assert not (isolated_home / "workspace" / ".picoora" / "sessions").exists()


def test_without_required_a_down_database_still_falls_back_to_files(monkeypatch):
    fake = _fake_database(monkeypatch)
    fake.down = True
    said: list[str] = []
    store = open_store(oracle_config(), on_fallback=said.append)
    try:
        assert store.backend == "files" and said and said[0].startswith("Oracle storage unavailable")
    finally:
        store.close()


def test_a_required_store_fails_plainly_until_the_database_answers(monkeypatch):
    fake = _fake_database(monkeypatch)
    fake.down = True
    store = open_store(oracle_config(required=True))
    person = store.for_agent("default.ana")  # type: ignore[attr-defined]
    try:
        for call in (lambda: store.state.get("k"), lambda: person.state.set("k", "v"), store.ping):
            try:
                call()
            except StoreError as err:
                assert "oracle.required is set" in str(err)
            else:
                raise AssertionError("a call on an unreachable required store must fail")
        fake.down = False
        person.state.set("k", "ana's")
        assert person.state.get("k") == "ana's" and store.state.get("k") is None  # scoped as ever
    finally:
        store.close()


def test_an_awaited_store_opens_off_the_event_loop_and_its_families_wait_for_the_database(monkeypatch):
    import asyncio
    import threading

    import pytest

    from picoora.store.aio import AsyncStore

    fake = _fake_database(monkeypatch)
    fake.down = True
    config = oracle_config(required=True)
    store = open_store(config)
    astore = AsyncStore(store)
    with pytest.raises(StoreError, match="does not fall back to files"):
        store.state.get("k")

    async def read() -> str | None:
        return await astore.state.get("k")

    with pytest.raises(StoreError, match="does not fall back to files"):
        asyncio.run(read())
    fake.down = False
    opened_in: list[str] = []
    real_opened = store.opened  # type: ignore[attr-defined]
    monkeypatch.setattr(store, "opened", lambda: opened_in.append(threading.current_thread().name) or real_opened())

    async def write_then_read() -> str | None:
        await astore.state.set("k", "v")
        return await astore.state.get("k")

    assert asyncio.run(write_then_read()) == "v" and store.state.get("k") == "v"
    assert opened_in and threading.main_thread().name not in opened_in[:1]  # the first open ran in a worker
    store.config.set("provider", '{"api_key": "fake-secret-value-123"}')
    assert "fake-secret-value-123" not in (store.config.get("provider") or "")
    astore.close()
    store.close()
