"""Several gateways on one database (the strict fake): leases, a claim per due cron run, one holder per
singleton duty with takeover, and a session's turns in order across nodes.

Each node is its own ``OracleStore`` (its own ``Database``: pool, private event loop and thread) over one
``FakeOracle``, as separate gateways share one Autonomous Database. Time moves on the database's clock
(``fake.clock_offset``), never by sleeping out a lease.
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from picoora.channel_registry import ChannelConfig
from picoora.gateway.channels.telegram.channel import TelegramChannel
from picoora.gateway.runtime import duties
from picoora.gateway.runtime.duties import SingletonDuty, session_turn
from picoora.gateway.runtime.heartbeat import LAST_BEAT, HeartbeatService
from picoora.gateway.runtime.scheduler import SchedulerService
from picoora.gateway.runtime.turns import SessionBusy
from picoora.messages import Message
from picoora.scheduler.jobs import JobBook
from picoora.store.aio import AsyncStore
from tests.fakes.channel_kit import ChannelHarness
from tests.fakes.runtime_kit import ScriptedTurns, recording_delivery
from tests.fakes.telegram_server import FakeTelegram
from tests.oracle.conftest import scenario

NODES = 3


@pytest.fixture
def nodes(open_store):
    return [open_store() for _ in range(NODES)]


@scenario
async def test_a_lease_is_held_by_one_node_renewed_and_taken_over_once_expired(nodes, fake):
    a, b, c = (node.leases for node in nodes)
    assert await a.acquire("duty", "node-a", 30)
    assert not await b.acquire("duty", "node-b", 30) and not await c.acquire("duty", "node-c", 30)
    fake.clock_offset += timedelta(seconds=20)
    assert await a.acquire("duty", "node-a", 30)  # renewed: 30 s from now on the database's clock
    fake.clock_offset += timedelta(seconds=20)
    assert not await b.acquire("duty", "node-b", 30)  # 40 s after it was taken, but renewed at 20
    fake.clock_offset += timedelta(seconds=11)
    assert await b.acquire("duty", "node-b", 30)  # node-a stopped renewing: taken over
    assert not await a.acquire("duty", "node-a", 30)
    await b.release("duty", "node-b")
    assert await c.acquire("duty", "node-c", 30)  # released: free at once
    [row] = [r for r in fake.rows("PICO_LEASES") if r["lease_name"] == "default/duty"]
    assert row["holder"] == "node-c"


@scenario
async def test_leases_are_scoped_by_agent_and_long_names_fit(nodes, fake):
    owner, person = nodes[0].leases, nodes[1].for_agent("default.ana").leases
    assert await owner.acquire("session:telegram:42", "n1", 30)
    assert await person.acquire("session:telegram:42", "n2", 30)  # someone else's session of the same name
    long_name = "session:" + "k" * 1000
    assert await owner.acquire(long_name, "n1", 30)
    assert not await nodes[2].leases.acquire(long_name, "n3", 30)  # kept as its hash: still one lease
    assert all(len(r["lease_name"]) <= 300 for r in fake.rows("PICO_LEASES"))


@scenario
async def test_a_claim_is_won_once_and_spent_claims_are_purged(nodes, fake):
    results = await asyncio.gather(*(node.leases.claim("cron:job:2026-12-01T08:00", 3600) for node in nodes))
    assert sorted(results) == [False, False, True]
    fake.clock_offset += timedelta(days=2)
    assert await nodes[0].leases.claim("cron:job:2026-12-03T08:00", 3600)
    assert [r["lease_name"] for r in fake.rows("PICO_LEASES")] == ["default/cron:job:2026-12-03T08:00"]


@scenario
async def test_a_name_is_kept_as_written_up_to_the_column_and_as_its_hash_past_it(nodes, fake):
    import hashlib

    leases = nodes[0].leases
    fits, longer = "s" * (300 - len("default/")), "s" * (301 - len("default/"))
    assert await leases.acquire(fits, "n1", 30) and await leases.acquire(longer, "n1", 30)
    names = {r["lease_name"] for r in fake.rows("PICO_LEASES")}
    assert names == {f"default/{fits}", f"default/sha256:{hashlib.sha256(longer.encode()).hexdigest()}"}


@scenario
async def test_spent_claims_are_purged_a_day_after_they_expired_and_only_by_a_claim(nodes, fake):
    leases = nodes[0].leases
    assert await leases.claim("cron:job:mon", 60)
    fake.clock_offset += timedelta(seconds=60 + 86400 - 5)  # expired 23 h 59 min 55 s ago: kept
    assert await leases.claim("cron:job:tue", 60)
    assert await leases.acquire("heartbeat", "n1", 30)
    fake.clock_offset += timedelta(seconds=10)  # a day and 5 s
    purges = fake.names().count("lease_purge")
    assert await leases.acquire("heartbeat", "n1", 30)  # a renewal purges nothing (it runs every few seconds)
    assert fake.names().count("lease_purge") == purges
    assert "default/cron:job:mon" in {r["lease_name"] for r in fake.rows("PICO_LEASES")}
    assert await leases.claim("cron:job:wed", 60)
    assert {r["lease_name"] for r in fake.rows("PICO_LEASES")} == {"default/cron:job:tue", "default/cron:job:wed",
                                                                   "default/heartbeat"}


@scenario
async def test_a_failed_insert_other_than_taken_is_an_error_not_a_no(nodes, fake):
    from tests.oracle.fake_db import ora_error

    fake.fail_next["lease_take"] = ora_error(1400, '"PICO_LEASES"."HOLDER"')
    with pytest.raises(Exception, match="ORA-01400"):
        await nodes[0].leases.acquire("heartbeat", "n1", 30)
    fake.fail_next["lease_take"] = ora_error(1, "PICO_LEASES_PK")  # another node inserted it first
    assert not await nodes[0].leases.acquire("heartbeat", "n1", 30)
    fake.fail_next["lease_release"] = ora_error(1400, '"PICO_LEASES"."HOLDER"')
    with pytest.raises(Exception, match="release the lease 'heartbeat'"):  # the error says what failed
        await nodes[0].leases.release("heartbeat", "n1")


@scenario
async def test_three_nodes_fire_each_of_100_due_runs_exactly_once(nodes):
    now = datetime.now(timezone.utc)
    book = JobBook(nodes[0], _clock=lambda: now - timedelta(minutes=5))
    jobs = [book.add("at", (now - timedelta(minutes=1)).isoformat(), f"reminder {n}", "telegram", "42",
                     action="reminder") for n in range(100)]
    services, deliveries = [], []
    for node in nodes:
        astore = AsyncStore(node)
        delivery, recorders = recording_delivery(astore)
        services.append(SchedulerService(JobBook(node), astore, submit=ScriptedTurns().submit, delivery=delivery,
                                         missed_grace=timedelta(minutes=30), clock=lambda: now,
                                         leases=node.leases))
        deliveries.append(recorders)
    await asyncio.gather(*(service.catch_up() for service in services))
    await asyncio.gather(*(service.wait_idle() for service in services))
    sent = [s.text for recorders in deliveries for s in recorders.sent]
    assert sorted(sent) == sorted(f"⏰ reminder {n}" for n in range(100))  # each once, whichever node
    assert {book.run_record(job.id).runs for job in jobs} == {1}  # one run record each, not three


class Poller:
    """Stands in for a long-polling channel: counts how many nodes poll at once."""

    def __init__(self):
        self.polling: set[str] = set()
        self.most_at_once = 0
        self.turns: list[str] = []

    def work(self, node: str):
        async def poll() -> None:
            self.polling.add(node)
            self.most_at_once = max(self.most_at_once, len(self.polling))
            self.turns.append(node)
            try:
                await asyncio.Event().wait()
            finally:
                self.polling.discard(node)
        return poll


@scenario
async def test_one_poller_at_a_time_taken_over_within_a_lease_period_after_its_node_dies(nodes, fake):
    telegram, heartbeat = Poller(), Poller()
    fleet = [(SingletonDuty(node.leases, "channel.telegram", f"n{i}", telegram.work(f"n{i}")),
              SingletonDuty(node.leases, "heartbeat", f"n{i}", heartbeat.work(f"n{i}")))
             for i, node in enumerate(nodes)]

    async def round_of(alive):
        for i in alive:
            for duty in fleet[i]:
                await duty.tick()
        await asyncio.sleep(0.01)  # let the started work run

    await round_of([0, 1, 2])
    await round_of([0, 1, 2])
    assert telegram.polling == {"n0"} and heartbeat.polling == {"n0"}
    first = [duty for duty in fleet[0]]
    for duty in first:  # node 0 dies: its work stops, nothing is released, nobody renews
        await duty._stop()
    fake.clock_offset += timedelta(seconds=duties.LEASE_SECONDS * 0.8)
    await round_of([1, 2])
    assert telegram.polling == set()  # still node 0's lease: nobody may poll yet
    fake.clock_offset += timedelta(seconds=duties.LEASE_SECONDS * 0.2 + 0.001)
    await round_of([1, 2])  # one lease period after node 0's last renewal: taken over
    assert telegram.polling == {"n1"} and heartbeat.polling == {"n1"}
    for _ in range(3):
        await round_of([1, 2])
    assert telegram.most_at_once == heartbeat.most_at_once == 1
    assert telegram.turns == heartbeat.turns == ["n0", "n1"]
    for node_duties in fleet[1:]:
        for duty in node_duties:
            await duty._stop()


class CountedHeartbeat(HeartbeatService):
    """The real heartbeat (an empty HEARTBEAT.md: each beat is a "skipped" record in the store), noting
    which node beat and when (the loop's clock)."""

    def __init__(self, node: str, astore: AsyncStore, workspace, beats: list, enough: asyncio.Event):
        super().__init__(astore, submit=None, delivery=None, interval_minutes=BEAT_SECONDS / 60,  # type: ignore[arg-type]
                         workspace=workspace)
        self.node, self.beats, self.enough = node, beats, enough

    async def beat(self):
        self.beats.append((self.node, asyncio.get_running_loop().time()))
        if len(self.beats) >= 5:
            self.enough.set()
        return await super().beat()


BEAT_SECONDS = 0.06


@scenario
async def test_three_nodes_beat_the_heartbeat_once_per_interval(nodes, tmp_path):
    beats: list[tuple[str, float]] = []
    enough = asyncio.Event()
    astores = [AsyncStore(node) for node in nodes]
    runs = [asyncio.create_task(SingletonDuty(node.leases, "heartbeat", f"n{i}", CountedHeartbeat(
        f"n{i}", astore, tmp_path, beats, enough).run, seconds=2.0).run())
        for i, (node, astore) in enumerate(zip(nodes, astores, strict=True))]
    try:
        await asyncio.wait_for(enough.wait(), 30)
    finally:
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        for astore in astores:
            astore.close()
    assert len({node for node, _ in beats}) == 1  # one node beats; the others hold back
    gaps = [later - earlier for (_, earlier), (_, later) in zip(beats, beats[1:], strict=False)]
    assert min(gaps) >= BEAT_SECONDS - 0.001  # never two beats in one interval (three nodes: ~0 s gaps)
    assert json.loads(nodes[1].state.get(LAST_BEAT))["outcome"] == "skipped"  # the beat's record, shared


class SharedBot(FakeTelegram):
    """One bot polled by every node, each with a token of its own that the fake takes for the bot's: the
    test can tell which node sent each getUpdates."""

    def __init__(self, tokens: list[str]):
        super().__init__(tokens[0])
        self.node_of = {token: f"n{i}" for i, token in enumerate(tokens)}
        self.polls: list[str] = []  # the node of each getUpdates, in arrival order

    def route(self, exchange) -> None:
        for token, node in self.node_of.items():
            if exchange.path.startswith(f"/bot{token}/"):
                if exchange.path.endswith("/getUpdates"):
                    self.polls.append(node)
                exchange.path = exchange.path.replace(token, self.token, 1)
        super().route(exchange)


async def _until(condition, seconds: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, "the condition did not come true"
        await asyncio.sleep(0.02)


@pytest.mark.slow  # the fake Bot API holds each empty poll up to 1 s: about 2.5 s in all
@scenario
async def test_the_real_telegram_channel_polls_from_one_node_and_a_killed_nodes_poll_is_taken_over(nodes, fake,
                                                                                                   tmp_path):
    tokens = [f"123456:TEST-token-node{i}" for i in range(NODES)]
    with SharedBot(tokens) as bot:
        harnesses, astores = [], []
        for i, node in enumerate(nodes):
            harness = ChannelHarness(tmp_path / f"n{i}", TelegramChannel,
                                     ChannelConfig(enabled=True, token=tokens[i], allow_from=["5"], api_base=bot.url))
            astore = AsyncStore(node)  # the offset lives in the fleet's database, as the gateway keeps it
            astores.append(astore)
            harness.channel.links = replace(harness.channel.links, get_state=astore.state.get,
                                            set_state=astore.state.set)
            harnesses.append(harness)
        fleet = [SingletonDuty(node.leases, "channel.telegram", f"n{i}", h.channel.run)
                 for i, (node, h) in enumerate(zip(nodes, harnesses, strict=True))]

        async def round_of(alive):
            for i in alive:
                await fleet[i].tick()

        try:
            await round_of([0, 1, 2])
            await _until(lambda: "n0" in bot.polls)
            bot.push(5, "first")
            await _until(lambda: harnesses[0].admitted)
            polled = len(bot.polls)
            await _until(lambda: len(bot.polls) > polled)  # the next poll confirms "first" (its offset)
            await round_of([0, 1, 2])
            await fleet[0]._stop()  # node 0 is killed: its polling stops, its lease is not released
            fake.clock_offset += timedelta(seconds=duties.LEASE_SECONDS * 0.8)
            await round_of([1, 2])
            assert not fleet[1].running and not fleet[2].running  # still node 0's lease: nobody polls
            fake.clock_offset += timedelta(seconds=duties.LEASE_SECONDS * 0.2 + 0.001)
            await round_of([1, 2])  # a lease period after node 0's last renewal: taken over
            assert fleet[1].running and not fleet[2].running
            bot.push(5, "second")
            await _until(lambda: harnesses[1].admitted)
            await round_of([1, 2])
        finally:
            for duty in fleet:
                await duty._stop()
            for harness in harnesses:
                await harness.channel.close()
            for astore in astores:
                astore.close()
    assert [m.text for m in harnesses[0].admitted] == ["first"]
    assert [m.text for m in harnesses[1].admitted] == ["second"]  # from the stored offset: "first" not again
    assert harnesses[2].admitted == [] and "n2" not in bot.polls
    assert bot.polls == sorted(bot.polls)  # every poll of node 0 came before any of node 1: never both


@scenario
async def test_a_holder_that_cannot_renew_stops_before_its_lease_can_expire(nodes, fake):
    telegram = Poller()
    duty = SingletonDuty(nodes[0].leases, "channel.telegram", "n0", telegram.work("n0"), seconds=30)
    assert await duty.tick()
    await asyncio.sleep(0.01)
    fake.down = True
    duty._valid_until = asyncio.get_running_loop().time() + 10  # the last renewal was 20 s ago
    assert not await duty.tick()
    assert telegram.polling == set()
    fake.down = False


@scenario
async def test_a_turn_ends_even_if_a_lease_renewal_swallowed_its_cancellation(nodes):
    """A driver (or ``asyncio.wait_for``'s race on Python 3.11) can swallow a cancellation: the renewal loop
    then went round for ever, so the turn holding the session's lease never finished."""
    if sys.version_info < (3, 11):
        pytest.skip("Task.cancelling() is Python 3.11+; before it a cancelled task raises as usual")
    leases = nodes[0].leases
    renewing = asyncio.Event()

    class Swallowing:
        shared = True

        async def acquire(self, name, holder, seconds):
            if not await leases.acquire(name, holder, seconds):
                return False
            if renewing.is_set() or asyncio.current_task().get_name() == "turn":
                return True
            renewing.set()  # the renewal's call: it is cancelled in here, and swallows it
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass
            return True

        async def release(self, name, holder):
            return await leases.release(name, holder)

    async def turn():
        async with session_turn(Swallowing(), "web:1", "n0", seconds=0.03):
            await renewing.wait()

    await asyncio.wait_for(asyncio.create_task(turn(), name="turn"), 5)


@scenario
async def test_fifty_chats_over_three_nodes_keep_every_session_in_order(nodes, monkeypatch):
    monkeypatch.setattr(duties, "SESSION_POLL_SECONDS", 0.005)
    inside: set[str] = set()
    overlaps: list[str] = []
    seen_history: dict[str, list[int]] = {}

    in_order_here = [collections.defaultdict(asyncio.Lock) for _ in nodes]  # each node's turn service

    async def turn(node: int, session: str) -> None:
        store = nodes[node]
        async with in_order_here[node][session], session_turn(store.leases, session, f"n{node}"):
            if session in inside:
                overlaps.append(session)
            inside.add(session)
            history = await asyncio.to_thread(store.sessions.load, session)
            seen_history.setdefault(session, []).append(len(history.messages))
            await asyncio.sleep(0.001)  # the model call
            await asyncio.to_thread(store.sessions.append, session, [Message(role="user", content=f"n{node}")])
            inside.discard(session)

    sessions = [f"telegram:{n}" for n in range(50)]
    await asyncio.gather(*(turn((s + k) % NODES, key) for k in range(4) for s, key in enumerate(sessions)))
    assert overlaps == []
    for key in sessions:
        assert seen_history[key] == [0, 1, 2, 3], key  # each turn saw every earlier turn, never half of them
        assert len(nodes[0].sessions.load(key).messages) == 4


@scenario
async def test_a_session_busy_elsewhere_past_the_wait_answers_busy(nodes):
    await nodes[0].leases.acquire("session:web:1", "n0", 30)
    with pytest.raises(SessionBusy, match="another of my servers"):
        async with session_turn(nodes[1].leases, "web:1", "n1", wait_seconds=0.05):
            pytest.fail("the turn must not run while another node holds its session")


def test_rows_are_stamped_on_the_database_clock_not_the_nodes(fake, open_store):
    fake.clock_offset = timedelta(seconds=0.5)  # this node's clock is half a second behind the database's
    store = open_store()
    store.state.set("k", "v")
    [row] = [r for r in fake.rows("PICO_STATE") if r["state_key"] == "k"]
    assert row["updated_at"] - datetime.now(timezone.utc).replace(tzinfo=None) > timedelta(seconds=0.3)
    assert "database_time" in fake.names()


def test_the_daily_note_date_is_in_the_configured_zone_whatever_the_nodes_zone(fake, config, open_store,
                                                                                 monkeypatch):
    import time as clock
    from zoneinfo import ZoneInfo

    config.agents.defaults.timezone = "Pacific/Kiritimati"  # UTC+14: often another date than UTC's
    for machine_zone in ("Pacific/Pago_Pago", "UTC"):  # two nodes set up in different zones (UTC-11, UTC)
        monkeypatch.setenv("TZ", machine_zone)
        clock.tzset()
        note = open_store(config=config).notes.append(f"from a node in {machine_zone}")
        assert note.day == datetime.now(ZoneInfo("Pacific/Kiritimati")).date()
    monkeypatch.delenv("TZ")
    clock.tzset()
    [row] = fake.rows("PICO_DAILY_NOTES")  # one note for the day, both lines in it
    assert "Pago_Pago" in row["content"] and "in UTC" in row["content"]
