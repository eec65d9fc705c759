"""Issue 21's findings about guests, secrets and deliveries, each reproduced through the running gateway
(its runtime on a fake Telegram Bot API and a fake model server, or the whole app over HTTP) or the CLI:
what a guest's turn is shown and may reach, who an approval admits, what an error says, where a job's
answer goes, and a broken state document."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx

from picoora.assistant import build_assistant
from picoora.config import Config, save_config
from picoora.gateway.runtime.services import GatewayRuntime
from picoora.identities import Pairing, Sender
from picoora.outward import GUEST_FAILURE
from picoora.owner_chat import LAST_CHAT
from picoora.store.files import FileStore
from tests.cli_support import closed_port_url_config, run_cli
from tests.fakes.gateway_kit import TOKEN as GATEWAY_TOKEN
from tests.fakes.gateway_kit import RunningGateway
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.web_page_server import WebPageServer

BOT_TOKEN = "777777:guests-FAKE-token-abc"
API_KEY = "fake-provider-key-0123456789abcdef"
OWNER, GUEST = 5, 77


def _config(model_url: str, telegram_url: str, allow_from: list[str], **sections: dict) -> Config:
    data: dict = {
        "providers": {"ollama": {"api_base": model_url, "max_retries": 0}},
        "memory": {"embedder": "none"},
        "channels": {"telegram": {"enabled": True, "token": BOT_TOKEN, "allow_from": allow_from,
                                  "api_base": telegram_url}},
    }
    data.update(sections)
    config = Config.model_validate(data)
    save_config(config)
    return config


async def _until(condition, seconds: float = 20.0) -> None:
    """Wait for what the gateway does in its own time (a guard against hanging, not a timing check)."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the gateway did not get there")


def _run(config: Config, body):
    """``body(runtime, assistant)`` against the gateway's runtime, started and stopped as the gateway does."""
    async def scenario():
        async with build_assistant(config) as assistant:
            runtime = GatewayRuntime(assistant)
            await runtime.start()
            try:
                return await body(runtime, assistant)
            finally:
                await runtime.stop_intake()
                await runtime.turns.drain(5)
                await runtime.close()

    return asyncio.run(scenario())


def _fetching(url: str):
    """A model that fetches ``url`` once, then answers with what the tool said."""
    def respond(body: dict) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(content=f"The tool said: {last['content'][:300]}")
        return Reply(tool_calls=[("web_fetch", {"url": url})])
    return respond


# -- item 5: guests ------------------------------------------------------------------------------------

def test_a_guest_sees_only_the_persona_and_never_the_owners_exemptions(isolated_home):
    """A stranger (``allow_from: ["*"]``) read a LAN service through the owner's ``allow_hosts``, and the
    owner's USER.md and workspace path were in every guest's system prompt."""
    lan = WebPageServer(status=200, page="<html><body><p>LAN PANEL: router admin</p></body></html>")
    with lan, FakeOllama(responder=_fetching(lan.url + "/admin")) as model, FakeTelegram(BOT_TOKEN) as telegram:
        config = _config(model.url, telegram.url, [str(OWNER), "*"],
                         tools={"web_fetch": {"allow_hosts": ["127.0.0.1"]}})

        async def body(runtime, assistant):
            # The owner's files, broken by an exec call: guests' turns do not depend on them being sound.
            (assistant.workspace / "IDENTITY.md").write_bytes(b"I am Pico, a cheerful helper.\n\xff\n")
            (assistant.workspace / "SOUL.md").write_text("Be kind. " * 90_000)
            await assistant.astore.prompts.set("USER.md", "The owner's bank PIN is 9931.")
            telegram.push(OWNER, "check the router")
            await _until(lambda: telegram.texts(OWNER))
            owner_hits = lan.hits
            telegram.push(GUEST, "check the router for me")
            await _until(lambda: telegram.texts(GUEST))
            return owner_hits, str(assistant.workspace.resolve())

        owner_hits, workspace = _run(config, body)
    guest_requests = [r for r in model.requests if "9931" not in r["messages"][0]["content"]]
    assert owner_hits == 1 and "LAN PANEL" in telegram.texts(OWNER)[0]  # the owner's exemption still works
    assert lan.hits == 1 and "LAN PANEL" not in telegram.texts(GUEST)[0]  # the guest's fetch was refused
    assert len(guest_requests) == 2  # the guest's turn: the call, then the refusal
    guest_prompt = guest_requests[0]["messages"][0]["content"]
    assert "I am Pico, a cheerful helper." in guest_prompt and "IDENTITY.md is not valid UTF-8" in guest_prompt
    assert "SOUL.md is longer than its share" in guest_prompt and len(guest_prompt) < 30_000
    assert "9931" not in json.dumps(guest_requests) and "USER.md" not in guest_prompt
    assert workspace not in json.dumps(guest_requests)


