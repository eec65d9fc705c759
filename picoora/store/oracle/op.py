"""One unit of work on the database, as the blocking and the async form of a method both run it
(``unit_of_work``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx

R = TypeVar("R")


@dataclass(frozen=True)
class Op(Generic[R]):
    """One unit of work as both forms run it; ``work`` None means the answer (``result``) is known without
    asking the database."""

    work: Callable[[Tx], Awaitable[R]] | None
    what: str = ""
    timeout: float | None = None
    result: R | None = None


def known(result: R) -> Op[R]:
    return Op(None, result=result)
