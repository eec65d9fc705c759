"""Building blocks for agent tests: a registry of plain functions, an event collector, an agent factory."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from picoora.agent.events import Event
from picoora.agent.loop import Agent
from picoora.config import AgentDefaults
from picoora.store.files import FileStore
from picoora.tools.base import ToolContext, ToolResult
from picoora.tools.memory import MEMORY_TOOLS
from picoora.tools.registry import ToolRegistry

ToolFunction = Callable[[dict[str, Any], ToolContext], ToolResult | Awaitable[ToolResult]]


class FunctionRegistry:
    """The ToolRegistry surface the loop uses, over plain functions; records every execution."""

    def __init__(self, **functions: ToolFunction):
        self.functions = functions
        self.executed: list[tuple[str, dict[str, Any]]] = []

    def names(self) -> list[str]:
        return sorted(self.functions)

    def schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": (fn.__doc__ or name).strip(),
                    "parameters": {"type": "object", "properties": {}},
                },
            }
            for name, fn in sorted(self.functions.items())
        ]

    async def prepare(self) -> list[str]:
        return []

    def prompt_parts(self) -> list[str]:
        return []

    async def execute(self, name: str, raw_args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.executed.append((name, raw_args))
        fn = self.functions.get(name)
        if fn is None:
            return ToolResult.error(f"unknown tool {name!r}")
        result = fn(raw_args, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result


def memory_registry() -> ToolRegistry:
    """The real registry holding the real memory tools (remember, recall, forget, write_daily_note)."""
    registry = ToolRegistry()
    for tool_class in MEMORY_TOOLS:
        registry.register(tool_class())
    return registry


class Collector:
    """An event sink; ``async_sink`` makes it a coroutine function (the loop must accept both)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    async def async_sink(self, event: Event) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, type_name: str) -> list[Any]:
        return [e for e in self.events if e.type == type_name]


def make_agent(store: Any, llm: Any, workspace: Path, tools: Any = None, secrets: tuple[str, ...] = (),
               tool_settings: dict[str, Any] | None = None, **settings: Any) -> Agent:
    return Agent(
        store=store,
        llm=llm,
        tools=tools if tools is not None else FunctionRegistry(),
        settings=AgentDefaults(**settings),
        workspace=workspace,
        secrets=secrets,
        tool_settings=tool_settings,
    )


def file_store(tmp_path: Path) -> FileStore:
    """The embedded default store, keyword-only (no embedding model), in a fresh workspace."""
    return FileStore(tmp_path / "workspace")
