"""Whole tool outputs (``PICO_TOOL_OUTPUTS``), kept ``limits.TOOL_OUTPUT_DAYS`` days (and within a size bound on
files) when the model was given only their start; looked up by handle, never listed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from picoora.store.families.calls import Caller

if TYPE_CHECKING:
    from picoora.store.base import ToolOutput


class ToolOutputs(Protocol):
    def save(self, output: ToolOutput) -> None: ...
    def get(self, handle: str) -> ToolOutput | None: ...  # None: no such output (or it expired)


class AsyncToolOutputs:
    def __init__(self, family: ToolOutputs, call: Caller):
        self.save = call.wrap(family.save)
        self.get = call.wrap(family.get)
