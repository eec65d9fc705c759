"""Automatic recall on Oracle follows the file backend's precision rule: a memory is pushed only when it is
closer to the message than the message is to every background question, both embedded by the database's
own model (PICO_BACKGROUND_QUESTIONS). The fake embeds with the hash embedder, so texts sharing words are
close and a background question asked verbatim has cosine 1.0."""

from __future__ import annotations

import array
import asyncio
import logging

import pytest

from picoora.agent.context import gather_inputs
from picoora.config import AgentDefaults
from picoora.store.aio import AsyncStore
from picoora.store.anchors import background_texts
from picoora.store.oracle import open_database, open_oracle_store
from picoora.store.oracle.background import current_set
from picoora.store.oracle.setup import OracleSetup
from tests.oracle.conftest import set_up_schema
from tests.oracle.fake_db import MODEL, FakeOracle, ora_error

TABLE = "PICO_BACKGROUND_QUESTIONS"
OFF_TOPIC = "Who invented the telephone?"  # one of the background questions, word for word
LOOKALIKE = "My grandfather invented a telephone stand"  # cosine 0.41 with it: over the push floor
QUESTION = "which train do I take to work"
FACT = "I take the early train to work at the harbour"  # cosine 0.65; the question's best background one is 0.47


def _pushed(store, query: str) -> list[str]:
    return [m.memory.content for m in store.memories.recall(query, limit=5, confident_only=True).matches]


def _returned(store, query: str) -> list[str]:
    return [m.memory.content for m in store.memories.recall(query, limit=5).matches]


def test_off_topic_question_pushes_nothing_that_the_recall_tool_still_returns(open_store):
    store = open_store()
    store.memories.add(LOOKALIKE)
    store.memories.add(FACT)
    returned = store.memories.recall(OFF_TOPIC, limit=5).matches
    assert returned[0].memory.content == LOOKALIKE
    assert returned[0].similarity >= store.memories.push_calibration.min_similarity  # the floor alone would push it
    assert _pushed(store, OFF_TOPIC) == []
    assert _pushed(store, QUESTION) == [FACT]


def test_the_background_cosine_is_only_read_for_automatic_recall(fake, open_store):
    store = open_store()
    store.memories.add(FACT)
    store.memories.recall(QUESTION, limit=5)
    assert not [n for n in fake.names() if n.startswith("background_")]
    _pushed(store, QUESTION)
    assert [n for n in fake.names() if n == "background_best"]


def test_an_empty_table_is_filled_once_then_used(fake, open_store):
    store = open_store()
    store.memories.add(FACT)
    assert fake.rows(TABLE) == []
    assert _pushed(store, QUESTION) == [FACT]
    rows = fake.rows(TABLE)
    assert [r["content"] for r in rows] == background_texts()
    assert {r["embedding_model"] for r in rows} == {MODEL} and {r["set_hash"] for r in rows} == {current_set().set_hash}
    inserts = fake.names().count("background_insert")
    assert inserts == len(rows)  # one executemany: the fake counts each row of the array
    assert _pushed(store, OFF_TOPIC) == [] and _pushed(store, QUESTION) == [FACT]
    assert fake.names().count("background_insert") == inserts  # not filled again


def test_a_missing_table_is_created_and_filled(fake, open_store):
    store = open_store()
    del fake.tables[TABLE]  # a schema someone trimmed by hand
    store.memories.add(LOOKALIKE)
    assert _pushed(store, OFF_TOPIC) == []
    assert len(fake.rows(TABLE)) == len(background_texts())


def test_changed_texts_replace_the_models_old_set_and_leave_other_models_alone(fake, open_store):
    store = open_store()
    store.memories.add(LOOKALIKE)
    vector = array.array("f", [1.0] + [0.0] * 383)
    fake.tables[TABLE].rows += [
        {"embedding_model": MODEL, "question_no": 1, "set_hash": "an-older-version", "content": "old",
         "embedding": vector, "created_at": None},
        {"embedding_model": "ANOTHER_MODEL", "question_no": 1, "set_hash": current_set().set_hash, "content": "x",
         "embedding": vector, "created_at": None},
    ]
    assert _pushed(store, OFF_TOPIC) == []
    mine = [r for r in fake.rows(TABLE) if r["embedding_model"] == MODEL]
    assert len(mine) == len(background_texts()) and {r["set_hash"] for r in mine} == {current_set().set_hash}
    assert [r["content"] for r in fake.rows(TABLE) if r["embedding_model"] == "ANOTHER_MODEL"] == ["x"]


def test_another_models_background_vectors_are_never_compared(fake, open_store):
    store = open_store()
    store.memories.add(FACT)
    _pushed(store, QUESTION)  # our model's set is complete
    # Another model's rows that would silence this question if they were compared (cosine 1.0 with it).
    fake.tables[TABLE].rows += [
        {"embedding_model": "ANOTHER_MODEL", "question_no": n, "set_hash": current_set().set_hash, "content": QUESTION,
         "embedding": fake.embed(QUESTION), "created_at": None} for n in range(1, len(background_texts()) + 1)]
    assert _pushed(store, QUESTION) == [FACT]


