"""What goes into the turn service and what comes out: one envelope per turn, one outcome per envelope.

Every front door builds an ``Inbound`` (HTTP, the OpenAI endpoint, a channel, a scheduled job, the
heartbeat, a background task) and gets back a ``TurnOutcome``: the turn's result, or why there is none
(``failed``: the turn broke outside the agent loop; ``cut_off``: cancelled at the shutdown deadline).
``Inbound`` is defined with the channels' vocabulary (``picoora.gateway.channels.links``), because a channel
builds one too and must not import the runtime.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from picoora.gateway.channels.links import Inbound

if TYPE_CHECKING:
    from picoora.agent import TurnResult


@dataclass(frozen=True)
class TurnOutcome:
    status: str  # "answer", "stopped" (a limit or an error inside the loop), "failed", "busy" or "cut_off"
    result: TurnResult | None = None
    error: str = ""  # why there is no answer, for a record or a log

    @property
    def ok(self) -> bool:
        return self.status == "answer"

    @property
    def text(self) -> str:
        return self.result.text if self.result is not None else self.error

    @classmethod
    def of(cls, result: TurnResult) -> TurnOutcome:
        if result.stop_reason in ("answer", "tool_calls"):  # tool_calls: a client's calls, handed back to it
            return cls("answer", result)
        return cls("stopped", result, f"{result.stop_reason}: {result.text}")


# Called inside the turn's task once the outcome is known, so the drain at shutdown covers the reply too
# (a channel's message, a job's delivery and run record, the heartbeat's beat record).
OnOutcome = Callable[[Inbound, TurnOutcome], Awaitable[None]]
