"""The gateway's runtime together: a Telegram message becomes a turn whose answer reaches the chat, a
stranger is refused, and ``picoora pair`` lets them in from another process."""

from __future__ import annotations

import asyncio

import pytest

from picoora.assistant import build_assistant
from picoora.config import Config, save_config
from picoora.gateway.runtime.services import GatewayRuntime
from picoora.identities import Pairing, Sender
from picoora.store.files import FileStore
from tests.cli_support import run_cli
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.telegram_server import FakeTelegram

TOKEN = "654321:another-FAKE-token-xyz"


def test_a_telegram_message_is_answered_by_the_model_and_a_stranger_is_paired(isolated_home):
    with FakeOllama(responder=lambda body: Reply(content="Hello from the model.")) as ollama, \
            FakeTelegram(TOKEN) as telegram:
        config = Config.model_validate({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "none"},
            "channels": {"telegram": {"enabled": True, "token": TOKEN, "allow_from": ["7"], "api_base": telegram.url}},
        })
        save_config(config)

        async def scenario():
            async with build_assistant(config) as assistant:
                services = GatewayRuntime(assistant)
                await services.start()
                telegram.push(7, "hi there")
                telegram.push(8, "let me in")
                for _ in range(200):
                    if telegram.texts(7) and telegram.texts(8):
                        break
                    await asyncio.sleep(0.05)
                await services.stop_intake()
                await services.turns.drain(5)
                await services.close()
                return services.started, [e.message.content for e in await assistant.history("telegram:7")]

        started, history = asyncio.run(scenario())
    assert {"turn service", "channel telegram", "scheduler"} <= set(started)
    assert telegram.texts(7) == ["Hello from the model."]
    assert history == ["hi there", "Hello from the model."]
    assert "pair approve" in telegram.texts(8)[0]
    assert not any("let me in" in str(r) for r in ollama.requests)  # the stranger's text never reached it


@pytest.mark.slow
def test_picoora_pair_lists_approves_and_refuses(isolated_home):
    from tests.cli_support import closed_port_url_config

    closed_port_url_config(isolated_home)
    store = FileStore(isolated_home / "workspace")
    first, _ = Pairing(store).request(Sender("telegram", "8", "sam"))
    second, _ = Pairing(store).request(Sender("telegram", "9"))
    store.close()
    listed = run_cli("pair", "list", home=isolated_home)
    assert first.code in listed.stdout and "@sam" in listed.stdout and second.code in listed.stdout
    approved = run_cli("pair", "approve", first.code.lower(), "--as", "sam", home=isolated_home)
    assert approved.returncode == 0 and "as sam" in approved.stdout
    assert run_cli("pair", "refuse", second.code, home=isolated_home).returncode == 0
    again = run_cli("pair", "approve", second.code, home=isolated_home)
    assert again.returncode == 1 and "no pairing code" in again.stderr
    assert "No one is waiting." in run_cli("pair", "list", home=isolated_home).stdout
    store = FileStore(isolated_home / "workspace")
    # Bound to the id: whoever takes the username @sam later is not sam.
    assert store.state.get("pair.person.telegram:8") == "sam" and store.state.get("pair.person.telegram:@sam") is None
