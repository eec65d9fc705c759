"""What the app's routes share: the config, the token, the assistant and the turn runner."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from fastapi import Request

from picoora.gateway.errors import ApiError

if TYPE_CHECKING:
    from picoora.assistant import Assistant
    from picoora.config import Config
    from picoora.gateway.services import GatewayServices
    from picoora.gateway.turns import TurnRunner


@dataclass
class Gateway:
    config: Config
    token: str
    config_path: Path | None = None
    # What runs beside the HTTP app (dispatcher, channels, scheduler, heartbeat), made from the open
    # assistant by the lifespan; None: GatewayServices.
    services_factory: Callable[[Assistant], GatewayServices] | None = None
    services: GatewayServices | None = None
    assistant: Assistant | None = None  # open between the lifespan's start and end
    runner: TurnRunner | None = None
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
        if self.runner is not None:
            self.runner.stop_accepting()

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


def runner_of(request: Request) -> TurnRunner:
    assistant_of(request)
    return gateway_of(request).runner  # type: ignore[return-value]
