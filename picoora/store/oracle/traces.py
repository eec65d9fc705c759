"""Turn traces on PICO_TRACES: one JSON document per turn."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from picoora.store.base import TurnTrace
from picoora.store.oracle import codec
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import utc_stamp
from picoora.store.oracle.op import Op
from picoora.store.oracle.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext


def _trace_from_row(row: tuple | None) -> TurnTrace | None:
    return TurnTrace.from_json(json.loads(codec.text(row[0]))) if row else None


class OracleTraces:
    def __init__(self, ctx: OracleContext):
        self.ctx = ctx

    @unit_of_work
    def append(self, trace: TurnTrace) -> Op[None]:
        async def work(tx: Tx) -> None:
            await tx.run(q.TRACE_INSERT, trace_id=trace.turn_id, agent_id=self.ctx.agent_id,
                         session_key=trace.session_key, trace_json=json.dumps(trace.to_json(), ensure_ascii=False),
                         now=utc_stamp())

        return Op(work, "save the turn trace")

    @unit_of_work
    def get(self, turn_id: str) -> Op[TurnTrace | None]:
        async def work(tx: Tx) -> TurnTrace | None:
            return _trace_from_row(await tx.one(q.TRACE_GET, agent_id=self.ctx.agent_id, trace_id=turn_id))

        return Op(work, "read the turn trace")

    @unit_of_work
    def last(self, session_key: str | None = None) -> Op[TurnTrace | None]:
        async def work(tx: Tx) -> TurnTrace | None:
            if session_key is None:
                return _trace_from_row(await tx.one(q.TRACE_LAST, agent_id=self.ctx.agent_id))
            return _trace_from_row(await tx.one(q.TRACE_LAST_IN_SESSION, agent_id=self.ctx.agent_id,
                                                session_key=session_key))

        return Op(work, "read the turn trace")
