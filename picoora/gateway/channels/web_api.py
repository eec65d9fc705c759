"""A platform's HTTP API as the Discord and Slack channels use it: JSON in and out, rate limits honoured.

- a response saying a route's budget is spent (``X-RateLimit-Remaining: 0``, Discord's buckets) makes the
  next call to that route wait ``X-RateLimit-Reset-After`` first, so the 429 is not even needed;
- 429 waits what the platform asked for (``retry_after`` in the body, else the ``Retry-After`` header), at
  most ``MAX_RETRY_AFTER`` seconds, then tries again; 5xx and network errors back off and try again;
- 401 and 403 raise ``TokenRefused`` (waiting would not help); other 4xx raise ``ApiError`` at once;
- error texts never carry the tokens (they travel in headers, but a platform may echo them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from picoora.secrets import scrub

BACKOFF_SECONDS = (1.0, 2.0, 5.0, 10.0, 30.0)
MAX_RETRY_AFTER = 300.0  # a platform asking for longer is treated as this (a bug or an abuse)
ATTEMPTS = 5
TIMEOUT = httpx.Timeout(20.0, connect=5.0)

Sleep = Callable[[float], Awaitable[Any]]


class ApiError(RuntimeError):
    """The platform refused a request for a reason waiting would not fix."""


class TokenRefused(ApiError):
    """The platform does not accept the token (revoked, mistyped, or missing a scope it needs)."""


class Unreachable(ApiError):
    """The platform did not answer, or only with errors, for every attempt."""


def backoff(failures: int) -> float:
    return BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS) - 1)]


def retry_after(response: httpx.Response) -> float:
    """Seconds a 429 asks to wait: the body's ``retry_after`` (Discord, fractional) or the header."""
    seconds: Any = None
    try:
        body = response.json()
        seconds = body.get("retry_after") if isinstance(body, dict) else None
    except ValueError:
        pass
    if seconds is None:
        seconds = response.headers.get("retry-after")
    try:
        return min(max(float(seconds), 0.0), MAX_RETRY_AFTER)
    except (TypeError, ValueError):
        return BACKOFF_SECONDS[0]


class WebApi:
    def __init__(self, base_url: str, platform: str, secrets: list[str], user_agent: str,
                 sleep: Sleep = asyncio.sleep, timeout: httpx.Timeout = TIMEOUT):
        self.platform = platform
        self._user_agent = user_agent
        self._secrets = secrets
        self._sleep = sleep
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/") + "/", timeout=timeout)
        self.waits: list[float] = []  # what 429s asked for, for the status and the tests
        self._quiet_until: dict[str, float] = {}  # "METHOD path" -> loop time its budget is back

    def clean(self, text: str) -> str:
        return scrub(text, self._secrets)

    async def call(self, method: str, path: str, *, token: str, attempts: int = ATTEMPTS,
                   **kwargs: Any) -> Any:
        """The response's JSON; retried on 429, 5xx and network errors up to ``attempts`` times."""
        headers = {"Authorization": token, "User-Agent": self._user_agent}
        problem, where = "", self.clean(path.split("?")[0])  # Telegram's paths carry the token
        route = f"{method} {path.split('?')[0]}"
        for attempt in range(attempts):
            await self._wait_for_budget(route)
            try:
                response = await self._http.request(method, path.lstrip("/"), headers=headers, **kwargs)
            except httpx.HTTPError as exc:
                problem = self.clean(str(exc) or type(exc).__name__)
            else:
                self._note_budget(route, response)
                if response.status_code == 429:
                    wait = retry_after(response)
                    self.waits.append(wait)
                    await self._sleep(wait)
                    problem = "rate limited"
                    continue
                if response.status_code in (401, 403):
                    raise TokenRefused(f"{self.platform} refused the token ({response.status_code}): "
                                       f"{self._detail(response)}")
                if response.status_code >= 500:
                    problem = f"{response.status_code} {self._detail(response)}"
                elif response.status_code >= 400:
                    raise ApiError(f"{self.platform} refused {where} ({response.status_code}): "
                                   f"{self._detail(response)}")
                else:
                    return response.json() if response.content else {}
            if attempt < attempts - 1:
                await self._sleep(backoff(attempt))
        raise Unreachable(f"{self.platform} did not answer {where} after {attempts} tries: {problem}")

    async def _wait_for_budget(self, route: str) -> None:
        until = self._quiet_until.pop(route, None)
        if until is not None:
            wait = until - asyncio.get_running_loop().time()
            if wait > 0:
                await self._sleep(min(wait, MAX_RETRY_AFTER))

    def _note_budget(self, route: str, response: httpx.Response) -> None:
        if response.headers.get("x-ratelimit-remaining") != "0":
            return
        try:
            reset_after = min(float(response.headers.get("x-ratelimit-reset-after", "")), MAX_RETRY_AFTER)
        except ValueError:
            return
        self._quiet_until[route] = asyncio.get_running_loop().time() + reset_after

    def _detail(self, response: httpx.Response) -> str:
        return self.clean(response.text[:200])

    async def aclose(self) -> None:
        await self._http.aclose()
