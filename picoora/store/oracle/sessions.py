"""Sessions on PICO_SESSIONS: the model's view of a conversation, rewritten under a row lock."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING

from picoora.messages import Message
from picoora.store import limits
from picoora.store.base import Session, StoreError, without_folded
from picoora.store.oracle import codec
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import utc_stamp
from picoora.store.oracle.connection import UNIQUE_VIOLATED, error_code
from picoora.store.oracle.op import Op
from picoora.store.oracle.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext

Change = Callable[[builtins.list[Message], str], tuple[builtins.list[Message], str]]


class OracleSessions:
    def __init__(self, ctx: OracleContext):
        self.ctx = ctx

    @unit_of_work
    def load(self, key: str) -> Op[Session]:
        async def work(tx: Tx) -> Session:
            row = await tx.one(q.SESSION_GET, agent_id=self.ctx.agent_id, session_key=key)
            if row is None:
                return Session(key=key)
            messages, summary, created, updated = row
            return Session(key, codec.messages_from_clob(messages), codec.text(summary),
                           codec.to_utc(created), codec.to_utc(updated))

        return Op(work, "load the session")

    async def _rewrite(self, tx: Tx, key: str, change: Change) -> None:
        """Apply ``change(messages, summary) -> (messages, summary)`` to the session under a row lock."""
        binds = {"agent_id": self.ctx.agent_id, "session_key": key}
        for _ in range(2):
            row = await tx.one(q.SESSION_LOCK, **binds)
            if row is not None:
                messages, summary = change(codec.messages_from_clob(row[0]), codec.text(row[1]))
                await tx.run(q.SESSION_UPDATE, **binds, messages=codec.messages_to_clob(messages), summary=summary,
                             now=utc_stamp())
                return
            messages, summary = change([], "")
            try:
                await tx.run(q.SESSION_INSERT, **binds, messages=codec.messages_to_clob(messages), summary=summary,
                             now=utc_stamp())
                return
            except Exception as exc:
                if error_code(exc) != UNIQUE_VIOLATED:  # another writer created it: lock and update instead
                    raise
        raise StoreError(f"session {key!r} changed under us twice; try again")

    @unit_of_work
    def append(self, key: str, messages: builtins.list[Message]) -> Op[None]:
        limits.check_session_key(key)

        async def work(tx: Tx) -> None:
            await self._rewrite(tx, key, lambda old, summary: (old + builtins.list(messages), summary))

        return Op(work, "save the session")

    @unit_of_work
    def compact(self, key: str, summary: str, folded: builtins.list[Message]) -> Op[bool]:
        """Replace the leading ``folded`` messages by ``summary`` (see ``without_folded``); messages appended
        since stay. False when another compaction already removed them."""
        limits.check_session_key(key)

        async def work(tx: Tx) -> bool:
            done = False

            def fold(old: builtins.list[Message], old_summary: str) -> tuple[builtins.list[Message], str]:
                nonlocal done
                rest = without_folded(old, folded)
                done = rest is not None
                return (rest, summary) if rest is not None else (old, old_summary)

            await self._rewrite(tx, key, fold)
            return done

        return Op(work, "compact the session")

    @unit_of_work
    def set_summary(self, key: str, summary: str) -> Op[None]:
        limits.check_session_key(key)

        async def work(tx: Tx) -> None:
            await self._rewrite(tx, key, lambda old, _: (old, summary))

        return Op(work, "save the session summary")

    @unit_of_work
    def reset(self, key: str) -> Op[None]:
        """Forget the model's view of the conversation; its transcript stays."""
        async def work(tx: Tx) -> None:
            await tx.run(q.SESSION_DELETE, agent_id=self.ctx.agent_id, session_key=key)

        return Op(work, "reset the session")

    @unit_of_work
    def restore(self, session: Session) -> Op[None]:
        limits.check_session_key(session.key)
        now = utc_stamp()
        updated = codec.from_utc(session.updated_at) or now
        created = codec.from_utc(session.created_at) or updated

        async def work(tx: Tx) -> None:
            binds = {"agent_id": self.ctx.agent_id, "session_key": session.key}
            await tx.run(q.SESSION_DELETE, **binds)
            await tx.run(q.SESSION_RESTORE, **binds, messages=codec.messages_to_clob(session.messages),
                         summary=session.summary, created_at=created, updated_at=updated)

        return Op(work, "restore the session")

    @unit_of_work
    def list(self) -> Op[builtins.list[Session]]:
        """Most recently updated first."""
        async def work(tx: Tx) -> builtins.list[Session]:
            rows = await tx.rows(q.SESSION_LIST, agent_id=self.ctx.agent_id)
            return [Session(str(key), codec.messages_from_clob(messages), codec.text(summary),
                            codec.to_utc(created), codec.to_utc(updated))
                    for key, messages, summary, created, updated in rows]

        return Op(work, "list sessions")
