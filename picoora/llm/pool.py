"""LLM clients shared by sessions: one client per (provider, model), closed only when nobody needs it.

Each session picks its model; sessions on the same model share one client (one connection pool).
A client is closed when no session has it selected and no request is in flight on it, so switching
one session's model never pulls a client out from under another session's running turn (the old
``switch_model`` closed the client globally, and a concurrent turn then failed or was re-sent by the
retries). The configured default model's client stays open until the pool is closed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from picoora.llm.base import LLM

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelChoice:
    provider: str
    model: str

    @property
    def label(self) -> str:
        return f"{self.provider}/{self.model}"


LLMFactory = Callable[[ModelChoice], LLM]


@dataclass
class _Entry:
    llm: LLM
    selected_by: int = 0  # sessions that chose this model
    in_flight: int = 0  # leases open on it right now


class ModelPool:
    """Shared clients per model.

        pool = ModelPool(factory, default=ModelChoice("ollama", "qwen3:latest"))
        async with pool.lease(choice) as llm:
            await llm.chat(...)
    """

    def __init__(self, factory: LLMFactory, *, default: ModelChoice):
        self._factory = factory
        self.default = default
        self._entries: dict[ModelChoice, _Entry] = {}
        self._closing: set[asyncio.Task[None]] = set()

    @classmethod
    def fixed(cls, llm: LLM) -> ModelPool:
        """A pool serving one ready-made client (tests, library users who build their own LLM)."""
        choice = ModelChoice(llm.provider, llm.model)

        def only(asked: ModelChoice) -> LLM:
            if asked != choice:
                raise ValueError(f"this assistant was built with one model ({choice.label}), not {asked.label}")
            return llm

        return cls(only, default=choice)

    def _entry(self, choice: ModelChoice) -> _Entry:
        entry = self._entries.get(choice)
        if entry is None:
            entry = self._entries[choice] = _Entry(self._factory(choice))
        return entry

    def select(self, choice: ModelChoice) -> None:
        """A session now uses ``choice`` (creates its client; raises what the factory raises)."""
        self._entry(choice).selected_by += 1

    def deselect(self, choice: ModelChoice) -> None:
        """A session stopped using ``choice``; its client closes once idle."""
        entry = self._entries.get(choice)
        if entry is not None:
            entry.selected_by = max(0, entry.selected_by - 1)
            self._close_if_idle(choice)

    @asynccontextmanager
    async def lease(self, choice: ModelChoice) -> AsyncIterator[LLM]:
        entry = self._entry(choice)
        entry.in_flight += 1
        try:
            yield entry.llm
        finally:
            entry.in_flight -= 1
            self._close_if_idle(choice)

    def _close_if_idle(self, choice: ModelChoice) -> None:
        entry = self._entries.get(choice)
        if entry is None or choice == self.default or entry.selected_by or entry.in_flight:
            return
        del self._entries[choice]
        task = asyncio.get_running_loop().create_task(_close_quietly(entry.llm))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def aclose(self) -> None:
        entries, self._entries = list(self._entries.values()), {}
        await asyncio.gather(*(_close_quietly(e.llm) for e in entries), *self._closing)


async def _close_quietly(llm: LLM) -> None:
    try:
        await llm.close()
    except Exception as exc:  # closing a client must never fail the caller
        log.warning("closing the %s client failed: %s", llm.model, exc)
