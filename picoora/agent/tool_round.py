"""A round of the model's tool calls: run together, each reported as it returns, recorded in call order.

A call whose arguments the provider could not parse is answered with an error instead of being run. When
the round is cancelled (the turn's time limit, Ctrl+C), every call is cancelled and awaited (its child
process killed) before the cancellation goes on, so nothing is left running or unretrieved; the results
that came back are in the turn's record, which keeps them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from picoora.agent.emitter import Emitter
from picoora.agent.events import ToolCallFinished, ToolCallStarted
from picoora.agent.record import TurnRecord
from picoora.agent.stops import StopConditions
from picoora.agent.trace import TraceRecorder
from picoora.llm.base import RAW_ARGUMENTS_KEY
from picoora.messages import Message, ToolCall
from picoora.tools.base import ToolContext, ToolResult

if TYPE_CHECKING:
    from picoora.tools.registry import ToolRegistry

RAW_PREVIEW_CHARS = 200

Bound = Callable[[Awaitable[Any]], Awaitable[Any]]  # the turn's deadline around an awaitable


class ToolRounds:
    """The tool rounds of one turn: how many ran, and how many calls were executed."""

    def __init__(self, registry: ToolRegistry, ctx: ToolContext, record: TurnRecord, stops: StopConditions,
                 trace: TraceRecorder, emit: Emitter):
        self._registry = registry
        self._ctx = ctx
        self._record = record
        self._stops = stops
        self._trace = trace
        self._emit = emit
        self.count = 0  # rounds run
        self.executed = 0

    async def run(self, calls: list[ToolCall], bound: Bound) -> None:
        """Run ``calls`` within ``bound``; their results are recorded once all returned."""
        self.count += 1
        self._record.open_round(calls)
        for call in calls:
            await self._emit(ToolCallStarted(self._emit.session_key, call.id, call.name, dict(call.arguments)))
        await bound(self._together(calls))
        await self._record.close_round()

    async def _together(self, calls: list[ToolCall]) -> None:
        tasks = [asyncio.ensure_future(self._one(call)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _one(self, call: ToolCall) -> None:
        if RAW_ARGUMENTS_KEY in call.arguments:  # the provider could not parse the model's arguments
            raw = str(call.arguments[RAW_ARGUMENTS_KEY])[:RAW_PREVIEW_CHARS]
            result = ToolResult.error(f"the arguments for {call.name} were not valid JSON ({raw!r}); "
                                      "call it again with a JSON object")
        else:
            started = time.monotonic()
            result = await self._registry.execute(call.name, dict(call.arguments), self._ctx)
            self.executed += 1
            self._trace.tool_call(call, result, time.monotonic() - started)
        self._stops.result(result.content, result.is_error)
        self._record.returned(Message(role="tool", content=result.content, tool_call_id=call.id, name=call.name))
        await self._emit(ToolCallFinished(self._emit.session_key, call.id, call.name, result.content,
                                          ok=not result.is_error))
