"""Where the gateway listens, and whether that is safe: off loopback a configured token is required."""

from __future__ import annotations

import ipaddress
import secrets
from urllib.parse import quote

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class BindingRefused(Exception):
    """The gateway must not start with this host/token combination; the message says what to change."""


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def effective_token(host: str, configured: str) -> tuple[str, bool]:
    """(the token every API call must carry, whether it was made up for this run).

    On loopback with no token configured, a one-off random token protects this run (as Jupyter does):
    other local users and web pages still cannot call the API. Off loopback, no token is refused."""
    if configured:
        return configured, False
    if not is_loopback(host):
        raise BindingRefused(
            f"refusing to listen on {host} without a token: anyone who can reach it could use the assistant.\n"
            "Set gateway.token in the config (`picoora onboard` writes one) or PICO_GATEWAY_TOKEN, "
            "or listen on 127.0.0.1 (the default)."
        )
    return secrets.token_urlsafe(32), True


def base_url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"  # an IPv6 literal
    return f"http://{shown}:{port}"


def chat_url(host: str, port: int, token: str) -> str:
    """The web chat's address carrying the token, which the page moves into its own storage."""
    return f"{base_url(host, port)}/?token={quote(token, safe='')}"
