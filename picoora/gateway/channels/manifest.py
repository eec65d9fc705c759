"""What a channel's package declares about itself, in one place: its ``MANIFEST``.

The gateway starts ``channel`` with the section ``settings`` of the config (``channels.<name>``), the
``picoora gateway`` command asks for ``extra`` before it starts, and ``picoora status`` runs ``probe``.
``fake`` and ``tests`` say where the channel is tested (``tests/test_channel_registry.py`` checks they
exist), so a newcomer finds all of a channel from its package.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from picoora.channel_registry import ChannelConfig
    from picoora.gateway.channels.base import Channel
    from picoora.gateway.channels.web_api import WebApi

# One request under a short timeout that tells whether the platform takes the token; it raises
# ``web_api.Unreachable`` or ``web_api.ApiError`` (a refused token) when it does not.
Probe = Callable[["ChannelConfig", "WebApi"], Awaitable[None]]


@dataclass(frozen=True)
class Manifest:
    name: str  # as in the registry (``picoora.channel_registry.CHANNELS``) and the config's ``channels.<name>``
    settings: type[ChannelConfig]  # its section of the config (the model lives in the registry)
    channel: type[Channel]  # built as ``channel(settings, links)``; its client library is imported lazily
    public_api: str  # the platform's API root, which ``api_base`` replaces
    probe: Probe  # for ``picoora status``: against ``api_base`` or ``public_api``
    fake: str  # the platform's fake the tests run against (a path in the repository)
    tests: tuple[str, ...]  # its test files
    extra: str = ""  # the pip extra with its client library (``picoora.extras.EXTRAS``); "" when it needs none
