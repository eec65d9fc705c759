"""A turn's events on their way to a consumer (the terminal, an SSE response, a channel): stamped, in
order, and never able to hold up or break the turn."""

from __future__ import annotations

import asyncio
import inspect
import logging

from picoora.agent.events import Event, EventSink

log = logging.getLogger(__name__)

DRAIN_SECONDS = 10.0  # how long a finished turn waits for a slow event consumer before dropping it


class Emitter:
    """Stamps a turn's events (turn id, sequence number) and hands them to the sink from its own task.

    The turn never waits for the sink: events go into a queue, and a delivery task calls the sink in
    order. A sink that raises is dropped for the rest of the turn (the turn and its answer are unharmed);
    ``drain`` waits until what was emitted has been delivered, and drops a sink that stays far behind."""

    def __init__(self, session_key: str, turn_id: str, sink: EventSink | None):
        self.session_key = session_key
        self.turn_id = turn_id
        self.sink = sink
        self._seq = 0
        self._queue: asyncio.Queue[Event] | None = None
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, event: Event) -> None:
        self._seq += 1
        event.session_key, event.turn_id, event.seq = self.session_key, self.turn_id, self._seq
        if self.sink is None:
            return
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.get_running_loop().create_task(self._deliver(self._queue))
        self._queue.put_nowait(event)

    async def _deliver(self, queue: asyncio.Queue[Event]) -> None:
        while True:
            event = await queue.get()
            try:
                if self.sink is not None:
                    result = self.sink(event)
                    if inspect.isawaitable(result):
                        await result
            except Exception:  # the consumer's problem (a closed connection, a bug): not the turn's
                log.warning("an event consumer of %s failed and was detached", self.session_key, exc_info=True)
                self.sink = None
            finally:
                queue.task_done()

    def abandon(self) -> None:
        """Stop delivering (the turn ended without an answer to wait for)."""
        if self._task is not None:
            self._task.cancel()
        self._task = self._queue = None

    async def drain(self) -> None:
        """Wait until what was emitted is delivered; a sink still behind after DRAIN_SECONDS is dropped."""
        if self._queue is None or self._task is None:
            return
        try:
            await asyncio.wait_for(self._queue.join(), DRAIN_SECONDS)
        except asyncio.TimeoutError:
            log.warning("an event consumer of %s fell %s s behind and was detached", self.session_key, DRAIN_SECONDS)
            self.sink = None
        self._task.cancel()  # idle now; a later event (the compaction's) starts a new delivery task
        self._task = self._queue = None
