"""An answer streamed into one chat message by edits, as the peers' users expect, instead of a long
"typing..." and then everything at once.

``EditedReply`` is the turn's event sink: once the answer has ``START_CHARS`` characters it is posted,
then edited as it grows, at most once per the channel's ``edit_interval`` (Telegram allows about one message
a second per chat, an edit being a message for its limits; Discord and Slack set their own) and only when
the text changed. Text of the model calls
before a tool call stays, the next call's text follows a blank line. ``finish`` puts the final answer in
its place, complete and formatted: the first piece into the streamed message, the rest (past the
platform's length limit) as new messages. A stream that never posted leaves the final answer to the usual
delivery. While streaming only the first piece is shown, since the rest could not fit one message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from picoora.agent.events import Event, TokenEvent, ToolCallStarted
from picoora.gateway.channels.base import STREAMING_MARK

if TYPE_CHECKING:
    from picoora.gateway.channels.base import EditsMessages

log = logging.getLogger(__name__)

START_CHARS = 24
EDIT_SECONDS = 1.0


class EditedReply:
    def __init__(self, channel: EditsMessages, chat_id: str, *, interval: float = EDIT_SECONDS,
                 clock: Callable[[], float] = time.monotonic):
        self.channel, self.chat_id = channel, chat_id
        self.interval, self.clock = interval, clock
        self.message_id: str | None = None
        self.edits = 0
        self._text = ""
        self._shown = ""
        self._last = 0.0
        self._after_tool = False
        self._broken = False  # the platform refused an edit: the final answer goes the usual way

    async def __call__(self, event: Event) -> None:
        if isinstance(event, ToolCallStarted):
            self._after_tool = bool(self._text.strip())
        elif isinstance(event, TokenEvent) and event.text:
            if self._after_tool:
                self._text, self._after_tool = self._text.rstrip() + "\n\n", False
            self._text += event.text
            await self._show()

    async def _show(self) -> None:
        if self._broken:
            return
        preview = self.channel.split(self._text)[0].rstrip() + STREAMING_MARK
        try:
            if self.message_id is None:
                if len(self._text.strip()) >= START_CHARS:
                    self.message_id = await self.channel.start_message(self.chat_id, preview)
                    self._shown, self._last = preview, self.clock()
            elif preview != self._shown and self.clock() - self._last >= self.interval:
                await self.channel.edit_message(self.chat_id, self.message_id, preview, final=False)
                self._shown, self._last, self.edits = preview, self.clock(), self.edits + 1
        except Exception as exc:  # a lost preview is cosmetic; the final answer still arrives
            log.warning("%s: streaming the answer by edits failed: %s", self.channel.name, exc)
            self._broken = self.message_id is not None

    async def finish(self, text: str) -> bool:
        """Put the final ``text`` in place of the streamed one; False when nothing was posted (or the stream
        broke), so the caller delivers ``text`` as usual."""
        if self.message_id is None or self._broken:
            return False
        first, *rest = self.channel.split(text or "(no answer)")
        await self.channel.edit_message(self.chat_id, self.message_id, first, final=True)
        self.edits += 1
        for piece in rest:
            await self.channel.deliver(self.chat_id, piece)
        return True
