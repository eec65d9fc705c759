"""Transcripts on PICO_TRANSCRIPTS: every message of every turn, numbered per session, never rewritten."""

from __future__ import annotations

import builtins
import json
from typing import TYPE_CHECKING, Any

from picoora.messages import Message
from picoora.store import limits
from picoora.store.base import StoreError, TranscriptEntry
from picoora.store.oracle import codec
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import utc_stamp
from picoora.store.oracle.connection import MAX_STRING_BYTES, UNIQUE_VIOLATED, error_code
from picoora.store.oracle.op import Op, known
from picoora.store.oracle.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext

_APPEND_ATTEMPTS = 20  # concurrent transcript writers retry on a taken sequence number


def _long(text: str | None) -> bool:
    """Over the 4000 bytes a VARCHAR2 bind carries (then it must go as a CLOB)."""
    return text is not None and len(text) * 4 > MAX_STRING_BYTES and len(text.encode("utf-8")) > MAX_STRING_BYTES


def _message(role: Any, content: Any, message_json: Any) -> Message:
    if message_json:  # Go-era rows (seed-demo) have only role and content
        try:
            return codec.message_from_json(json.loads(message_json))
        except (ValueError, TypeError):
            pass
    return Message(role=codec.text(role) or "user", content=codec.text(content))


class OracleTranscripts:
    def __init__(self, ctx: OracleContext):
        self.ctx = ctx

    @unit_of_work
    def append(self, key: str, messages: builtins.list[Message]) -> Op[builtins.list[int]]:
        if not messages:
            return known([])
        limits.check_session_key(key)
        for message in messages:
            limits.check_chars(message.role, limits.ROLE_CHARS, "the message role")
        agent_id = self.ctx.agent_id

        async def work(tx: Tx) -> builtins.list[int]:
            for _ in range(_APPEND_ATTEMPTS):
                row = await tx.one(q.TRANSCRIPT_LAST_SEQ, agent_id=agent_id, session_key=key)
                first = int(row[0] if row else 0) + 1
                seqs = builtins.list(range(first, first + len(messages)))
                now = utc_stamp()
                binds: builtins.list[dict[str, Any]] = [
                    {"session_key": key, "agent_id": agent_id, "sequence_num": seq, "role": message.role,
                     "content": message.content, "now": now,
                     "message_json": json.dumps(codec.message_to_json(message), ensure_ascii=False)}
                    for seq, message in zip(seqs, messages, strict=True)]
                try:
                    if len(binds) > 1 and not any(_long(b["content"]) or _long(b["message_json"]) for b in binds):
                        await tx.run_many(q.TRANSCRIPT_INSERT, binds)  # one round trip (an import's batch)
                    else:
                        # A text over 4000 bytes goes as a temporary CLOB, which array DML cannot mix with
                        # strings (ORA-01478): one execute per message, as a turn's few messages are.
                        for one in binds:
                            await tx.run(q.TRANSCRIPT_INSERT, **one)
                    return seqs
                except Exception as exc:
                    if error_code(exc) != UNIQUE_VIOLATED:
                        raise
                    await tx.rollback()  # another writer took these numbers: read the new last one
            raise StoreError(f"could not number transcript messages of {key!r}: too many concurrent writers")

        return Op(work, "append to the transcript")

    @unit_of_work
    def read(self, key: str, limit: int | None = None) -> Op[builtins.list[TranscriptEntry]]:
        """In seq order; with ``limit``, the most recent ``limit`` entries."""
        if limit is not None and limit <= 0:
            return known([])

        async def work(tx: Tx) -> builtins.list[TranscriptEntry]:
            rows = await tx.rows(q.TRANSCRIPT_READ, agent_id=self.ctx.agent_id, session_key=key,
                                 k=q.ALL_ROWS if limit is None else limit)
            return [TranscriptEntry(key, int(seq), _message(role, content, message_json), codec.to_utc(created))
                    for seq, role, content, message_json, created in rows]

        return Op(work, "read the transcript")

    @unit_of_work
    def keys(self) -> Op[builtins.list[str]]:
        async def work(tx: Tx) -> builtins.list[str]:
            return [str(key) for (key,) in await tx.rows(q.TRANSCRIPT_KEYS, agent_id=self.ctx.agent_id)]

        return Op(work, "list transcripts")

    @unit_of_work
    def recent(self, limit: int = 20) -> Op[builtins.list[TranscriptEntry]]:
        """The latest entries over all sessions, newest first (for the inspector)."""
        async def work(tx: Tx) -> builtins.list[TranscriptEntry]:
            rows = await tx.rows(q.TRANSCRIPT_RECENT, agent_id=self.ctx.agent_id, k=limit)
            return [TranscriptEntry(str(key), int(seq), _message(role, content, message_json), codec.to_utc(created))
                    for key, seq, role, content, message_json, created in rows]

        return Op(work, "read transcripts")
