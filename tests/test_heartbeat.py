"""The heartbeat: no model call when nothing is actionable, an isolated session, HEARTBEAT_OK dropped,
anything else delivered to the owner's last active channel, every beat logged."""

from __future__ import annotations

import asyncio
import json

import pytest

from picoora.assistant import build_assistant
from picoora.bus import LAST_CHANNEL, MessageBus
from picoora.config import Config, load_config
from picoora.heartbeat import HeartbeatService, actionable
from tests.cli_support import write_config
from tests.fakes.ollama_server import FakeOllama, Reply

TEMPLATE = "# Heartbeat\n\nThis file explains itself.\n\n## Tasks\n\n<!-- - an example -->\n"


@pytest.mark.parametrize("text, expected", [
    ("", False), ("# Only a heading\n", False), (TEMPLATE, False), ("<!-- a comment -->\n- [ ]\n-  \n", False),
    (TEMPLATE + "- Remind me to water the plants\n", True), ("Check the backups", True),
])
def test_what_counts_as_actionable(text, expected):
    assert actionable(text) is expected


def _beat(home, heartbeat_text, replies, last_channel="telegram:42", beats=1):
    with FakeOllama(replies=replies) as fake:
        config = load_config(write_config(home, ollama_url=fake.url))
        (home / "workspace").mkdir(parents=True, exist_ok=True)
        (home / "workspace" / "HEARTBEAT.md").write_text(heartbeat_text)

        async def scenario():
            bus, sent = MessageBus(), []

            async def deliver(message):
                sent.append(message)

            bus.subscribe("telegram", deliver)
            async with build_assistant(config) as assistant:
                if last_channel:
                    await assistant.astore.set_state(LAST_CHANNEL, last_channel)
                service = HeartbeatService(assistant, bus, interval_minutes=30, workspace=assistant.workspace)
                outcomes = [await service.beat() for _ in range(beats)]
                logged = json.loads(await assistant.astore.get_state("heartbeat.last"))
                sessions = [s.key for s in await assistant.sessions()]
            return outcomes, sent, logged, sessions

        outcomes, sent, logged, sessions = asyncio.run(scenario())
        return outcomes, sent, logged, sessions, fake.requests


def test_nothing_actionable_costs_no_model_call(isolated_home):
    outcomes, sent, logged, _, requests = _beat(isolated_home, TEMPLATE, [])
    assert [o.outcome for o in outcomes] == ["skipped"] and requests == [] and sent == []
    assert logged["outcome"] == "skipped"


def test_heartbeat_ok_is_dropped_and_a_real_reply_reaches_the_last_channel(isolated_home):
    tasks = TEMPLATE + "- Remind me to water the plants\n"
    outcomes, sent, _, sessions, requests = _beat(
        isolated_home, tasks, [Reply(content="HEARTBEAT_OK"), Reply(content="Time to water the plants!")], beats=2)
    assert [o.outcome for o in outcomes] == ["ok", "delivered"]
    assert [(m.channel, m.chat_id, m.text) for m in sent] == [("telegram", "42", "Time to water the plants!")]
    # Isolated: each beat's request holds the system prompt and the heartbeat prompt, no earlier history.
    for body in requests:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "water the plants" in body["messages"][-1]["content"]
        assert "This file explains itself" not in body["messages"][-1]["content"]
    assert all(key.startswith("heartbeat:") for key in sessions)


def test_with_no_known_chat_the_reply_is_kept_and_the_beat_says_so(isolated_home):
    outcomes, sent, logged, _, _ = _beat(isolated_home, "- check the backups\n", [Reply(content="All good.")],
                                         last_channel="")
    assert outcomes[0].outcome == "undelivered" and sent == []
    assert "no chat" in logged["detail"]


def test_the_interval_is_zero_or_at_least_five_minutes():
    Config.model_validate({"heartbeat": {"interval": 0}})
    Config.model_validate({"heartbeat": {"interval": 5}})
    with pytest.raises(ValueError, match="at least 5"):
        Config.model_validate({"heartbeat": {"interval": 3}})
