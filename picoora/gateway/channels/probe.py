"""One quick look at each enabled channel's platform, for ``picoora status``: does it take the token?

Each check is one request under a short timeout, with no retries and no socket opened: ``connected``
(the platform accepted the token), ``refused token`` or ``unreachable``; a disabled channel is ``off``.
Nothing here imports a platform's client library.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx

from picoora.gateway.channels import CHANNELS
from picoora.gateway.channels.base import CONNECTED, REFUSED_TOKEN, UNREACHABLE
from picoora.gateway.channels.web_api import ApiError, TokenRefused, Unreachable, WebApi

if TYPE_CHECKING:
    from picoora.config import ChannelConfig, Config

PROBE_TIMEOUT = httpx.Timeout(3.0, connect=2.0)
OFF = "off"


async def _telegram(config: ChannelConfig, api: WebApi) -> None:
    await api.call("GET", f"bot{config.token}/getMe", token="", attempts=1)


async def _discord(config: ChannelConfig, api: WebApi) -> None:
    await api.call("GET", "users/@me", token=f"Bot {config.token}", attempts=1)


async def _slack(config: ChannelConfig, api: WebApi) -> None:
    app_token = getattr(config, "app_token", "")
    for method, token in (("auth.test", config.token), ("apps.connections.open", app_token)):
        body = await api.call("POST", method, token=f"Bearer {token}", attempts=1)
        if not isinstance(body, dict) or not body.get("ok"):
            raise TokenRefused(f"Slack refused {method}")


_CHECKS = {"telegram": (_telegram, "https://api.telegram.org"), "discord": (_discord, "https://discord.com/api/v10"),
           "slack": (_slack, "https://slack.com/api")}


async def probe_one(name: str, config: ChannelConfig) -> str:
    if not config.enabled:
        return OFF
    check, public = _CHECKS[name]
    secrets = [config.token, getattr(config, "app_token", "")]
    api = WebApi(config.api_base or public, name, secrets, user_agent="picoora status", timeout=PROBE_TIMEOUT)
    try:
        await check(config, api)
        return CONNECTED
    except Unreachable:
        return UNREACHABLE
    except ApiError:  # 401/403, Slack's invalid_auth, and 404: Telegram's answer to a malformed token
        return REFUSED_TOKEN
    finally:
        await api.aclose()


async def probe_all(config: Config) -> dict[str, str]:
    """Every channel picoora has, in ``CHANNELS`` order, with its state."""
    states = await asyncio.gather(*(probe_one(name, getattr(config.channels, name)) for name in CHANNELS))
    return dict(zip(CHANNELS, states, strict=True))
