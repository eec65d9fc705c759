"""One quick look at each enabled channel's platform, for ``picoora status``: does it take the token?

Each check is the channel's ``Manifest.probe``: one request under a short timeout, with no retries and no
socket opened: ``connected`` (the platform accepted the token), ``refused token`` or ``unreachable``; a
disabled channel is ``off``. Nothing here imports a platform's client library.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx

from picoora.gateway.channels import manifests
from picoora.gateway.channels.base import CONNECTED, REFUSED_TOKEN, UNREACHABLE
from picoora.gateway.channels.web_api import ApiError, Unreachable, WebApi

if TYPE_CHECKING:
    from picoora.channel_registry import ChannelConfig
    from picoora.config import Config
    from picoora.gateway.channels.manifest import Manifest

PROBE_TIMEOUT = httpx.Timeout(3.0, connect=2.0)
OFF = "off"


async def probe_one(manifest: Manifest, config: ChannelConfig) -> str:
    if not config.enabled:
        return OFF
    secrets = [config.token, getattr(config, "app_token", "")]
    api = WebApi(config.api_base or manifest.public_api, manifest.name, secrets, user_agent="picoora status",
                 timeout=PROBE_TIMEOUT)
    try:
        await manifest.probe(config, api)
        return CONNECTED
    except Unreachable:
        return UNREACHABLE
    except ApiError:  # 401/403, Slack's invalid_auth, and 404: Telegram's answer to a malformed token
        return REFUSED_TOKEN
    finally:
        await api.aclose()


async def probe_all(config: Config) -> dict[str, str]:
    """Every channel picoora has, in ``CHANNELS`` order, with its state."""
    every = manifests()
    states = await asyncio.gather(*(probe_one(m, getattr(config.channels, m.name)) for m in every))
    return {m.name: state for m, state in zip(every, states, strict=True)}
