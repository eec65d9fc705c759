"""The gateway's HTTP API over real HTTP: auth, limits, error shapes, every endpoint, SSE framing, a leaving client."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
import pytest

from picoora.agent.record import CANCELLED_MARK
from picoora.store.files import FileStore
from tests.fakes._http import closed_port_url
from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
from tests.fakes.ollama_server import FakeOllama, Reply


def _last_user(body: dict) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def scripted(body: dict) -> Reply:
    """'remember X' calls the remember tool, then answers; 'slow ...' waits for the test; else echoes."""
    text = _last_user(body)
    if body["messages"][-1]["role"] == "tool":
        return Reply(content="Noted, I will remember that.")
    if text.startswith("remember "):
        return Reply(tool_calls=[("remember", {"text": text.removeprefix("remember ")})])
    return Reply(content=f"You said: {text}", thinking="thinking it over")


@pytest.fixture
def fake():
    with FakeOllama(responder=scripted) as server:
        yield server


@pytest.fixture
def gw(isolated_home, fake):
    with RunningGateway(gateway_config(isolated_home, fake.url, max_body_bytes=4096, max_message_chars=500)) as running:
        yield running


def client(gw: RunningGateway, token: str | None = TOKEN) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.Client(base_url=gw.url, headers=headers, timeout=30)


def sse_messages(lines) -> list[dict]:
    """Parse an SSE stream into [{id, event, data}] (comments skipped)."""
    messages, current = [], {}
    for line in lines:
        if not line:
            if current:
                messages.append(current)
            current = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(": ")
            current[field] = json.loads(value) if field == "data" else value
    return messages


# -- auth -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x",
                                           f"Basic {TOKEN}", TOKEN, "Bearer", f"Bearer  {TOKEN} x"])
def test_every_endpoint_but_health_refuses_a_missing_or_wrong_token(gw, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    with httpx.Client(base_url=gw.url, headers=headers, timeout=30) as http:
        assert http.get("/health").status_code == 200
        anonymous_ready = http.get("/ready")  # a load balancer's health check: the status alone
        assert anonymous_ready.status_code == 401 if authorization else anonymous_ready.json()["checks"] == []
        for method, path in [("GET", "/v1/sessions"), ("GET", "/v1/sessions/web:a"),
                             ("DELETE", "/v1/sessions/web:a"), ("GET", "/v1/sessions/web:a/model"),
                             ("GET", "/v1/memory"), ("DELETE", "/v1/memory/x"), ("GET", "/v1/traces/abc"),
                             ("GET", "/v1/models"), ("GET", "/openapi.json"), ("GET", "/v1/docs"),
                             ("POST", "/v1/docs"), ("GET", "/v1/docs/search?q=x"),
                             ("DELETE", "/v1/docs/0123456789ab")]:
            response = http.request(method, path)
            assert response.status_code == 401, (method, path)
            assert response.json()["error"]["type"] == "unauthorized"
            assert response.headers["www-authenticate"] == "Bearer"
        posted = http.post("/v1/chat", json={"session_id": "a", "text": "hi"})
        assert posted.status_code == 401
        assert http.post("/v1/chat/completions",
                         json={"messages": [{"role": "user", "content": "hi"}]}).status_code == 401
    assert gw.call(_sessions(gw)) == []  # nothing ran


async def _sessions(gw):
    return await gw.gateway.assistant.sessions()


def test_the_right_token_is_accepted_and_health_says_version_and_uptime(gw):
    with client(gw) as http:
        health = http.get("/health").json()
        assert health["status"] == "ok" and health["version"] and health["uptime_seconds"] >= 0
        assert http.get("/v1/sessions").json() == []
        assert "/v1/chat" in http.get("/openapi.json").json()["paths"]


def test_the_chat_page_loads_without_a_token_and_forbids_inline_script(gw):
    with client(gw, None) as http:
        page = http.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["referrer-policy"] == "no-referrer"  # the ?token= URL never leaks in a Referer
        assert "<script src=\"/static/app.js\"" in page.text and "<script>" not in page.text
        for name in ("app.js", "docs.js"):
            script = http.get(f"/static/{name}")
            assert script.status_code == 200 and f"<script src=\"/static/{name}\"" in page.text
            assert not re.search(r"\.(inner|outer)HTML|insertAdjacentHTML|document\.write|eval\(", script.text)
        assert http.get("/static/../config.json").status_code == 404
        assert http.get("/static/nothing.js").status_code == 404
        icon = http.get("/favicon.ico")  # asked for by every browser, whatever the page links
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert icon.text.startswith("<svg") and "<script" not in icon.text
        assert 'rel="icon"' in page.text


def test_no_cors_unless_configured(isolated_home, fake):
    origin = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    with RunningGateway(gateway_config(isolated_home, fake.url)) as gw, client(gw) as http:
        assert "access-control-allow-origin" not in http.get("/v1/sessions", headers=origin).headers
        assert "access-control-allow-origin" not in http.options("/v1/chat", headers=origin).headers
    config = gateway_config(isolated_home, fake.url, cors_origins=["https://chat.example"])
    with RunningGateway(config) as gw, client(gw) as http:
        allowed = http.options("/v1/chat", headers={**origin, "Origin": "https://chat.example"})
        assert allowed.headers["access-control-allow-origin"] == "https://chat.example"
        assert "access-control-allow-origin" not in http.get("/v1/sessions", headers=origin).headers


# -- limits and bad input ---------------------------------------------------------------------------------

def test_a_body_over_the_limit_gets_413_declared_or_chunked(gw):
    with client(gw) as http:
        big = http.post("/v1/chat", content=b'{"text": "' + b"x" * 5000 + b'"}',
                        headers={"Content-Type": "application/json"})
        assert big.status_code == 413 and big.json()["error"]["type"] == "too_large"

        def chunks():
            for _ in range(10):
                yield b"x" * 1000

        chunked = http.post("/v1/chat", content=chunks(), headers={"Content-Type": "application/json"})
        assert chunked.status_code == 413 and "max_body_bytes" in chunked.json()["error"]["message"]
        long_message = http.post("/v1/chat", json={"session_id": "a", "text": "y" * 501})
        assert long_message.status_code == 413 and long_message.json()["error"]["type"] == "message_too_large"
    assert gw.call(_sessions(gw)) == []


@pytest.mark.parametrize("body", [
    b"{not json", b"[]", b'"text"', b"null", b'{"text": 5}', b'{"session_id": "a"}', b'{"text": ""}',
    b'{"text": "hi", "session_id": "../../etc"}', b'{"text": "hi", "session_id": "a b"}', b'{"text": "hi", "extra": 1}',
    b'{"text": "\\ud800"}', "{\"text\": \"caf\xe9\"}".encode("latin-1"),
])
def test_a_malformed_chat_body_is_a_4xx_with_a_json_error(gw, body):
    with client(gw) as http:
        response = http.post("/v1/chat", content=body, headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500
    error = response.json()["error"]
    assert error["type"] and error["message"] and "Traceback" not in response.text


def test_an_unexpected_failure_is_a_500_without_details(gw, monkeypatch):
    async def broken():
        raise RuntimeError("secret internal detail /home/x")

    monkeypatch.setattr(gw.gateway.assistant, "sessions", broken)
    with client(gw) as http:
        response = http.get("/v1/sessions")
    assert response.status_code == 500
    assert response.json() == {"error": {"type": "internal_error", "param": None, "code": "internal_error",
                                         "message": "the gateway failed on this request; its log says why"}}


def test_paths_that_name_nothing_valid_are_4xx(gw):
    with client(gw) as http:
        for path in ("/v1/sessions/no-colon", "/v1/sessions/web:a%2F..%2Fb", "/v1/traces/../x", "/v1/nothing"):
            response = http.get(path)
            assert 400 <= response.status_code < 500, path
            assert response.json()["error"]["type"]
        assert http.put("/v1/sessions/web:a/model", json={"model": ""}).status_code == 400
        assert http.get("/v1/memory", params={"limit": 0}).status_code == 400


# -- chat ------------------------------------------------------------------------------------------------

def test_chat_answers_as_json_and_the_turn_is_in_the_transcript(gw):
    with client(gw) as http:
        response = http.post("/v1/chat", json={"session_id": "alice", "text": "hello there"})
        app_ms, turn_ms = (float(v)
                           for v in re.findall(r"(?:app|turn);dur=([\d.]+)", response.headers["server-timing"]))
        assert 0 < turn_ms <= app_ms
        answer = response.json()
        assert answer["session_key"] == "web:alice" and answer["stop_reason"] == "answer"
        assert answer["text"] == "You said: hello there" and answer["turn_id"]
        history = http.get("/v1/sessions/web:alice").json()
    assert [(e["message"]["role"], e["message"]["content"]) for e in history["entries"]] == [
        ("user", "hello there"), ("assistant", "You said: hello there")]


def test_sse_frames_carry_turn_id_and_sequence_in_order(gw):
    with client(gw) as http:
        with http.stream("POST", "/v1/chat",
                         json={"session_id": "s", "text": "remember I like tea", "stream": True}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            messages = sse_messages(response.iter_lines())
    types = [m["event"] for m in messages]
    assert types[0] == "turn_started" and types[-1] == "final_answer"
    assert types.index("tool_call_started") < types.index("tool_call_finished") < types.index("token")
    turn_id = messages[0]["data"]["turn_id"]
    assert [m["data"]["seq"] for m in messages] == list(range(1, len(messages) + 1))
    assert [m["id"] for m in messages] == [f"{turn_id}:{m['data']['seq']}" for m in messages]
    assert all(m["data"]["type"] == m["event"] and m["data"]["session_key"] == "web:s" for m in messages)
    finished = next(m["data"] for m in messages if m["event"] == "tool_call_finished")
    assert finished["name"] == "remember" and finished["ok"] is True
    assert messages[-1]["data"]["text"] == "Noted, I will remember that."
    assert len([m for m in messages if m["event"] == "token"]) > 1  # streamed, not one piece


def test_accept_event_stream_asks_for_sse_and_reasoning_is_streamed(gw):
    with client(gw) as http:
        with http.stream("POST", "/v1/chat", json={"session_id": "s", "text": "hi"},
                         headers={"Accept": "text/event-stream"}) as response:
            messages = sse_messages(response.iter_lines())
    types = [m["event"] for m in messages]
    assert "reasoning" in types and types.index("reasoning") < types.index("token")
    assert messages[-1]["data"]["text"] == "You said: hi"


def test_a_client_that_disconnects_neither_cancels_nor_loses_the_turn(isolated_home):
    release = threading.Event()

    def gated(body: dict) -> Reply:
        release.wait(10)
        return Reply(content="the answer nobody waited for")

    with FakeOllama(responder=gated) as fake, RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        with client(gw) as http:
            with http.stream("POST", "/v1/chat",
                             json={"session_id": "gone", "text": "long question", "stream": True}) as response:
                first = next(line for line in response.iter_lines() if line.startswith("event:"))
                assert first == "event: turn_started"
            # the connection is closed here, while the model is still thinking
        release.set()
        deadline = time.monotonic() + 10
        with client(gw) as http:
            while time.monotonic() < deadline:
                entries = http.get("/v1/sessions/web:gone").json()["entries"]
                if len(entries) == 2:
                    break
                time.sleep(0.05)
    assert entries[-1]["message"]["content"] == "the answer nobody waited for"


def test_stop_cancels_the_running_turn_keeps_its_message_and_the_stream_says_stopped(isolated_home):
    release = threading.Event()

    def gated(body: dict) -> Reply:
        release.wait(10)
        return Reply(content="too late")

    with FakeOllama(responder=gated) as fake, RunningGateway(gateway_config(isolated_home, fake.url)) as gw:
        with client(gw) as http, client(gw) as other:
            assert other.post("/v1/sessions/web:s/stop").json() == {"session_key": "web:s", "stopped": False}
            with http.stream("POST", "/v1/chat", json={"session_id": "s", "text": "a long question",
                                                       "stream": True}) as response:
                lines = response.iter_lines()
                assert next(line for line in lines if line.startswith("event:")) == "event: turn_started"
                assert other.post("/v1/sessions/web:other/stop").json()["stopped"] is False  # not this session
                assert other.post("/v1/sessions/web:s/stop").json() == {"session_key": "web:s", "stopped": True}
                messages = sse_messages(lines)
            release.set()
            assert messages[-1]["event"] == "stopped"
            assert messages[-1]["data"]["message"] == "stopped at the user's request"
            entries = http.get("/v1/sessions/web:s").json()["entries"]
            assert [e["message"]["content"] for e in entries] == ["a long question", CANCELLED_MARK]
            assert entries[-1]["message"]["cancelled"] is True  # the marker marks the turn; never sent again
            assert other.post("/v1/sessions/web:s/stop").json()["stopped"] is False  # nothing runs now
            for bad in ("/v1/sessions/../stop", "/v1/sessions/web:a%20b/stop", "/v1/sessions/x/stop"):
                assert http.post(bad).status_code in (400, 404, 422), bad


def test_no_new_turns_once_shutting_down(gw):
    gw.gateway.request_stop()
    with client(gw) as http:
        response = http.post("/v1/chat", json={"session_id": "late", "text": "hi"})
        assert response.status_code == 503 and response.json()["error"]["type"] == "shutting_down"
        assert http.get("/ready").status_code == 503


# -- sessions and models ----------------------------------------------------------------------------------

def test_sessions_list_history_reset_and_model(isolated_home):
    with FakeOllama(models=("qwen3:latest", "m2"),
                    responder=lambda body: Reply(content=f"{body['model']} here")) as fake:
        with RunningGateway(gateway_config(isolated_home, fake.url)) as gw, client(gw) as http:
            http.post("/v1/chat", json={"session_id": "a", "text": "one"})
            http.post("/v1/chat", json={"session_id": "b", "text": "two"})
            assert sorted(s["key"] for s in http.get("/v1/sessions").json()) == ["web:a", "web:b"]
            assert http.get("/v1/sessions/web:a",
                            params={"limit": 1}).json()["entries"][0]["message"]["role"] == "assistant"

            assert http.get("/v1/sessions/web:a/model").json() == {"provider": "ollama", "model": "qwen3:latest"}
            unknown = http.put("/v1/sessions/web:a/model", json={"model": "not-pulled"})
            assert unknown.status_code == 400 and "ollama pull" in unknown.json()["error"]["message"]
            assert http.get("/v1/sessions/web:a/model").json()["model"] == "qwen3:latest"  # nothing changed
            assert http.put("/v1/sessions/web:a/model", json={"model": "m2"}).json()["model"] == "m2"
            assert http.post("/v1/chat", json={"session_id": "a", "text": "three"}).json()["text"] == "m2 here"
            assert http.post("/v1/chat", json={"session_id": "b", "text": "four"}).json()["text"] == "qwen3:latest here"
            assert http.put("/v1/sessions/web:b/model", json={"model": "m2"}).json()["model"] == "m2"
            assert http.delete("/v1/sessions/web:b/model").json() == {"provider": "ollama", "model": "qwen3:latest"}
            assert http.post("/v1/chat", json={"session_id": "b", "text": "five"}).json()["text"] == "qwen3:latest here"

            assert http.delete("/v1/sessions/web:a").json() == {"deleted": "web:a"}
            left = [s["messages"] for s in http.get("/v1/sessions").json() if s["key"] == "web:a"]
            assert left in ([], [0])  # gone from the model's view
            assert len(http.get("/v1/sessions/web:a").json()["entries"]) == 4  # the transcript keeps the record


# -- memory and traces ------------------------------------------------------------------------------------

def test_memory_add_list_search_with_scores_and_forget(gw):
    with client(gw) as http:
        added = http.post("/v1/memory",
                          json={"content": "The wifi password hint is the cat's name", "category": "home"}).json()
        assert added["created"] is True
        http.post("/v1/memory", json={"content": "Alice prefers green tea"})
        assert len(http.get("/v1/memory").json()["memories"]) == 2
        found = http.get("/v1/memory", params={"q": "green tea", "limit": 5}).json()
        assert found["matches"][0]["memory"]["content"] == "Alice prefers green tea"
        assert 0 < found["matches"][0]["score"] <= 1
        memory_id = added["memory"]["id"]
        assert http.delete(f"/v1/memory/{memory_id}").json() == {"deleted": memory_id}
        assert http.delete(f"/v1/memory/{memory_id}").status_code == 404
        assert [m["content"] for m in http.get("/v1/memory").json()["memories"]] == ["Alice prefers green tea"]
        assert http.post("/v1/memory", json={"content": "x", "importance": 7}).status_code == 400


def test_a_trace_shows_the_tools_and_the_recalled_memories(gw):
    with client(gw) as http:
        http.post("/v1/memory", json={"content": "Bob's birthday is in May"})
        turn = http.post("/v1/chat", json={"session_id": "t", "text": "remember Bob likes chess"}).json()
        trace = http.get(f"/v1/traces/{turn['turn_id']}").json()
        assert [c["name"] for c in trace["tool_calls"]] == ["remember"]
        assert trace["model"] == "qwen3:latest" and trace["model_calls"] == 2
        later = http.post("/v1/chat", json={"session_id": "t", "text": "when is Bob's birthday"}).json()
        recalled = http.get(f"/v1/traces/{later['turn_id']}").json()["recalled"]
        assert any("May" in r["content"] and r["score"] > 0 for r in recalled)
        assert {r["provenance"] for r in recalled if "May" in r["content"]} == {"by hand by owner in http"}
        assert http.get("/v1/traces/unknown0").status_code == 404


# -- readiness and binding ---------------------------------------------------------------------------------

def test_ready_names_the_failing_check(isolated_home):
    with RunningGateway(gateway_config(isolated_home, closed_port_url())) as gw, client(gw) as http:
        response = http.get("/ready")
    assert response.status_code == 503
    checks = {c["name"]: c for c in response.json()["checks"]}
    assert checks["store"]["ok"] is True and checks["model"]["ok"] is False
    assert "does not answer" in checks["model"]["detail"]


def test_ready_is_200_when_store_and_model_answer(gw):
    with client(gw) as http:
        response = http.get("/ready")
    assert response.status_code == 200 and response.json()["ready"] is True


class CountingOllama(FakeOllama):
    """Counts the readiness probes (/api/tags) it is sent."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.tags_asked = 0

    def route(self, exchange) -> None:
        if exchange.path == "/api/tags":
            self.tags_asked += 1
        super().route(exchange)


