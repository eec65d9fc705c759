"""Whole tool outputs on PICO_TOOL_OUTPUTS; saving one first drops this agent's expired ones."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING

from picoora.store import limits
from picoora.store.base import ToolOutput
from picoora.store.oracle import codec
from picoora.store.oracle import sql as q
from picoora.store.oracle.codec import utc_stamp
from picoora.store.oracle.op import Op, known
from picoora.store.oracle.unit_of_work import unit_of_work

if TYPE_CHECKING:
    from picoora.store.oracle.connection import Tx
    from picoora.store.oracle.context import OracleContext


class OracleToolOutputs:
    def __init__(self, ctx: OracleContext):
        self.ctx = ctx

    @unit_of_work
    def save(self, output: ToolOutput) -> Op[None]:
        limits.check_session_key(output.session_key)
        agent_id = self.ctx.agent_id

        async def work(tx: Tx) -> None:
            now = utc_stamp()
            await tx.run(q.TOOL_OUTPUT_EXPIRE, agent_id=agent_id, oldest=now - timedelta(days=limits.TOOL_OUTPUT_DAYS))
            await tx.run(q.TOOL_OUTPUT_INSERT, handle=output.handle, agent_id=agent_id,
                         session_key=output.session_key, turn_id=output.turn_id[:64], tool_name=output.tool[:255],
                         content=output.content[: limits.TOOL_OUTPUT_CHARS], now=now)

        return Op(work, "keep the whole tool output")

    @unit_of_work
    def get(self, handle: str) -> Op[ToolOutput | None]:
        if not re.fullmatch(limits.HANDLE_PATTERN, handle):
            return known(None)

        async def work(tx: Tx) -> ToolOutput | None:
            row = await tx.one(q.TOOL_OUTPUT_GET, agent_id=self.ctx.agent_id, handle=handle,
                               oldest=utc_stamp() - timedelta(days=limits.TOOL_OUTPUT_DAYS))
            if row is None:
                return None
            session_key, turn_id, tool, content, created_at = row
            return ToolOutput(handle, codec.text(session_key), codec.text(turn_id), codec.text(tool),
                              codec.text(content), codec.to_utc(created_at))

        return Op(work, "read the whole tool output")
