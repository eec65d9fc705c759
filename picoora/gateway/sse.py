"""Server-sent events: the framing, and a turn's events as a stream that ends with its answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from picoora.agent.events import Event
    from picoora.gateway.runtime.envelopes import TurnOutcome

KEEPALIVE_SECONDS = 15.0  # a comment line now and then, so proxies keep a quiet stream (a long tool call) open
KEEPALIVE = b": keep-alive\n\n"  # an SSE comment: clients ignore it
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def frame(data: Any, event: str | None = None, event_id: str | None = None) -> bytes:
    """One SSE message; ``data`` is JSON-encoded (so it holds no raw newlines) unless it is a str already."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    lines = []
    if event_id:
        lines.append(f"id: {event_id}")
    if event:
        lines.append(f"event: {event}")
    lines.extend(f"data: {line}" for line in text.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


class TurnEvents:
    """An event sink with a queue per client: the turn never waits for the client (see ``Agent``)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self.open = True
        self._on_leave: Callable[[], None] | None = None

    def __call__(self, event: Event) -> None:
        if self.open:
            self._queue.put_nowait(event)

    def follow(self, task: asyncio.Task[TurnOutcome], on_leave: Callable[[], None] | None = None) -> None:
        """End the stream when the turn's task ends (all its events are delivered before it returns);
        ``on_leave`` is called when the client leaves before the turn's ``FinalAnswer`` reached it."""
        task.add_done_callback(lambda _: self._queue.put_nowait(None))
        self._on_leave = on_leave

    async def events(self, task: asyncio.Task[TurnOutcome]) -> AsyncIterator[Event | None]:
        """The turn's events up to its ``FinalAnswer``; None now and then while nothing happens (keep-alive).

        A turn that ended without a ``FinalAnswer`` (it crashed outside the loop) ends the stream early;
        the caller looks at ``task`` to say why."""
        ended = False  # the turn's end reached the client (else it left: the stream was closed before)
        try:
            while True:
                try:
                    event = await asyncio.wait_for(self._queue.get(), KEEPALIVE_SECONDS)
                except asyncio.TimeoutError:
                    yield None
                    continue
                ended = event is None or event.type == "final_answer"
                if event is None:
                    return
                yield event
                if ended:
                    return
        finally:
            self.open = False  # the client left or the answer is out: later events (compaction) are dropped
            if not ended and self._on_leave is not None:
                self._on_leave()
