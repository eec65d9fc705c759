"""Each Oracle method written once, as the builder of its unit of work; the blocking and the async form are
derived from it, so they cannot drift apart.

    class OracleState:
        @unit_of_work
        def get(self, key: str) -> Op[str | None]: ...

makes ``get(key) -> str | None``, which runs the unit of work with ``Database.run``, and records beside it
the coroutine form that awaits the same unit with ``Database.arun`` (``families.calls``: the async family
awaits it). Arguments are checked when the unit is built, so both forms raise the same errors.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar

from picoora.store.families.calls import with_native_form
from picoora.store.oracle.op import Op

if TYPE_CHECKING:
    from picoora.store.oracle.context import OracleContext

P = ParamSpec("P")
R = TypeVar("R")


class InContext(Protocol):
    @property
    def ctx(self) -> OracleContext: ...


S = TypeVar("S", bound=InContext)


def unit_of_work(build: Callable[Concatenate[S, P], Op[R]]) -> Callable[Concatenate[S, P], R]:
    @functools.wraps(build)
    def blocking(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.ctx.do(build(self, *args, **kwargs))

    @functools.wraps(build)
    async def native(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self.ctx.ado(build(self, *args, **kwargs))

    with_native_form(blocking, native)
    return blocking
