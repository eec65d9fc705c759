"""A Store wrapper for agent tests: delegates to a real store and records every call, in order.

``fail`` makes chosen methods raise ``StoreError`` (to test the loop's handling of a broken store);
``calls`` lists (method, session key or first argument) as the loop made them.
"""

from __future__ import annotations

from typing import Any

from picoora.store.base import StoreError


class RecordingStore:
    def __init__(self, inner: Any, fail: set[str] | None = None):
        self._inner = inner
        self.fail = set(fail or ())
        self.calls: list[tuple[str, Any]] = []

    @property
    def backend(self) -> str:
        return self._inner.backend

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if not callable(target):
            return target

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args[0] if args else None))
            if name in self.fail:
                raise StoreError(f"{name} failed (injected by the test)")
            return target(*args, **kwargs)

        return recorded

    def methods(self) -> list[str]:
        return [name for name, _ in self.calls]
