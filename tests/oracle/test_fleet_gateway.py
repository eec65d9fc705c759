"""A gateway on the fleet's database: a chat whose session is mid-turn on another node waits, bounded, then
answers "busy" (HTTP 503 with Retry-After) instead of interleaving the two turns' histories."""

from __future__ import annotations

import asyncio

import httpx

from picoora.gateway.runtime import duties
from picoora.store.oracle import open_oracle_store
from tests.fakes.gateway_kit import RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.oracle.conftest import oracle_config, set_up_schema
from tests.oracle.fake_db import FakeOracle


def test_a_session_mid_turn_on_another_node_answers_busy_then_serves(isolated_home, monkeypatch):
    fake = FakeOracle()
    set_up_schema(fake, oracle_config())
    monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
    monkeypatch.setattr(duties, "SESSION_WAIT_SECONDS", 0.3)
    other_node = open_oracle_store(oracle_config())
    leases = other_node.leases
    model_calls: list[dict] = []

    def answer(body: dict) -> Reply:
        model_calls.append(body)
        return Reply(content="answered here")

    try:
        with FakeOllama(responder=answer) as ollama:
            config = gateway_config(isolated_home, ollama.url)
            config.oracle = oracle_config().oracle
            with RunningGateway(config) as gw:
                assert asyncio.run(leases.acquire("session:web:family", "other-node", 30))
                busy = httpx.post(gw.url + "/v1/chat", headers=gw.headers, timeout=30,
                                  json={"session_id": "family", "text": "hello"})
                assert busy.status_code == 503 and busy.headers["Retry-After"] == "5"
                assert busy.json()["error"]["type"] == "session_busy"
                assert "another of my servers" in busy.json()["error"]["message"]
                assert model_calls == []  # the turn never started here
                asyncio.run(leases.release("session:web:family", "other-node"))  # its turn ended
                chat = httpx.post(gw.url + "/v1/chat", headers=gw.headers, timeout=60,
                                  json={"session_id": "family", "text": "hello"})
                assert chat.status_code == 200 and "answered here" in chat.text
    finally:
        other_node.close()
    assert not [r for r in fake.rows("PICO_LEASES") if r["lease_name"] == "default/session:web:family"]  # released
