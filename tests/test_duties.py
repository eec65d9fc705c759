"""Singleton duties and session leases at their bounds, over a scripted lease table (tests/oracle/test_fleet.py
runs the same over the Oracle fake with several nodes): how often a holder renews, how long it waits for an
answer, how long a lease it cannot renew still counts (from when it asked), what a clean stop hands back,
and what the operator is told."""

from __future__ import annotations

import asyncio
import logging

from picoora.gateway.runtime import duties
from picoora.gateway.runtime.duties import SingletonDuty, session_turn


class Table:
    """A fleet's lease table as one node sees it: every call recorded with the loop's time; ``answer`` says
    what an ``acquire`` gets (True, False, an exception to raise, or "hang"), after the answers of ``script``
    are used up one per call; ``delay`` how long the database takes to answer."""

    shared = True

    def __init__(self, answer: object = True, delay: float = 0.0, script: tuple = ()):
        self.answer = answer
        self.script = list(script)
        self.delay = delay
        self.calls: list[tuple[str, str, str, float | None, float]] = []  # (call, name, holder, seconds, when)

    async def acquire(self, name: str, holder: str, seconds: float) -> bool:
        self.calls.append(("acquire", name, holder, seconds, asyncio.get_running_loop().time()))
        answer = self.script.pop(0) if self.script else self.answer
        await asyncio.sleep(self.delay)
        if answer == "hang":
            await asyncio.Event().wait()
        if isinstance(answer, Exception):
            raise answer
        return bool(answer)

    async def claim(self, name: str, seconds: float) -> bool:
        raise AssertionError("duties never claim")

    async def release(self, name: str, holder: str) -> None:
        self.calls.append(("release", name, holder, None, asyncio.get_running_loop().time()))

    def times(self, call: str = "acquire") -> list[float]:
        return [when for kind, *_, when in self.calls if kind == call]


class Work:
    def __init__(self, fail: bool = False, end: bool = False):
        self.starts = 0
        self.running = False
        self.fail, self.end = fail, end

    async def __call__(self) -> None:
        self.starts += 1
        self.running = True
        try:
            if self.fail:
                raise RuntimeError("the poll broke")
            if not self.end:
                await asyncio.Event().wait()
        finally:
            self.running = False


def _said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == duties.log.name]


def _gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in zip(times, times[1:], strict=False)]


def test_a_holder_renews_every_quarter_period_for_the_whole_period_under_its_own_name():
    async def scenario():
        table, work = Table(), Work()
        run = asyncio.create_task(SingletonDuty(table, "heartbeat", "n1", work, seconds=2.0).run())
        while len(table.times()) < 3:
            await asyncio.sleep(0.02)
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        return table, work

    table, work = asyncio.run(asyncio.wait_for(scenario(), 10))  # a renewal every 8 s would not come in time
    gaps = _gaps(table.times()[:3])
    assert all(gap >= 0.5 - 0.01 for gap in gaps)  # not more often than a quarter period
    assert {call[1:4] for call in table.calls if call[0] == "acquire"} == {("heartbeat", "n1", 2.0)}
    assert work.starts == 1 and not work.running
    assert table.calls[-1][:3] == ("release", "heartbeat", "n1")  # the clean stop handed the lease back


def test_a_node_that_never_held_the_duty_releases_nothing_when_it_stops():
    async def scenario():
        table, work = Table(answer=False), Work()
        run = asyncio.create_task(SingletonDuty(table, "heartbeat", "n2", work, seconds=2.0).run())
        while not table.calls:
            await asyncio.sleep(0.01)
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        return table, work

    table, work = asyncio.run(scenario())
    assert work.starts == 0 and table.times("release") == []  # another node's lease is not ours to release


def test_an_unanswered_renewal_is_given_up_after_a_quarter_period():
    async def scenario():
        table, work = Table(answer="hang"), Work()
        duty = SingletonDuty(table, "channel.telegram", "n1", work, seconds=0.8)
        loop = asyncio.get_running_loop()
        started = loop.time()
        held = await asyncio.wait_for(duty.tick(), 5)
        return held, loop.time() - started, work.starts

    held, took, starts = asyncio.run(scenario())
    assert not held and starts == 0
    assert 0.2 - 0.01 <= took < 2.0  # a quarter of 0.8 s: not sooner, and not the whole period or never


def test_a_lease_that_cannot_be_renewed_counts_from_when_it_was_asked_for(caplog):
    """The database took 0.8 s to grant a 4 s lease: it runs out 4 s after the ask, not after the answer. A
    failed renewal keeps the work only while the next round (half a period on) falls inside that."""
    async def scenario():
        table, work = Table(delay=0.8), Work()
        duty = SingletonDuty(table, "channel.telegram", "n1", work, seconds=4.0)
        assert await duty.tick()
        asked = table.times()[0]
        table.delay, table.answer = 0.0, ConnectionError("database down")
        still = await duty.tick()  # 0.8 s after the ask: 0.8 + 2 < 4
        await asyncio.sleep(0)
        running_while_held = work.running
        await asyncio.sleep(asked + 2.4 - asyncio.get_running_loop().time())
        lost = await duty.tick()  # 2.4 + 2 > 4 from the ask (but < 4.8 from the answer)
        await asyncio.sleep(0)
        return still, running_while_held, lost, work.running

    with caplog.at_level(logging.INFO, logger="picoora.gateway.runtime.duties"):
        still, running_while_held, lost, running_after = asyncio.run(scenario())
    assert still and running_while_held
    assert not lost and not running_after
    assert _said(caplog) == ["this node runs channel.telegram",
                             "could not renew the lease channel.telegram (database down); still held",
                             "could not renew the lease channel.telegram (database down); stopping its work",
                             "channel.telegram moved to another node"]


