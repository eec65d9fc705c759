"""People on HTTP: each person's API token (made and revoked with `picoora token` while the gateway runs)
makes the API act as them: their turns, memories, sessions and the guests' tools, never another's."""

from __future__ import annotations

import json

import httpx
import pytest

from picoora.api_tokens import ApiTokens
from picoora.config import load_config
from picoora.store.files import FileStore
from tests.cli_support import run_cli, write_config
from tests.fakes.gateway_kit import TOKEN, RunningGateway
from tests.fakes.ollama_server import FakeOllama, Reply

GUEST_REFUSED_TOOLS = {"exec", "read_file", "write_file", "edit_file", "list_dir", "cron", "message", "spawn"}


def scripted(body: dict) -> Reply:
    """'remember X' calls the remember tool, then answers; anything else is echoed."""
    if body["messages"][-1]["role"] == "tool":
        return Reply(content="Noted.")
    text = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    if text == "fail please":
        return Reply(status=500, error="model exploded")
    if text.startswith("remember "):
        return Reply(tool_calls=[("remember", {"text": text.removeprefix("remember ")})])
    return Reply(content=f"You said: {text}")


@pytest.fixture
def fake():
    with FakeOllama(responder=scripted) as server:
        yield server


@pytest.fixture
def home(isolated_home, fake):
    path = write_config(isolated_home, ollama_url=fake.url)
    data = json.loads(path.read_text())
    data["gateway"] = {"token": TOKEN}
    data["users"] = [{"name": "alice", "identities": ["telegram:1"]}, {"name": "bob"}]
    path.write_text(json.dumps(data))
    return isolated_home


@pytest.fixture
def gw(home):
    with RunningGateway(load_config(home / "config.json")) as running:
        yield running


def make_token(home, name: str, *extra: str) -> str:
    result = run_cli("token", "create", name, *extra, home=home)
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    assert token.startswith("pico_") and "\n" not in token
    return token


