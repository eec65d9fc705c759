"""Running the gateway: bind, serve with uvicorn, print what started where, stop cleanly on a signal.

SIGTERM or SIGINT: stop taking turns (503), let in-flight turns finish up to ``gateway.shutdown_seconds``
(uvicorn waits for their connections, the lifespan for turns whose clients left), cancel the rest,
close the store, exit 0. A second Ctrl+C stops at once. Uvicorn's access log stays off: the web chat's
URL carries the token, and tokens never reach a log."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import uvicorn

from picoora.gateway.app import create_app
from picoora.gateway.binding import base_url, chat_url, effective_token
from picoora.gateway.state import Gateway

if TYPE_CHECKING:
    from picoora.config import Config


class GatewayServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, gateway: Gateway):
        super().__init__(config)
        self.gateway = gateway

    def request_shutdown(self) -> None:
        self.gateway.request_stop()
        self.should_exit = True

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Unlike uvicorn's own handler, the signal is not re-raised after the shutdown: a clean stop exits 0.
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.request_shutdown()

    @property
    def port(self) -> int:
        return self.servers[0].sockets[0].getsockname()[1]


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (so a port in use is a clear error before anything starts). Raises OSError."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def open_gateway(config: Config, *, config_path: Path | None = None) -> Gateway:
    """The gateway's state with its assistant open. Raises BindingRefused, StoreError or LLMError."""
    from picoora.assistant import build_assistant

    token, _ = effective_token(config.gateway.host, config.gateway.token)
    gateway = Gateway(config=config, token=token, config_path=config_path, one_off_token=not config.gateway.token)
    gateway.assistant = build_assistant(config, config_path=config_path, on_fallback=gateway.on_fallback.append)
    return gateway


LISTENING = "gateway.listening"  # state key: host:port of the gateway that started last


def workspace_lock(gateway: Gateway, port: int) -> AbstractContextManager[Any]:
    """The store's one-gateway lock, to hold from before serving until the gateway has stopped: on files one
    gateway per workspace (``store/files/service_lock.py``), on Oracle none. Entering it raises StoreError naming
    the gateway that holds it (PID, ``port``); then close the unserved gateway with ``close_unserved``."""
    assert gateway.assistant is not None, "open_gateway first"
    lock = gateway.assistant.store.exclusive_service_lock("gateway", {"port": port})
    return lock if lock is not None else contextlib.nullcontext()


def close_unserved(gateway: Gateway) -> None:
    """Close the assistant of a gateway that never served (its lifespan, which would close it, never ran)."""
    if gateway.assistant is not None:
        asyncio.run(gateway.assistant.aclose())


def make_server(gateway: Gateway) -> GatewayServer:
    settings = gateway.config.gateway
    config = uvicorn.Config(create_app(gateway), log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=int(settings.shutdown_seconds + 0.999),
                            server_header=False, proxy_headers=False)
    return GatewayServer(config, gateway)


async def serve(gateway: Gateway, sock: socket.socket, on_started: Callable[[GatewayServer], None]) -> None:
    server = make_server(gateway)
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started and not serving.done():
        await asyncio.sleep(0.02)
    if server.started:
        if gateway.assistant is not None:  # what will not work, said before the first request finds out
            from picoora.gateway.readiness import run_checks, warnings

            gateway.start_warnings = warnings(await run_checks(gateway.assistant))
            # Where it listens, for `picoora status` (a --port run is not at gateway.port).
            await gateway.assistant.astore.state.set(LISTENING, f"{gateway.config.gateway.host}:{server.port}")
        on_started(server)
    await serving


def banner(gateway: Gateway, port: int, *, show_token: bool) -> list[str]:
    """The start-up lines. ``show_token``: put the token into the web chat URL; off when the lines go to a
    log (a service's journal) and the token is configured, since tokens never reach logs."""
    from picoora import __version__

    settings = gateway.config.gateway
    assistant = gateway.assistant
    base = base_url(settings.host, port)
    web_chat = (chat_url(settings.host, port, gateway.token) if show_token
                else f"{base}/?token=<gateway.token> (the token is in the config, kept out of logs)")
    lines = [
        f"picoora gateway {__version__} listening on {base}",
        f"  web chat:  {web_chat}",
        f"  HTTP API:  {base}/v1/chat, OpenAI-compatible {base}/v1/chat/completions "
        "(Authorization: Bearer <token>; OpenAPI at /openapi.json)",
        f"  MCP:       {base}/mcp (picoora's memory, the same tokens; people's: `picoora token create NAME`)",
        f"  health:    {base}/health (no token), {base}/ready",
    ]
    if assistant is not None:
        lines.append(f"  model:     {assistant.models.default.label}")
        lines.append(f"  storage:   {getattr(assistant.store, 'backend', 'store')} (workspace {assistant.workspace})")
    lines.extend(f"  note:      {line}" for line in gateway.on_fallback)
    lines.extend(f"  warning:   {line} (/ready says so too)" for line in gateway.start_warnings)
    lines.append(f"  services:  {', '.join(gateway.service_lines) or 'none'}")
    if gateway.channel_lines:
        lines.append(f"  channels:  {', '.join(gateway.channel_lines)}")
    if gateway.one_off_token:
        lines.append("  token:     made up for this run; set gateway.token (`picoora onboard` writes one) to keep it")
    lines.append("Stop with Ctrl+C or SIGTERM (running turns get "
                 f"{settings.shutdown_seconds:g} s to finish).")
    return lines
