"""Where a turn's conversation comes from, and whether the turn is kept there.

The loop asks its ``ConversationSource`` what it would otherwise have to ask "whose conversation is this?"
about: the turn's input messages, the tools offered (and whether their calls go back to the client), the
history and the system prompt (the summary of the older conversation is part of it), how to make room when
a request outgrows the window, whether the session grew enough to be compacted, and whether the turn is
saved. Two kinds:

- ``SessionSource`` (``session_source.py``): picoora keeps the conversation (the terminal, the web chat,
  the channels, jobs). The session's history and summary, picoora's prompt and tools; the turn is saved
  in the session, which is compacted when it grows too long.
- ``ClientSource`` (``client_source.py``): the client keeps it (the OpenAI endpoint's stateless requests,
  ``conversation.py``). Its history and system message, its tools when it brings some; nothing is saved
  in the session or compacted, since the next request brings the conversation again.

Both recall memories for the user's message and read the prompt files and daily notes the same way
(``context.gather_inputs``, in the store's worker thread).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from picoora.agent.context import ContextInputs, build_system_prompt, gather_inputs
from picoora.config import AgentDefaults
from picoora.llm.base import LLM, CallOptions, ToolSchema
from picoora.messages import Message
from picoora.store.aio import AsyncStore
from picoora.store.base import RecallResult
from picoora.store.protocol import Store
from picoora.tools.memory import MEMORY_TOOL_NAMES

if TYPE_CHECKING:
    from picoora.llm.pool import ModelChoice
    from picoora.tools.registry import ToolRegistry

# The memory tools a client gets without opting into picoora's agent: not ``forget``, which deletes the
# owner's memories, and a model confused by a client's own prompt (a shell or code assistant) must not.
UNASKED_MEMORY_TOOLS = MEMORY_TOOL_NAMES - {"forget"}

Announce = Callable[[str], Awaitable[None]]  # tells the user something (a notice event)


class ContextFull(Exception):
    """The request does not fit the model's context window and no room can be made for it."""


@dataclass(frozen=True)
class AgentParts:
    """What a source reads besides its own conversation: the agent's store, tools and settings."""

    store: Store  # the synchronous store, for ``gather_inputs`` in the worker thread
    astore: AsyncStore
    tools: ToolRegistry
    settings: AgentDefaults
    workspace: Path

    async def gather(self, session_key: str, query: str, *, with_session: bool) -> ContextInputs:
        return await self.astore.run(gather_inputs, self.store, session_key, query, self.settings,
                                     with_session=with_session)

    def system_prompt(self, inputs: ContextInputs, offer: ToolOffer, model_label: str) -> str:
        """picoora's own system prompt: its identity, rules, prompt files, memories, notes and summary."""
        return build_system_prompt(inputs, tools=offer.schemas, workspace=self.workspace, settings=self.settings,
                                   model_label=model_label, tool_parts=self.tool_parts(offer))

    def tool_parts(self, offer: ToolOffer) -> tuple[str, ...]:
        """The tools' own prompt parts (skills, ...): only where all of picoora's tools are offered."""
        return tuple(self.tools.prompt_parts()) if offer.all_own else ()

    async def own_tools(self, options: CallOptions, announce: Announce) -> ToolOffer:
        """picoora's tools (none with ``tool_choice: none``); MCP servers start on the first turn that asks."""
        for notice in await self.tools.prepare():
            await announce(notice)
        if options.tool_choice == "none":
            return ToolOffer([])
        registry = self.tools
        return ToolOffer(registry.schemas(), on_demand=lambda: registry.schemas(on_demand=True), all_own=True)

    def memory_tools(self, options: CallOptions) -> ToolOffer:
        """``remember`` and ``recall`` only (a client that did not opt into picoora's agent); none when the
        answer must be JSON in a format or the request says ``tool_choice: none``."""
        if options.tool_choice == "none" or options.json_object or options.json_schema is not None:
            return ToolOffer([])
        return ToolOffer([s for s in self.tools.schemas() if s["function"]["name"] in UNASKED_MEMORY_TOOLS])


class ToolOffer:
    """The tools offered to the model this turn, and who runs their calls."""

    def __init__(self, schemas: list[ToolSchema], *, hands_back: bool = False,
                 on_demand: Callable[[], list[ToolSchema]] | None = None, all_own: bool = False):
        self.schemas = schemas
        self.hands_back = hands_back  # the client's tools: a call ends the turn and goes back to the client
        self.all_own = all_own  # all of picoora's tools, with their rules and prompt parts
        self._on_demand = on_demand  # picoora's tools with the on-demand ones (``read_tool_output``)

    def offer_on_demand(self) -> None:
        """Offer the on-demand tools from now on (a kept tool output is there to read). Not when nothing is
        offered (``tool_choice: none``) or the tools are the client's."""
        if self.schemas and self._on_demand is not None:
            self.schemas, self._on_demand = self._on_demand(), None


class ConversationSource(Protocol):
    saved: bool  # the turn is appended to the session (see ``record.session_share``)
    options: CallOptions  # how the model is called (temperature, JSON mode, tool choice, ...)
    model: ModelChoice | None  # the model asked for; None: the session's

    def opening(self) -> list[Message]:
        """The turn's input, recorded before anything else."""
        ...

    async def offer_tools(self, announce: Announce) -> ToolOffer: ...

    async def load(self, offer: ToolOffer, model_label: str) -> RecallResult | None:
        """Read the context (recalled memories, prompt files, notes, the history) and build the system
        prompt for ``offer``, which may grow later; returns the recall, for the trace."""
        ...

    @property
    def history(self) -> list[Message]:
        """The conversation before this turn, as kept (cancelled turns still in it)."""
        ...

    @property
    def system(self) -> str: ...

    async def make_room(self, llm: LLM, max_kept_tokens: int) -> int:
        """The request outgrew the window: fold the older conversation into the summary, keeping at most
        ``max_kept_tokens`` of it, and reload; returns how many messages were folded (0: none left).
        Raises ``ContextFull`` when this conversation cannot be folded, ``CompactionError`` when folding failed."""
        ...

    def needs_compaction(self, produced: list[Message]) -> bool:
        """After the answer: the kept conversation, with this turn's ``produced``, is due for a summary."""
        ...
