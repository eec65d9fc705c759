"""Chat channels: one package per platform (``telegram/``, ``discord/``, ``slack/``), each declaring
itself in its ``MANIFEST`` (``manifest.Manifest``), and the parts they share:

    links.py           the vocabulary between the runtime and the channels (imports neither side)
    base.py            the interface every channel implements, and the chores they share
    manifest.py        what a channel's package declares about itself
    probe.py           ``picoora status``: does each platform take its token?
    split.py           a reply in pieces a platform takes as one message each
    attachments.py     files a message carries, and their capped download
    web_api.py         an HTTP API client with retries, rate limits and token scrubbing
    socket_channel.py  the base of a channel that receives over a websocket (Discord, Slack)
    redact.py          tokens kept out of every log record

The registry of what exists is ``picoora.channel_registry.CHANNELS`` (beside the config, which reads it);
the gateway starts every channel whose ``channels.<name>.enabled`` is set (``picoora.gateway.runtime.services``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from picoora.channel_registry import CHANNELS

if TYPE_CHECKING:
    from picoora.gateway.channels.manifest import Manifest


def manifest_of(name: str) -> Manifest:
    """The manifest of channel ``name`` (one of ``CHANNELS``): its package is imported now."""
    if name not in CHANNELS:
        raise KeyError(f"no chat channel {name!r}: the channels that exist are {', '.join(CHANNELS)}")
    found: Manifest = importlib.import_module(f"{__name__}.{name}").MANIFEST
    return found


def manifests() -> list[Manifest]:
    """Every channel's manifest, in ``CHANNELS`` order."""
    return [manifest_of(name) for name in CHANNELS]
