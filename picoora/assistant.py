"""The library's front door: one call builds a ready assistant from a config.

    from picoora.assistant import build_assistant
    from picoora.config import load_config

    async def main():
        async with build_assistant(load_config()) as assistant:
            result = await assistant.ask("What programming language do I prefer?")
            print(result.text)

``build_assistant`` opens the store, the model clients, the tool registry and the agent loop; closing
the assistant closes them again. The CLI, the gateway and the channels are thin layers over this: every
session operation they offer (a new session, a session's model, the list of sessions, a history, the
last trace) is a method here, so each front door behaves the same.
"""

from __future__ import annotations

# asyncio and json are imported where used: the CLI imports this module for DEFAULT_SESSION, and
# `picoora --help` must not pay for asyncio.
import functools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

    from picoora.agent import Agent, TurnResult
    from picoora.agent.auto_memory import AutoMemory
    from picoora.agent.conversation import ClientConversation
    from picoora.agent.events import EventSink
    from picoora.agent.loop import Approve
    from picoora.config import Config
    from picoora.docs.adding import Outcome, PagesCheck
    from picoora.llm.pool import ModelChoice, ModelPool
    from picoora.messages import Image
    from picoora.session_models import SessionModel
    from picoora.store.aio import AsyncStore
    from picoora.store.base import (
        AddMemoryResult,
        DocumentHit,
        DocumentRecord,
        MemoryRecord,
        Provenance,
        RecallResult,
        Session,
        TranscriptEntry,
        TurnTrace,
    )
    from picoora.store.protocol import Store
    from picoora.tools.registry import ToolRegistry

DEFAULT_SESSION = "cli:default"


class TurnFailed(Exception):
    """``Assistant.answer`` raises this when a turn ends without an answer; the message says why."""

    def __init__(self, result: TurnResult):
        super().__init__(result.text)
        self.result = result


