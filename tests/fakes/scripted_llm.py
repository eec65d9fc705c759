"""A scripted LLM for agent tests: queued answers, streamed in chunks, every request recorded.

Each ``chat`` call takes the next step from the queue (or, when the queue is empty, asks
``respond``). A step is one of:
- an ``LLMResponse``: returned, its reasoning then its content streamed through ``on_delta``;
- an exception instance: raised;
- ``Sleep(seconds, then)``: waits, then plays ``then``;
- a callable ``f(messages) -> step`` (sync or async): called with the request's messages, its result played.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from picoora.llm.base import DEFAULT_OPTIONS, CallOptions, LLMResponse, OnDelta, ToolSchema
from picoora.messages import Message, ToolCall


@dataclass
class Sleep:
    seconds: float
    then: Step


Step = LLMResponse | BaseException | Sleep | Callable[[list[Message]], Any]


@dataclass
class Request:
    messages: list[Message]
    tools: list[ToolSchema] | None
    options: CallOptions = DEFAULT_OPTIONS

    @property
    def system(self) -> str:
        return self.messages[0].content if self.messages and self.messages[0].role == "system" else ""


_call_ids = itertools.count(1)


def answer(text: str, *, reasoning: str = "", notice: str | None = None) -> LLMResponse:
    return LLMResponse(content=text, reasoning=reasoning, notice=notice)


def calls(*specs: tuple[str, dict[str, Any]], content: str = "") -> LLMResponse:
    """A response asking for tools: ``calls(("read_file", {"path": "a"}), ("list_dir", {}))``."""
    tool_calls = [ToolCall(id=f"call_{next(_call_ids)}", name=name, arguments=args) for name, args in specs]
    return LLMResponse(content=content, tool_calls=tool_calls, finish_reason="tool_calls")


class ScriptedLLM:
    provider = "scripted"

    def __init__(self, *steps: Step, respond: Callable[[list[Message]], Any] | None = None,
                 chunk_size: int = 3, model: str = "scripted-model", vision: bool = False):
        self.model = model
        self.vision = vision
        self.steps: deque[Step] = deque(steps)
        self.respond = respond
        self.chunk_size = chunk_size
        self.requests: list[Request] = []
        self.closed = False

    def add(self, *steps: Step) -> None:
        self.steps.extend(steps)

    @staticmethod
    def unsupported(options: CallOptions) -> tuple[str, str] | None:
        return None

    async def sees_images(self) -> bool:
        return self.vision

    async def chat(self, messages: list[Message], tools: list[ToolSchema] | None = None, *,
                   on_delta: OnDelta | None = None, options: CallOptions = DEFAULT_OPTIONS) -> LLMResponse:
        self.requests.append(Request(list(messages), tools, options))
        if self.steps:
            step: Any = self.steps.popleft()
        elif self.respond is not None:
            step = self.respond
        else:
            raise AssertionError(f"ScriptedLLM: no response scripted for request {len(self.requests)}")
        while not isinstance(step, LLMResponse):
            if isinstance(step, BaseException):
                raise step
            if isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
                step = step.then
            else:
                step = step(messages)
                if inspect.isawaitable(step):
                    step = await step
        if on_delta is not None:
            await self._stream(on_delta, "reasoning", step.reasoning)
            await self._stream(on_delta, "token", step.content)
        return step

    async def _stream(self, on_delta: OnDelta, kind: str, text: str) -> None:
        for start in range(0, len(text), self.chunk_size):
            result = on_delta(kind, text[start : start + self.chunk_size])  # type: ignore[arg-type]
            if inspect.isawaitable(result):
                await result

    async def close(self) -> None:
        self.closed = True
