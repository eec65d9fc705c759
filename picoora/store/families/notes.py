"""Daily notes (``PICO_DAILY_NOTES``): one journal entry per day, appended to."""

from __future__ import annotations

import builtins
from datetime import date
from typing import TYPE_CHECKING, Protocol

from picoora.store.families.calls import Caller

if TYPE_CHECKING:
    from picoora.store.base import DailyNote, DailyNoteRow


class Notes(Protocol):
    def append(self, content: str, day: date | None = None) -> DailyNote: ...
    def recent(self, days: int = 3) -> builtins.list[DailyNote]: ...  # today and days-1 before, newest first
    def list(self, limit: int) -> builtins.list[DailyNoteRow]: ...  # newest first, without loading the rest
    def search(self, query: str, limit: int = 5) -> builtins.list[tuple[DailyNote, float]]: ...


class AsyncNotes:
    def __init__(self, family: Notes, call: Caller):
        self.append = call.wrap(family.append)
        self.recent = call.wrap(family.recent)
        self.list = call.wrap(family.list)
        self.search = call.wrap(family.search)
