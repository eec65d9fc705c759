"""``/ready``: can the gateway answer right now? The store answers a ping, the model provider answers HTTP.

Both checks are cheap (no counts, no model call) and bounded by a deadline, so a load balancer may poll."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from picoora.gateway.schemas import ReadyCheck

if TYPE_CHECKING:
    from picoora.assistant import Assistant

CHECK_SECONDS = 3.0


async def run_checks(assistant: Assistant) -> list[ReadyCheck]:
    return list(await asyncio.gather(_store(assistant), _provider(assistant)))


async def _store(assistant: Assistant) -> ReadyCheck:
    try:
        await asyncio.wait_for(assistant.astore.ping(), CHECK_SECONDS)
    except asyncio.TimeoutError:
        return ReadyCheck(name="store", ok=False, detail=f"no answer within {CHECK_SECONDS:g} s")
    except Exception as err:  # noqa: BLE001 - any failure means "not ready", named in the answer
        return ReadyCheck(name="store", ok=False, detail=str(err) or type(err).__name__)
    return ReadyCheck(name="store", ok=True, detail="answers")


async def _provider(assistant: Assistant) -> ReadyCheck:
    """An HTTP answer from the default provider's server: Ollama's /api/version, else the API base.
    A hosted provider with no api_base (its public endpoint) is not probed."""
    import httpx

    from picoora.llm.ollama_admin import native_base

    provider = assistant.config.agents.defaults.provider
    settings = getattr(assistant.config.providers, provider)
    if provider == "ollama":
        url = native_base(settings.api_base) + "/api/version"
    elif settings.api_base:
        url = settings.api_base
    else:
        return ReadyCheck(name="model", ok=True, detail=f"{provider}'s public endpoint (not probed)")
    try:
        async with httpx.AsyncClient(timeout=CHECK_SECONDS) as client:
            response = await client.get(url)
    except httpx.HTTPError as err:
        return ReadyCheck(name="model", ok=False, detail=f"{provider} at {url} does not answer ({type(err).__name__})")
    if provider == "ollama" and response.status_code != 200:
        return ReadyCheck(name="model", ok=False, detail=f"ollama at {url} answered HTTP {response.status_code}")
    return ReadyCheck(name="model", ok=True, detail=f"{provider} answers")
