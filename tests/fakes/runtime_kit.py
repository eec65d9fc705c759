"""The gateway's runtime in tests, without HTTP: a real ``GatewayRuntime`` on an open assistant whose chat
channels are recorders, and a stand-in turn service for the scheduler's own tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from picoora.agent import TurnResult
from picoora.gateway.channels.links import Inbound
from picoora.gateway.runtime.delivery import Delivery
from picoora.gateway.runtime.envelopes import TurnOutcome
from picoora.gateway.runtime.services import GatewayRuntime


@dataclass
class Sent:
    channel: str
    chat_id: str
    text: str


@dataclass
class Recorders:
    sent: list[Sent] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)  # channels whose send raises

    def sender(self, channel: str) -> Any:
        async def send(chat_id: str, text: str) -> None:
            if channel in self.broken:
                raise ConnectionError(f"{channel} is down")
            self.sent.append(Sent(channel, chat_id, text))
        return send

    def texts(self, channel: str, chat_id: str) -> list[str]:
        return [s.text for s in self.sent if (s.channel, s.chat_id) == (channel, chat_id)]


@asynccontextmanager
async def running_runtime(assistant: Any, channels: tuple[str, ...] = ("telegram",),
                          drain_seconds: float = 20.0) -> AsyncIterator[tuple[GatewayRuntime, Recorders]]:
    """The runtime with the messaging tools on and a recorder standing in for each chat channel; at the end
    a real shutdown: intake stopped, turns drained, people's assistants closed."""
    runtime = GatewayRuntime(assistant)
    assistant.enable_messaging(runtime.messenger)
    recorders = Recorders()
    for name in channels:
        runtime.delivery.register(name, recorders.sender(name))
    try:
        yield runtime, recorders
    finally:
        await runtime.stop_intake()
        await runtime.turns.drain(drain_seconds)
        await runtime.close()


class ScriptedTurns:
    """A turn service that answers every turn at once with ``answer`` (or fails it with ``error``)."""

    def __init__(self, answer: str = "done", error: str = ""):
        self.answer, self.error = answer, error
        self.submitted: list[Inbound] = []

    def submit(self, inbound: Inbound, *, on_event: Any = None, then: Any = None) -> asyncio.Task[TurnOutcome]:
        self.submitted.append(inbound)

        async def turn() -> TurnOutcome:
            if self.error:
                outcome = TurnOutcome.of(TurnResult(self.error, "error", 1, 0))
            else:
                outcome = TurnOutcome.of(TurnResult(self.answer, "answer", 1, 0))
            if then is not None:
                await then(inbound, outcome)
            return outcome

        return asyncio.get_running_loop().create_task(turn())


def recording_delivery(astore: Any, channels: tuple[str, ...] = ("telegram",)) -> tuple[Delivery, Recorders]:
    delivery, recorders = Delivery(astore), Recorders()
    for name in channels:
        delivery.register(name, recorders.sender(name))
    return delivery, recorders