def test_ready_without_a_token_is_the_status_alone_checked_once_however_often_asked(isolated_home):
    with CountingOllama(responder=scripted) as ollama, \
            RunningGateway(gateway_config(isolated_home, ollama.url)) as gw, client(gw, token=None) as anonymous:
        before = ollama.tags_asked
        answers = [anonymous.get("/ready") for _ in range(20)]  # a flood without a token
        assert {(a.status_code, a.text) for a in answers} == {(200, '{"ready":true,"checks":[]}')}
        assert ollama.tags_asked - before == 1  # one check for all twenty
        with client(gw) as owner:
            detailed = owner.get("/ready").json()
        assert {c["name"] for c in detailed["checks"]} >= {"store", "model"}  # the token's holder sees each check
        assert ollama.tags_asked - before == 2


def test_ready_without_a_token_says_503_and_nothing_of_what_failed(isolated_home):
    with RunningGateway(gateway_config(isolated_home, closed_port_url())) as gw, client(gw, token=None) as anonymous:
        response = anonymous.get("/ready")
        assert response.status_code == 503 and response.json() == {"ready": False, "checks": []}
        assert "127.0.0.1" not in response.text and "ollama" not in response.text
        gw.gateway.request_stop()
        stopping = anonymous.get("/ready")
    assert stopping.status_code == 503 and stopping.json() == {"ready": False, "checks": []}


def test_the_transcript_is_on_disk_in_the_workspace(gw, isolated_home):
    with client(gw) as http:
        http.post("/v1/chat", json={"session_id": "disk", "text": "persist me"})
    store = FileStore(isolated_home / "workspace", embedder=None)
    try:
        assert [e.message.content for e in store.transcripts.read("web:disk")] == ["persist me", "You said: persist me"]
    finally:
        store.close()
