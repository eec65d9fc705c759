"""Chat channels, one module each behind ``base.Channel``; ``CHANNELS`` names the ones that exist.

The gateway starts every channel whose ``channels.<name>.enabled`` is set (see ``picoora.gateway.runtime.services``).
A new platform is one module and one line here.
"""

from __future__ import annotations

CHANNELS = {
    "telegram": ("picoora.gateway.channels.telegram", "TelegramChannel"),
    "discord": ("picoora.gateway.channels.discord", "DiscordChannel"),
    "slack": ("picoora.gateway.channels.slack", "SlackChannel"),
}
