"""``/mcp`` on the gateway: picoora's memory over streamable HTTP, behind the gateway's tokens.

The caller is who the token names (``auth.person_of_token``), and their tools run on their own store
(the person's assistant from the runtime's ``PersonAssistants``), so a person's token reaches only that
person's memory. The mcp SDK costs about a second and 20 MB to import, so the server is built on the first
authenticated request, not at start-up; its session manager then runs in a task of its own until the
gateway stops (``stop``: asked for with the shutdown, so open MCP streams do not hold the drain up;
``aclose``: waits for it, before the people's assistants close).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from picoora.gateway.auth import person_of_token
from picoora.mcp_server import BearerGuard

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from picoora.gateway.state import Gateway
    from picoora.identities import Person
    from picoora.mcp_server import MemoryHttpApp
    from picoora.store.protocol import Store


class GatewayMcp:
    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        self._guard = BearerGuard(lambda token: person_of_token(gateway, token), self._serve)
        self._memory: MemoryHttpApp | None = None
        self._host: asyncio.Task[None] | None = None
        self._stopping: asyncio.Event | None = None
        self._starting: asyncio.Lock | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._guard(scope, receive, send)  # the token first: a stranger never loads the SDK

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        memory = await self._started()
        if memory is None:
            await _send_stopping(send)
            return
        await memory(scope, receive, send)

    async def _started(self) -> MemoryHttpApp | None:
        """The running memory server (built and started on first use); None once the gateway stops."""
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._memory is None and self._stopping is None:
                self._memory = await self._start()
        return None if self._stopping is not None and self._stopping.is_set() else self._memory

    async def _start(self) -> MemoryHttpApp:
        from picoora.config import secret_values
        from picoora.mcp_server import MemoryHttpApp

        config, assistant = self.gateway.config, self.gateway.assistant
        assert assistant is not None, "served only while the gateway's assistant is open"
        memory = MemoryHttpApp(self._store_for, secrets=secret_values(config), workspace=assistant.workspace,
                               host=config.gateway.host)
        stopping, running = asyncio.Event(), asyncio.Event()

        async def host() -> None:
            async with memory.lifespan():
                running.set()
                await stopping.wait()

        self._stopping, self._host = stopping, asyncio.get_running_loop().create_task(host(), name="mcp sessions")
        waiting = asyncio.ensure_future(running.wait())
        await asyncio.wait([waiting, self._host], return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._host.done():  # it could not start: this request says why, the next one tries again
            failed, self._host, self._stopping = self._host, None, None
            failed.result()
        return memory

    @asynccontextmanager
    async def _store_for(self, person: Person | None) -> AsyncIterator[Store]:
        runtime = self.gateway.runtime
        if runtime is None:
            raise RuntimeError("the gateway is not serving")
        async with runtime.people.lease(person) as assistant:
            yield assistant.store

    def stop(self) -> None:
        """Close the MCP sessions (and their open streams) soon; new requests get 503."""
        if self._stopping is None:
            self._stopping = asyncio.Event()
        self._stopping.set()

    async def aclose(self) -> None:
        self.stop()
        if self._host is not None:
            await asyncio.gather(self._host, return_exceptions=True)


async def _send_stopping(send: Send) -> None:
    body = b'{"error": {"type": "shutting_down", "message": "the gateway is shutting down"}}'
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"retry-after", b"5")]})
    await send({"type": "http.response.body", "body": body})
