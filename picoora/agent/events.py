"""Typed events a turn emits: the CLI renders them, the gateway will stream them (SSE)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Awaitable, Callable, Union


@dataclass
class Event:
    session_key: str

    @property
    def type(self) -> str:
        return _TYPE_NAMES[type(self)]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


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
    """Something the user should know that is not an error (model cannot use tools, history summarised)."""

    text: str


@dataclass
class FinalAnswer(Event):
    text: str
    stop_reason: str = "answer"  # answer | max_iterations | time_limit | repeated_tool_call | error


@dataclass
class ErrorEvent(Event):
    message: str


_TYPE_NAMES = {
    TokenEvent: "token",
    ReasoningEvent: "reasoning",
    ToolCallStarted: "tool_call_started",
    ToolCallFinished: "tool_call_finished",
    NoticeEvent: "notice",
    FinalAnswer: "final_answer",
    ErrorEvent: "error",
}

EventSink = Callable[[Event], Union[None, Awaitable[None]]]
