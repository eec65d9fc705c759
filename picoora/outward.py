"""What a turn sends out of the process, made safe in one place for every front door.

``Assistant.ask`` passes each turn's events and its result through an ``Outward``: every text they carry
(streamed tokens, notices, tool results, the final answer, an error) is scrubbed of the config's secrets
(``picoora.secrets.scrub``), so a provider error that echoes an API key reaches no HTTP client, chat or
terminal. For a person other than the owner a failed turn says only ``GUEST_FAILURE``: provider errors
name URLs, models and paths of the owner's machine; the real reason goes to the gateway's log.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from picoora.agent.events import ErrorEvent, FinalAnswer
from picoora.secrets import meaningful, scrub

if TYPE_CHECKING:
    from picoora.agent import TurnResult
    from picoora.agent.events import Event, EventSink

log = logging.getLogger(__name__)

GUEST_FAILURE = "Sorry, the model is unavailable right now, so I could not answer. Please try again later."
# The event fields that carry words (not ids, names or reasons). A tool result is scrubbed by the registry
# already, with the same secrets: a 20 KB result costs milliseconds per pass.
_TEXT_FIELDS = ("text", "message")


class Outward:
    def __init__(self, secrets: Iterable[str], *, guest: bool = False):
        self._secrets = tuple(meaningful(secrets))
        self.guest = guest

    def text(self, text: str) -> str:
        return scrub(text, self._secrets) if self._secrets else text

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
        return dataclasses.replace(event, **changed) if changed else event

    def sink(self, on_event: EventSink | None) -> EventSink | None:
        """``on_event`` receiving the outward form of every event."""
        if on_event is None:
            return None
        return lambda event: on_event(self.event(event))

    def result(self, result: TurnResult) -> TurnResult:
        if self.guest and result.stop_reason == "error":
            log.warning("a guest's turn failed (they were told the model is unavailable): %s", self.text(result.text))
            return dataclasses.replace(result, text=GUEST_FAILURE)
        return dataclasses.replace(result, text=self.text(result.text))
