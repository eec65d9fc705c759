"""The chat channels picoora has, and each one's section of the config (``channels.<name>``).

This is the registry. A channel lives in a package, ``picoora.gateway.channels.<name>``, whose ``MANIFEST``
carries all the gateway and ``picoora status`` need of it (the channel class, the probe, its extra, its
fake and its tests; ``picoora.gateway.channels.manifest``). Its settings model is the one part kept here:
``picoora.config`` checks the file, the ``PICO_CHANNELS_*`` variables and their typos against it, and the
config layer must not load the gateway to do so. This module imports nothing of picoora.

Adding a channel: its package, and here a field of ``Channels`` (with a settings model of its own when it
needs more than ``ChannelConfig``), which also makes it one of ``CHANNELS``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator


class ChannelConfig(BaseModel):
    # As every section of the config: an unknown key is an error (a typo must not be silently ignored).
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    enabled: bool = False
    token: str = ""  # the bot token (Slack: the xoxb- one)
    allow_from: list[str] = []  # user ids or @usernames; empty admits nobody; ["*"] admits everyone
    api_base: str = ""  # the platform's API root (empty: the public one); tests point it at a fake


class SlackChannelConfig(ChannelConfig):
    app_token: str = ""  # the app-level xapp- token (scope connections:write) that opens the Socket Mode socket


NOT_CHANNELS = ("web",)  # sections accepted (older configs have them) that name no channel


class Channels(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    telegram: ChannelConfig = ChannelConfig()
    discord: ChannelConfig = ChannelConfig()
    slack: SlackChannelConfig = SlackChannelConfig()
    web: ChannelConfig = ChannelConfig()  # the web chat is the gateway's own page, always on: not a channel

    @model_validator(mode="after")
    def _only_built_channels_enabled(self) -> Channels:
        missing = [name for name in type(self).model_fields if getattr(self, name).enabled and name not in CHANNELS]
        if missing:
            raise ValueError(f"{', '.join(f'channels.{name}' for name in missing)} is enabled, but picoora has no "
                             f"such chat channel (the web chat is always on at the gateway's address); the "
                             f"channels that exist: {', '.join(CHANNELS)}")
        for name in CHANNELS:
            section = getattr(self, name)
            empty = [key for key in ("token", "app_token") if hasattr(section, key) and not getattr(section, key)]
            if section.enabled and empty:
                raise ValueError(f"channels.{name} is enabled but its {' and '.join(empty)} is empty: set it, or "
                                 f"PICO_CHANNELS_{name.upper()}_{empty[0].upper()} (the README's channel section "
                                 f"says where to get it)")
        return self


# Every channel, in the order status lines and start-up lines show them.
CHANNELS = tuple(name for name in Channels.model_fields if name not in NOT_CHANNELS)
