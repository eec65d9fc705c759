"""Every statement the Oracle backend can send: it parses as Oracle SQL, uses named binds, no foreign syntax.

Bind names against the binds of each call site are checked at run time by the fake connection (every
test that goes through it); here the registry itself is checked, statement by statement.
"""

from __future__ import annotations

import re

import pytest

from picoora.store.oracle import sql as q
from tests.oracle.sqlcheck import bind_names, problems, rewrite_23ai

MODEL = "ALL_MINILM_L12_V2"
STATEMENTS = sorted(q.REGISTRY.values(), key=lambda s: s.name)
# Schema-wide by design: migrations (backfills and merges of every agent's rows), the migration lock, the
# catalogue and index checks, and the id check (memory_id is the key across agents).
AGENT_EXEMPT = {"unhashed_memories", "set_memory_hash", "backfill_memory_model", "renumber_transcripts",
                "notes_same_day", "note_set_content", "note_delete", "take_migration_lock", "text_index_usable",
                "vectors_stored", "memory_id_taken", "backfill_memory_provenance"}


@pytest.mark.parametrize("stmt", STATEMENTS, ids=lambda s: s.name)
def test_statement_is_clean_oracle_sql(stmt):
    assert problems(stmt.render(MODEL)) == []


@pytest.mark.parametrize("stmt", STATEMENTS, ids=lambda s: s.name)
def test_statement_uses_named_binds_only(stmt):
    names = bind_names(stmt.render(MODEL))
    assert not [n for n in names if n.isdigit()], "positional binds (:1) are ambiguous in Thin mode: name them"
    if stmt.kind == "ddl":
        assert names == [], "DDL cannot take binds"


# Tables without an agent_id: meta (as in Go), the background questions (the same texts for everyone,
# one set per embedding model) and leases (their names carry the agent scope).
AGENT_TABLE = r"PICO_(?!META\b|BACKGROUND_QUESTIONS\b|LEASES\b)\w+"


@pytest.mark.parametrize("stmt", [s for s in STATEMENTS if s.kind in ("query", "dml")], ids=lambda s: s.name)
def test_every_agent_table_statement_is_scoped_by_agent(stmt):
    text = stmt.text
    if not re.search(rf"\b{AGENT_TABLE}", text) or stmt.name in AGENT_EXEMPT:
        return
    assert "AGENT_ID" in bind_names(text)
    # every read, update or delete of an agent's table filters on it (STATS reads seven tables)
    reads = len(re.findall(rf"\b(?:FROM|UPDATE) {AGENT_TABLE}", text))
    assert text.count("agent_id = :agent_id") >= reads
    if text.startswith("MERGE"):
        assert "t.agent_id = s.agent_id" in text


@pytest.mark.parametrize("stmt", [s for s in STATEMENTS if "PICO_BACKGROUND_QUESTIONS" in s.text and s.kind != "ddl"
                                  and not s.text.startswith("LOCK TABLE")], ids=lambda s: s.name)
def test_background_statements_are_scoped_by_model(stmt):
    # a query embedded by one ONNX model is never measured against another model's vectors
    assert "EMBEDDING_MODEL" in bind_names(stmt.text)
    assert stmt.text.startswith("INSERT") or "WHERE embedding_model = :embedding_model" in stmt.text


def test_model_name_is_the_only_interpolation():
    for stmt in STATEMENTS:
        rest = stmt.text.replace("{model}", "")
        assert "{" not in rest.replace('{"', "").replace("{}", ""), stmt.name
        if "{model}" in stmt.text:
            assert "VECTOR_EMBEDDING({model} USING" in stmt.text, stmt.name


def test_similarity_searches_use_the_vector_index():
    searches = [s for s in STATEMENTS if "ORDER BY VECTOR_DISTANCE" in s.text]
    assert {s.name for s in searches} == {"memory_nearest", "memory_nearest_exact", "note_search", "doc_nearest"}
    for stmt in searches:
        assert "COSINE" in stmt.text
        # recall uses the index; dedup needs the true nearest row, which an approximate probe may miss
        assert ("FETCH EXACT FIRST" if stmt.name == "memory_nearest_exact" else "FETCH APPROX FIRST") in stmt.text


def test_ddl_names_the_codes_that_mean_already_done():
    for stmt in STATEMENTS:
        if stmt.text.startswith("CREATE TABLE"):
            assert stmt.tolerate == {"ORA-00955"}
        elif stmt.text.startswith(("CREATE INDEX", "CREATE VECTOR INDEX")):
            assert {"ORA-00955", "ORA-01408"} <= stmt.tolerate
        elif stmt.text.startswith("ALTER TABLE") and " ADD (" in stmt.text:
            assert stmt.tolerate == {"ORA-01430"}


NEGATIVES = [
    "SELECT memory_id FROM PICO_MEMORIES LIMIT 5",
    "INSERT INTO PICO_STATE (state_key) VALUES (:k) ON CONFLICT DO NOTHING",
    "SELECT importance::int FROM PICO_MEMORIES",
    "SELECT memory_id, content, FROM PICO_MEMORIES",
    "SELEC memory_id FROM PICO_MEMORIES",
    "MERGE INTO PICO_STATE t USING (SELECT 1 AS a FROM DUAL) s WHEN MATCHED THEN UPDATE SET t.state_value = 1",
    "CREATE INDX IDX_X ON PICO_MEMORIES(agent_id)",
    "SELECT a FROM PICO_META WHERE a = 1 WHERE b = 2",
    "CREATE VECTOR INDEX IDX_V ON PICO_MEMORIES(embedding) ORGANIZATION CLUSTER",
    "BEGIN DBMS_VECTOR.LOAD_ONNX_MODEL(:a, :b); END;",
    "SELECT memory_id FROM PICO_MEMORIES ORDER BY embedding <=> :v",
    "ALTER TABLE PICO_STATE MODIFY state_key VARCHAR2(255 CHAR)",
    "ALTER TABLE PICO_STATE MODIFY (state_key VARCHAR2(255 CHARS))",
    "ALTER SESSION SET DDL_LOCK_TIMEOUT 30",
    "LOCK TABLE PICO_MIGRATION_LOCK EXCLUSIVE MODE",
]


@pytest.mark.parametrize("bad", NEGATIVES)
def test_the_checker_rejects_foreign_or_broken_sql(bad):
    assert problems(bad)


def test_bind_names_follow_the_driver_rules():
    sql = """SELECT ':not_a_bind', "COL:X" FROM t -- :comment
             WHERE a = :First AND b = :"Quoted" AND c = :first /* :x */"""
    assert bind_names(sql) == ["FIRST", "Quoted", "FIRST"]


def test_23ai_rewrite_keeps_the_statement_shape():
    stmt = q.MEMORY_NEAREST.render(MODEL)
    rewritten = rewrite_23ai(stmt)
    assert "FETCH FIRST :k ROWS ONLY" in rewritten and "APPROX" not in rewritten
    assert rewrite_23ai(q.EMBED.render(MODEL)) == f"SELECT VECTOR_EMBEDDING({MODEL}, :text) FROM DUAL"
    assert "VECTOR(384" not in rewrite_23ai(q.CREATE_MEMORIES.text)
