"""A real gateway for tests: the app under uvicorn on 127.0.0.1 in a thread of its own, over real HTTP."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from picoora.config import Config, load_config
from picoora.gateway.server import GatewayServer, bind, make_server, open_gateway
from picoora.gateway.state import Gateway
from tests.cli_support import write_config
from tests.fakes.ollama_server import FakeOllama, Responder

TOKEN = "test-token-0123456789"


def gateway_config(home: Path, ollama_url: str, *, embedder: str = "none", **gateway: Any) -> Config:
    config = load_config(write_config(home, ollama_url=ollama_url, model="qwen3:latest", embedder=embedder))
    config.gateway.token = TOKEN
    for key, value in gateway.items():
        setattr(config.gateway, key, value)
    return config


class RunningGateway:
    """``with RunningGateway(config) as gw: httpx.get(gw.url + "/health")``; stopping it is a graceful shutdown."""

    def __init__(self, config: Config, runtime_factory: Callable | None = None):
        self.config = config
        self.runtime_factory = runtime_factory
        self.gateway: Gateway | None = None
        self.server: GatewayServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.gateway.token}"}

    def __enter__(self) -> RunningGateway:
        self.gateway = open_gateway(self.config)
        self.gateway.runtime_factory = self.runtime_factory
        sock = bind("127.0.0.1", 0)
        self.server = make_server(self.gateway)
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            ready.set()
            try:
                self._loop.run_until_complete(self.server.serve(sockets=[sock]))
            except SystemExit:  # uvicorn's answer to a failed start-up (it has logged why)
                pass
            finally:
                self._loop.close()

        self._thread = threading.Thread(target=run, name="gateway", daemon=True)
        self._thread.start()
        ready.wait(5)
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the gateway did not start")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self.server.port}"
        return self

    def call(self, coro) -> Any:  # noqa: ANN001 - run a coroutine on the gateway's loop (to look inside)
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10)

    def stop(self, timeout: float = 30) -> None:
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self.server.request_shutdown)
        self._thread.join(timeout)
        self._thread = None

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextmanager
def gateway_over_fake_ollama(home: Path, responder: Responder, **fake_options: Any) -> Iterator[RunningGateway]:
    """A running gateway whose model is a ``FakeOllama`` answering with ``responder``; the fake is ``gw.fake``
    (what it received: ``gw.fake.requests``)."""
    with FakeOllama(responder=responder, **fake_options) as fake, \
            RunningGateway(gateway_config(home, fake.url)) as running:
        running.fake = fake
        yield running
