"""``/ready`` and the gateway's start-up warnings: can it answer right now, and what will not work?

The store answers a ping; the model provider answers HTTP and, on Ollama, has the default model pulled;
every enabled channel is connected (a refused token is named). Each check is cheap (no counts, no model
call) and bounded by a deadline, so a load balancer may poll.

A caller without a token (a load balancer's health check: OCI's sends no headers) gets the status alone,
200 or 503 with ``{"ready": ...}`` and no checks: what is broken, and where, is for the token's holders.
Those answers come from checks run at most once every ``ANONYMOUS_SECONDS`` (``AnonymousReadiness``), so a
flood of unauthenticated requests costs the database and the model server one check per period."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from picoora.gateway.schemas import ReadyCheck

if TYPE_CHECKING:
    import httpx

    from picoora.assistant import Assistant
    from picoora.gateway.channels.base import Channel

CHECK_SECONDS = 3.0
ANONYMOUS_SECONDS = 5.0  # well under a load balancer's usual 10-30 s interval


class AnonymousReadiness:
    """The status /ready gives a caller without a token, checked at most once a period (one check at a time;
    the others wait for its answer). Made with the app (``app.state.ready``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._checked = -math.inf
        self._ready = False
        self._lock = asyncio.Lock()

    async def ready(self, assistant: Assistant, channels: Iterable[Channel] = ()) -> bool:
        async with self._lock:
            if self._clock() - self._checked >= ANONYMOUS_SECONDS:
                self._ready = all(check.ok for check in await run_checks(assistant, channels))
                self._checked = self._clock()
            return self._ready


async def run_checks(assistant: Assistant, channels: Iterable[Channel] = ()) -> list[ReadyCheck]:
    checks = list(await asyncio.gather(_store(assistant), _provider(assistant)))
    return checks + [_channel(channel) for channel in channels]


def warnings(checks: Iterable[ReadyCheck]) -> list[str]:
    """What will not work, one line per failed check (the start-up banner prints them)."""
    return [f"{check.name}: {check.detail}" for check in checks if not check.ok]


async def _store(assistant: Assistant) -> ReadyCheck:
    try:
        await asyncio.wait_for(assistant.astore.ping(), CHECK_SECONDS)
    except asyncio.TimeoutError:
        return ReadyCheck(name="store", ok=False, detail=f"no answer within {CHECK_SECONDS:g} s")
    except Exception as err:  # noqa: BLE001 - any failure means "not ready", named in the answer
        return ReadyCheck(name="store", ok=False, detail=str(err) or type(err).__name__)
    return ReadyCheck(name="store", ok=True, detail="answers")


async def _provider(assistant: Assistant) -> ReadyCheck:
    """An HTTP answer from the default provider's server: Ollama's /api/tags (which must list the default
    model), else the API base. A hosted provider with no api_base (its public endpoint) is not probed."""
    import httpx

    from picoora.llm.ollama_admin import native_base

    choice = assistant.models.default
    provider = choice.provider
    settings = getattr(assistant.config.providers, provider)
    if provider == "ollama":
        url = native_base(settings.api_base) + "/api/tags"
    elif settings.api_base:
        url = settings.api_base
    else:
        return ReadyCheck(name="model", ok=True, detail=f"{provider}'s public endpoint (not probed)")
    try:
        async with httpx.AsyncClient(timeout=CHECK_SECONDS) as client:
            response = await client.get(url)
    except httpx.HTTPError as err:
        return ReadyCheck(name="model", ok=False, detail=f"{provider} at {url} does not answer ({type(err).__name__})")
    if provider != "ollama":
        return ReadyCheck(name="model", ok=True, detail=f"{provider} answers")
    if response.status_code != 200:
        return ReadyCheck(name="model", ok=False, detail=f"ollama at {url} answered HTTP {response.status_code}")
    if not _pulled(response, choice.model):
        return ReadyCheck(name="model", ok=False,
                          detail=f"{choice.model} is not pulled in Ollama: run `ollama pull {choice.model}`")
    return ReadyCheck(name="model", ok=True, detail=f"ollama answers and has {choice.model}")


def _pulled(tags: httpx.Response, model: str) -> bool:
    """Whether Ollama's /api/tags answer lists ``model`` (a name without a tag means ``:latest``)."""
    try:
        listed = {entry.get("model") or entry.get("name") for entry in tags.json()["models"]}
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return model in listed or f"{model}:latest" in listed


def _channel(channel: Channel) -> ReadyCheck:
    problem = channel.problem
    return ReadyCheck(name=f"channel {channel.name}", ok=problem is None, detail=problem or "connected")
