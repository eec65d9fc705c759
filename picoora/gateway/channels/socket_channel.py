"""What the Discord and Slack channels share: a platform socket opened again and again until cancelled.

``connect_once`` holds one connection until it ends (returning, or raising why). A refused token is
reported and retried rarely (waiting will not fix it, but the owner may fix the config and the platform
may come back); any other failure is reported as unreachable and retried with backoff. Nothing is raised.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
from typing import Any

from picoora.gateway.cancellation import stop_if_cancelled
from picoora.gateway.channels.base import REFUSED_TOKEN, UNREACHABLE, Channel
from picoora.gateway.channels.redact import TokenScrubbingRecords
from picoora.gateway.channels.web_api import TokenRefused, WebApi, backoff

log = logging.getLogger(__name__)

REFUSED_WAIT_SECONDS = 300.0


class SocketChannel(Channel):
    def __init__(self, *args: Any, tokens: list[str], api_root: str, user_agent: str,
                 sleep: Any = asyncio.sleep, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._records = TokenScrubbingRecords(*tokens)
        self._records.install()  # websockets logs every frame at DEBUG, and some carry a token
        self._sleep = sleep
        self.api = WebApi(self.config.api_base or api_root, self.name.capitalize(), tokens,
                          user_agent=user_agent, sleep=sleep)

    @abc.abstractmethod
    async def connect_once(self) -> None:
        """Open the socket and handle what arrives until it closes."""

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                await self.connect_once()
                failures = 0  # a connection that ended as the platform asked: open the next one at once
            except TokenRefused as exc:
                stop_if_cancelled(exc)
                self.report(REFUSED_TOKEN)
                log.error("%s: %s; trying again in %.0f s", self.name, exc, REFUSED_WAIT_SECONDS)
                await self._sleep(REFUSED_WAIT_SECONDS)
            except Exception as exc:  # network trouble, a dropped socket, a 5xx: back off and connect again
                stop_if_cancelled(exc)
                self.report(UNREACHABLE)
                log.warning("%s: %s; reconnecting", self.name, self.api.clean(str(exc) or type(exc).__name__))
                await self._sleep(backoff(failures))
                failures += 1

    def decode(self, frame: str | bytes) -> dict[str, Any] | None:
        """One frame as a JSON object, or None (logged) for anything else: one bad frame is not worth the socket."""
        try:
            payload = json.loads(frame)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            log.warning("%s: skipped a frame that is not a JSON object (%d bytes)", self.name, len(frame))
            return None
        return payload

    async def close(self) -> None:
        await super().close()
        await self.api.aclose()
        self._records.uninstall()
