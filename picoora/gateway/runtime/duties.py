"""Who does what in a fleet of gateways on one database, on the store's leases (``picoora/store/leases.py``).

- ``SingletonDuty``: ``work`` (a channel's long poll, the heartbeat) runs only while this node holds the
  duty's lease. The holder renews it every quarter period; every other node asks as often and takes it
  over once it expires, so a dead node's duty moves within 1¼ lease periods of its last renewal. A holder
  that cannot renew stops the work before its lease can expire (counted from when it asked, on its own
  monotonic clock), so two nodes never run it at once.
- ``session_turn``: a turn holds its session's lease, so one session's turns run in order across nodes
  (the turn service already orders them within a node). A node that cannot get it within
  ``SESSION_WAIT_SECONDS`` answers "busy" (``SessionBusy``) rather than interleave two turns' histories.
On a single machine (files) leases are not shared and both are free: the work simply runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from picoora.gateway.cancellation import stop_if_cancelled
from picoora.gateway.runtime.turns import SessionBusy
from picoora.store.leases import Leases

log = logging.getLogger(__name__)

LEASE_SECONDS = 30.0
SESSION_WAIT_SECONDS = 30.0  # a turn elsewhere usually ends sooner; past this the chat is told to wait
SESSION_POLL_SECONDS = 0.25
BUSY = ("This conversation is being answered on another of my servers right now; please send your message "
        "again in a moment.")


class SingletonDuty:
    def __init__(self, leases: Leases, name: str, holder: str, work: Callable[[], Coroutine[Any, Any, None]], *,
                 seconds: float = LEASE_SECONDS):
        self.leases = leases
        self.name = name
        self.holder = holder
        self.work = work
        self.seconds = seconds
        self._task: asyncio.Task[None] | None = None
        self._valid_until = 0.0  # (monotonic) the lease is surely ours until then

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def run(self) -> None:
        """Hold the duty whenever this node can, until cancelled (then stop the work, hand the lease back)."""
        if not self.leases.shared:
            await self.work()
            return
        try:
            while True:
                await self.tick()
                stop_if_cancelled()  # the lease query may have raced the cancellation and won
                await asyncio.sleep(self.seconds / 4)
        finally:
            held = self.running
            await self._stop()
            if held:
                with contextlib.suppress(Exception):  # it expires anyway; releasing only saves the wait
                    await asyncio.shield(self.leases.release(self.name, self.holder))

    async def tick(self) -> bool:
        """One round: take or renew the lease, start the work when won, stop it when lost. True if held."""
        loop = asyncio.get_running_loop()
        asked = loop.time()
        try:
            held = await asyncio.wait_for(self.leases.acquire(self.name, self.holder, self.seconds), self.seconds / 4)
        except Exception as exc:  # the database did not answer: ours only while the last renewal lasts
            held = loop.time() + self.seconds / 2 < self._valid_until  # (the next round may be that late)
            log.warning("could not renew the lease %s (%s); %s", self.name, exc,
                        "still held" if held else "stopping its work")
        else:
            if held:
                self._valid_until = asked + self.seconds
        if held and not self.running:
            if self._task is not None and not self._task.cancelled() and self._task.exception() is not None:
                log.warning("%s ended with an error; starting it again", self.name)
            log.info("this node runs %s", self.name)
            self._task = loop.create_task(self.work(), name=self.name)
        elif not held and self._task is not None:
            log.info("%s moved to another node", self.name)
            await self._stop()
        return held

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


@contextlib.asynccontextmanager
async def session_turn(leases: Leases, session: str, holder: str, *, wait_seconds: float | None = None,
                       seconds: float = LEASE_SECONDS) -> AsyncIterator[None]:
    """Hold ``session``'s lease for the body (renewed while it runs); ``SessionBusy`` after ``wait_seconds``
    (default ``SESSION_WAIT_SECONDS``)."""
    if not leases.shared:
        yield
        return
    name = f"session:{session}"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (SESSION_WAIT_SECONDS if wait_seconds is None else wait_seconds)
    while not await leases.acquire(name, holder, seconds):
        if loop.time() >= deadline:
            raise SessionBusy(BUSY)
        await asyncio.sleep(SESSION_POLL_SECONDS)
    renewing = loop.create_task(_renew(leases, name, holder, seconds))
    try:
        yield
    finally:
        renewing.cancel()
        await asyncio.gather(renewing, return_exceptions=True)
        with contextlib.suppress(Exception):  # it expires anyway; releasing lets the next node start at once
            await asyncio.shield(leases.release(name, holder))


async def _renew(leases: Leases, name: str, holder: str, seconds: float) -> None:
    while True:
        await asyncio.sleep(seconds / 3)
        try:
            if not await leases.acquire(name, holder, seconds):
                log.warning("the lease %s was taken over during a long turn", name)
        except Exception as exc:
            stop_if_cancelled(exc)
            log.warning("could not renew the lease %s: %s", name, exc)
        stop_if_cancelled()
