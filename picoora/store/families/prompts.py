"""The workspace prompt files (``PICO_PROMPTS``): IDENTITY, SOUL, AGENT, USER, AGENTS (``base.PROMPT_NAMES``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from picoora.store.families.calls import Caller

if TYPE_CHECKING:
    from picoora.store.base import Prompt


class Prompts(Protocol):
    def list(self) -> list[Prompt]: ...  # the PROMPT_NAMES that exist, in that order
    def get(self, name: str) -> Prompt | None: ...
    def set(self, name: str, content: str) -> None: ...


class AsyncPrompts:
    def __init__(self, family: Prompts, call: Caller):
        self.list = call.wrap(family.list)
        self.get = call.wrap(family.get)
        self.set = call.wrap(family.set)
