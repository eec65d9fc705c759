"""The conversation picoora keeps: a session (the terminal, the web chat, the channels, jobs).

The history and summary are the session's, read when the turn starts; the prompt and tools are picoora's;
the turn is saved in the session, and the session is compacted when it grows too long
(``picoora.agent.compaction``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from picoora.agent.compaction import compact, needs_compaction
from picoora.agent.context import ContextInputs
from picoora.agent.source import AgentParts, Announce, ToolOffer
from picoora.llm.base import DEFAULT_OPTIONS, LLM
from picoora.messages import Image, Message
from picoora.store.base import RecallResult, Session

if TYPE_CHECKING:
    from picoora.llm.pool import ModelChoice


class SessionSource:
    saved = True
    options = DEFAULT_OPTIONS
    model: ModelChoice | None = None  # the session's own

    def __init__(self, parts: AgentParts, session_key: str, text: str, images: Sequence[Image] = ()):
        self._parts = parts
        self._key = session_key
        self._text = text
        self._images = list(images)
        self._inputs = ContextInputs(session=Session(session_key), prompts=[], recall=None, daily_notes=[])
        self._offer = ToolOffer([])
        self._model_label = ""
        self._system = ""

    def opening(self) -> list[Message]:
        return [Message(role="user", content=self._text, images=self._images)]

    async def offer_tools(self, announce: Announce) -> ToolOffer:
        return await self._parts.own_tools(self.options, announce)

    async def load(self, offer: ToolOffer, model_label: str) -> RecallResult | None:
        self._offer, self._model_label = offer, model_label
        self._use(await self._parts.gather(self._key, self._text, with_session=True))
        return self._inputs.recall

    def _use(self, inputs: ContextInputs) -> None:
        self._inputs = inputs
        self._system = self._parts.system_prompt(inputs, self._offer, self._model_label)

    @property
    def history(self) -> list[Message]:
        return self._inputs.session.messages

    @property
    def system(self) -> str:
        return self._system

    async def make_room(self, llm: LLM, max_kept_tokens: int) -> int:
        settings, astore = self._parts.settings, self._parts.astore
        folded = await compact(astore, llm, self._key, settings, max_kept_tokens=max_kept_tokens)
        if folded:
            self._use(replace(self._inputs, session=await astore.sessions.load(self._key)))
        return folded

    def needs_compaction(self, produced: list[Message]) -> bool:
        session = self._inputs.session
        return needs_compaction(session.messages + produced, session.summary, self._parts.settings)