def test_an_approval_admits_the_senders_id_and_a_username_belongs_to_its_first_id(isolated_home):
    """An approval bound ``@username`` too: whoever took that username later was admitted as the approved
    person. ``allow_from: ["@alice"]`` admitted any account that renamed itself alice, as the owner."""
    with FakeOllama(responder=lambda body: Reply(content="Hello.")) as model, FakeTelegram(BOT_TOKEN) as telegram:
        config = _config(model.url, telegram.url, ["@alice"], users=[{"name": "bob", "identities": ["telegram:@bob"]}])

        async def body(runtime, assistant):
            pairing = Pairing(assistant.store)
            request, _ = pairing.request(Sender("telegram", "8", "sam"))
            pairing.approve(request.code, "sam")
            telegram.push(9, "I am sam now", username="sam")  # someone else took the username
            telegram.push(8, "hi, sam here", username="samuel")  # the approved account, renamed
            telegram.push(5, "alice here", username="alice")  # first contact: @alice is bound to id 5
            await _until(lambda: telegram.texts(9) and telegram.texts(8) and telegram.texts(5))
            telegram.push(11, "bob here", username="bob")  # a configured person's @username, first contact
            await _until(lambda: telegram.texts(11))
            telegram.push(6, "I am alice too", username="alice")
            telegram.push(12, "I am bob too", username="Bob")
            await _until(lambda: telegram.texts(6) and telegram.texts(12))
            return [s.key for s in await assistant.sessions()]

        owner_sessions = _run(config, body)
    for stranger in (9, 6, 12):
        assert "pair approve" in telegram.texts(stranger)[0]
    assert telegram.texts(8) == telegram.texts(5) == telegram.texts(11) == ["Hello."]
    said = json.dumps(model.requests)
    assert "I am sam now" not in said and "I am alice too" not in said and "I am bob too" not in said
    assert owner_sessions == ["telegram:5"]  # the real alice is the owner; sam has a store of their own


def test_pair_approve_refuses_names_that_would_leave_the_peoples_folder(isolated_home):
    """``pair approve CODE --as ..`` (also ``.``, ``.picoora``, 100 characters) put the stranger in the
    owner's whole store. The name rule is ``users[].name``'s, and the code is not spent by a refusal."""
    closed_port_url_config(isolated_home)
    store = FileStore(isolated_home / "workspace")
    request, _ = Pairing(store).request(Sender("telegram", "8", "sam"))
    store.close()
    for name in ("..", ".", ".picoora", "x" * 100, "../owner", "a/b"):
        refused = run_cli("pair", "approve", request.code, "--as", name, home=isolated_home)
        assert refused.returncode == 2 and "a person's name" in refused.stderr, (name, refused.stderr)
    approved = run_cli("pair", "approve", request.code, "--as", "sam.k", home=isolated_home)
    assert approved.returncode == 0 and "as sam.k" in approved.stdout


def test_a_planted_approval_cannot_name_a_store_outside_the_peoples_folder(isolated_home):
    from picoora.gateway.runtime.admission import Directory
    from picoora.store.layout import FileLayout

    store = FileStore(isolated_home / "ws")
    store.state.set("pair.person.telegram:8", "..")  # a hand edit, or an older picoora's approval
    try:
        assert Directory(Config(), store).person_of(Sender("telegram", "8"), []) is None
    finally:
        store.close()
    for name in ("..", ".picoora", "", "a/../.."):
        try:
            FileLayout(isolated_home / "ws").person(name)
        except ValueError:
            continue
        raise AssertionError(f"{name!r} named a person's store")


def test_a_provider_error_quoting_the_key_is_scrubbed_and_a_guest_only_hears_the_model_is_down(isolated_home):
    """A provider error that echoed the API key went to HTTP clients and, with paths and provider URLs,
    to guests on Telegram."""
    echo = Reply(status=400, error=f"Incorrect API key provided: {API_KEY}. See your key settings.",
                 error_code="invalid_api_key")
    with FakeOpenAI(responder=lambda body: echo) as provider, FakeTelegram(BOT_TOKEN) as telegram:
        config = _config("http://127.0.0.1:9", telegram.url, [str(OWNER), "*"],
                         agents={"defaults": {"provider": "openai", "model": "fake-model"}},
                         providers={"openai": {"api_base": f"{provider.url}/v1", "api_key": API_KEY,
                                               "max_retries": 0}})
        config.gateway.token = GATEWAY_TOKEN
        with RunningGateway(config) as gw:
            plain = httpx.post(f"{gw.url}/v1/chat", json={"text": "hello"}, headers=gw.headers, timeout=30)
            streamed = httpx.post(f"{gw.url}/v1/chat", json={"text": "hello", "stream": True},
                                  headers=gw.headers, timeout=30)
            telegram.push(GUEST, "hello from a stranger")
            telegram.push(OWNER, "hello, it's me")

            async def both_answered():
                await _until(lambda: telegram.texts(GUEST) and telegram.texts(OWNER))

            asyncio.run(both_answered())
        terminal = run_cli("agent", "-m", "hello", home=isolated_home)
    assert "***" in plain.text and API_KEY not in plain.text  # the error did reach it, without the key
    assert "***" in streamed.text and API_KEY not in streamed.text
    assert telegram.texts(GUEST) == [GUEST_FAILURE]
    [to_owner] = telegram.texts(OWNER)  # the owner is told what failed, without the key
    assert "Incorrect API key provided: ***" in to_owner and API_KEY not in to_owner
    assert "***" in terminal.stdout + terminal.stderr and API_KEY not in terminal.stdout + terminal.stderr


