"""The message bus and its dispatcher: one shape for every front door, ordered per session, concurrent
across sessions, replies delivered to their channel, ``last_channel`` kept."""

from __future__ import annotations

import asyncio

from picoora.assistant import build_assistant
from picoora.bus import LAST_CHANNEL, InboundMessage, MessageBus, OutboundMessage
from picoora.config import load_config
from picoora.dispatch import Dispatcher
from tests.cli_support import write_config
from tests.fakes.ollama_server import FakeOllama, Reply


def _echo(body: dict) -> Reply:
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return Reply(content=" | ".join(users))


def _run(home, messages, extra_channels=()):
    with FakeOllama(responder=_echo) as fake:
        config = load_config(write_config(home, ollama_url=fake.url))

        async def scenario():
            bus = MessageBus()
            sent: list[OutboundMessage] = []

            async def deliver(message):
                sent.append(message)

            for channel in ("telegram", "cron", *extra_channels):
                bus.subscribe(channel, deliver)
            async with build_assistant(config) as assistant:
                dispatcher = Dispatcher(assistant, bus)
                runner = asyncio.create_task(dispatcher.run())
                for message in messages:
                    await bus.publish_inbound(message)
                await asyncio.wait_for(dispatcher.wait_idle(), 20)
                runner.cancel()
                last = await assistant.astore.get_state(LAST_CHANNEL)
            return sent, last

        return asyncio.run(scenario())


def test_messages_of_one_chat_run_in_order_and_replies_reach_their_chat(isolated_home):
    messages = [InboundMessage("telegram", "42", "7", f"msg {i}") for i in range(3)]
    messages.append(InboundMessage("telegram", "99", "8", "other chat"))
    sent, last = _run(isolated_home, messages)
    by_chat: dict[str, list[str]] = {}
    for message in sent:
        by_chat.setdefault(message.chat_id, []).append(message.text)
    assert by_chat["42"] == ["msg 0", "msg 0 | msg 1", "msg 0 | msg 1 | msg 2"]  # each saw the ones before
    assert by_chat["99"] == ["other chat"]
    assert all(m.metadata["stop_reason"] == "answer" and m.metadata["turn_id"] for m in sent)
    assert last in ("telegram:42", "telegram:99")


def test_internal_channels_do_not_move_last_channel(isolated_home):
    sent, last = _run(isolated_home, [InboundMessage("telegram", "42", "7", "hi"),
                                      InboundMessage("cron", "job-1", "cron", "reminder", session_key="cron:job-1")])
    assert last == "telegram:42"
    assert {m.channel for m in sent} == {"telegram", "cron"}


def test_a_broken_channel_does_not_stop_delivery_to_others():
    async def scenario():
        bus = MessageBus()
        got = []

        async def broken(message):
            raise ConnectionError("platform down")

        async def fine(message):
            got.append(message.text)

        bus.subscribe("x", broken)
        unsubscribe = bus.subscribe("x", fine)
        first = await bus.publish_outbound(OutboundMessage("x", "1", "hello"))
        unsubscribe()
        nobody = await bus.publish_outbound(OutboundMessage("y", "1", "lost?"))
        return first, got, nobody

    first, got, nobody = asyncio.run(scenario())
    assert first is True and got == ["hello"]
    assert nobody is False  # said, not silently dropped