def as_(gw: RunningGateway, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.Client(base_url=gw.url, headers=headers, timeout=60)


def chat(client: httpx.Client, session: str, text: str) -> dict:
    response = client.post("/v1/chat", json={"session_id": session, "text": text})
    assert response.status_code == 200, response.text
    return response.json()


def memory_texts(client: httpx.Client, query: str | None = None) -> list[str]:
    params = {"q": query} if query else {}
    body = client.get("/v1/memory", params=params).json()
    return [m["memory"]["content"] for m in body["matches"]] if query else [m["content"] for m in body["memories"]]


def test_each_person_has_their_own_memories_sessions_and_guest_tools(home, gw, fake):
    alice, bob, owner = as_(gw, make_token(home, "alice", "--label", "phone")), as_(gw, make_token(home, "bob")), \
        as_(gw, TOKEN)
    fake.requests.clear()
    assert chat(alice, "s1", "remember Alice takes her tea with lemon")["text"] == "Noted."
    offered = {tool["function"]["name"] for tool in fake.requests[0]["tools"]}
    assert "remember" in offered and not offered & GUEST_REFUSED_TOOLS  # the guests' tools, as on Telegram
    chat(bob, "s1", "remember Bob collects stamps")
    chat(owner, "s1", "hello from the owner")
    added = bob.post("/v1/memory", json={"content": "Bob's locker code is 4411"})
    assert added.status_code == 200

    assert memory_texts(alice) == ["Alice takes her tea with lemon"]
    assert sorted(memory_texts(bob)) == ["Bob collects stamps", "Bob's locker code is 4411"]
    assert memory_texts(owner) == []
    assert memory_texts(alice, "locker code") == []  # search, too, is only ever their own

    # The same session name of two people is two sessions; each sees only their own.
    for client, said in ((alice, "tea with lemon"), (bob, "stamps"), (owner, "hello from the owner")):
        listed = client.get("/v1/sessions").json()
        assert [s["key"] for s in listed] == ["web:s1"]
        history = json.dumps(client.get("/v1/sessions/web:s1").json())
        assert said in history
        for other in {"tea with lemon", "stamps", "hello from the owner"} - {said}:
            assert other not in history

    # Bob cannot forget, or read the trace of, what is Alice's.
    alice_memory = alice.get("/v1/memory").json()["memories"][0]["id"]
    assert bob.delete(f"/v1/memory/{alice_memory}").status_code == 404
    assert memory_texts(alice) == ["Alice takes her tea with lemon"]
    assert alice.get("/v1/sessions/web:s1/model").json()["model"] == "qwen3:latest"
    refused = alice.put("/v1/sessions/web:s1/model", json={"model": "llama3.2:latest"})
    assert refused.status_code == 403 and "only the owner" in refused.json()["error"]["message"]
    assert alice.delete("/v1/sessions/web:s1/model").status_code == 403
    alice_turn = chat(alice, "s2", "what do I drink?")["turn_id"]
    assert bob.get(f"/v1/traces/{alice_turn}").status_code == 404
    assert alice.get(f"/v1/traces/{alice_turn}").status_code == 200

    # On disk: the owner's store holds none of the people's memories.
    owner_store = FileStore(home / "workspace")
    try:
        assert owner_store.memories.list(50) == []
    finally:
        owner_store.close()


def test_a_person_token_runs_openai_turns_as_that_person(home, gw):
    alice = as_(gw, make_token(home, "alice"))
    response = alice.post("/v1/chat/completions", json={
        "model": "picoora", "messages": [{"role": "user", "content": "remember Alice's bike is blue"}]})
    assert response.status_code == 200, response.text
    assert memory_texts(alice) == ["Alice's bike is blue"]
    assert memory_texts(as_(gw, TOKEN)) == []


def test_one_persons_retried_request_is_never_answered_from_anothers_turn(home, gw, fake):
    alice, bob, owner = as_(gw, make_token(home, "alice")), as_(gw, make_token(home, "bob")), as_(gw, TOKEN)
    asked = {"model": "picoora", "messages": [{"role": "user", "content": "what did I tell you?"}]}
    keyed = {"Idempotency-Key": "retry-1"}  # a client library's fixed key, or two clients' colliding ones
    ids = [client.post("/v1/chat/completions", json=asked, headers=keyed).json()["id"]
           for client in (alice, bob, owner, alice)]
    assert ids[3] == ids[0] and len(set(ids[:3])) == 3  # each person's own turn; alice's retry, hers
    fake.requests.clear()
    failing = {"model": "picoora", "messages": [{"role": "user", "content": "fail please"}]}
    statuses = [client.post("/v1/chat/completions", json=failing).status_code for client in (alice, bob, alice)]
    assert statuses == [502, 502, 502] and len(fake.requests) == 2  # bob's body is a turn of his; alice's retry not


def test_revoked_wrong_and_absent_tokens_are_refused(home, gw):
    token = make_token(home, "alice", "--label", "laptop")
    alice = as_(gw, token)
    assert alice.get("/v1/sessions").status_code == 200

    listed = run_cli("token", "list", home=home)
    assert listed.returncode == 0 and token not in listed.stdout
    token_id, person, _created, label = listed.stdout.split()
    assert (person, label) == ("alice", "laptop")
    stored = [path.read_bytes() for path in home.rglob("*") if path.is_file()]
    assert stored and not any(token.encode() in data for data in stored)  # only its hash is kept

    revoked = run_cli("token", "revoke", token_id, home=home)
    assert revoked.returncode == 0 and "alice" in revoked.stdout
    for client in (alice, as_(gw, None), as_(gw, "pico_not-a-real-token"), as_(gw, TOKEN + "x")):
        for method, path in (("GET", "/v1/sessions"), ("GET", "/v1/memory"), ("POST", "/v1/chat")):
            response = client.request(method, path, json={"session_id": "s", "text": "hi"})
            assert response.status_code == 401, (path, response.text)
            assert response.headers["www-authenticate"] == "Bearer"
            assert "Authorization: Bearer <token>" in response.json()["error"]["message"]
    assert run_cli("token", "list", home=home).stdout.startswith("No tokens yet")


def test_a_person_added_to_or_removed_from_config_counts_without_a_restart(home, gw):
    bob = make_token(home, "bob")
    config_file = home / "config.json"
    data = json.loads(config_file.read_text())
    data["users"] = [{"name": "alice"}, {"name": "carol"}]  # carol joins, bob leaves, the gateway runs on
    config_file.write_text(json.dumps(data))
    carol = make_token(home, "carol")
    with as_(gw, carol) as client:
        assert chat(client, "s1", "hello")["text"] == "You said: hello"
    with as_(gw, bob) as client:
        assert client.get("/v1/memory").status_code == 401


def test_the_owner_can_have_tokens_of_their_own(home, gw):
    own = as_(gw, make_token(home, "owner", "--label", "second laptop"))
    chat(own, "s1", "remember The owner's plant is a fern")
    assert memory_texts(as_(gw, TOKEN)) == ["The owner's plant is a fern"]


def test_token_commands_refuse_bad_input(home):
    unknown = run_cli("token", "create", "mallory", home=home)
    assert unknown.returncode == 2 and "alice, bob, owner" in unknown.stderr and not unknown.stdout
    too_long = run_cli("token", "create", "alice", "--label", "x" * 81, home=home)
    assert too_long.returncode == 2 and "at most 80" in too_long.stderr
    missing = run_cli("token", "revoke", "deadbeef", home=home)
    assert missing.returncode == 1 and "token list" in missing.stderr


def test_a_token_whose_person_left_users_or_whose_row_is_damaged_admits_nobody(home):
    config = load_config(home / "config.json")
    store = FileStore(home / "workspace")
    try:
        tokens = ApiTokens(store, config)
        _, secret = tokens.create("bob")
        assert tokens.person_of(secret).name == "bob"
        config.users = [u for u in config.users if u.name != "bob"]
        assert ApiTokens(store, config).person_of(secret) is None
        key = next(k for k in store.state.all() if k.startswith("api.token."))
        store.state.set(key, "{not json")
        assert tokens.person_of(secret) is None and tokens.listed() == []
        assert tokens.person_of("") is None and tokens.person_of("pico_" + "\udcff") is None
        assert tokens.create("bob", "\x1b[31mred\x1b[0m\nphone\x07")[0].label == "[31mred[0m phone"  # no escapes
    finally:
        store.close()


def test_stop_reaches_only_the_callers_own_turn(home):
    import threading

    release = threading.Event()

    def held(body: dict) -> Reply:
        release.wait(10)
        return Reply(content="done")

    path = home / "config.json"
    with FakeOllama(responder=held) as slow:
        data = json.loads(path.read_text())
        data["providers"]["ollama"]["api_base"] = slow.url
        path.write_text(json.dumps(data))
        alice_token = make_token(home, "alice")
        with RunningGateway(load_config(path)) as gw, as_(gw, alice_token) as alice, as_(gw, TOKEN) as owner, \
                as_(gw, make_token(home, "bob")) as bob:
            with alice.stream("POST", "/v1/chat", json={"session_id": "s", "text": "think long",
                                                        "stream": True}) as response:
                lines = response.iter_lines()
                assert next(line for line in lines if line.startswith("event:")) == "event: turn_started"
                for other in (owner, bob):  # the same session name is their own session: nothing runs there
                    assert other.post("/v1/sessions/web:s/stop").json()["stopped"] is False
                assert alice.post("/v1/sessions/web:s/stop").json()["stopped"] is True
                events = [line for line in lines if line.startswith("event:")]
            release.set()
    assert events[-1] == "event: stopped"


def test_ready_details_are_for_the_owner_token_alone(gw, home):
    """Round three: any person's token got /ready's checks (the model server's address, the store's errors)."""
    alice = make_token(home, "alice")
    with as_(gw, alice) as guest, as_(gw, TOKEN) as owner:
        assert guest.get("/ready").json()["checks"] == []
        assert {check["name"] for check in owner.get("/ready").json()["checks"]} >= {"store", "model"}