def test_a_guest_who_went_quiet_gives_back_their_store(isolated_home):
    """Guests kept a store, a lock and threads for ever; now an idle one is closed, and reopened on their
    next message."""
    with FakeOllama(responder=lambda body: Reply(content="Hi.")) as model, FakeTelegram(BOT_TOKEN) as telegram:
        config = _config(model.url, telegram.url, ["*"])

        async def body(runtime, assistant):
            runtime.people.idle_seconds = 0.1
            telegram.push(GUEST, "hello")
            await _until(lambda: telegram.texts(GUEST))
            await _until(lambda: runtime.people.open_count == 0)
            await asyncio.gather(*runtime.people._closing)
            telegram.push(GUEST, "hello again")
            await _until(lambda: len(telegram.texts(GUEST)) == 2)
            return runtime.people.open_count

        reopened = _run(config, body)
    assert reopened == 1 and telegram.texts(GUEST) == ["Hi.", "Hi."]
    assert len(model.requests[-1]["messages"]) == 4  # the reopened store still had the first exchange


# -- item 9: deliveries --------------------------------------------------------------------------------

def test_the_heartbeat_and_jobs_answer_in_the_owners_last_private_chat_never_a_group(isolated_home):
    """A job's recall of the owner's bank PIN landed in the group chat the owner had written in last."""
    from picoora.gateway.runtime.heartbeat import HeartbeatService

    group = -1001234
    with FakeOllama(responder=lambda body: Reply(content="Your PIN is 9931.")) as model, \
            FakeTelegram(BOT_TOKEN) as telegram:
        config = _config(model.url, telegram.url, [str(OWNER)])

        async def body(runtime, assistant):
            telegram.push(OWNER, "hi")
            await _until(lambda: telegram.texts(OWNER))
            telegram.push(OWNER, "hello group", chat_id=group, chat_type="supergroup")
            await _until(lambda: telegram.texts(group))
            (assistant.workspace / "HEARTBEAT.md").write_text("- Tell me my PIN\n")
            beat = await HeartbeatService(assistant.astore, submit=runtime.turns.submit, delivery=runtime.delivery,
                                          interval_minutes=30, workspace=assistant.workspace).beat()
            return beat, await assistant.astore.state.get(LAST_CHAT)

        beat, last = _run(config, body)
    assert last == f"telegram:{OWNER}" and beat.outcome == "delivered"
    assert telegram.texts(group) == ["Your PIN is 9931."]  # only the answer to what was said there
    assert telegram.texts(OWNER) == ["Your PIN is 9931.", "Your PIN is 9931."]


# -- item 10: a corrupt state.json ---------------------------------------------------------------------

def test_a_corrupt_state_json_is_one_line_and_the_gateway_starts_and_answers(isolated_home, caplog):
    with FakeOllama(responder=lambda body: Reply(content="Still here.")) as model, \
            FakeTelegram(BOT_TOKEN) as telegram:
        config = _config(model.url, telegram.url, [str(OWNER)])
        config.gateway.token = GATEWAY_TOKEN
        state = isolated_home / "workspace" / ".picoora" / "state"
        state.mkdir(parents=True)
        (state / "state.json").write_bytes(b'{"telegram.offset": "12", \xff')
        with caplog.at_level(logging.WARNING), RunningGateway(config) as gw:
            answer = httpx.post(f"{gw.url}/v1/chat", json={"text": "are you up?"}, headers=gw.headers, timeout=30)
            telegram.push(OWNER, "and on telegram?")

            async def answered():
                await _until(lambda: telegram.texts(OWNER))

            asyncio.run(answered())
    assert answer.status_code == 200 and answer.json()["text"] == "Still here."
    assert telegram.texts(OWNER) == ["Still here."]
    lines = [r.getMessage() for r in caplog.records if "state.json" in r.getMessage()]
    assert len(lines) == 1 and "moved to state.json.broken-" in lines[0]
    assert [p.read_bytes() for p in state.glob("state.json.broken-*")] == [b'{"telegram.offset": "12", \xff']
