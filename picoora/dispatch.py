"""Runs the bus's inbound messages as turns and publishes the replies: the one entry point channels,
scheduled jobs and the heartbeat share (no side door into the agent, so no race with other turns).

A message may name where its reply goes (``reply_channel``/``reply_chat_id`` in its metadata: a scheduled
job answers the chat that set it up). Messages of one session are handled in arrival order, one at a time; different sessions concurrently.
A session's worker lives while it has messages, so thousands of quiet chats cost nothing. Every handled
message records ``last_channel`` ("<channel>:<chat_id>", as the Go version does) so the heartbeat and
background tasks know where the owner spoke last; internal channels (jobs, the heartbeat) do not. A message
a channel admitted carries its ``person`` (``picoora.people``); the turn runs in that person's scope.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from picoora.bus import LAST_CHANNEL, InboundMessage, MessageBus, OutboundMessage

if TYPE_CHECKING:
    from picoora.assistant import Assistant

log = logging.getLogger(__name__)

INTERNAL_CHANNELS = frozenset({"cron", "heartbeat", "system"})


class Dispatcher:
    def __init__(self, assistant: Assistant, bus: MessageBus):
        self.assistant = assistant
        self.bus = bus
        self._queues: dict[str, asyncio.Queue[InboundMessage]] = {}
        self._workers: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Take inbound messages until cancelled; the turns already started finish on their own."""
        while True:
            message = await self.bus.next_inbound()
            queue = self._queues.get(message.session)
            if queue is None:
                queue = self._queues[message.session] = asyncio.Queue()
                task = asyncio.get_running_loop().create_task(self._session_worker(message.session, queue))
                self._workers.add(task)
                task.add_done_callback(self._workers.discard)
            queue.put_nowait(message)

    async def _session_worker(self, session: str, queue: asyncio.Queue[InboundMessage]) -> None:
        while True:
            message = queue.get_nowait()
            try:
                await self.handle(message)
            except Exception:  # a bug in one turn must not stop the session's later messages
                log.exception("handling a %s message failed", message.channel)
            finally:
                self.bus.inbound_done()
            if queue.empty():
                del self._queues[session]  # nothing can be added between the check and here: one loop
                return

    async def handle(self, message: InboundMessage) -> None:
        # Channels admit senders and say who they are; jobs and the heartbeat are the owner's (this assistant).
        person = message.metadata.get("person")
        assistant = self.assistant.for_person(person) if person else self.assistant
        if message.channel not in INTERNAL_CHANNELS:
            await assistant.astore.set_state(LAST_CHANNEL, f"{message.channel}:{message.chat_id}")
        result = await assistant.ask(message.text, session_key=message.session)
        said = getattr(assistant.messenger, "already_said", None)
        if said is not None and said(message.session, result.text):
            return  # the model already sent this reply with the message tool: not twice
        # Jobs and background tasks answer elsewhere: the chat that asked for them.
        channel = message.metadata.get("reply_channel", message.channel)
        chat_id = message.metadata.get("reply_chat_id", message.chat_id)
        await self.bus.publish_outbound(OutboundMessage(channel, chat_id, result.text,
                                                        metadata={"turn_id": result.turn_id,
                                                                  "stop_reason": result.stop_reason}))

    async def wait_idle(self) -> None:
        await self.bus.inbound_drained()
