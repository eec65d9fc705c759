"""A required Oracle store that cannot be reached yet (``oracle.required``): never a file fallback.

On a single machine files are the right fallback. In a fleet behind a load balancer they are wrong: a node
that lost its database would quietly serve from local files, splitting the data. So with
``oracle.required`` ``open_store`` returns this instead: until the database answers, every call raises
``StoreError`` naming the database and why (the HTTP API answers 503, ``/ready`` names the failing store
check, so the load balancer sends traffic elsewhere), and a call at most every ``RETRY_SECONDS`` tries to
open it again. Once one succeeds, every call goes to the real ``OracleStore``. No file is ever written.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from picoora.store.base import StoreError
from picoora.store.oracle.connection import OracleUnavailable

if TYPE_CHECKING:
    from picoora.store.oracle.store import OracleStore

RETRY_SECONDS = 5.0


class AwaitedOracleStore:
    backend = "oracle"
    display_name = "Oracle AI Database"

    def __init__(self, opener: Callable[[], OracleStore], failure: Exception, *, retry_seconds: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self._opener = opener
        self._failure = str(failure)
        self._retry_seconds = RETRY_SECONDS if retry_seconds is None else retry_seconds
        self._clock = clock
        self._next_try = clock() + self._retry_seconds
        self._store: OracleStore | None = None
        self._guard = threading.Lock()

    def opened(self) -> OracleStore:
        """The real store, opening it when the last attempt is old enough; else StoreError saying why."""
        if self._store is not None:
            return self._store
        with self._guard:
            if self._store is None and self._clock() >= self._next_try:
                try:
                    self._store = self._opener()
                except (OracleUnavailable, StoreError) as exc:
                    self._failure = str(exc)
                    self._next_try = self._clock() + self._retry_seconds
            if self._store is None:
                raise StoreError(f"{self._failure} (oracle.required is set, so picoora does not fall back to "
                                 "files; it retries until the database answers)")
        return self._store

    def __getattr__(self, name: str) -> Any:
        """Every Store method, on the real store (once it is open)."""
        if name.startswith("_"):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(self.opened(), name)(*args, **kwargs)

        call.__name__ = name
        return call

    @property
    def location(self) -> str:
        return self._store.location if self._store is not None else "Oracle AI Database (not reachable yet)"

    def native_async(self) -> None:
        return None  # AsyncStore runs the blocking forms (which wait for the database) on its threads

    def for_agent(self, agent_id: str) -> AwaitedOracleStore:
        """A person's rows: opened through this store (no attempts of its own)."""
        return AwaitedOracleStore(lambda: self.opened().for_agent(agent_id), StoreError(self._failure),
                                  retry_seconds=0.0, clock=self._clock)

    def leases(self) -> AwaitedLeases:
        return AwaitedLeases(self)

    def exclusive_service_lock(self, service: str, details: dict[str, Any]) -> None:
        return None  # Oracle lets several gateways run

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


class AwaitedLeases:
    """The real store's leases once it is open; until then every ask fails with the store's StoreError."""

    shared = True

    def __init__(self, store: AwaitedOracleStore):
        self._store = store

    async def acquire(self, name: str, holder: str, seconds: float) -> bool:
        return await (await asyncio.to_thread(self._store.opened)).leases().acquire(name, holder, seconds)

    async def claim(self, name: str, seconds: float) -> bool:
        return await (await asyncio.to_thread(self._store.opened)).leases().claim(name, seconds)

    async def release(self, name: str, holder: str) -> None:
        await (await asyncio.to_thread(self._store.opened)).leases().release(name, holder)
