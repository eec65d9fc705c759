"""What the app's routes share: the config, the token, the assistant and the gateway's runtime."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import Request

from picoora.gateway.errors import ApiError

if TYPE_CHECKING:
    import asyncio

    from picoora.agent import TurnResult
    from picoora.agent.events import EventSink
    from picoora.assistant import Assistant
    from picoora.config import Config
    from picoora.gateway.runtime.envelopes import Inbound, TurnOutcome
    from picoora.gateway.runtime.services import GatewayRuntime
    from picoora.gateway.runtime.turns import TurnService


@dataclass
class Gateway:
    config: Config
    token: str
    config_path: Path | None = None
    # The turn service and what runs beside it (channels, scheduler, heartbeat), made from the open
    # assistant by the lifespan; None: GatewayRuntime.
    runtime_factory: Callable[[Assistant], GatewayRuntime] | None = None
    runtime: GatewayRuntime | None = None
    assistant: Assistant | None = None  # open between the lifespan's start and end
    started_at: float = field(default_factory=time.monotonic)
    on_fallback: list[str] = field(default_factory=list)  # the store's fallback line, if there was one
    service_lines: list[str] = field(default_factory=list)  # what each service said when it started
    stop_requested_at: float | None = None
    one_off_token: bool = False  # no gateway.token configured: this run made one up

    @property
    def uptime(self) -> float:
        return time.monotonic() - self.started_at

    def request_stop(self) -> None:
        """SIGTERM/SIGINT: no new turns from now on; the shutdown deadline counts from here."""
        if self.stop_requested_at is None:
            self.stop_requested_at = time.monotonic()
        if self.runtime is not None:
            self.runtime.turns.stop_accepting()

    def shutdown_deadline(self) -> float:
        """Seconds left for in-flight turns to finish."""
        since = time.monotonic() - (self.stop_requested_at or time.monotonic())
        return max(0.0, self.config.gateway.shutdown_seconds - since)


def gateway_of(request: Request) -> Gateway:
    return request.app.state.gateway


def assistant_of(request: Request) -> Assistant:
    assistant = gateway_of(request).assistant
    if assistant is None:  # only between shutdown and exit
        raise ApiError(503, "shutting_down", "the gateway is not serving")
    return assistant


def submit_turn(request: Request, inbound: Inbound, on_event: EventSink | None = None) -> asyncio.Task[TurnOutcome]:
    """Start an HTTP turn; 503 (retry later) once the gateway stops taking turns."""
    from picoora.gateway.runtime.turns import ShuttingDown

    try:
        return turns_of(request).submit(inbound, on_event=on_event)
    except ShuttingDown:
        raise ApiError(503, "shutting_down", "the gateway is shutting down and takes no new turns",
                       {"Retry-After": "5"}) from None


def result_of(outcome: TurnOutcome) -> TurnResult:
    """The turn's result, or the HTTP error for a turn that has none (cut off, busy on another node, or broken
    outside the loop)."""
    if outcome.result is not None:
        return outcome.result
    if outcome.status == "cut_off":
        raise ApiError(503, "shutting_down", outcome.error, {"Retry-After": "5"})
    if outcome.status == "busy":  # the session's turn runs on another gateway of the fleet
        raise ApiError(503, "session_busy", outcome.error, {"Retry-After": "5"})
    raise ApiError(500, "turn_failed", f"{outcome.error}; the gateway log says more")


def turns_of(request: Request) -> TurnService:
    assistant_of(request)
    runtime = gateway_of(request).runtime
    if runtime is None:
        raise ApiError(503, "shutting_down", "the gateway is not serving")
    return runtime.turns
