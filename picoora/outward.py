"""What a turn sends out of the process, made safe in one place for every front door.

``Assistant.ask`` passes each turn's events and its result through an ``Outward``: every text they carry
(streamed tokens, notices, tool results, the final answer, an error, the arguments of a tool call: the web
chat shows them, a client of the OpenAI endpoint receives its own tools' calls) is scrubbed of the config's secrets
(``picoora.secrets.scrub``), so a provider error that echoes an API key reaches no HTTP client, chat or
terminal. For a person other than the owner a failed turn says only ``GUEST_FAILURE``: provider errors
name URLs, models and paths of the owner's machine; the real reason goes to the gateway's log.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from picoora.agent.events import ErrorEvent, FinalAnswer, ReasoningEvent, TokenEvent, ToolCallStarted
from picoora.secrets import StreamScrubber, meaningful, scrub, scrub_tree

if TYPE_CHECKING:
    from picoora.agent import TurnResult
    from picoora.agent.events import Event, EventSink
    from picoora.messages import ToolCall

log = logging.getLogger(__name__)

GUEST_FAILURE = "Sorry, the model is unavailable right now, so I could not answer. Please try again later."
# The event fields that carry words (not ids, names or reasons). A tool result is scrubbed by the registry
# already, with the same secrets: a 20 KB result costs milliseconds per pass.
_TEXT_FIELDS = ("text", "message")


class Outward:
    def __init__(self, secrets: Iterable[str], *, guest: bool = False):
        self._secrets = tuple(meaningful(secrets))
        self.guest = guest

    @property
    def secrets(self) -> tuple[str, ...]:
        return self._secrets

    def text(self, text: str) -> str:
        return scrub(text, self._secrets) if self._secrets else text

    def calls(self, calls: list[ToolCall]) -> list[ToolCall]:
        if not self._secrets:
            return calls
        return [dataclasses.replace(call, arguments=scrub_tree(call.arguments, self._secrets)) for call in calls]

    def event(self, event: Event) -> Event:
        if self.guest and isinstance(event, ErrorEvent):
            return dataclasses.replace(event, message=GUEST_FAILURE)
        if self.guest and isinstance(event, FinalAnswer) and event.stop_reason == "error":
            return dataclasses.replace(event, text=GUEST_FAILURE)
        if not self._secrets:
            return event
        changed: dict[str, Any] = {}
        for name in _TEXT_FIELDS:
            value = getattr(event, name, None)
            if isinstance(value, str) and (clean := self.text(value)) != value:
                changed[name] = clean
        if isinstance(event, ToolCallStarted):
            changed["arguments"] = scrub_tree(event.arguments, self._secrets)
        if isinstance(event, FinalAnswer) and event.calls:
            changed["calls"] = self.calls(event.calls)
        return dataclasses.replace(event, **changed) if changed else event

    def sink(self, on_event: EventSink | None) -> EventSink | None:
        """``on_event`` receiving the outward form of every event; streamed text is scrubbed as one text."""
        if on_event is None:
            return None
        if not self._secrets:
            return lambda event: on_event(self.event(event))
        return _StreamingSink(self, on_event)

    def result(self, result: TurnResult) -> TurnResult:
        if self.guest and result.stop_reason == "error":
            log.warning("a guest's turn failed (they were told the model is unavailable): %s", self.text(result.text))
            return dataclasses.replace(result, text=GUEST_FAILURE)
        return dataclasses.replace(result, text=self.text(result.text), calls=self.calls(result.calls))


class _StreamingSink:
    """Streamed tokens (and reasoning) pass through a :class:`StreamScrubber` each, so a secret the model
    sends in two pieces is replaced whole; what it holds back goes out before the next other event (a tool
    call, the final answer). Holding back adds or drops pieces, so the events sent are numbered again
    (1, 2, ... like the loop's: SSE ids stay unique and in order)."""

    def __init__(self, outward: Outward, on_event: EventSink):
        self._outward = outward
        self._on_event = on_event
        self._streams: dict[type, tuple[StreamScrubber, TokenEvent | ReasoningEvent]] = {}
        self._sent = 0

    async def __call__(self, event: Event) -> None:
        if isinstance(event, (TokenEvent, ReasoningEvent)):
            scrubber = self._streams.get(type(event), (StreamScrubber(self._outward.secrets), event))[0]
            self._streams[type(event)] = (scrubber, event)
            if safe := scrubber.feed(event.text):
                await self._send(dataclasses.replace(event, text=safe))
            return
        for scrubber, last in self._streams.values():
            if rest := scrubber.flush():
                await self._send(dataclasses.replace(last, text=rest))
        await self._send(self._outward.event(event))

    async def _send(self, event: Event) -> None:
        if event.seq:
            self._sent += 1
            event = dataclasses.replace(event, seq=self._sent)
        result = self._on_event(event)
        if inspect.isawaitable(result):
            await result
