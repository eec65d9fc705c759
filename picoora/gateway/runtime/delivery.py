"""Outbound delivery: a result (a job's answer, the heartbeat's message, a background task's report, a
``message`` tool call) to any front door that exists.

- a running chat channel (Telegram, ...): sent now; a send that fails is a failed delivery;
- the web chat and the terminal (``picoora.inbox.KEPT_CHANNELS``): kept in that chat's transcript, shown
  when the chat is opened (``picoora agent`` lists what arrived for the terminal);
- anything else (a channel that is not running): not delivered, and the receipt says why. The caller
  records that (a scheduled job's run fails with that reason); its own transcript keeps the text.

Every text is scrubbed of the config's secrets first: this is the way out of the process for all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from picoora import inbox
from picoora.secrets import scrub

if TYPE_CHECKING:
    from picoora.store.aio import AsyncStore

log = logging.getLogger(__name__)

Send = Callable[[str, str], Awaitable[None]]  # (chat id, text)


@dataclass(frozen=True)
class Receipt:
    delivered: bool
    where: str  # "telegram:42", "web:abc (kept in the chat)", ...
    error: str = ""


class Delivery:
    def __init__(self, astore: AsyncStore, secrets: Iterable[str] = ()):
        self.astore = astore  # the owner's: the terminal and the web chat are the owner's front doors
        self._channels: dict[str, Send] = {}
        self._secrets = tuple(secrets)

    def register(self, channel: str, send: Send) -> None:
        """Deliver ``channel``'s messages through ``send`` (a running chat channel)."""
        self._channels[channel] = send

    def unregister(self, channel: str) -> None:
        self._channels.pop(channel, None)

    async def deliver(self, channel: str, chat_id: str, text: str) -> Receipt:
        where = f"{channel}:{chat_id}"
        text = scrub(text, self._secrets)
        send = self._channels.get(channel)
        if send is not None:
            try:
                await send(chat_id, text)
            except Exception as exc:  # one broken channel must not stop the others or the caller
                log.warning("the %s channel failed to deliver to chat %s: %s", channel, chat_id, exc)
                return Receipt(False, where, f"the {channel} channel could not send it: {exc}")
            return Receipt(True, where)
        if channel in inbox.KEPT_CHANNELS and chat_id:
            await self.astore.run(inbox.keep, self.astore.store, where, text)
            return Receipt(True, f"{where} (kept in the chat)")
        log.warning("no %s channel is running: a message to chat %s was not delivered", channel, chat_id)
        return Receipt(False, where, f"no {channel} channel is running")
