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
from picoora.store.oracle.context import OpenContext, OracleContext
from picoora.store.oracle.families import FamilySettings, OracleFamilies

if TYPE_CHECKING:
    from picoora.store.base import BackendDetails, StoreStats
    from picoora.store.oracle.connection import Database
    from picoora.store.oracle.store import OracleStore

RETRY_SECONDS = 5.0


class AwaitedContext(OracleContext):
    """The context of the store once it is open. A blocking call opens it in the caller's thread; an async one
    in a worker thread (``asyncio.to_thread``), so no call ever connects on the event loop."""

    def __init__(self, store: AwaitedOracleStore, agent_id: str):
        super().__init__(agent_id)
        self._store = store

    def opened(self) -> OpenContext:
        return self._store.opened().context

    def database(self) -> Database:
        return self.opened().db

    async def adatabase(self) -> Database:
        if not self._store.is_open:
            await asyncio.to_thread(self._store.opened)
        return self.opened().db


class AwaitedOracleStore(OracleFamilies):
    """``agent_id``: whose rows the store reads once it is open (the config's, or a person's)."""

    backend = "oracle"
    display_name = "Oracle AI Database"

    def __init__(self, opener: Callable[[], OracleStore], failure: Exception, *, agent_id: str,
                 settings: FamilySettings, retry_seconds: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self._opener = opener
        self._failure = str(failure)
        self._retry_seconds = RETRY_SECONDS if retry_seconds is None else retry_seconds
        self._clock = clock
        self._next_try = clock() + self._retry_seconds
        self._store: OracleStore | None = None
        self._guard = threading.Lock()
        self._build(AwaitedContext(self, agent_id), settings)

    @property
    def is_open(self) -> bool:
        return self._store is not None

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

    def stats(self) -> StoreStats:
        return self.opened().stats()

    def ping(self) -> None:
        self.opened().ping()

    def details(self) -> BackendDetails:
        return self.opened().details()

    @property
    def location(self) -> str:
        return self._store.location if self._store is not None else "Oracle AI Database (not reachable yet)"

    def for_agent(self, agent_id: str) -> AwaitedOracleStore:
        """A person's rows: opened through this store (no attempts of its own)."""
        return AwaitedOracleStore(lambda: self.opened().for_agent(agent_id), StoreError(self._failure),
                                  agent_id=agent_id, settings=self.settings, retry_seconds=0.0, clock=self._clock)

    def exclusive_service_lock(self, service: str, details: dict[str, Any]) -> None:
        return None  # Oracle lets several gateways run

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
