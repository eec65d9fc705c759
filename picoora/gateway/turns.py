"""Turns as gateway-owned tasks: a client that disconnects neither cancels nor loses its turn, and a
shutdown stops taking new turns, waits for the running ones up to a deadline, then cancels the rest
(the agent records a cancelled turn's messages, so nothing acknowledged is lost)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from picoora.gateway.errors import ApiError
from picoora.gateway.sse import TurnEvents

if TYPE_CHECKING:
    from picoora.agent import TurnResult
    from picoora.agent.events import EventSink
    from picoora.assistant import Assistant

log = logging.getLogger("picoora.gateway")


class TurnRunner:
    def __init__(self, assistant: Assistant):
        self.assistant = assistant
        self.accepting = True
        self._tasks: set[asyncio.Task[TurnResult]] = set()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def start(self, text: str, session_key: str, on_event: EventSink | None = None) -> asyncio.Task[TurnResult]:
        if not self.accepting:
            raise ApiError(503, "shutting_down", "the gateway is shutting down and takes no new turns",
                           {"Retry-After": "5"})
        task = asyncio.get_running_loop().create_task(self.assistant.ask(text, session_key, on_event))
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def stream(self, text: str, session_key: str) -> tuple[asyncio.Task[TurnResult], TurnEvents]:
        """Start a turn whose events a streaming response reads from a queue of its own."""
        sink = TurnEvents()
        task = self.start(text, session_key, sink)
        sink.follow(task)
        return task, sink

    def _finished(self, task: asyncio.Task[TurnResult]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a turn failed outside the agent loop", exc_info=task.exception())

    def stop_accepting(self) -> None:
        self.accepting = False

    async def drain(self, deadline_seconds: float) -> int:
        """Wait for running turns up to ``deadline_seconds``; cancel what is left. Returns how many were cancelled."""
        self.accepting = False
        pending = set(self._tasks)
        if not pending:
            return 0
        _, late = await asyncio.wait(pending, timeout=deadline_seconds)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        return len(late)


async def turn_result(task: asyncio.Task[TurnResult]) -> TurnResult:
    """The turn's result; the caller going away (cancelled) leaves the turn running."""
    return await asyncio.shield(task)
