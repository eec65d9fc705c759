"""The store from the event loop: every family of the store as coroutines, without blocking the loop.

    astore = AsyncStore(store)
    value = await astore.state.get("last_channel")  # each family's typed async form (families/)
    session = await astore.sessions.load("cli:default")

A family method with a native async form (the Oracle backend's, ``oracle/unit_of_work.py``) is awaited
directly on the driver's own event loop, with no thread per call. Everything else (the file backend's
blocking reads and fsyncs) runs in a bounded executor sized for the backend, so a gateway serving many chats
never starts a thread per request. ``run`` takes any function of the store (several reads in one go).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from picoora.store.families.calls import Caller
from picoora.store.families.documents import AsyncDocuments
from picoora.store.families.keyvalues import AsyncKeyValues, AsyncState
from picoora.store.families.memories import AsyncMemories
from picoora.store.families.notes import AsyncNotes
from picoora.store.families.prompts import AsyncPrompts
from picoora.store.families.sessions import AsyncSessions
from picoora.store.families.tool_outputs import AsyncToolOutputs
from picoora.store.families.traces import AsyncTraces
from picoora.store.families.transcripts import AsyncTranscripts
from picoora.store.protocol import Store

T = TypeVar("T")

DEFAULT_WORKERS = 4  # the file backend serialises writes under one lock: more threads only queue


class AsyncStore:
    """``executor``: run on another AsyncStore's threads (``other.executor``; a person's store on the owner's),
    which this one then never shuts down. A thread that has embedded keeps a malloc arena of its own (glibc
    makes up to eight per core): fifty people on executors of their own cost a gateway about 40 MB more."""

    def __init__(self, store: Store, *, workers: int = DEFAULT_WORKERS, executor: ThreadPoolExecutor | None = None):
        self.store = store
        self._owns_executor = executor is None
        self.executor = executor or ThreadPoolExecutor(max_workers=workers, thread_name_prefix="picoora-store")
        self._running: set[concurrent.futures.Future] = set()
        self._call = Caller(self.run)

    # Each family's async form, made when first used.
    @functools.cached_property
    def state(self) -> AsyncState:
        return AsyncState(self.store.state, self._call)

    @functools.cached_property
    def config(self) -> AsyncKeyValues:
        return AsyncKeyValues(self.store.config, self._call)

    @functools.cached_property
    def meta(self) -> AsyncKeyValues:
        return AsyncKeyValues(self.store.meta, self._call)

    @functools.cached_property
    def prompts(self) -> AsyncPrompts:
        return AsyncPrompts(self.store.prompts, self._call)

    @functools.cached_property
    def traces(self) -> AsyncTraces:
        return AsyncTraces(self.store.traces, self._call)

    @functools.cached_property
    def tool_outputs(self) -> AsyncToolOutputs:
        return AsyncToolOutputs(self.store.tool_outputs, self._call)

    @functools.cached_property
    def notes(self) -> AsyncNotes:
        return AsyncNotes(self.store.notes, self._call)

    @functools.cached_property
    def sessions(self) -> AsyncSessions:
        return AsyncSessions(self.store.sessions, self._call)

    @functools.cached_property
    def transcripts(self) -> AsyncTranscripts:
        return AsyncTranscripts(self.store.transcripts, self._call)

    @functools.cached_property
    def memories(self) -> AsyncMemories:
        return AsyncMemories(self.store.memories, self._call)

    @functools.cached_property
    def documents(self) -> AsyncDocuments:
        return AsyncDocuments(self.store.documents, self._call)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in the store's executor."""
        future = self.executor.submit(functools.partial(fn, *args, **kwargs))
        if not self._owns_executor:  # ``close`` waits for these, on threads it does not own
            self._running.add(future)
            future.add_done_callback(self._running.discard)
        return await asyncio.wrap_future(future)

    async def ping(self) -> None:
        """The store's liveness check, off the event loop (it may wait for a database)."""
        await self.run(self.store.ping)

    def close(self) -> None:
        """Stop the executor (waiting for running calls), or on a borrowed one wait for this store's calls;
        the store itself is closed by its owner."""
        if self._owns_executor:
            self.executor.shutdown(wait=True)
        else:
            concurrent.futures.wait(list(self._running))
