"""The in-process message bus between the agent and its front doors (channels, scheduled jobs, the
heartbeat, background tasks): two envelopes and two directions, in the spirit of early nanobot.

    bus = MessageBus()
    bus.subscribe("telegram", telegram_channel.send)        # outbound, by channel
    await bus.publish_inbound(InboundMessage("telegram", "42", "7", "hello"))

Channels only translate their platform to these envelopes and back; ``picoora.dispatch`` runs the turns.
Platform details that the agent does not need go in ``metadata``. The inbound queue is bounded, so a
flood from one channel slows that channel down instead of growing memory without limit.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

log = logging.getLogger(__name__)

INBOUND_CAPACITY = 1000
LAST_CHANNEL = "last_channel"  # state key: "<channel>:<chat_id>" the owner spoke on last (as the Go version)


@dataclass(frozen=True)
class InboundMessage:
    channel: str  # "telegram", "web", "cron", "heartbeat", ...
    chat_id: str
    sender_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    session_key: str = ""  # empty: "<channel>:<chat_id>"; jobs and the heartbeat choose their own

    @property
    def session(self) -> str:
        return self.session_key or f"{self.channel}:{self.chat_id}"


@dataclass(frozen=True)
class OutboundMessage:
    channel: str
    chat_id: str
    text: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


OutboundHandler = Callable[[OutboundMessage], Awaitable[None]]


class MessageBus:
    def __init__(self, capacity: int = INBOUND_CAPACITY):
        self._inbound: asyncio.Queue[InboundMessage] = asyncio.Queue(capacity)
        self._outbound: dict[str, list[OutboundHandler]] = {}

    # -- inbound: front doors -> agent ------------------------------------------------------------------

    async def publish_inbound(self, message: InboundMessage) -> None:
        await self._inbound.put(message)

    async def next_inbound(self) -> InboundMessage:
        return await self._inbound.get()

    def inbound_done(self) -> None:
        self._inbound.task_done()

    async def inbound_drained(self) -> None:
        """Wait until every published inbound message has been handled."""
        await self._inbound.join()

    # -- outbound: agent -> front doors -----------------------------------------------------------------

    def subscribe(self, channel: str, handler: OutboundHandler) -> Callable[[], None]:
        """Deliver the channel's outbound messages to ``handler``; returns the unsubscribe call."""
        self._outbound.setdefault(channel, []).append(handler)
        return lambda: self._outbound.get(channel, []).remove(handler)

    async def publish_outbound(self, message: OutboundMessage) -> bool:
        """Hand ``message`` to its channel's handlers; False when no handler took it (nothing is sent).
        A handler that fails is logged: one broken channel must not stop the others or the agent."""
        handlers = list(self._outbound.get(message.channel, []))
        if not handlers:
            log.warning("no %s channel is running: a reply to chat %s was not delivered", message.channel,
                        message.chat_id)
            return False
        delivered = False
        for handler in handlers:
            try:
                await handler(message)
                delivered = True
            except Exception:
                log.warning("the %s channel failed to deliver to chat %s", message.channel, message.chat_id,
                            exc_info=True)
        return delivered
