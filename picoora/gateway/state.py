"""What the app's routes share: the config, the token, the assistant and the gateway's runtime, and the
caller's own assistant (``person_assistant``: the owner's, or a person's scoped one)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import Request

from picoora.gateway.errors import ApiError
from picoora.identities import Person, owner_name

if TYPE_CHECKING:
    import asyncio

    from picoora.agent import TurnResult
    from picoora.agent.events import EventSink
    from picoora.api_tokens import ApiTokens
    from picoora.assistant import Assistant
    from picoora.config import Config
    from picoora.gateway.channels.links import Inbound
    from picoora.gateway.runtime.envelopes import TurnOutcome
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
    start_warnings: list[str] = field(default_factory=list)  # failed readiness checks at start (banner)
    channel_lines: list[str] = field(default_factory=list)  # each chat channel and its state at start-up
    stop_requested_at: float | None = None
    one_off_token: bool = False  # no gateway.token configured: this run made one up
    on_stop: list[Callable[[], None]] = field(default_factory=list)  # told at once when a stop is asked for
    _api_tokens: ApiTokens | None = field(default=None, repr=False)

    @property
    def owner(self) -> Person:
        """Who the gateway token speaks for."""
        return Person(owner_name(self.config), owner=True)

    def api_tokens(self) -> ApiTokens:
        """The people's API tokens, in the owner's store (call while the assistant is open)."""
        if self._api_tokens is None:
            from picoora.api_tokens import ApiTokens
            from picoora.config import default_config_path

            assert self.assistant is not None, "open the gateway's assistant first"
            self._api_tokens = ApiTokens(self.assistant.store, self.config,
                                         config_file=self.config_path or default_config_path())
        return self._api_tokens

    @property
    def uptime(self) -> float:
        return time.monotonic() - self.started_at

    def request_stop(self) -> None:
        """SIGTERM/SIGINT: no new turns from now on; the shutdown deadline counts from here."""
        if self.stop_requested_at is None:
            self.stop_requested_at = time.monotonic()
        for stop in self.on_stop:
            stop()
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


def caller_of(request: Request) -> Person:
    """The person the request acts as, as ``auth.caller`` found; a route without that dependency gets 401, never
    the owner by default."""
    person = getattr(request.state, "person", None)
    if person is None:
        raise ApiError(401, "unauthorized", "this route did not check a token", {"WWW-Authenticate": "Bearer"})
    return person


@asynccontextmanager
async def person_assistant(request: Request) -> AsyncIterator[Assistant]:
    """The caller's assistant, kept open while the block runs: their memories, sessions and traces only."""
    async with runtime_of(request).people.lease(caller_of(request)) as assistant:
        yield assistant


def submit_turn(request: Request, inbound: Inbound, on_event: EventSink | None = None) -> asyncio.Task[TurnOutcome]:
    """Start an HTTP turn as the caller; 503 (retry later) once the gateway stops taking turns."""
    from picoora.gateway.channels.links import ShuttingDown

    if inbound.person is None:  # every HTTP turn runs as whoever the token names, whichever route built it
        inbound = replace(inbound, person=caller_of(request))
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
    return runtime_of(request).turns


def runtime_of(request: Request) -> GatewayRuntime:
    assistant_of(request)
    runtime = gateway_of(request).runtime
    if runtime is None:
        raise ApiError(503, "shutting_down", "the gateway is not serving")
    return runtime
