"""The heartbeat: no model call when nothing is actionable, an isolated session, HEARTBEAT_OK dropped,
anything else delivered to the owner's last active channel, every beat logged."""

from __future__ import annotations

import asyncio
import json

import pytest

from picoora import inbox
from picoora.assistant import build_assistant
from picoora.config import Config, load_config
from picoora.gateway.runtime.heartbeat import HeartbeatService, actionable
from picoora.owner_chat import LAST_CHAT
from tests.cli_support import write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.runtime_kit import running_runtime

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
            async with build_assistant(config) as assistant:
                async with running_runtime(assistant) as (runtime, recorders):
                    if last_channel:
                        await assistant.astore.state.set(LAST_CHAT, last_channel)
                    service = HeartbeatService(assistant.astore, submit=runtime.turns.submit,
                                               delivery=runtime.delivery, interval_minutes=30,
                                               workspace=assistant.workspace)
                    outcomes = [await service.beat() for _ in range(beats)]
                logged = json.loads(await assistant.astore.state.get("heartbeat.last"))
                sessions = [s.key for s in await assistant.sessions()]
                waiting = [e.message.content for e in await assistant.astore.run(inbox.take, assistant.store,
                                                                                  "cli:default")]
            return outcomes, recorders.sent, logged, sessions, waiting

        outcomes, sent, logged, sessions, waiting = asyncio.run(scenario())
        return outcomes, sent, logged, sessions, fake.requests, waiting


def test_nothing_actionable_costs_no_model_call(isolated_home):
    outcomes, sent, logged, _, requests, _ = _beat(isolated_home, TEMPLATE, [])
    assert [o.outcome for o in outcomes] == ["skipped"] and requests == [] and sent == []
    assert logged["outcome"] == "skipped"


def test_heartbeat_ok_is_dropped_and_a_real_reply_reaches_the_last_channel(isolated_home):
    tasks = TEMPLATE + "- Remind me to water the plants\n"
    outcomes, sent, _, sessions, requests, _ = _beat(
        isolated_home, tasks, [Reply(content="HEARTBEAT_OK"), Reply(content="Time to water the plants!")], beats=2)
    assert [o.outcome for o in outcomes] == ["ok", "delivered"]
    assert [(m.channel, m.chat_id, m.text) for m in sent] == [("telegram", "42", "Time to water the plants!")]
    # Isolated: each beat's request holds the system prompt and the heartbeat prompt, no earlier history.
    for body in requests:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "water the plants" in body["messages"][-1]["content"]
        assert "This file explains itself" not in body["messages"][-1]["content"]
    assert all(key.startswith("heartbeat:") for key in sessions)


def test_with_no_known_chat_the_reply_waits_in_the_terminal(isolated_home):
    outcomes, sent, logged, _, _, waiting = _beat(isolated_home, "- check the backups\n",
                                                  [Reply(content="All good.")], last_channel="")
    assert outcomes[0].outcome == "delivered" and sent == [] and waiting == ["All good."]
    assert logged["detail"] == "cli:default (kept in the chat)"


def test_a_reply_for_a_channel_that_is_not_running_is_undelivered_and_says_why(isolated_home):
    outcomes, sent, logged, _, _, _ = _beat(isolated_home, "- check the backups\n", [Reply(content="All good.")],
                                            last_channel="discord:5")
    assert outcomes[0].outcome == "undelivered" and sent == []
    assert logged["detail"] == "no discord channel is running"


def test_the_interval_is_zero_or_at_least_five_minutes():
    Config.model_validate({"heartbeat": {"interval": 0}})
    Config.model_validate({"heartbeat": {"interval": 5}})
    with pytest.raises(ValueError, match="at least 5"):
        Config.model_validate({"heartbeat": {"interval": 3}})
