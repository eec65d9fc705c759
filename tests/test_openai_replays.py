"""Which retried request gets an earlier one's turn, rule by rule on ``Replays`` (test_gateway_openai.py
drives the same rules through the endpoint): keyed per person, how long a key and a body are kept (to the
instant), which outcomes of a body are replayed, and the bound on how many are kept."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from picoora.agent import TurnResult
from picoora.gateway.openai import replays as module
from picoora.gateway.openai.replays import BODY_SECONDS, KEY_SECONDS, MAX_KEPT, Replays
from picoora.gateway.runtime.envelopes import TurnOutcome


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(module, "time", SimpleNamespace(monotonic=clock))  # the event loop keeps the real one
    return clock


def _outcome(status: str) -> TurnOutcome:
    return TurnOutcome(status, TurnResult("the answer", "answer", 1, 0) if status == "answer" else None, "why")


def _with_tasks(check) -> None:
    """Run ``check(make_task)`` in a loop; ``make_task(kind)``: a task that answered, failed, raised, was
    cancelled, or still runs."""
    async def scenario():
        made = []

        async def turn(kind: str) -> TurnOutcome:
            if kind == "running":
                await asyncio.Event().wait()
            if kind == "raised":
                raise RuntimeError("broke")
            return _outcome(kind)

        def make_task(kind: str) -> asyncio.Task[TurnOutcome]:
            task = asyncio.get_running_loop().create_task(turn(kind))
            made.append(task)
            return task

        try:
            await check(make_task)
        finally:
            for task in made:
                task.cancel()
            await asyncio.gather(*made, return_exceptions=True)

    asyncio.run(scenario())


def test_keys_name_the_person_and_the_header_or_the_body():
    body = b'{"messages": []}'
    # one person's key is not another's
    assert Replays.key("ana", "s1", "k-1", body) != Replays.key("ben", "s1", "k-1", body)
    assert Replays.key("ana", "s1", None, body) != Replays.key("ben", "s1", None, body)
    # the header decides
    assert Replays.key("ana", "s1", "k-1", body) == Replays.key("ana", "s1", "k-1", b"another body")
    assert Replays.key("ana", "s1", None, body) != Replays.key("ana", "s1", None, b"another body")
    assert Replays.key("ana", "s1", "", body) == Replays.key("ana", "s1", None, body)  # an empty header is no header
    assert Replays.key("ana", "s1", None, body)[1] != Replays.key("ana", "s1", "k-1", body)[1]
    assert Replays.key("ana", "s1", None, body) != Replays.key("ana", "s2", None, body)  # a body per conversation


def test_an_idempotency_key_replays_any_outcome_for_key_seconds_to_the_instant(clock):
    async def check(make_task):
        replays = Replays()
        key = Replays.key("ana", "s1", "k-1", b"{}")
        task = make_task("answer")
        await asyncio.sleep(0)
        replays.keep(key, task, "chatcmpl-1", 42, b"{}")
        clock.now += KEY_SECONDS
        found = replays.find(key)
        assert found is not None and (found.task, found.completion_id, found.created) == (task, "chatcmpl-1", 42)
        clock.now += 0.001
        assert replays.find(key) is None
        clock.now -= 1  # forgotten once expired, not only hidden
        assert replays.find(key) is None

    _with_tasks(check)


@pytest.mark.parametrize(("outcome", "replayed"), [
    ("running", True), ("failed", True), ("stopped", True), ("cut_off", True), ("raised", True),
    ("cancelled", True), ("answer", False)])
def test_a_body_is_replayed_while_it_runs_or_after_it_failed_but_not_once_answered(clock, outcome, replayed):
    async def check(make_task):
        replays = Replays()
        key = Replays.key("ana", "s1", None, b'{"messages": [1]}')
        task = make_task("running" if outcome == "cancelled" else outcome)
        if outcome == "cancelled":
            task.cancel()
        await asyncio.sleep(0.01)
        replays.keep(key, task, "chatcmpl-1", 42, b"{}")
        assert (replays.find(key) is not None) == replayed

    _with_tasks(check)


def test_a_failed_body_is_replayed_for_body_seconds_to_the_instant(clock):
    async def check(make_task):
        replays = Replays()
        key = Replays.key("ana", "s1", None, b'{"messages": [1]}')
        replays.keep(key, make_task("failed"), "chatcmpl-1", 42, b"{}")
        clock.now += BODY_SECONDS
        assert replays.find(key) is not None
        clock.now += 0.001
        assert replays.find(key) is None

    _with_tasks(check)


def test_at_most_max_kept_the_oldest_forgotten_first_and_a_kept_one_made_newest_again(clock):
    async def check(make_task):
        replays = Replays()
        task = make_task("running")
        keys = [Replays.key("ana", "s1", f"k-{n}", b"") for n in range(MAX_KEPT + 2)]
        for key in keys[:MAX_KEPT]:
            replays.keep(key, task, "c", 1, b"{}")
        assert all(replays.find(key) is not None for key in keys[:MAX_KEPT])  # exactly MAX_KEPT: all kept
        replays.keep(keys[0], task, "c", 1, b"{}")  # kept again: the newest, not the first to go
        replays.keep(keys[MAX_KEPT], task, "c", 1, b"{}")
        assert replays.find(keys[1]) is None and replays.find(keys[0]) is not None
        replays.keep(keys[MAX_KEPT + 1], task, "c", 1, b"{}")
        assert replays.find(keys[2]) is None
        assert sum(replays.find(key) is not None for key in keys) == MAX_KEPT

    _with_tasks(check)
