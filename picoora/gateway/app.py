"""The FastAPI app of ``picoora gateway``: routers, limits, CORS, error shapes and the lifespan.

The lifespan starts the gateway's runtime (``picoora.gateway.runtime``: the turn service, channels,
scheduler, heartbeat) on the open assistant, and on the way out stops taking turns from every door,
drains the turns in flight (HTTP, channels, jobs, the heartbeat, background tasks) up to
``gateway.shutdown_seconds``, cuts off the rest, closes the MCP sessions (``/mcp``), the channels and
the assistant (which waits for background compactions and closes the store)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI

from picoora.gateway.auth import require_token
from picoora.gateway.errors import install_error_handlers
from picoora.gateway.limits import BodyLimit
from picoora.gateway.readiness import AnonymousReadiness
from picoora.gateway.state import Gateway
from picoora.gateway.timing import StampArrival

if TYPE_CHECKING:
    from picoora.assistant import Assistant
    from picoora.gateway.runtime.services import GatewayRuntime

log = logging.getLogger("picoora.gateway")


def create_app(gateway: Gateway) -> FastAPI:
    from picoora import __version__
    from picoora.config import secret_values
    from picoora.gateway import routes_api, routes_docs, routes_web
    from picoora.gateway.openai import routes as routes_openai

    settings = gateway.config.gateway
    app = FastAPI(title="picoora gateway", version=__version__, lifespan=_lifespan, docs_url=None, redoc_url=None,
                  openapi_url=None,
                  description="The assistant over HTTP. Every route but /health needs 'Authorization: Bearer <token>' "
                              "(/ready without one gives its status alone).")
    app.state.gateway = gateway
    app.state.openai = routes_openai.EndpointState()
    app.state.ready = AnonymousReadiness()
    install_error_handlers(app, [*secret_values(gateway.config), gateway.token])

    @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require_token)])
    async def openapi() -> dict[str, Any]:
        return _without_422(app.openapi())
    for router in (routes_api.public, routes_api.api, routes_docs.api, routes_openai.router, routes_web.router):
        app.include_router(router)
    _mount_mcp(app, gateway)
    if settings.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["*"],
                           allow_headers=["Authorization", "Content-Type", "X-Session-Id", "Idempotency-Key",
                                          "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID"],
                           expose_headers=["Mcp-Session-Id"])
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(StampArrival)  # outermost: the app's time starts here
    return app


def _without_422(document: dict[str, Any]) -> dict[str, Any]:
    """FastAPI documents a validation 422 on every route with parameters; malformed input is 400 here (as
    OpenAI's), so the document lists the statuses the routes really return. A 422 a route declares itself
    (an Idempotency-Key sent again with another body) stays."""
    for path in document.get("paths", {}).values():
        for operation in path.values():
            responses = operation.get("responses", {})
            if "HTTPValidationError" in json.dumps(responses.get("422", {})):
                responses.pop("422")
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    return document


def _mount_mcp(app: FastAPI, gateway: Gateway) -> None:
    """picoora's memory over MCP at ``/mcp`` (and ``/mcp/``), behind the same tokens as the API."""
    from starlette.routing import Route

    from picoora.gateway.mcp_mount import GatewayMcp

    mcp = app.state.mcp = GatewayMcp(gateway)
    gateway.on_stop.append(mcp.stop)
    for path in ("/mcp", "/mcp/"):
        app.router.routes.append(Route(path, mcp, include_in_schema=False))


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    gateway: Gateway = app.state.gateway
    assistant = gateway.assistant
    if assistant is None:
        raise RuntimeError("open the gateway's assistant (open_gateway) before serving it")
    runtime = gateway.runtime = (gateway.runtime_factory or _runtime)(assistant)
    try:
        await runtime.start()
    except BaseException:
        await runtime.stop_intake()
        await runtime.close()
        raise
    gateway.service_lines = list(runtime.started)
    await assistant.warm_up()  # before the first request is accepted, so the first burst is not the slow one
    gateway.channel_lines = list(runtime.channel_lines)
    try:
        yield
    finally:
        gateway.request_stop()
        await runtime.stop_intake()  # channels and timers first: no new work from any front door
        cut_off = await runtime.turns.drain(gateway.shutdown_deadline())
        if cut_off:
            log.warning("%d turn(s) still running at the shutdown deadline were cut off (their messages are kept)",
                        cut_off)
        await app.state.mcp.aclose()  # before the people's assistants its calls use
        await runtime.close()
        gateway.assistant = None
        await assistant.aclose()


def _runtime(assistant: Assistant) -> GatewayRuntime:
    from picoora.gateway.runtime.services import GatewayRuntime

    return GatewayRuntime(assistant)
