"""The one small interface every chat channel implements, and the chores they share.

A channel only translates: it receives platform updates and calls :meth:`Channel.receive`, and it
implements :meth:`Channel.send` for replies (the bus calls it). The base does the rest, the same for every
platform:

- admission: ``picoora.people.Directory`` decides who is let in and as whom; an unknown sender gets one
  short reply with a pairing code and nothing else: their text never reaches the model;
- the envelope: an admitted message goes to the bus as an ``InboundMessage`` carrying its person;
- a typing indicator while the assistant works on a chat, stopped when the reply is sent.

Adding Discord or Slack is one module: subclass ``Channel``, implement ``run`` (receive until cancelled),
``deliver`` (send one piece of text) and optionally ``show_typing``, and register it in ``CHANNELS``
(``picoora/gateway/channels/__init__.py``).
"""

from __future__ import annotations

import abc
import asyncio
import logging

from picoora.bus import InboundMessage, MessageBus, OutboundMessage
from picoora.config import ChannelConfig
from picoora.people import Directory, Pairing, Sender

log = logging.getLogger(__name__)

TYPING_REFRESH_SECONDS = 4.0  # Telegram shows "typing" for about 5 s per request
TYPING_LIMIT_SECONDS = 600.0  # never type for ever if a reply is lost
PAIRING_REPLY = ("I don't know you yet, so I can't help here. Ask my owner to let you in with:\n"
                 "picoora pair approve {code}\n(this code works for one hour)")


class Channel(abc.ABC):
    name: str

    def __init__(self, config: ChannelConfig, bus: MessageBus, directory: Directory, pairing: Pairing):
        self.config = config
        self.bus = bus
        self.directory = directory
        self.pairing = pairing
        self._typing: dict[str, asyncio.Task[None]] = {}
        self._unsubscribe = bus.subscribe(self.name, self.send)

    @abc.abstractmethod
    async def run(self) -> None:
        """Receive messages until cancelled; network trouble is retried here, never raised."""

    @abc.abstractmethod
    async def deliver(self, chat_id: str, text: str) -> None:
        """Send one reply to ``chat_id`` (splitting and formatting are the channel's business)."""

    async def show_typing(self, chat_id: str) -> None:
        """Tell the chat the assistant is working (once; the base repeats it). Optional."""

    async def receive(self, sender: Sender, chat_id: str, text: str, **metadata: object) -> bool:
        """One incoming message: admitted and published, or answered with a pairing code. True if admitted."""
        person = await asyncio.to_thread(self.directory.admit, sender, self.config.allow_from)
        if person is None:
            request, new = await asyncio.to_thread(self.pairing.request, sender)
            log.info("%s: refused a message from unknown sender %s (pairing code issued)", self.name,
                     sender.sender_id)
            if new:  # said once per code, so a stranger cannot make the bot talk in a loop
                await self._deliver_safely(chat_id, PAIRING_REPLY.format(code=request.code))
            return False
        self._start_typing(chat_id)
        await self.bus.publish_inbound(InboundMessage(self.name, chat_id, sender.sender_id, text,
                                                      metadata={"person": person, **metadata}))
        return True

    async def send(self, message: OutboundMessage) -> None:
        self._stop_typing(message.chat_id)
        await self.deliver(message.chat_id, message.text)

    async def _deliver_safely(self, chat_id: str, text: str) -> None:
        try:
            await self.deliver(chat_id, text)
        except Exception as exc:
            log.warning("%s: could not reply to chat %s: %s", self.name, chat_id, exc)

    def _start_typing(self, chat_id: str) -> None:
        if chat_id not in self._typing:
            self._typing[chat_id] = asyncio.get_running_loop().create_task(self._keep_typing(chat_id))

    def _stop_typing(self, chat_id: str) -> None:
        task = self._typing.pop(chat_id, None)
        if task is not None:
            task.cancel()

    async def _keep_typing(self, chat_id: str) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + TYPING_LIMIT_SECONDS
        while loop.time() < until:
            try:
                await self.show_typing(chat_id)
            except Exception as exc:  # a lost "typing" is cosmetic
                log.debug("%s: typing indicator failed: %s", self.name, exc)
            await asyncio.sleep(TYPING_REFRESH_SECONDS)
        self._typing.pop(chat_id, None)

    async def close(self) -> None:
        self._unsubscribe()
        for task in self._typing.values():
            task.cancel()
        self._typing.clear()
