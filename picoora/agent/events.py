"""Typed events a turn emits: the CLI renders them, the gateway streams them (SSE), channels send them.

Every event carries its session, the id of the turn it belongs to and a sequence number (1, 2, ...
within that turn), stamped by the loop as it emits. A turn's events, in order: ``TurnStarted``; then
reasoning, tokens, tool calls and notices as they happen; then exactly one ``FinalAnswer`` (preceded by
an ``ErrorEvent`` with the same text when the turn failed). ``FinalAnswer`` is the last content event:
only a ``CompactionEvent`` (the session's older messages were summarised, after the answer was
recorded) may follow it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from picoora.messages import ToolCall


@dataclass
class Event:
    session_key: str
    turn_id: str = field(default="", kw_only=True)
    seq: int = field(default=0, kw_only=True)

    @property
    def type(self) -> str:
        return _TYPE_NAMES[type(self)]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass
class TurnStarted(Event):
    model: str = ""  # "provider/model" answering this turn


@dataclass
class TokenEvent(Event):
    text: str


@dataclass
class ReasoningEvent(Event):
    text: str


@dataclass
class ToolCallStarted(Event):
    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolCallFinished(Event):
    call_id: str
    name: str
    result: str
    ok: bool


@dataclass
class NoticeEvent(Event):
    """Something the user should know that is not an error (model cannot use tools, context summarised)."""

    text: str


@dataclass
class FinalAnswer(Event):
    text: str
    stop_reason: str = "answer"  # answer | error | a limit or stop condition (picoora.agent.loop) | cancelled
    calls: list[ToolCall] = field(default_factory=list)  # stop_reason "tool_calls": a client's calls


@dataclass
class ErrorEvent(Event):
    message: str


@dataclass
class CompactionEvent(Event):
    """After the answer: older messages were folded into the session summary (or that failed: ``ok`` False)."""

    text: str
    folded: int = 0
    ok: bool = True


_TYPE_NAMES = {
    TurnStarted: "turn_started",
    TokenEvent: "token",
    ReasoningEvent: "reasoning",
    ToolCallStarted: "tool_call_started",
    ToolCallFinished: "tool_call_finished",
    NoticeEvent: "notice",
    FinalAnswer: "final_answer",
    ErrorEvent: "error",
    CompactionEvent: "compaction",
}

EventSink = Callable[[Event], None | Awaitable[None]]
