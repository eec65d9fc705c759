"""What one person told the assistant is never recalled for another: on files and on Oracle (over the
fake connection), through the store, the tools, and a whole chat turn."""

from __future__ import annotations

import asyncio

import pytest

from picoora.assistant import build_assistant
from picoora.config import Config, save_config
from picoora.gateway.channels.links import Inbound
from picoora.gateway.runtime.admission import PersonAssistants
from picoora.identities import Person
from picoora.tools.base import ToolContext
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.runtime_kit import running_runtime
from tests.oracle.conftest import set_up_schema
from tests.oracle.fake_db import FakeOracle

SECRET_FACT = "The front door code is 4417"


@pytest.fixture(params=["files", "oracle"])
def config(request, isolated_home, monkeypatch):
    def make(ollama_url: str) -> Config:
        config = Config.model_validate({
            "agents": {"defaults": {"model": "qwen3:latest"}},
            "providers": {"ollama": {"api_base": ollama_url, "max_retries": 0}},
            "memory": {"embedder": "none"},
        })
        if request.param == "oracle":
            fake = FakeOracle()
            monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
            config.oracle = config.oracle.model_copy(update={"enabled": True, "password": "pw"})
            set_up_schema(fake, config)
        save_config(config)
        return config

    return make


def test_a_guest_cannot_recall_list_or_forget_the_owners_memories(config):
    with FakeOllama(responder=lambda body: Reply(content="I don't know that.")) as fake:
        cfg = config(fake.url)

        async def scenario():
            async with build_assistant(cfg) as owner, running_runtime(owner) as (runtime, _), \
                    runtime.people.lease(Person("sam")) as sam:
                fact = (await owner.astore.memories.add(SECRET_FACT, 0.9, "fact")).memory
                assert sam.store.backend == owner.store.backend
                seen = {
                    "recall": (await sam.astore.memories.recall("front door code 4417", 5)).matches,
                    "list": await sam.astore.memories.list(),
                    "get": await sam.astore.memories.get(fact.id),
                    "forget": await sam.astore.memories.forget(fact.id),
                }
                ctx = ToolContext(workspace=owner.workspace, store=sam.store, session_key="telegram:7")
                tool_text = (await sam.tools.execute("recall", {"query": "door code"}, ctx)).content
                await sam.astore.memories.add("Sam drinks green tea", 0.5, "preference")

                await asyncio.wait_for(runtime._submit_chat(Inbound(
                    "telegram", "7", "What is the front door code 4417?", "7", Person("sam"))), 20)
                still_there = await owner.astore.memories.get(fact.id)
                owner_sees_tea = (await owner.astore.memories.recall("green tea", 5)).matches
                return seen, tool_text, sam.tools.names(), still_there, owner_sees_tea

        seen, tool_text, guest_tools, still_there, owner_sees_tea = asyncio.run(scenario())
        system_prompt = fake.requests[-1]["messages"][0]["content"]
    assert seen == {"recall": [], "list": [], "get": None, "forget": False}
    assert "4417" not in tool_text and "No matching memories" in tool_text
    assert "4417" not in system_prompt  # the automatic recall of the guest's turn saw none of the owner's
    assert still_there is not None and owner_sees_tea == []
    assert not {"read_file", "write_file", "exec", "cron", "list_dir"} & set(guest_tools)


def test_each_guest_has_their_own_sessions_and_notes(config):
    with FakeOllama(responder=lambda body: Reply(content="ok")) as fake:
        cfg = config(fake.url)

        async def scenario():
            async with build_assistant(cfg) as owner:
                people = PersonAssistants(owner)
                await owner.astore.notes.append("Owner: dentist at 3pm")
                async with people.lease(Person("ana")) as ana, people.lease(Person("ben")) as ben:
                    await ana.ask("hello from ana", "telegram:1")
                    seen = ([n.content for n in await ben.astore.notes.recent(3)],
                        [s.key for s in await ben.sessions()], [s.key for s in await ana.sessions()],
                        [s.key for s in await owner.sessions()], await ana.trace() is not None,
                            await ben.trace() is None)
                await people.aclose()
                return seen

        ben_notes, ben_sessions, ana_sessions, owner_sessions, ana_traced, ben_untraced = asyncio.run(scenario())
    assert ben_notes == [] and ben_sessions == [] and ana_sessions == ["telegram:1"] and owner_sessions == []
    assert ana_traced and ben_untraced


def test_a_persons_oracle_scope_fits_the_column_and_long_names_never_collide():
    from picoora.store.scoped import person_agent_id

    assert person_agent_id("default", "sam") == "default.sam"
    long_base = "a" * 60
    first, second = (person_agent_id(long_base, "guest-telegram-1234567"),
                     person_agent_id(long_base, "guest-telegram-1234568"))
    assert first != second and len(first.encode()) <= 64 and len(second.encode()) <= 64


def test_a_persons_async_store_reads_the_shared_prompts(tmp_path):
    import asyncio

    from picoora.store.aio import AsyncStore
    from picoora.store.files import FileStore
    from picoora.store.scoped import PersonStore

    owner, own = FileStore(tmp_path / "owner"), FileStore(tmp_path / "sam")
    owner.prompts.set("IDENTITY.md", "I am picoora.")
    astore = AsyncStore(PersonStore(own, owner, "sam"))  # type: ignore[arg-type]
    prompts = asyncio.run(astore.prompts.list())
    astore.close()
    assert [p.content for p in prompts] == ["I am picoora."]
