"""Daily notes on PICO_DAILY_NOTES: one row a day per agent, appended to, embedded whole for search."""

from __future__ import annotations

import builtins
import uuid
from datetime import date, timedelta, timezone
from typing import TYPE_CHECKING

from picoora.store.base import DailyNote, DailyNoteRow, StoreError
from picoora.store.oracle import codec, schema
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import utc_stamp
from picoora.store.oracle.connection import UNIQUE_VIOLATED, error_code
from picoora.store.oracle.op import Op, known
from picoora.store.oracle.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext


class OracleNotes:
    """``zone``: IANA zone of the notes' dates (agents.defaults.timezone); "": the machine's."""

    def __init__(self, ctx: OracleContext, zone: str = ""):
        self.ctx = ctx
        self.zone = zone

    def _today(self) -> date:
        """Today on the database's clock in the notes' zone, so every node of a fleet writes one day's note."""
        from zoneinfo import ZoneInfo

        now = utc_stamp().replace(tzinfo=timezone.utc)
        return (now.astimezone(ZoneInfo(self.zone)) if self.zone else now.astimezone()).date()

    @unit_of_work
    def append(self, content: str, day: date | None = None) -> Op[DailyNote]:
        day = day or self._today()
        agent_id = self.ctx.agent_id

        async def work(tx: Tx) -> DailyNote:
            embed = self.ctx.opened().embed
            for _ in range(2):  # a second pass only when another writer created the day's row meanwhile
                row = await tx.one(q.NOTE_LOCK, agent_id=agent_id, note_date=day)
                if row is not None:
                    text = f"{codec.text(row[1])}\n{content}"
                    await tx.run(q.NOTE_UPDATE, agent_id=agent_id, note_id=row[0], content=text,
                                 embedding=await embed(tx, text), now=utc_stamp())
                    return DailyNote(day=day, content=text)
                text = f"# {day.isoformat()}\n\n{content}"
                try:
                    await tx.run(q.NOTE_INSERT, note_id=uuid.uuid4().hex, agent_id=agent_id, note_date=day,
                                 content=text, embedding=await embed(tx, text), now=utc_stamp())
                    return DailyNote(day=day, content=text)
                except Exception as exc:
                    if error_code(exc) != UNIQUE_VIOLATED:
                        raise
            raise StoreError("the daily note changed under us twice; try again")

        return Op(work, "write the daily note")

    @unit_of_work
    def recent(self, days: int = 3) -> Op[builtins.list[DailyNote]]:
        """Notes of today and the ``days - 1`` days before, newest first."""
        if days <= 0:
            return known([])
        today = self._today()

        async def work(tx: Tx) -> builtins.list[DailyNote]:
            rows = await tx.rows(q.NOTE_RECENT, agent_id=self.ctx.agent_id, since=today - timedelta(days=days - 1),
                                 today=today)
            return [DailyNote(day=codec.as_date(day), content=codec.text(content)) for day, content in rows]

        return Op(work, "read daily notes")

    @unit_of_work
    def search(self, query: str, limit: int = 5) -> Op[builtins.list[tuple[DailyNote, float]]]:
        """Daily notes closest in meaning to ``query``, with their cosine similarity (empty without the model)."""
        async def work(tx: Tx) -> builtins.list[tuple[DailyNote, float]]:
            vector = await self.ctx.opened().embed(tx, query)
            if vector is None:
                return []
            rows = await tx.rows(q.NOTE_SEARCH, agent_id=self.ctx.agent_id, vector=vector, k=limit,
                                 dimensions=schema.EMBEDDING_DIMENSIONS)
            return [(DailyNote(codec.as_date(day), codec.text(content)), 1.0 - float(distance))
                    for day, content, distance in rows]

        return Op(work, "search daily notes")

    @unit_of_work
    def list(self, limit: int = 20) -> Op[builtins.list[DailyNoteRow]]:
        async def work(tx: Tx) -> builtins.list[DailyNoteRow]:
            rows = await tx.rows(q.NOTE_LIST, agent_id=self.ctx.agent_id, k=limit)
            return [DailyNoteRow(codec.as_date(day), str(note_id), codec.text(content), codec.to_utc(updated),
                                 flag == "yes")
                    for day, note_id, content, updated, flag in rows]

        return Op(work, "list daily notes")
