"""The knowledge base on the recording fake Oracle: the shared contract, and the SQL as documented (the
person filter in the WHERE clause before ranking, UTL_TO_CHUNKS with its JSON parameters, VECTOR_EMBEDDING
in the same INSERT)."""

from __future__ import annotations

import json

import pytest

from picoora.store.base import DocPage
from picoora.store.oracle import sql as q
from picoora.store.scoped import open_person_store
from tests.docs_contract import (
    check_counts_and_listing,
    check_isolation,
    check_pages_and_codes,
    check_readd_and_remove,
)
from tests.oracle.conftest import oracle_config


@pytest.fixture
def config():
    config = oracle_config()
    # the fake embeds with a hash embedder whose cosines are not MiniLM's: use its own floor
    config.docs = config.docs.model_copy(update={"min_score": 0.1})
    return config


def test_readd_and_remove(open_store):
    check_readd_and_remove(open_store())


def test_pages_and_codes(open_store):
    check_pages_and_codes(open_store())


def test_each_person_sees_their_own_and_the_shared_documents(open_store, config):
    owner = open_store()
    check_isolation(owner, open_person_store(config, owner, "alice"), open_person_store(config, owner, "bob"))


def test_counts_and_the_whole_listing_for_status_and_the_inspector(open_store, fake, config):
    owner = open_store()
    fake.executed.clear()
    check_counts_and_listing(owner, open_person_store(config, owner, "alice"))
    counts = [e for e in fake.executed if e.name == "doc_counts"]
    assert counts and all(e.binds == {"agent_id": owner.agent_id} for e in counts)
    # one aggregate over the documents' own chunk counts: the chunks table is not scanned to count
    assert counts[0].sql == ("SELECT COUNT(*), NVL(SUM(chunks), 0), NVL(SUM(shared), 0) FROM PICO_DOCUMENTS "
                             "WHERE agent_id = :agent_id")
    listing = next(e for e in fake.executed if e.name == "doc_all")
    assert listing.binds["agent_id"] == owner.agent_id and "person" not in listing.binds
    assert listing.sql.endswith("ORDER BY added_at DESC, doc_id FETCH FIRST :k ROWS ONLY")


def test_without_oracle_text_keyword_search_scans(open_store, fake):
    fake.indexes = {name: index for name, index in fake.indexes.items() if index[2] != "DOMAIN"}
    store = open_store()
    store.documents.add("/d/g.md", "G", [DocPage("When ORA-00955 appears the table exists already.")])
    assert [h.document.title for h in store.documents.search("ORA-00955")] == ["G"]
    assert "doc_keyword_scan" in fake.names()


def test_chunks_are_cut_and_embedded_in_the_database_as_documented(open_store, fake, config):
    config.docs = config.docs.model_copy(update={"chunk_size": 12, "chunk_overlap": 2, "chunk_by": "sentences"})
    store = open_store(config=config)
    text = " ".join(f"Sentence number {n} talks about the garden shed and its key." for n in range(6))
    added = store.documents.add("/d/long.md", "Long", [DocPage(text)])
    assert added.document.chunks > 1
    insert = next(e for e in fake.executed if e.name == "doc_chunks_insert")
    params = json.loads(insert.binds["params"])
    assert params == {"by": "words", "max": "12", "overlap": "2", "split": "sentence", "language": "american",
                      "normalize": "all"}
    sql = q.DOC_CHUNKS_INSERT.text
    assert "TABLE(DBMS_VECTOR_CHAIN.UTL_TO_CHUNKS(p.page_text, JSON(:params)))" in sql
    assert "VECTOR_EMBEDDING({model} USING JSON_VALUE(c.column_value, '$.chunk_data'" in sql
    assert "text" not in insert.binds  # the text goes in once, as the document's CLOB, never as a chunk bind
    rows = fake.rows("PICO_DOC_CHUNKS")
    assert len(rows) == added.document.chunks and all(r["embedding"] is not None for r in rows)


def test_every_search_filters_by_person_before_ranking(open_store, fake, config):
    owner = open_store()
    alice = open_person_store(config, owner, "alice")
    alice.documents.add("/a/x.md", "X", [DocPage("The garden shed key hangs by the door.")])
    fake.executed.clear()
    alice.documents.search("garden shed key")
    searches = [e for e in fake.executed if e.name in ("doc_nearest", "doc_keyword_text", "doc_keyword_scan")]
    assert {e.name for e in searches} >= {"doc_nearest"}
    for executed in searches:
        assert executed.binds["person"] == "alice" and executed.binds["agent_id"] == owner.agent_id
        where, _, ranking = executed.sql.partition("ORDER BY")
        assert "c.agent_id = :agent_id AND (c.person = :person OR c.shared = 1)" in where
        assert "person" not in ranking


def test_reindex_cuts_again_with_the_settings_now(open_store, fake, config):
    store = open_store()
    text = " ".join(f"Sentence {n} is about the allotment shed, its padlock and the water butt." for n in range(12))
    before = store.documents.add("/d/a.md", "A", [DocPage(text)]).document.chunks
    config.docs = config.docs.model_copy(update={"chunk_size": 20, "chunk_overlap": 0})
    smaller = open_store(config=config)
    assert smaller.documents.reindex() == len(fake.rows("PICO_DOC_CHUNKS")) > before
    assert smaller.documents.list()[0].chunks == len(fake.rows("PICO_DOC_CHUNKS"))
    assert [h.document.title for h in smaller.documents.search("allotment shed padlock")][:1] == ["A"]


def test_a_generic_question_pays_its_background_anchor_as_on_files(open_store, fake, config, monkeypatch):
    """The same formula as the file backend: the question's best cosine against the database's background set
    (filled on first use, as for memory recall) lowers every chunk by its excess over ANCHOR_START."""
    from picoora.store import doc_ranking

    config.docs = config.docs.model_copy(update={"min_score": 1e-6})
    store = open_store(config=config)
    store.documents.add("/d/git.md", "Our git rules", [DocPage(
        "To merge two branches in git, every change to the main branch goes through a reviewed pull request.")])
    question = "How do I merge two branches in git?"  # one of the background questions: its anchor cosine is 1
    monkeypatch.setattr(doc_ranking, "ANCHOR_PENALTY", 0.0)
    plain = store.documents.search(question)[0].score
    monkeypatch.setattr(doc_ranking, "ANCHOR_PENALTY", 0.1)
    fake.executed.clear()
    penalised = store.documents.search(question)[0].score
    assert "background_best" in fake.names()
    assert plain - penalised == pytest.approx(0.1 * (1.0 - doc_ranking.ANCHOR_START), abs=0.01)
