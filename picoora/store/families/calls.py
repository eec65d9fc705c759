"""How a family's async form calls its blocking one, with the blocking method's exact signature for mypy.

A blocking method may carry a coroutine form of its own (``with_native_form``: the Oracle backend's
methods, which await the driver's asyncio API on the database's event loop, no thread per call); the
async form awaits that. Any other method (the file backend's reads and fsyncs, a person's filtered
prompts) runs in the store's bounded executor (``AsyncStore.run``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar, cast

P = ParamSpec("P")
R = TypeVar("R")

_NATIVE = "__picoora_native_form__"


def with_native_form(blocking: Callable[..., Any], native: Callable[..., Awaitable[Any]]) -> None:
    """Record ``native`` (same arguments as ``blocking``, ``self`` first) as the coroutine form of ``blocking``."""
    setattr(blocking, _NATIVE, native)


def native_form(method: Callable[P, R]) -> Callable[P, Awaitable[R]] | None:
    """The coroutine form a bound method carries, bound to the same object; None when it has none."""
    native = getattr(getattr(method, "__func__", None), _NATIVE, None)
    if native is None:
        return None
    return cast("Callable[P, Awaitable[R]]", functools.partial(native, method.__self__))  # type: ignore[attr-defined]


class Caller:
    """``run(fn, *args, **kwargs)`` runs a blocking call off the event loop (the store's bounded executor)."""

    def __init__(self, run: Callable[..., Awaitable[Any]]):
        self._run = run

    def wrap(self, method: Callable[P, R]) -> Callable[P, Awaitable[R]]:
        native = native_form(method)
        if native is not None:
            return native

        @functools.wraps(method)
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return cast("R", await self._run(method, *args, **kwargs))

        return call
