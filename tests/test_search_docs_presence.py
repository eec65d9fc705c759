"""Whether ``search_docs`` is offered: never asked of the store on the event loop (on Oracle it is a round trip),
at once after a document is added or removed in this process, within PRESENCE_SECONDS after another process's
change, and not at all while the store cannot answer (the turn goes on)."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

from picoora.store.base import DocPage, StoreError
from picoora.tools import docs as docs_tool
from picoora.tools.docs import SearchDocs
from picoora.tools.registry import ToolRegistry
from tests.fakes.agent_kit import file_store, make_agent
from tests.fakes.scripted_llm import ScriptedLLM, answer

MANUAL = [DocPage("Error E42 means the water pressure is low; refill to 1.5 bar.")]


class _SlowDocuments:
    def __init__(self, store: SlowPresence):
        self._store = store

    def __getattr__(self, name):
        return getattr(self._store._inner.documents, name)

    def has_any(self, *, person: str = "") -> bool:
        store = self._store
        store.threads.append(threading.get_ident())
        if store.broken is not None:
            raise store.broken
        time.sleep(store.seconds)  # blocking, as the driver's wait would be
        return store._inner.documents.has_any(person=person)


class SlowPresence:
    """A store whose documents.has_any takes a while (a database round trip) and records the thread it ran on."""

    def __init__(self, inner, seconds: float = 0.3):
        self._inner, self.seconds = inner, seconds
        self.threads: list[int] = []
        self.broken: Exception | None = None
        self.documents = _SlowDocuments(self)

    def __getattr__(self, name):
        return getattr(self._inner, name)

def _offered(llm: ScriptedLLM, request: int = -1) -> set[str]:
    return {t["function"]["name"] for t in llm.requests[request].tools or []}


def test_the_presence_check_runs_off_the_event_loop_and_available_never_asks(tmp_path):
    store = SlowPresence(file_store(tmp_path), seconds=0.5)
    store.documents.add("/d/boiler.md", "Boiler manual", MANUAL)
    tool = SearchDocs(store)
    registry = ToolRegistry()
    registry.register(tool)
    llm = ScriptedLLM(answer("E42 is low pressure."))
    agent = make_agent(store, llm, tmp_path, registry)

    async def scenario():
        loop_thread = threading.get_ident()
        beats: list[float] = []

        async def heartbeat():
            while True:
                beats.append(time.monotonic())
                await asyncio.sleep(0.01)

        beat = asyncio.create_task(heartbeat())
        await asyncio.sleep(0)
        result = await agent.run_turn("cli:test", "what is E42?")
        beat.cancel()
        return loop_thread, max(b - a for a, b in zip(beats, beats[1:], strict=False)), result

    loop_thread, longest_gap, result = asyncio.run(scenario())
    assert result.text == "E42 is low pressure." and "search_docs" in _offered(llm)
    assert store.threads and loop_thread not in store.threads  # the check ran in a thread, not on the loop
    assert longest_gap < 0.45  # the loop went on while the store took 0.5 s
    asked = len(store.threads)
    for _ in range(100):  # listing the tools reads the last answer: no store call where the list is built
        assert tool.available() and "search_docs" in registry.names()
    assert len(store.threads) == asked


def test_a_store_that_cannot_answer_offers_no_search_docs_and_the_turn_goes_on(tmp_path):
    store = SlowPresence(file_store(tmp_path), seconds=0)
    store.documents.add("/d/boiler.md", "Boiler manual", MANUAL)
    store.broken = StoreError("Oracle did not answer within 5 s")
    tool = SearchDocs(store)
    registry = ToolRegistry()
    registry.register(tool)
    llm = ScriptedLLM(answer("I cannot look that up now."), answer("E42 is low pressure."))
    agent = make_agent(store, llm, tmp_path, registry)
    result = asyncio.run(agent.run_turn("cli:test", "what is E42?"))
    assert result.text == "I cannot look that up now." and "search_docs" not in _offered(llm)
    assert not tool.available()
    store.broken = None  # back: offered again once looked at (here: told to look again)
    tool.recheck()
    assert asyncio.run(agent.run_turn("cli:test", "and now?")).text == "E42 is low pressure."
    assert "search_docs" in _offered(llm)


def test_a_change_while_the_store_is_asked_is_looked_at_again_next_turn(tmp_path):
    store = SlowPresence(file_store(tmp_path), seconds=0.2)
    tool = SearchDocs(store)

    async def scenario():
        looking = asyncio.create_task(tool.refresh())
        await asyncio.sleep(0.05)  # the store is being asked (it answers "none") ...
        store.documents.add("/d/boiler.md", "Boiler manual", MANUAL)
        tool.recheck()  # ... when a document is added here
        await looking
        await tool.refresh()
        return tool.available()

    assert asyncio.run(scenario()) is True
    assert len(store.threads) == 2


def test_through_the_assistant_a_document_added_here_is_offered_in_the_next_turn(isolated_home, tmp_path,
                                                                                   monkeypatch):
    """Added through this process (``picoora docs add``'s code, the HTTP API, a channel's file): the next turn.
    Added by another process: within PRESENCE_SECONDS."""
    from picoora.assistant import build_assistant
    from picoora.config import load_config, workspace_path
    from picoora.store.files import FileStore
    from tests.cli_support import write_config
    from tests.fakes.ollama_server import FakeOllama, Reply

    offered: list[bool] = []

    def model(body: dict) -> Reply:
        offered.append("search_docs" in {t["function"]["name"] for t in body.get("tools", [])})
        return Reply(content="ok")

    (tmp_path / "boiler.md").write_text("# Boiler manual\n\nError E42 means the water pressure is low.")
    clock = [1000.0]
    monkeypatch.setattr(docs_tool, "time", SimpleNamespace(monotonic=lambda: clock[0]))  # the tool's clock only
    with FakeOllama(responder=model) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url))

        async def scenario():
            async with build_assistant(config) as assistant:
                await assistant.ask("hello")
                [outcome] = await assistant.add_document_sources([str(tmp_path / "boiler.md")])
                assert outcome.status == "added"
                await assistant.ask("what is E42?")  # at once, though the last look was just now
                [listed] = await assistant.documents()
                await assistant.remove_document(listed.id)
                await assistant.ask("and now?")
                other = FileStore(workspace_path(config))  # another process adds one
                try:
                    other.documents.add("/d/other.md", "Other", MANUAL)
                finally:
                    other.close()
                await assistant.ask("soon?")  # looked at just now: not yet
                clock[0] += docs_tool.PRESENCE_SECONDS + 0.1
                await assistant.ask("later?")  # PRESENCE_SECONDS on: seen

        asyncio.run(scenario())
    assert offered == [False, True, False, False, True]


def test_a_document_the_owner_shares_is_offered_to_the_people_at_once(isolated_home, tmp_path, monkeypatch):
    """A person's search_docs looks again when the owner adds a document, since it may be shared with them."""
    from picoora.assistant import build_assistant
    from picoora.config import load_config
    from tests.cli_support import write_config
    from tests.fakes.ollama_server import FakeOllama, Reply

    offered: list[bool] = []

    def model(body: dict) -> Reply:
        offered.append("search_docs" in {t["function"]["name"] for t in body.get("tools", [])})
        return Reply(content="ok")

    (tmp_path / "boiler.md").write_text("# Boiler manual\n\nError E42 means the water pressure is low.")
    monkeypatch.setattr(docs_tool, "time", SimpleNamespace(monotonic=lambda: 1000.0))  # no expiry helps here
    with FakeOllama(responder=model) as fake:
        config = load_config(write_config(isolated_home, ollama_url=fake.url))

        async def scenario():
            async with build_assistant(config) as owner:
                alice = owner.open_for_person("alice")
                try:
                    await alice.ask("hello")
                    await owner.add_document_sources([str(tmp_path / "boiler.md")])  # the owner's own
                    await alice.ask("anything?")
                    await owner.add_document_sources([str(tmp_path / "boiler.md")], shared=True)
                    await alice.ask("what is E42?")
                finally:
                    await alice.aclose()

        asyncio.run(scenario())
    assert offered == [False, False, True]