@pytest.mark.parametrize("failure", [
    (5, ora_error(1653, "PICO_BACKGROUND_QUESTIONS")),  # the tablespace fills up after five rows
    ora_error(40284, MODEL),  # the model was dropped after this session embedded the query
], ids=["tablespace-full", "model-missing"])
def test_a_failed_fill_falls_back_to_the_floor_once_and_keeps_no_half_set(fake, open_store, caplog, failure):
    store = open_store()
    store.memories.add(LOOKALIKE)
    fake.fail_next["background_insert"] = failure
    with caplog.at_level(logging.INFO, logger="picoora.store.oracle.background"):
        assert _pushed(store, OFF_TOPIC) == [LOOKALIKE]  # the floor alone decides, as before anchors
    assert fake.rows(TABLE) == []  # rolled back
    assert "similarity floor alone" in caplog.text and not [r for r in caplog.records if r.levelno > logging.INFO]
    attempts = fake.names().count("background_insert")
    assert _pushed(store, OFF_TOPIC) == [LOOKALIKE]
    assert fake.names().count("background_insert") == attempts  # tried once per process, not every turn
    assert store.memories.recall(OFF_TOPIC, limit=5).matches  # the recall tool is unaffected


def test_a_filler_busy_for_long_skips_the_anchors_for_this_turn_only(fake, open_store):
    store = open_store()
    store.memories.add(LOOKALIKE)
    fake.fail_next["background_lock"] = ora_error(30006)  # another session held the lock over 10 s
    assert _pushed(store, OFF_TOPIC) == [LOOKALIKE]
    assert _pushed(store, OFF_TOPIC) == []  # the next turn fills the set and uses it


def test_a_failing_background_query_falls_back_to_the_floor(fake, open_store):
    store = open_store()
    store.memories.add(LOOKALIKE)
    _pushed(store, OFF_TOPIC)  # filled
    fake.fail_next["background_best"] = ora_error(51808, "384, 768")  # say, a row no comparison can read
    assert _pushed(store, OFF_TOPIC) == [LOOKALIKE]
    assert store.memories.get(store.memories.list()[0].id).access_count >= 1  # the recall still counted


def test_a_pasted_paragraph_as_the_message_is_measured_too(fake, open_store):
    store = open_store()
    store.memories.add(FACT)
    paragraph = ("Who invented the telephone? " * 4000) + QUESTION  # 100 KB: cut for VECTOR_EMBEDDING as usual
    assert _pushed(store, paragraph) == []  # mostly an off-topic question, so nothing is pushed
    assert _pushed(store, QUESTION) == [FACT]


def test_a_missing_model_never_fails_the_turn(config):
    fake = FakeOracle(model_loaded=False)
    set_up_schema(fake, config)
    store = open_oracle_store(config, pool_factory=fake.pool_factory, require_model=False)
    try:
        store.memories.add("I take the early train to work")
        inputs = gather_inputs(store, "cli:t", OFF_TOPIC, AgentDefaults())
        assert inputs.recall is not None and inputs.recall.matches == [] and inputs.recall.degraded
        assert _pushed(store, "train to work")  # keywords alone, a strong match
        assert fake.rows(TABLE) == [] and "background_insert" not in fake.names()
    finally:
        store.close()


def test_an_off_topic_turn_gets_no_memories_in_its_context(open_store):
    store = open_store()
    store.memories.add(LOOKALIKE)
    inputs = gather_inputs(store, "cli:t", OFF_TOPIC, AgentDefaults())
    assert inputs.recall is not None and inputs.recall.matches == [] and not inputs.recall.degraded


def test_setup_fills_the_set_idempotently(fake, config):
    set_up_schema(fake, config)
    db = open_database(config, pool_factory=fake.pool_factory)
    try:
        setup = OracleSetup(db)
        assert setup.background_questions() == len(background_texts())
        assert setup.background_questions() == 0
    finally:
        db.close()
    assert len(fake.rows(TABLE)) == len(background_texts())


def test_concurrent_first_recalls_fill_the_set_once(fake, open_store):
    store = open_store()
    store.memories.add(LOOKALIKE)
    aio = AsyncStore(store)
    fake.rendezvous["background_count"] = 2  # both find the set missing before either fills it

    async def both() -> list:
        return await asyncio.gather(*(aio.memories.recall(OFF_TOPIC, limit=5, confident_only=True) for _ in range(2)))

    assert [r.matches for r in asyncio.run(both())] == [[], []]  # both measured against the anchors
    assert fake.names().count("background_lock") == 2  # the second filler waited, then found the set complete
    assert fake.names().count("background_insert") == len(background_texts())  # embedded once, not twice
    assert len(fake.rows(TABLE)) == len(background_texts())


def test_embed_texts_uses_the_databases_model_and_says_when_it_is_missing(open_store, config):
    from picoora.store.base import NoEmbedder

    store = open_store()
    embedded = store.memories.embed_texts(["the gate code", "the gate code", "a cat"])
    assert embedded.model == store.model and len(embedded.vectors) == 3
    assert embedded.vectors[0] == embedded.vectors[1] != embedded.vectors[2]
    fake = FakeOracle(model_loaded=False)
    set_up_schema(fake, config)
    bare = open_oracle_store(config, pool_factory=fake.pool_factory, require_model=False)
    try:
        with pytest.raises(NoEmbedder, match="setup-oracle"):
            bare.memories.embed_texts(["x"])
    finally:
        bare.close()
