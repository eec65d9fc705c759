"""The conversation a client keeps: one request of the OpenAI endpoint (``picoora.agent.conversation``).

The history and system message are the request's; picoora adds the memories recalled for the last user
message and, when the client brings no tools, its ``remember`` and ``recall`` tools: all its tools and rules
only when the client opts into picoora's agent (``ClientConversation.agent``). The client's tools end the
turn with their calls. Nothing goes to the session and nothing is compacted: the next request brings the
conversation again, so a conversation too long for the window is the client's to shorten.
"""

from __future__ import annotations

from picoora.agent.context import ContextInputs, build_client_system_prompt
from picoora.agent.conversation import ClientConversation
from picoora.agent.source import AgentParts, Announce, ContextFull, ToolOffer
from picoora.llm.base import LLM
from picoora.messages import Message
from picoora.store.base import RecallResult


class ClientSource:
    saved = False

    def __init__(self, parts: AgentParts, session_key: str, conversation: ClientConversation):
        self._parts = parts
        self._key = session_key
        self._conversation = conversation
        self.options = conversation.options
        self.model = conversation.model
        self._history = list(conversation.history)
        self._system = ""

    def opening(self) -> list[Message]:
        return list(self._conversation.new)

    async def offer_tools(self, announce: Announce) -> ToolOffer:
        tools = self._conversation.tools
        if tools is None and self._conversation.agent:
            return await self._parts.own_tools(self.options, announce)
        if tools is None:
            return self._parts.memory_tools(self.options)
        return ToolOffer([] if self.options.tool_choice == "none" else list(tools), hands_back=True)

    async def load(self, offer: ToolOffer, model_label: str) -> RecallResult | None:
        inputs = await self._parts.gather(self._key, self._conversation.query, with_session=False)
        self._system = self._prompt(inputs, offer, model_label)
        return inputs.recall

    def _prompt(self, inputs: ContextInputs, offer: ToolOffer, model_label: str) -> str:
        """The client's system message first, as it wrote it; without one, picoora's own prompt."""
        client_system = self._conversation.system
        if not client_system.strip():
            return self._parts.system_prompt(inputs, offer, model_label)
        return build_client_system_prompt(client_system, inputs, tools=[] if offer.hands_back else offer.schemas,
                                          settings=self._parts.settings, tool_parts=self._parts.tool_parts(offer))

    @property
    def history(self) -> list[Message]:
        return self._history

    @property
    def system(self) -> str:
        return self._system

    async def make_room(self, llm: LLM, max_kept_tokens: int) -> int:
        raise ContextFull("The conversation does not fit the model's context window, and picoora does not "
                          "summarise a conversation the client keeps: send fewer or shorter messages "
                          f"(agents.defaults.context_window is {self._parts.settings.context_window}).")

    def needs_compaction(self, produced: list[Message]) -> bool:
        return False
