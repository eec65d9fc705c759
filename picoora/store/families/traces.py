"""What each turn cost and why it answered as it did (``PICO_TRACES``, ``picoora trace``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from picoora.store.families.calls import Caller

if TYPE_CHECKING:
    from picoora.store.base import TurnTrace


class Traces(Protocol):
    def append(self, trace: TurnTrace) -> None: ...
    def get(self, turn_id: str) -> TurnTrace | None: ...
    def last(self, session_key: str | None = None) -> TurnTrace | None: ...


class AsyncTraces:
    def __init__(self, family: Traces, call: Caller):
        self.append = call.wrap(family.append)
        self.get = call.wrap(family.get)
        self.last = call.wrap(family.last)
