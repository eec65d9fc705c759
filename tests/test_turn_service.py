"""The turn service: one order per session whichever door a turn came through, sessions side by side, the
outcome back to whoever submitted; outbound delivery to every front door; people's assistants bounded."""

from __future__ import annotations

import asyncio

import pytest

from picoora.agent import TurnResult
from picoora.assistant import build_assistant
from picoora.config import load_config
from picoora.gateway.channels.links import Inbound, ShuttingDown
from picoora.gateway.runtime.admission import PersonAssistants
from picoora.gateway.runtime.turns import TurnService
from picoora.identities import Person
from picoora.owner_chat import last_chat
from tests.cli_support import write_config
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.runtime_kit import running_runtime


def _echo(body: dict) -> Reply:
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return Reply(content=" | ".join(users))


def test_turns_of_one_session_run_in_order_whatever_the_door_and_sessions_run_side_by_side():
    log: list[str] = []
    gates = {"a": asyncio.Event, "b": asyncio.Event}

    async def scenario():
        opened = {name: gate() for name, gate in gates.items()}

        async def run(inbound, on_event):
            log.append(f"start {inbound.text}")
            if inbound.text == "a1":
                await opened["a"].wait()  # the first turn of session a is slow
            log.append(f"end {inbound.text}")
            return TurnResult(inbound.text, "answer", 1, 0)

        service = TurnService(run)
        first = service.submit(Inbound("web", "a", "a1"))
        second = service.submit(Inbound("telegram", "x", "a2", session_key="web:a"))  # same session, other door
        other = service.submit(Inbound("web", "b", "b1"))
        await other
        assert log == ["start a1", "start b1", "end b1"]  # b did not wait for a; a2 waits for a1
        opened["a"].set()
        outcomes = [await first, await second]
        return [o.text for o in outcomes]

    assert asyncio.run(scenario()) == ["a1", "a2"]
    assert log[-3:] == ["end a1", "start a2", "end a2"]


def test_one_session_key_of_two_people_is_two_sessions():
    async def scenario():
        running: set[str] = set()
        most = 0

        async def run(inbound, on_event):
            nonlocal most
            running.add(inbound.person_name)
            most = max(most, len(running))
            await asyncio.sleep(0.05)
            running.discard(inbound.person_name)
            return TurnResult("ok", "answer", 1, 0)

        service = TurnService(run)
        await asyncio.gather(service.submit(Inbound("openai", "default", "x", person=Person("ana"))),
                             service.submit(Inbound("openai", "default", "y", person=Person("ben"))))
        return most

    assert asyncio.run(scenario()) == 2


def test_a_turn_that_breaks_outside_the_loop_fails_alone_and_stopping_refuses_new_turns():
    async def scenario():
        async def run(inbound, on_event):
            if inbound.text == "boom":
                raise RuntimeError("store gone")
            return TurnResult("fine", "answer", 1, 0)

        service = TurnService(run)
        broken = await service.submit(Inbound("web", "a", "boom"))
        after = await service.submit(Inbound("web", "a", "next"))
        service.stop_accepting()
        with pytest.raises(ShuttingDown):
            service.submit(Inbound("web", "a", "late"))
        return broken, after

    broken, after = asyncio.run(scenario())
    assert broken.status == "failed" and "store gone" in broken.error
    assert after.ok and after.text == "fine"


def test_channel_messages_are_answered_in_order_and_remember_the_chat(isolated_home):
    with FakeOllama(responder=_echo) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url))

        async def scenario():
            async with build_assistant(config) as assistant:
                async with running_runtime(assistant) as (runtime, recorders):
                    owner = Person("owner", owner=True)
                    def said(chat, text, sender, private=True):  # as the channel submits an admitted message
                        return runtime._submit_chat(Inbound("telegram", chat, text, sender, owner, from_chat=True,
                                                            private_chat=private))

                    tasks = [said("42", f"msg {i}", "7") for i in range(3)]
                    tasks.append(said("99", "other chat", "8"))
                    tasks.append(said("-100", "in a group", "7", private=False))
                    await asyncio.wait_for(asyncio.gather(*tasks), 20)
                    cron = runtime.turns.submit(Inbound("cron", "job-1", "a job", session_key="cron:job-1"))
                    await cron
                return recorders, last_chat(assistant.store)

        recorders, last = asyncio.run(scenario())
    assert recorders.texts("telegram", "42") == ["msg 0", "msg 0 | msg 1", "msg 0 | msg 1 | msg 2"]
    assert recorders.texts("telegram", "99") == ["other chat"]
    assert recorders.texts("telegram", "-100") == ["in a group"]
    assert last in (("telegram", "42"), ("telegram", "99"))  # neither a job's turn nor a group chat moves it


def test_delivery_reaches_every_front_door_and_says_when_it_cannot(isolated_home):
    from picoora import inbox

    with FakeOllama(responder=_echo) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url))

        async def scenario():
            async with build_assistant(config) as assistant:
                async with running_runtime(assistant, channels=("telegram", "slack")) as (runtime, recorders):
                    recorders.broken.add("slack")
                    targets = (("telegram", "1"), ("slack", "2"), ("discord", "3"), ("web", "s1"), ("cli", "default"))
                    receipts = [await runtime.delivery.deliver(*where, "hello") for where in targets]
                web = [e.message.content for e in await assistant.history("web:s1")]
                waiting = [e.message.content for e in inbox.take(assistant.store, "cli:default")]
                return receipts, recorders, web, waiting

        receipts, recorders, web, waiting = asyncio.run(scenario())
    assert [r.delivered for r in receipts] == [True, False, False, True, True]
    assert "could not send" in receipts[1].error and receipts[2].error == "no discord channel is running"
    assert recorders.texts("telegram", "1") == ["hello"]
    assert web == ["hello"] and waiting == ["hello"]


def test_a_thousand_strangers_cost_a_bounded_number_of_open_assistants(isolated_home):
    with FakeOllama(responder=_echo) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url))

        async def scenario():
            async with build_assistant(config) as owner:
                people = PersonAssistants(owner, capacity=3)
                closed: list[str] = []
                async with people.lease(Person("keep")) as kept:  # in use: never closed under its turn
                    for i in range(10):
                        async with people.lease(Person(f"guest-{i}")) as guest:
                            original = guest.aclose

                            async def recording_close(name=guest.person, original=original):
                                closed.append(name)
                                await original()
                            guest.aclose = recording_close  # type: ignore[method-assign]
                    still_open = people.open_count
                    kept_usable = await kept.astore.memories.list() == []
                async with people.lease(Person("owner", owner=True)) as same:
                    is_owner = same is owner
                await people.aclose()
                return still_open, closed, kept_usable, is_owner

        still_open, closed, kept_usable, is_owner = asyncio.run(scenario())
    assert still_open == 3 and len(closed) >= 7 and "keep" not in closed[:7]
    assert kept_usable and is_owner