@dataclass
class Assistant:
    config: Config
    workspace: Path
    store: Store
    astore: AsyncStore
    models: ModelPool
    tools: ToolRegistry
    agent: Agent
    person: str = ""  # empty: the owner
    messenger: Any = None  # set by a front door that offers the messaging tools (see ``enable_messaging``)
    auto_memory: AutoMemory | None = None  # remembers what people state (config memory.auto)
    # the people's search_docs tools (``open_for_person``): a document the owner shares is theirs to search too
    _people_docs_tools: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet, repr=False)

    def open_for_person(self, person: str) -> Assistant:
        """A new assistant for ``person`` (not the owner): their own store (their memories, notes, sessions,
        traces; the prompts shared) and only the tools that cannot reach the owner's machine or data (memory
        and web, no files or shell), on this assistant's model clients. The caller closes it; closing it
        leaves the shared model clients open."""
        return _scoped_assistant(self, person)

    def enable_messaging(self, messenger: Any) -> None:
        """Offer the messaging tools (``message``, ``spawn``) to the owner's turns, acting
        through ``messenger`` (the gateway's or the terminal's). Guests never get them: they could write to
        any chat or run up the owner's model time."""
        from picoora.tools.messaging import MESSAGING_TOOLS

        self.agent.messenger = messenger
        self.messenger = messenger
        for tool_class in MESSAGING_TOOLS:
            if tool_class.name not in self.tools.names():
                self.tools.register(tool_class())

    # -- turns ---------------------------------------------------------------------------------------

    async def ask(self, text: str, session_key: str = DEFAULT_SESSION, on_event: EventSink | None = None, *,
                  conversation: ClientConversation | None = None, approve: Approve | None = None,
                  images: Sequence[Image] = (), learn: bool = False) -> TurnResult:
        """Run one turn: the user's ``text`` in, the answer and how the turn ended out (``stop_reason``:
        ``answer`` or why not; an error is never disguised as an answer, see ``answer``). ``conversation``:
        the client keeps the history (``picoora.agent.conversation``); ``approve``: asked before each tool call;
        ``images``: pictures sent with the text (check ``sees_images`` first). ``learn``: ``text`` is what a
        person typed (not a job or the heartbeat), so the facts it states are remembered once the turn has
        answered (``auto_memory``)."""
        from picoora.outward import Outward

        # Everything the turn says goes out scrubbed of secrets (and, for a guest, without provider errors).
        outward = Outward(self.agent.secrets, guest=bool(self.person))
        await self._restore_model(session_key)
        result = outward.result(await self.agent.run_turn(session_key, text, outward.sink(on_event),
                                                          conversation=conversation, approve=approve, images=images))
        if learn and self.auto_memory is not None and result.stop_reason == "answer":
            self.auto_memory.after_turn(text, session_key, result.turn_id)
        return result

    async def sees_images(self, session_key: str = DEFAULT_SESSION) -> bool:
        """The session's model takes pictures."""
        await self._restore_model(session_key)
        return await self.agent.sees_images(session_key)

    async def answer(self, text: str, session_key: str = DEFAULT_SESSION, on_event: EventSink | None = None) -> str:
        """The answer's text, or ``TurnFailed`` when the turn stopped without one."""
        result = await self.ask(text, session_key, on_event)
        if result.stop_reason != "answer":
            raise TurnFailed(result)
        return result.text

    # -- sessions ------------------------------------------------------------------------------------

    async def new_session(self, session_key: str) -> None:
        """Start the session afresh: its history and summary go, its transcript and memories stay."""
        await self.astore.sessions.reset(session_key)

    async def sessions(self) -> list[Session]:
        """The sessions, and the conversations OpenAI clients keep: those have a transcript and no session
        history (the client sends it), so their messages are the transcript's."""
        from picoora.agent.conversation import CLIENT_KEPT_PREFIX
        from picoora.store.base import Session

        sessions = await self.astore.sessions.list()
        known = {session.key for session in sessions}
        for key in await self.astore.transcripts.keys():
            if key.startswith(CLIENT_KEPT_PREFIX) and key not in known:
                entries = await self.astore.transcripts.read(key)
                if entries:
                    sessions.append(Session(key, [e.message for e in entries], created_at=entries[0].created_at,
                                            updated_at=entries[-1].created_at))
        return sessions

    async def history(self, session_key: str, limit: int | None = None) -> list[TranscriptEntry]:
        """Every message of the session as recorded (the transcript), oldest first; ``limit``: the last ones.
        Scrubbed of the config's secrets whatever the backend holds (a transcript written before that)."""
        return self._scrubbed(await self.astore.transcripts.read(session_key, limit))

    async def arrived(self, session_key: str) -> list[TranscriptEntry]:
        """Results delivered to this chat while nobody watched it (jobs, the heartbeat), oldest first; each is
        returned once (``picoora.inbox``)."""
        from picoora import inbox

        return self._scrubbed(await self.astore.run(inbox.take, self.store, session_key))

    def _scrubbed(self, entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
        from picoora.messages import scrubbed
        from picoora.secrets import scrub

        clean = functools.partial(scrub, secrets=self.agent.secrets)
        return [replace(e, message=scrubbed(e.message, clean)) for e in entries]

    async def trace(self, turn_id: str | None = None, session_key: str | None = None) -> TurnTrace | None:
        """The trace of ``turn_id``, or the last turn's (of ``session_key`` when given)."""
        if turn_id:
            return await self.astore.traces.get(turn_id)
        return await self.astore.traces.last(session_key)

    @property
    def model(self) -> str:
        """The configured default model."""
        return self.models.default.model

    async def session_model(self, session_key: str) -> ModelChoice:
        """The model the session answers with: its own choice, else the configured default."""
        await self._restore_model(session_key)
        return self.agent.session_model(session_key)

    async def model_source(self, session_key: str) -> SessionModel:
        """The session's model and why: ``source`` is "session" (chosen with ``set_session_model``), "env"
        (the default, set by a ``PICO_`` variable) or "config" (the default, from the config file)."""
        from picoora.session_models import describe, state_key

        used = await self.session_model(session_key)
        stored = await self.astore.state.get(state_key(session_key))
        return describe(self.config, session_key, stored, used=(used.provider, used.model))

    async def set_session_model(self, session_key: str, model: str, provider: str | None = None) -> ModelChoice:
        """Use ``model`` for this session from its next turn on, after checking it can answer; the choice is
        stored, and stays the session's when the configured default changes (``reset_session_model`` goes
        back). Raises ``LLMError`` (nothing changed) when the model is not usable."""
        from picoora.llm.pool import ModelChoice
        from picoora.session_models import encode_choice, state_key

        choice = ModelChoice(provider or self.models.default.provider, model)
        await self.check_model(choice)
        self.agent.set_session_model(session_key, choice)
        await self.astore.state.set(state_key(session_key), encode_choice(choice.provider, choice.model))
        return choice

    async def reset_session_model(self, session_key: str) -> ModelChoice:
        """Forget the session's chosen model: the configured default answers from its next turn on."""
        from picoora.session_models import state_key

        await self.astore.state.delete(state_key(session_key))
        self.agent.set_session_model(session_key, self.models.default)
        return self.models.default

    async def check_model(self, choice: ModelChoice) -> None:
        """Raise ``LLMError`` when ``choice`` cannot answer: an unknown provider, or an Ollama model not pulled."""
        from picoora.llm import check_provider

        check_provider(choice.provider)
        if choice.provider == "ollama":
            import asyncio

            from picoora.llm.ollama_admin import model_available, not_pulled

            base = self.config.providers.ollama.api_base
            if not await asyncio.to_thread(model_available, base, choice.model):
                raise not_pulled(choice.model, base)

    async def _restore_model(self, session_key: str) -> None:
        """Load a session's stored model choice the first time this process sees the session."""
        if self.agent.has_runtime(session_key):
            return
        from picoora.llm.pool import ModelChoice
        from picoora.session_models import parse_choice, state_key

        stored = parse_choice(await self.astore.state.get(state_key(session_key)))
        choice = ModelChoice(*stored) if stored else self.models.default  # none, taken back or unreadable: the default
        try:
            self.agent.set_session_model(session_key, choice)
        except Exception:  # the stored model's provider cannot be built any more: the default answers
            self.agent.set_session_model(session_key, self.models.default)

    # -- memory, pairing and jobs: what the front doors do beside turns ---------------------------------

    async def remember(self, content: str, importance: float = 0.7, category: str = "general", *,
                       provenance: Provenance | None = None, expires_at: datetime | None = None) -> AddMemoryResult:
        return await self.astore.memories.add(content, importance, category, provenance=provenance,
                                            expires_at=expires_at)

    async def recall(self, query: str, limit: int = 5, *, touch: bool = False) -> RecallResult:
        """Memories by meaning, with scores; looking does not count as an access unless ``touch``."""
        return await self.astore.memories.recall(query, limit, touch=touch)

    async def memories(self, limit: int | None = None) -> list[MemoryRecord]:
        return await self.astore.memories.list(limit)

    async def forget(self, memory_id: str) -> bool:
        return await self.astore.memories.forget(memory_id)

    # -- documents (the knowledge base): this person's own and the shared ones --------------------------

    async def add_document_sources(self, sources: list[str], *, shared: bool = False) -> list[Outcome]:
        """Files, folders or URLs (a person's URLs go through the guest fetch settings: no allow_hosts)."""
        from picoora.docs.adding import add_sources
        from picoora.tools import guest_tool_settings

        fetching = (guest_tool_settings(self.config) if self.person else self.config).tools.web_fetch
        try:
            return await self.astore.run(add_sources, self.astore.store, fetching, sources, shared=shared,
                                         check=self._document_check())
        finally:
            self._documents_changed()

    async def add_document_upload(self, name: str, data: bytes, *, shared: bool = False) -> Outcome:
        from picoora.docs.adding import add_upload

        try:
            return await self.astore.run(add_upload, self.astore.store, name, data, shared=shared,
                                         check=self._document_check())
        finally:
            self._documents_changed()

    def _document_check(self) -> PagesCheck | None:
        """A guest's documents are bounded in chunks: each is embedded on the owner's CPU."""
        from picoora.docs.adding import GUEST_MAX_CHUNKS, chunk_limit

        return chunk_limit(self.config.docs, GUEST_MAX_CHUNKS) if self.person else None

    def _documents_changed(self) -> None:
        """search_docs is offered from the next turn on, not after its presence check expires (the people's
        too: the owner may have shared the document)."""
        from picoora.tools.docs import SearchDocs

        tool = self.tools.get(SearchDocs.name)
        for each in [tool, *self._people_docs_tools]:  # only the owner's assistant has people's tools
            if isinstance(each, SearchDocs):
                each.recheck()

    async def documents(self) -> list[DocumentRecord]:
        return await self.astore.documents.list()

    async def remove_document(self, id_or_source: str) -> DocumentRecord | None:
        try:
            return await self.astore.documents.remove(id_or_source)
        finally:
            self._documents_changed()

    async def search_documents(self, query: str, limit: int = 5) -> list[DocumentHit]:
        return await self.astore.documents.search(query, limit)

    # -- lifecycle -----------------------------------------------------------------------------------

    async def warm_up(self) -> None:
        """Do now what a process's first turn would otherwise pay for (a long-lived front door calls this
        before it serves): the tool schemas, the store's first recall (its index, the embedder when there
        are vectors to compare with, the store's worker thread) and the modules they import. A gateway's
        first burst of chats was about a second slower than every later one (issue 26). Nothing is
        recorded (the recall touches nothing); a failure is left for the first turn to report."""
        import logging

        import picoora.session_models  # noqa: F401  (every session's first turn reads its model choice)

        self.tools.schemas()
        try:
            await self.astore.memories.recall("warm-up", limit=1, touch=False)
        except Exception as exc:  # noqa: BLE001 - the first turn meets the same failure and reports it
            logging.getLogger(__name__).debug("warm-up recall failed: %s", exc)

    async def aclose(self) -> None:
        """Wait for the running turns, background tasks and compactions, then close what this assistant owns
        (a person's assistant leaves the owner's model clients open)."""
        try:
            if self.messenger is not None:  # background tasks the owner started finish and report first
                await self.messenger.wait_idle()
            if self.auto_memory is not None:
                await self.auto_memory.drain()
            await self.agent.aclose()
            await self.tools.aclose()  # stops the MCP servers
            if not self.person:
                await self.models.aclose()
        finally:
            self.astore.close()
            self.store.close()

    async def __aenter__(self) -> Assistant:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def build_assistant(config: Config, *, config_path: Path | None = None,
                    on_fallback: Callable[[str], None] | None = None) -> Assistant:
    """Open everything an assistant needs. Raises StoreError or LLMError (with a message for people);
    creating the provider never touches the network, so Ollama being down shows on the first turn.
    ``on_fallback`` gets one line when the configured storage (Oracle) cannot be used and files serve instead.
    ``config_path`` is the file the config came from, which the tools then refuse to read or write."""
    from picoora.agent import Agent
    from picoora.config import secret_values, workspace_path
    from picoora.llm import create_llm
    from picoora.llm.pool import ModelChoice, ModelPool
    from picoora.store import open_store
    from picoora.store.aio import AsyncStore
    from picoora.tools import default_registry
    from picoora.tools.docs import SearchDocs
    from picoora.tools.registry import tool_settings

    workspace = workspace_path(config)
    store = open_store(config, on_fallback=on_fallback)
    try:
        defaults = config.agents.defaults
        default = ModelChoice(defaults.provider, defaults.model)
        models = ModelPool(lambda c: create_llm(config, provider=c.provider, model=c.model), default=default)
        models.select(default)  # fails here, not on the first turn, when the provider cannot be set up
        tools = default_registry(config)
        tools.register(SearchDocs(store))
        astore = AsyncStore(store)
        agent = Agent(store=store, astore=astore, models=models, tools=tools, settings=defaults, workspace=workspace,
                      secrets=secret_values(config), tool_settings=tool_settings(config, config_path=config_path))
    except BaseException:
        store.close()
        raise
    return Assistant(config=config, workspace=workspace, store=store, astore=astore, models=models, tools=tools,
                     agent=agent, auto_memory=_auto_memory(config, astore, "", models))


def _scoped_assistant(owner: Assistant, person: str) -> Assistant:
    from picoora.agent import Agent
    from picoora.config import secret_values
    from picoora.store.aio import AsyncStore
    from picoora.store.scoped import open_person_store
    from picoora.tools import guest_registry, guest_tool_settings
    from picoora.tools.docs import SearchDocs

    store = open_person_store(owner.config, owner.store, person)
    astore = AsyncStore(store, executor=owner.astore.executor)  # people share the owner's threads
    tools = guest_registry(owner.config)
    search_docs = SearchDocs(store)
    tools.register(search_docs)
    owner._people_docs_tools.add(search_docs)
    agent = Agent(store=store, astore=astore, models=owner.models, tools=tools, settings=owner.config.agents.defaults,
                  workspace=owner.workspace, secrets=secret_values(owner.config),
                  tool_settings=guest_tool_settings(owner.config))
    return Assistant(config=owner.config, workspace=owner.workspace, store=store, astore=astore, models=owner.models,
                     tools=tools, agent=agent, person=person,
                     auto_memory=_auto_memory(owner.config, astore, person, owner.models))


def _auto_memory(config: Config, astore: AsyncStore, person: str, models: ModelPool) -> AutoMemory | None:
    if config.memory.auto == "off":
        return None
    from picoora.agent.auto_memory import AutoMemory, by_model, by_rules

    return AutoMemory(astore, person, by_model(models) if config.memory.auto == "model" else by_rules)

