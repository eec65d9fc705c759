"""A websocket server on 127.0.0.1 in a thread of its own, for the fakes of platforms that push events
over a socket (Discord's gateway, Slack's Socket Mode); spoken to by the channels' real client code.

The fake's ``on_connect(ws)`` coroutine runs once per connection on the server's loop; ``run(coro)``
runs a coroutine there from the test's thread and returns its result. ``SocketPlatformFake`` is a
platform's whole fake: its HTTP API and its socket.
"""

from __future__ import annotations

import abc
import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

from tests.fakes._http import FakeServer


class SocketServer:
    def __init__(self, on_connect: Callable[[ServerConnection], Awaitable[None]]):
        self._on_connect = on_connect
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self.port = 0
        self._thread = threading.Thread(target=self._serve, name="fake-socket", daemon=True)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> SocketServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with serve(self._on_connect, "127.0.0.1", 0, max_size=None) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            self._ready.set()
            await self._stop.wait()

    def run(self, coro: Awaitable[Any], timeout: float = 10.0) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        return future.result(timeout)

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


class SocketPlatformFake(FakeServer):
    """A platform fake with both halves: its HTTP API (``route``) and its socket (``on_connect``), started
    and stopped together. ``current`` is the connection the platform pushes events to."""

    def __init__(self, port: int = 0):
        super().__init__(port=port)
        self.current: ServerConnection | None = None
        self.connections = 0
        self.paused = False  # after ``drop``: new connections wait until ``reopen``
        self.sockets = SocketServer(self._connected)

    @abc.abstractmethod
    async def on_connect(self, ws: ServerConnection) -> None:
        """Speak the platform's protocol on one connection until it ends."""

    async def _connected(self, ws: ServerConnection) -> None:
        while self.paused:
            await asyncio.sleep(0.01)
        self.connections += 1
        try:
            await self.on_connect(ws)
        except Exception:  # the client went away
            pass
        finally:
            if self.current is ws:
                self.current = None

    def start(self) -> SocketPlatformFake:
        self.sockets.start()
        super().start()
        return self

    def stop(self) -> None:
        super().stop()
        self.sockets.stop()

    @property
    def connected(self) -> bool:
        return self.current is not None

    def push(self, payload: dict[str, Any]) -> None:
        """Send ``payload`` on the current connection, if there is one."""
        self.push_raw(json.dumps(payload))

    def push_raw(self, frame: str) -> None:
        """Send ``frame`` as it is (a platform's bug, or a hostile proxy)."""
        async def send() -> None:
            if self.current is not None:
                await self.current.send(frame)
        self.sockets.run(send())

    def drop(self) -> None:
        """Break the current socket without a close frame, as a network failure would; the platform is
        away (new connections wait) until ``reopen``."""
        async def abort() -> None:
            self.paused = True
            if self.current is not None:
                self.current.transport.abort()
                self.current = None
        self.sockets.run(abort())

    def reopen(self) -> None:
        self.paused = False
