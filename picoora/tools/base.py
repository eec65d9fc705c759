"""What a tool is: a name, a description, a pydantic argument model and an async ``run``.

The JSON schema the model sees is generated from the same pydantic model that validates the call,
so the two cannot drift. A tool returns a ``ToolResult``; it raises only for bugs; anything a user
or model can cause (bad path, timeout, refused URL) comes back as ``ToolResult(..., is_error=True)``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from picoora.config import ToolsConfig

if TYPE_CHECKING:
    from picoora.store.protocol import Store


@dataclass
class ToolResult:
    content: str
    is_error: bool = False
    full: str | None = None  # the whole output when ``content`` is a cut of it: kept for ``read_tool_output``
    handle: str | None = None  # set by the registry: where the whole output was kept
    details: list[dict[str, Any]] | None = None  # what the tool used, for the turn's trace (search_docs' chunks)

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=f"Error: {message}", is_error=True)


@dataclass(frozen=True)
class ToolSettings:
    """What the tools read from the config: the typed ``tools`` section and the paths no tool may touch."""

    tools: ToolsConfig = field(default_factory=ToolsConfig)
    # Files and directories no tool may read or write (a config file given with --config, a wallet).
    protected_paths: tuple[str, ...] = ()

    @classmethod
    def coerce(cls, value: ToolSettings | Mapping[str, Any] | None) -> ToolSettings:
        """Settings from a ``ToolSettings`` or a plain mapping shaped like the ``tools`` section
        (plus ``protected_paths``); unknown keys are an error, as in the config file."""
        if isinstance(value, ToolSettings):
            return value
        data = dict(value or {})
        protected = tuple(str(p) for p in data.pop("protected_paths", ()) if p)
        return cls(ToolsConfig.model_validate(data), protected)


@dataclass
class ToolContext:
    """What a running tool may touch. Built by the agent loop for each turn."""

    workspace: Path
    store: Store
    session_key: str = "cli:default"
    turn_id: str = ""  # the turn the call belongs to (kept with a long output; a memory's provenance)
    restrict_to_workspace: bool = True
    # Values that must never reach the model (API keys, passwords); tools scrub them from output.
    secrets: list[str] = field(default_factory=list)
    # The tools' settings (exec timeout, web_fetch caps, ...), from config.tools; a plain mapping of
    # the same shape is accepted and validated.
    settings: ToolSettings = field(default_factory=ToolSettings)
    # Limits this turn's tool calls running at once; the registry creates it on first use.
    turn_slots: Any = None
    # Where ``message``/``spawn`` act (picoora.tools.messaging.Messenger); None: nowhere.
    messenger: Any = None
    # Asked before every call (picoora.gateway.runtime.approvals): None to run it, else why it may not run.
    approve: Any = None

    def __post_init__(self) -> None:
        self.settings = ToolSettings.coerce(self.settings)


_SCHEMAS: dict[type, dict[str, Any]] = {}


class Tool(abc.ABC):
    """Subclass with ``name``, ``description``, ``Args`` and ``run``."""

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]
    on_demand: ClassVar[bool] = False  # offered only when the turn asks for it (``ToolRegistry.schemas``)

    @abc.abstractmethod
    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Do the work; ``args`` is an instance of ``Args``, already validated."""

    def available(self) -> bool:
        """Whether the model is offered this tool now (an MCP server's tools only while it runs). Called on the
        event loop: it must not block (a tool whose answer needs I/O keeps the last one, see ``refresh``)."""
        return True

    async def refresh(self) -> None:
        """Look again at what ``available`` answers from, before a turn lists the tools
        (``ToolRegistry.prepare``); blocking work goes off the event loop. Usually nothing to do."""
        return None

    def prompt_part(self) -> str:
        """A section this tool adds to the system prompt (the skills summary); usually none."""
        return ""

    @classmethod
    def schema(cls) -> dict[str, Any]:
        # Built once per tool class: pydantic's schema generation costs ~0.7 ms a tool, every turn, on the
        # event loop (8 ms a turn with the default tools, which a gateway serving many chats pays serially).
        # The one dict is shared, not copied (a deep copy of every schema was 1-2 ms a model call): callers
        # that adapt it for a provider build new dicts and never change this one.
        cached = _SCHEMAS.get(cls)
        if cached is None:
            params = _without_titles(cls.Args.model_json_schema())
            cached = _SCHEMAS[cls] = {"type": "function",
                                      "function": {"name": cls.name, "description": cls.description,
                                                   "parameters": params}}
        return cached


def _without_titles(schema: Any) -> Any:
    """The schema without pydantic's generated ``title`` keys: they repeat each field's name and cost
    prompt tokens on every turn. Property names themselves are kept, even one called ``title``."""
    if isinstance(schema, dict):
        return {key: (_without_titles(value) if key != "properties" else
                      {name: _without_titles(sub) for name, sub in value.items()})
                for key, value in schema.items() if key != "title" or not isinstance(value, str)}
    if isinstance(schema, list):
        return [_without_titles(item) for item in schema]
    return schema
