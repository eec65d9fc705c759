"""Leases as rows of PICO_LEASES on the database's clock (see ``picoora/store/leases.py`` for the idea).

Each call is one short transaction: a renewal or takeover is one UPDATE (the holder's own row, or one
that expired); a name nobody holds yet is one INSERT, and two nodes inserting it at once meet on the
primary key, where Oracle makes the second wait for the first and then refuses it (ORA-00001): the first
has it. Names are prefixed with the store's agent scope, so two assistants (or two people) sharing one
database never share a lease; a long name (a 1000-character session key) is kept as its hash.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING

from picoora.store.oracle import sql as q
from picoora.store.oracle.connection import error_code
from picoora.store.oracle.op import Op

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext

NAME_CHARS = 300  # PICO_LEASES.lease_name
PURGE_AFTER_SECONDS = 86400.0  # expired rows (spent claims) older than this are deleted by the next claim
_TAKEN = "ORA-00001"


class OracleLeases:
    shared = True

    def __init__(self, ctx: OracleContext):
        self.ctx = ctx
        self._scope = ctx.agent_id

    def _name(self, name: str) -> str:
        full = f"{self._scope}/{name}"
        if len(full) <= NAME_CHARS:
            return full
        return f"{self._scope}/sha256:{hashlib.sha256(name.encode('utf-8')).hexdigest()}"

    async def acquire(self, name: str, holder: str, seconds: float) -> bool:
        return await self._take(name, holder, seconds, purge=False)

    async def claim(self, name: str, seconds: float) -> bool:
        return await self._take(name, f"claim:{secrets.token_hex(8)}", seconds, purge=True)

    async def _take(self, name: str, holder: str, seconds: float, *, purge: bool) -> bool:
        binds = {"lease_name": self._name(name), "holder": holder, "seconds": float(seconds)}

        async def work(tx: Tx) -> bool:
            if purge:  # claims are never released: spent ones go here, a day after they expired
                await tx.run(q.LEASE_PURGE, seconds=PURGE_AFTER_SECONDS)
            if await tx.run(q.LEASE_RENEW, **binds):
                return True
            try:
                await tx.run(q.LEASE_TAKE, **binds)
            except Exception as exc:
                if error_code(exc) != _TAKEN:
                    raise
                return False  # another node inserted it first and holds it
            return True

        return await self.ctx.ado(Op(work, f"take the lease {name!r}"))

    async def release(self, name: str, holder: str) -> None:
        async def work(tx: Tx) -> None:
            await tx.run(q.LEASE_RELEASE, lease_name=self._name(name), holder=holder)

        await self.ctx.ado(Op(work, f"release the lease {name!r}"))
