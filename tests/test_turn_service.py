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


# -- the bounds: the cut-off reply, what a finished session leaves, /stop ---------------------------------

def _answer(text: str) -> TurnResult:
    return TurnResult(text, "answer", 1, 0)


def test_a_cut_off_turns_reply_is_bounded_and_an_answered_turns_reply_is_not(monkeypatch):
    from picoora.gateway.runtime import turns

    monkeypatch.setattr(turns, "CUT_OFF_REPLY_SECONDS", 0.2)
    replied: list[str] = []

    async def scenario():
        async def run(inbound, on_event):
            if inbound.text == "endless":
                await asyncio.Event().wait()
            return _answer(inbound.text)

        async def then(inbound, outcome):
            await asyncio.sleep(0.4 if inbound.text == "quick" else 3600)  # a slow chat API / a hung one
            replied.append(f"{inbound.text}: {outcome.status}")

        service = TurnService(run)
        quick = await service.submit(Inbound("web", "a", "quick"), then=then)  # its reply outlasts the bound
        hung = service.submit(Inbound("web", "b", "endless"), then=then)
        loop = asyncio.get_running_loop()
        started = loop.time()
        cut = await asyncio.wait_for(service.drain(0.05), 10)
        return quick, await hung, cut, loop.time() - started

    quick, hung, cut, took = asyncio.run(scenario())
    assert quick.ok and replied == ["quick: answer"]  # an answered turn's reply ran to its end
    assert hung.status == "cut_off" and cut == 1
    assert took < 2  # the deadline plus the cut-off reply's bound, not the hung reply's hour


def test_a_finished_session_leaves_nothing_behind_and_a_later_turn_still_waits_for_the_last():
    log: list[str] = []

    async def scenario():
        gates = {text: asyncio.Event() for text in ("a1", "a2")}

        async def run(inbound, on_event):
            log.append(f"start {inbound.text}")
            if inbound.text in gates:
                await gates[inbound.text].wait()
            log.append(f"end {inbound.text}")
            return _answer(inbound.text)

        service = TurnService(run)
        first = service.submit(Inbound("web", "a", "a1"))
        second = service.submit(Inbound("web", "a", "a2"))
        gates["a1"].set()
        await first  # a2 runs now: the session's last turn
        third = service.submit(Inbound("web", "a", "a3"))
        await asyncio.sleep(0.05)
        waiting = log[-1]
        gates["a2"].set()
        await asyncio.gather(second, third)
        in_order = log[-2:]
        await asyncio.gather(*(service.submit(Inbound("web", f"s{n}", "x")) for n in range(50)))
        await asyncio.sleep(0)  # the done callbacks
        return waiting, in_order, service

    waiting, in_order, service = asyncio.run(scenario())
    assert waiting == "start a2" and in_order == ["start a3", "end a3"]  # a3 waited for a2, not only for a1
    # A session costs nothing once its turns ended: no tail, no running turn, no task kept per session.
    assert service._tails == {} and service._running == {} and service._tasks == set() and service._stopped == set()


def test_stop_cuts_only_the_running_turn_and_not_a_reply_already_under_way():
    async def scenario():
        started, replying, reply_may_end = asyncio.Event(), asyncio.Event(), asyncio.Event()
        outcomes: list[str] = []
        cancelling: list[int] = []

        async def run(inbound, on_event):
            if inbound.text == "long":
                started.set()
                await asyncio.Event().wait()
            return _answer(inbound.text)

        async def then(inbound, outcome):
            outcomes.append(f"{inbound.text}: {outcome.status}")
            # the stop is handled: the reply's own awaits are not cut by a cancellation still pending
            cancelling.append(getattr(asyncio.current_task(), "cancelling", lambda: 0)())
            if inbound.text == "replying":
                replying.set()
                await reply_may_end.wait()
                outcomes.append("reply sent")

        service = TurnService(run)
        assert not service.stop("nobody", "web:a")  # no turn at all
        long = service.submit(Inbound("web", "a", "long"), then=then)
        queued = service.submit(Inbound("web", "a", "queued"), then=then)
        other = service.submit(Inbound("web", "b", "long"), then=then)  # another session: not stopped
        await started.wait()
        assert not service.stop("someone-else", "web:a")  # the same session key of another person
        assert service.stop("", "web:a")  # the owner's
        stopped, after = await long, await queued
        assert not other.done()
        other.cancel()
        reply = service.submit(Inbound("web", "c", "replying"), then=then)
        await replying.wait()
        too_late = service.stop("", "web:c")  # the turn ended: its reply must not be cut
        reply_may_end.set()
        return stopped, after, too_late, await reply, outcomes, cancelling

    stopped, after, too_late, reply, outcomes, cancelling = asyncio.run(scenario())
    assert cancelling == [0, 0, 0, 0]
    assert stopped.status == "stopped_by_user" and stopped.error == "stopped at the user's request"
    assert after.ok and not too_late and reply.ok
    assert outcomes[:2] == ["long: stopped_by_user", "queued: answer"] and outcomes[-1] == "reply sent"


def test_a_session_busy_elsewhere_and_a_failing_reply_each_end_their_turn_with_its_outcome():
    from picoora.gateway.runtime.turns import SessionBusy

    async def scenario():
        async def run(inbound, on_event):
            if inbound.text == "busy":
                raise SessionBusy("answered on another server")
            return _answer(inbound.text)

        async def broken_reply(inbound, outcome):
            raise ConnectionError("chat API down")

        service = TurnService(run)
        busy = await service.submit(Inbound("web", "a", "busy"))
        answered = await service.submit(Inbound("web", "a", "fine"), then=broken_reply)
        return busy, answered, await service.drain(1.0)

    busy, answered, cut = asyncio.run(scenario())
    assert busy.status == "busy" and busy.error == "answered on another server"
    assert answered.ok and answered.text == "fine" and cut == 0


def test_drain_waits_for_turns_within_the_deadline_and_counts_only_those_it_cut():
    async def scenario():
        async def run(inbound, on_event):
            await asyncio.sleep(0.05 if inbound.text == "short" else 3600)
            return _answer(inbound.text)

        service = TurnService(run)
        short = service.submit(Inbound("web", "a", "short"))
        long = [service.submit(Inbound("web", f"l{n}", "long")) for n in range(2)]
        cut = await service.drain(1.0)
        return cut, await short, [await t for t in long], service.accepting

    cut, short, long, accepting = asyncio.run(scenario())
    assert cut == 2 and short.ok and {o.status for o in long} == {"cut_off"} and not accepting
