"""What a tool is: a name, a description, a pydantic argument model and an async ``run``.

The JSON schema the model sees is generated from the same pydantic model that validates the call,
so the two cannot drift. A tool returns a ``ToolResult``; it raises only for bugs; anything a user
or model can cause (bad path, timeout, refused URL) comes back as ``ToolResult(..., is_error=True)``.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from picoora.store.base import Store


@dataclass
class ToolResult:
    content: str
    is_error: bool = False

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=f"Error: {message}", is_error=True)


@dataclass
class ToolContext:
    """What a running tool may touch. Built by the agent loop for each turn."""

    workspace: Path
    store: Store
    session_key: str = "cli:default"
    restrict_to_workspace: bool = True
    # Values that must never reach the model (API keys, passwords); tools scrub them from output.
    secrets: list[str] = field(default_factory=list)
    # Extra settings by tool family (exec timeout, web_fetch caps, ...), from config.tools.
    settings: dict[str, Any] = field(default_factory=dict)


class Tool(abc.ABC):
    """Subclass with ``name``, ``description``, ``Args`` and ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]

    @abc.abstractmethod
    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Do the work; ``args`` is an instance of ``Args``, already validated."""

    @classmethod
    def schema(cls) -> dict[str, Any]:
        params = cls.Args.model_json_schema()
        params.pop("title", None)
        return {"type": "function", "function": {"name": cls.name, "description": cls.description, "parameters": params}}
