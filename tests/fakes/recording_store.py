"""A Store wrapper for agent tests: delegates to a real store and records every call, in order.

``fail`` makes chosen methods raise ``StoreError`` (to test the loop's handling of a broken store);
``calls`` lists (method, session key or first argument) as the loop made them. A family's methods are
named with their family: ``sessions.append``, ``notes.recent``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from picoora.store.base import StoreError

FAMILIES = frozenset({"state", "config", "meta", "prompts", "traces", "tool_outputs", "notes", "sessions",
                      "transcripts", "memories"})


class Recorded:
    """``inner``'s callables, each calling ``record(name, args)`` first; ``prefix`` names a family."""

    def __init__(self, inner: Any, record: Callable[[str, tuple], None], prefix: str = ""):
        self._inner, self._record, self._prefix = inner, record, prefix

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not self._prefix and name in FAMILIES:
            return Recorded(target, self._record, f"{name}.")
        if not callable(target):
            return target

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self._record(self._prefix + name, args)
            return target(*args, **kwargs)

        return recorded


class RecordingStore(Recorded):
    def __init__(self, inner: Any, fail: set[str] | None = None):
        super().__init__(inner, self._note)
        self.fail = set(fail or ())
        self.calls: list[tuple[str, Any]] = []

    @property
    def backend(self) -> str:
        return self._inner.backend

    def _note(self, name: str, args: tuple) -> None:
        self.calls.append((name, args[0] if args else None))
        if name in self.fail:
            raise StoreError(f"{name} failed (injected by the test)")

    def methods(self) -> list[str]:
        return [name for name, _ in self.calls]
