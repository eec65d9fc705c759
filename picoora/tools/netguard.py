"""Which network addresses a fetch may reach (SSRF guard).

A host is resolved once; every address it resolves to must be public, and the caller then connects
to exactly the address checked, so a DNS answer that changes between check and connect (DNS
rebinding) cannot slip a private address in. Refused: private, loopback, link-local, multicast,
reserved, unspecified, shared (CGNAT) and other non-global ranges, cloud metadata endpoints, and the
same hidden inside IPv6 (IPv4-mapped ``::ffff:a.b.c.d``, 6to4, NAT64).

``allow_hosts`` entries (host names, IP addresses or CIDR networks) are exempt: a LAN service the
user wants the assistant to read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OCI
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task credentials
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class AddressRefused(Exception):
    """The URL's host may not be fetched; the message says why."""


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def blocked_reason(ip: IPAddress) -> str | None:
    """Why ``ip`` may not be fetched, or None when it is a public address."""
    if ip in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(ip, ipaddress.IPv6Address) and (inner := _embedded_ipv4(ip)) is not None:
        return blocked_reason(inner)
    for flag, label in (
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_unspecified", "an unspecified address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private address"),
    ):
        if getattr(ip, flag):
            return label
    if not ip.is_global:
        return "not a public address"
    return None


def _parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone id
    except ValueError:
        return None


def is_allowed_host(host: str, ip: IPAddress, allow_hosts: list[str]) -> bool:
    """True when the user exempted this host name, this address, or a network containing it."""
    for entry in allow_hosts:
        entry = entry.strip().lower()
        if entry == host.lower():
            return True
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue  # a host name, not an address
    return False


async def resolve_checked(host: str, port: int, allow_hosts: list[str]) -> IPAddress:
    """The address to connect to for ``host``, or AddressRefused when any address it has is not public."""
    literal = _parse_ip(host.strip("[]"))
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise AddressRefused(f"cannot resolve host {host!r}: {exc.strerror}") from None
        addresses = [ip for info in infos if (ip := _parse_ip(str(info[4][0]))) is not None]
        if not addresses:
            raise AddressRefused(f"host {host!r} has no usable address")
    for ip in addresses:
        if is_allowed_host(host, ip, allow_hosts):
            continue
        reason = blocked_reason(ip)
        if reason is not None:
            raise AddressRefused(
                f"{host} resolves to {ip}, {reason}; web_fetch only reaches public addresses "
                "(the user can exempt a host with tools.web_fetch.allow_hosts)"
            )
    return addresses[0]