def test_a_first_round_with_the_database_down_holds_nothing():
    async def scenario():
        table, work = Table(answer=ConnectionError("database down")), Work()
        duty = SingletonDuty(table, "heartbeat", "n1", work)
        return await duty.tick(), work.starts

    assert asyncio.run(scenario()) == (False, 0)


def test_work_that_ended_is_started_again_and_the_operator_told_only_when_it_broke(caplog):
    async def scenario(work):
        duty = SingletonDuty(Table(), "channel.slack", "n1", work)
        assert await duty.tick()
        name = duty._task.get_name()
        await asyncio.sleep(0.01)  # the work ends (or breaks)
        assert await duty.tick()
        await asyncio.sleep(0.01)
        await duty._stop()
        return name, work.starts

    with caplog.at_level(logging.WARNING, logger="picoora.gateway.runtime.duties"):
        assert asyncio.run(scenario(Work(end=True))) == ("channel.slack", 2)
        assert _said(caplog) == []
        assert asyncio.run(scenario(Work(fail=True))) == ("channel.slack", 2)
    assert _said(caplog) == ["channel.slack ended with an error; starting it again"]


def test_a_long_turn_renews_its_session_every_third_of_a_period_and_says_when_it_lost_it(caplog):
    async def scenario():
        # the take, two renewals, one finding another node took it over (this one's were late), one failing
        table = Table(script=(True, True, True, False, ConnectionError("database down")))
        async with session_turn(table, "web:1", "n1", seconds=0.6):
            while not any(said.startswith("could not renew") for said in _said(caplog)):
                await asyncio.sleep(0.01)
        return table

    with caplog.at_level(logging.WARNING, logger="picoora.gateway.runtime.duties"):
        table = asyncio.run(asyncio.wait_for(scenario(), 5))  # renewing every 1.8 s would not come in time
    assert all(gap >= 0.2 - 0.01 for gap in _gaps(table.times()[1:]))  # not more often than a third
    assert {call[1:4] for call in table.calls if call[0] == "acquire"} == {("session:web:1", "n1", 0.6)}
    assert table.calls[-1][:3] == ("release", "session:web:1", "n1")
    assert _said(caplog) == ["the lease session:web:1 was taken over during a long turn",
                             "could not renew the lease session:web:1: database down"]


def test_a_session_waits_for_its_lease_polling_and_unshared_leases_cost_nothing(monkeypatch):
    monkeypatch.setattr(duties, "SESSION_POLL_SECONDS", 0.05)

    async def scenario():
        table = Table(answer=False)

        async def free_later():
            await asyncio.sleep(0.2)
            table.answer = True

        freeing = asyncio.create_task(free_later())
        async with session_turn(table, "web:1", "n1", wait_seconds=5):
            asks = len(table.times())
        await freeing
        return asks, _gaps(table.times()[:asks])

    asks, gaps = asyncio.run(scenario())
    assert 2 <= asks and all(gap >= 0.05 - 0.01 for gap in gaps)

    class Unshared(Table):
        shared = False

    async def alone():
        table, work = Unshared(), Work(end=True)
        await SingletonDuty(table, "heartbeat", "n1", work).run()  # the work simply runs, once
        async with session_turn(table, "web:1", "n1"):
            pass
        return table.calls, work.starts

    assert asyncio.run(alone()) == ([], 1)


def test_release_is_not_skipped_by_a_database_error(caplog):
    class Failing(Table):
        async def release(self, name, holder):
            await super().release(name, holder)
            raise ConnectionError("database down")

    async def scenario():
        table = Failing()
        async with session_turn(table, "web:1", "n1"):
            pass
        return table.times("release")

    assert len(asyncio.run(scenario())) == 1  # the turn ends normally; the lease expires by itself


def test_the_duty_stops_its_work_when_another_node_holds_the_lease():
    async def scenario():
        table, work = Table(), Work()
        duty = SingletonDuty(table, "heartbeat", "n1", work)
        assert await duty.tick()
        await asyncio.sleep(0)
        table.answer = False
        held = await duty.tick()
        return held, work.running, duty.running

    assert asyncio.run(scenario()) == (False, False, False)


def test_on_files_every_lease_is_this_processs_and_each_node_is_named_where_it_runs():
    import os
    import socket

    from picoora.store.leases import LocalLeases, node_id

    async def scenario():
        leases = LocalLeases()
        return (leases.shared, await leases.acquire("heartbeat", "n1", 30), await leases.claim("cron:job:1", 60),
                await leases.claim("cron:job:1", 60), await leases.release("heartbeat", "n1"))

    assert asyncio.run(scenario()) == (False, True, True, True, None)  # a due run fires here, whoever asked
    first, second = node_id(), node_id()
    host, pid, nonce = first.split(":")
    assert host == socket.gethostname()[:200] and pid == str(os.getpid()) and len(nonce) == 8
    assert first != second  # a restarted node is a new holder


def test_a_duty_stopping_cleanly_is_not_held_up_by_a_release_the_database_refuses():
    class Failing(Table):
        async def release(self, name, holder):
            await super().release(name, holder)
            raise ConnectionError("database down")

    async def scenario():
        table, work = Failing(), Work()
        run = asyncio.create_task(SingletonDuty(table, "heartbeat", "n1", work).run())
        while not work.running:
            await asyncio.sleep(0.01)
        run.cancel()
        outcome = (await asyncio.gather(run, return_exceptions=True))[0]
        return type(outcome), table.times("release"), work.running

    stopped, released, running = asyncio.run(scenario())
    assert stopped is asyncio.CancelledError and len(released) == 1 and not running  # it expires by itself
