"""Render a turn's events in the terminal.

The answer goes to stdout (so ``picoora agent -m ... > answer.txt`` captures only the answer);
reasoning, tool-call lines, notices and errors go to stderr. A tool call is one line,
``→ recall(query="...")`` followed by ``✓`` or ``✗`` once it finishes.

Everything an event carries is the model's or a tool's text, so terminal control is stripped before
it is written: escape sequences (an OSC 52 clipboard write, a screen clear, a cursor move) and the
other C0/C1 control characters but newline and tab. A sequence split across streamed tokens loses
its ESC either way, so what is left prints as plain characters.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from typing import IO, Any

from picoora.agent.events import (
    CompactionEvent,
    ErrorEvent,
    Event,
    FinalAnswer,
    NoticeEvent,
    ReasoningEvent,
    TokenEvent,
    ToolCallFinished,
    ToolCallStarted,
)

_MAX_VALUE_CHARS = 60
_MAX_ERROR_CHARS = 100
# CSI (ESC [ or 0x9b) ... final byte; OSC (ESC ] or 0x9d) ... BEL/ST; any other two-byte ESC sequence.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[@-Z\\-_]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_TEXT_FIELDS = ("text", "message", "result", "name")


def printable(text: str) -> str:
    """``text`` without terminal escape sequences or control characters (newline and tab stay)."""
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))


def _printable_event(event: Event) -> Event:
    changes: dict[str, Any] = {}
    for name in _TEXT_FIELDS:  # once per streamed token: each field is cleaned once
        value = getattr(event, name, None)
        if isinstance(value, str) and (clean := printable(value)) != value:
            changes[name] = clean
    return dataclasses.replace(event, **changes) if changes else event


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """``recall(query="favourite language", max_results=5)``, long values shortened."""
    parts = []
    for key, value in arguments.items():
        text = json.dumps(value, ensure_ascii=False)
        if len(text) > _MAX_VALUE_CHARS:
            text = text[: _MAX_VALUE_CHARS - 1] + "…"
        parts.append(f"{key}={text}")
    return f"{name}({', '.join(parts)})"


def _first_line(text: str, limit: int = _MAX_ERROR_CHARS) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


class _Styled:
    """ANSI styles on a terminal (unless NO_COLOR is set), plain text otherwise.

    Plain escape codes rather than rich: this is on the one-shot start-up path, and importing rich
    costs ~25 ms for four colours.
    """

    def __init__(self, stream: IO[str]):
        self.enabled = stream.isatty() and "NO_COLOR" not in os.environ

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text


DIM, RED, GREEN, YELLOW, CYAN = "2", "31", "32", "33", "36"


class TurnRenderer:
    """Turns agent events into terminal output; one instance per turn."""

    def __init__(self, out: IO[str], err: IO[str], *, stream: bool):
        self.out, self.err = out, err
        self.stream = stream
        self._style_err = _Styled(err)
        self._streamed = ""  # answer text already written since the last tool call
        self._reasoning_open = False
        self._open_call: str | None = None  # call id whose "→ ..." line still waits for ✓/✗
        self._calls: dict[str, str] = {}
        self._errors: list[str] = []  # shown already; the FinalAnswer of an error stop repeats one

    def __call__(self, event: Event) -> None:
        event = _printable_event(event)
        if isinstance(event, TokenEvent):
            if self.stream:
                self._close_err_line()
                self.out.write(event.text)
                self.out.flush()
                self._streamed += event.text
        elif isinstance(event, ReasoningEvent):
            if self.stream:
                self._close_call_line()
                self.err.write(self._style_err(event.text, DIM))
                self.err.flush()
                self._reasoning_open = not event.text.endswith("\n")
        elif isinstance(event, ToolCallStarted):
            self._end_answer_part()
            self._close_err_line()
            call = printable(format_call(event.name, event.arguments))
            self._calls[event.call_id] = call
            self.err.write(self._style_err(f"→ {call}", CYAN))
            self.err.flush()
            self._open_call = event.call_id
        elif isinstance(event, ToolCallFinished):
            self._tool_finished(event)
        elif isinstance(event, (NoticeEvent, CompactionEvent)):
            self._err_line(self._style_err(event.text, YELLOW))
        elif isinstance(event, ErrorEvent):
            self._errors.append(event.message)
            self._err_line(self._style_err(event.message, RED))
        elif isinstance(event, FinalAnswer):
            self._final(event)

    def cancelled(self) -> None:
        """The user pressed Ctrl+C during the turn."""
        self._end_answer_part()
        self._err_line(self._style_err("(cancelled) This message will not be sent to the model again; "
                                       "send it again to have it answered.", DIM))

    def _tool_finished(self, event: ToolCallFinished) -> None:
        mark = self._style_err("✓", GREEN) if event.ok else self._style_err(f"✗ {_first_line(event.result)}", RED)
        if self._open_call == event.call_id:
            self.err.write(f" {mark}\n")
            self._open_call = None
        else:
            self._close_err_line()
            call = self._calls.get(event.call_id, event.name)
            self.err.write(f"{self._style_err(f'→ {call}', CYAN)} {mark}\n")
        self.err.flush()

    def _final(self, event: FinalAnswer) -> None:
        self._close_err_line()
        text = event.text.strip()
        if event.stop_reason != "answer":
            self._end_answer_part()
            if text and text not in self._errors:
                self._err_line(self._style_err(text, RED))
            return
        if self.stream and self._streamed.strip() and self._streamed.strip() == text:
            self._end_answer_part()
            return
        self._end_answer_part()
        if text:
            self.out.write(text + "\n")
            self.out.flush()

    def _end_answer_part(self) -> None:
        if self._streamed and not self._streamed.endswith("\n"):
            self.out.write("\n")
            self.out.flush()
        self._streamed = ""

    def _close_call_line(self) -> None:
        if self._open_call is not None:
            self.err.write("\n")
            self._open_call = None

    def _close_err_line(self) -> None:
        self._close_call_line()
        if self._reasoning_open:
            self.err.write("\n")
            self._reasoning_open = False

    def _err_line(self, text: str) -> None:
        self._close_err_line()
        self.err.write(text + "\n")
        self.err.flush()
