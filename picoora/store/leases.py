"""Leases: which node of a fleet does a singleton duty right now.

Several gateways may share one Oracle database. Some duties must run on one of them at a time (the
heartbeat, each long-polling chat channel), some events must happen once whichever node sees them (a due
cron run), and one session's turns must not interleave across nodes. A lease is a name, a holder and an
expiry on one clock every node agrees on (the database's):

- ``acquire(name, holder, seconds)`` takes a free or expired lease, or renews the holder's own, for
  ``seconds``; it says whether ``holder`` has it now. A holder that stops renewing (its node died) loses it
  when it expires, and the next node that asks takes it over.
- ``claim(name, seconds)`` is a lease nobody renews: the first node to ask wins it for ``seconds``; any other
  asking before it expires is told no (a due cron run fires once).
- ``release(name, holder)`` hands a lease back early (a clean stop), so another node need not wait.

On files there is one gateway per workspace (``exclusive_service_lock``), so every duty is this process's:
``LocalLeases`` says yes to everything. On Oracle: ``picoora/store/oracle/leases.py`` (rows of PICO_LEASES).
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Protocol


class Leases(Protocol):
    shared: bool  # whether other processes ask the same leases (a fleet); False: this process is alone

    async def acquire(self, name: str, holder: str, seconds: float) -> bool: ...
    async def claim(self, name: str, seconds: float) -> bool: ...
    async def release(self, name: str, holder: str) -> None: ...


class LocalLeases:
    """One process owns the store: every lease is granted at once."""

    shared = False

    async def acquire(self, name: str, holder: str, seconds: float) -> bool:
        return True

    async def claim(self, name: str, seconds: float) -> bool:
        return True

    async def release(self, name: str, holder: str) -> None:
        return None


def node_id() -> str:
    """A holder name for this process that says where it runs (for whoever reads PICO_LEASES) and never
    repeats (a restarted node is a new holder)."""
    return f"{socket.gethostname()[:200]}:{os.getpid()}:{secrets.token_hex(4)}"
