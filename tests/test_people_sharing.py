"""People are cheap (issue 18): every person's store in a process embeds with one shared embedder on files
and uses the owner's database on Oracle; closing a person's store leaves the shared parts open."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from picoora.config import Config, MemoryConfig
from picoora.store import open_store
from picoora.store.anchors import anchors_for
from picoora.store.embedder import MiniLMEmbedder, shared_embedder
from picoora.store.scoped import open_person_store


def test_the_owner_and_every_person_share_one_embedder_loaded_once(monkeypatch):
    opened = []
    real_open = MiniLMEmbedder._open
    monkeypatch.setattr(MiniLMEmbedder, "_open", lambda self: opened.append(self) or real_open(self))
    config = Config.model_validate({"memory": {"embedder": "minilm"}})
    owner = open_store(config)
    people = [open_person_store(config, owner, name) for name in ("ana", "ben", "cy")]
    owner.memories.add("The owner's front door code is 4417", 0.9, "fact")
    for person in people:
        person.memories.add(f"{person.person} drinks green tea", 0.6, "preference")
        person.memories.recall("what does this person drink", confident_only=True)  # a turn's recall: reads the anchors
        found = person.memories.recall("what does this person drink").matches
        assert [m.memory.content for m in found] == [f"{person.person} drinks green tea"]
    assert len(opened) == 1

    for person in people:
        person.close()
    recalled = [m.memory.content for m in owner.memories.recall("front door code").matches]
    assert recalled == ["The owner's front door code is 4417"]
    owner.close()


def test_shared_embedders_follow_the_settings_and_go_with_their_last_store(tmp_path):
    minilm = MemoryConfig(embedder="minilm")
    first = shared_embedder(minilm, "http://h:11434", tmp_path)
    assert shared_embedder(minilm, "http://h:11434", tmp_path) is first
    assert shared_embedder(minilm, "http://h:11434", tmp_path / "other") is not first
    assert shared_embedder(MemoryConfig(embedder="none"), "http://h:11434") is None
    nomic = MemoryConfig(embedder="ollama", ollama_model="nomic-embed-text")
    ollama = shared_embedder(nomic, "http://h:11434")
    assert shared_embedder(nomic, "http://h:11434") is ollama
    assert shared_embedder(MemoryConfig(embedder="ollama", ollama_model="all-minilm"), "http://h:11434") is not ollama
    assert shared_embedder(nomic, "http://other:11434") is not ollama

    anchors = anchors_for(first)
    assert anchors_for(first) is anchors
    import weakref

    gone = weakref.ref(first)
    del first, anchors
    gc.collect()
    assert gone() is None  # nothing in the caches keeps an embedder nobody uses


@pytest.mark.slow
def test_one_embedder_embeds_from_several_threads_at_once():
    embedder = MiniLMEmbedder()
    texts = [f"sentence {i} about {'green tea ' * (i % 5)}and the door code {i * 7}" for i in range(16)]
    expected = embedder.embed(texts)
    failures: list[str] = []

    def embed_some(start: int) -> None:
        try:
            for _ in range(2):
                if not np.allclose(embedder.embed(texts[start::4]), expected[start::4], atol=1e-6):
                    failures.append(f"thread {start}: different vectors")
        except Exception as exc:  # an "Already borrowed" from the tokenizer would land here
            failures.append(f"thread {start}: {exc!r}")

    threads = [threading.Thread(target=embed_some, args=(n % 4,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_on_oracle_people_use_the_owners_pool_and_leave_it_open(monkeypatch):
    from tests.oracle.conftest import oracle_config, set_up_schema
    from tests.oracle.fake_db import FakeOracle

    fake = FakeOracle()
    monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
    config = oracle_config()
    set_up_schema(fake, config)
    owner = open_store(config)
    assert owner.backend == "oracle"
    pools_before = len(fake.pools)
    people = [open_person_store(config, owner, f"guest-{n}") for n in range(3)]
    for person in people:
        person.memories.add(f"{person.person} keeps bees", 0.6, "fact")
    assert len(fake.pools) == pools_before  # no pool (nor thread, nor open-time probe) per person
    assert [m.content for m in people[0].memories.list()] == ["guest-0 keeps bees"]
    assert owner.memories.list() == []

    for person in people:
        person.close()
    owner.memories.add("The owner keeps a boat", 0.6, "fact")  # the owner's database is still open
    assert [m.content for m in owner.memories.list()] == ["The owner keeps a boat"]
    owner.close()


def test_people_run_on_the_owners_store_threads_and_closing_one_leaves_them_running():
    import asyncio
    import time

    from picoora.assistant import build_assistant
    from picoora.store.aio import AsyncStore

    config = Config.model_validate({"providers": {"ollama": {"api_base": "http://127.0.0.1:9"}},
                                    "memory": {"embedder": "none"}})

    async def scenario():
        async with build_assistant(config) as owner:
            ana, ben = owner.open_for_person("ana"), owner.open_for_person("ben")
            assert ana.astore.executor is owner.astore.executor is ben.astore.executor
            await ana.astore.memories.add("Ana keeps bees", 0.6, "fact")
            ana.astore.close()
            await ben.astore.memories.add("Ben sails", 0.6, "fact")
            assert [m.content for m in await owner.astore.memories.list()] == []

            finished = []
            borrowed = AsyncStore(owner.store, executor=owner.astore.executor)
            call = asyncio.ensure_future(borrowed.run(lambda: time.sleep(0.3) or finished.append(True)))
            await asyncio.sleep(0.05)
            borrowed.close()  # waits for its own running call, leaves the executor
            assert finished == [True]
            await call
            kept = [m.content for m in await ben.astore.memories.list()]
            await ana.aclose()
            await ben.aclose()
            return kept

    assert asyncio.run(scenario()) == ["Ben sails"]
