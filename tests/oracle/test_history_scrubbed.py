"""The Oracle backend's transcripts hold no secret and every history read is scrubbed (issue 36): the
session history API returned what the model said, key included, from either backend."""

from __future__ import annotations

import asyncio
import json

import httpx

from picoora.messages import Message
from picoora.secrets import REDACTED
from picoora.store.oracle import open_oracle_store
from tests.fakes.gateway_kit import RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.oracle.conftest import oracle_config, set_up_schema
from tests.oracle.fake_db import FakeOracle

SECRET = "sk-fake-oracle-history-0123456789"


def test_oracle_transcripts_and_history_reads_hold_no_secret(isolated_home, monkeypatch):
    fake = FakeOracle()
    set_up_schema(fake, oracle_config())
    monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
    older = open_oracle_store(oracle_config())
    try:  # a transcript written before scrubbing, or by a job: raw in the table
        asyncio.run(asyncio.to_thread(older.transcripts.append, "web:old", [
            Message(role="user", content="what is it?"), Message(role="assistant", content=f"it is {SECRET}")]))
    finally:
        older.close()
    with FakeOllama(responder=lambda body: Reply(content=f"the key is {SECRET}")) as ollama:
        config = gateway_config(isolated_home, ollama.url)
        config.oracle = oracle_config().oracle
        config.providers.openai.api_key = SECRET
        with RunningGateway(config) as gw, httpx.Client(base_url=gw.url, headers=gw.headers, timeout=60) as http:
            http.post("/v1/chat", json={"session_id": "new", "text": "tell me"}).raise_for_status()
            served = [http.get(f"/v1/sessions/web:{name}").json() for name in ("new", "old")]
    assert SECRET not in json.dumps(served) and all(REDACTED in json.dumps(s) for s in served)
    stored = [r for r in fake.rows("PICO_TRANSCRIPTS") if r["session_key"].endswith("web:new")]
    assert stored and SECRET not in json.dumps(stored, default=str)
