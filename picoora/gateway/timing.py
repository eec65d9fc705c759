"""When a request reached the app, so a JSON chat answer can say where its time went (``Server-Timing``)."""

from __future__ import annotations

import time

from fastapi import Request
from starlette.types import ASGIApp, Receive, Scope, Send


class StampArrival:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope.setdefault("state", {})["arrived"] = time.perf_counter()
        await self.app(scope, receive, send)


def server_timing(request: Request, turn_started: float) -> str:
    """``app``: from the request reaching the app to now; ``turn``: the turn itself (both in ms)."""
    now = time.perf_counter()
    arrived = getattr(request.state, "arrived", turn_started)
    return f"app;dur={(now - arrived) * 1000:.1f}, turn;dur={(now - turn_started) * 1000:.1f}"
