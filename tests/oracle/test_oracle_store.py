"""OracleStore behaviour the contract suite cannot see: schema migrations, the SQL each operation sends,
opening failures, a database lost mid-run, rollback, agent scoping, redaction, and the fake's own honesty."""

from __future__ import annotations

import asyncio
import json
from datetime import date, datetime

import oracledb
import pytest

from picoora.messages import Message, ToolCall
from picoora.store.base import MemoryRecord, Provenance, StoreError
from picoora.store.oracle import OracleUnavailable, open_database, open_oracle_store
from picoora.store.oracle import sql as q
from picoora.store.oracle.query_text import scan_pattern
from picoora.store.oracle.schema import LATEST_VERSION, MIGRATIONS, migrate, run_ddl
from tests.oracle.conftest import oracle_config, set_up_schema
from tests.oracle.fake_db import FakeConnection, FakeOracle, driver_error, ora_error

GO_TABLES = ["PICO_META", "PICO_MEMORIES", "PICO_DAILY_NOTES", "PICO_SESSIONS", "PICO_STATE", "PICO_CONFIG",
             "PICO_PROMPTS", "PICO_TRANSCRIPTS"]


def _run(fake: FakeOracle, config, work):
    db = open_database(config, pool_factory=fake.pool_factory)
    try:
        return db.probe(work)
    finally:
        db.close()


# ---- schema ----------------------------------------------------------------------------------------


def test_fresh_schema_creates_the_go_tables_in_order_and_records_the_version(fake, config):
    set_up_schema(fake, config)
    creates = [e.sql.split()[2] for e in fake.executed if e.sql.startswith("CREATE TABLE")]
    # the Go tables first, then ours
    assert creates == GO_TABLES + ["PICO_TRACES", "PICO_BACKGROUND_QUESTIONS", "PICO_LEASES", "PICO_TOOL_OUTPUTS",
                                   "PICO_DOCUMENTS", "PICO_DOC_CHUNKS"]
    meta = {r["meta_key"]: r["meta_value"] for r in fake.rows("PICO_META")}
    assert meta["schema_version"] == str(LATEST_VERSION)
    assert [k for k in sorted(meta) if k.startswith("migration.")] == [f"migration.{m.version:03d}" for m in MIGRATIONS]
    memories = fake.tables["PICO_MEMORIES"]
    assert memories.columns["embedding"].startswith("VECTOR(384, FLOAT32)")
    assert {"content_hash", "embedding_model"} <= set(memories.columns)
    assert fake.tables["PICO_SESSIONS"].keys == {"PK_PICO_SESSIONS": ("agent_id", "session_key")}
    assert fake.raised == ["ORA-00942"]  # only the "is there a PICO_META yet?" probe failed


def test_migrating_again_is_a_no_op_and_replaying_everything_is_tolerated(fake, config):
    set_up_schema(fake, config)
    fake.executed.clear()
    assert _run(fake, config, lambda tx: migrate(tx, "M")) == []
    assert fake.names() == ["meta_get"]
    # A crash before the version was recorded: every DDL runs again and is told "already done".
    fake.tables["PICO_META"].rows.clear()
    fake.indexes["MY_OWN_AGENT_INDEX"] = ("PICO_STATE", ("agent_id",), "NORMAL")  # same columns, other name
    del fake.indexes["IDX_PICO_STATE_AGENT"]
    applied = _run(fake, config, lambda tx: migrate(tx, "M"))
    assert [m.version for m in applied] == [m.version for m in MIGRATIONS]
    assert {"ORA-00955", "ORA-01408", "ORA-01430", "ORA-02264"} <= set(fake.raised)
    assert "IDX_PICO_STATE_AGENT" not in fake.indexes  # ORA-01408: the existing index serves
    assert fake.tables["PICO_SESSIONS"].keys == {"PK_PICO_SESSIONS": ("agent_id", "session_key")}


def test_ddl_errors_that_do_not_mean_already_done_propagate(fake, config):
    set_up_schema(fake, config)
    fake.fail_next["index_memories_hash"] = ora_error(1430)  # a code this statement does not tolerate
    with pytest.raises(OracleUnavailable, match="ORA-01430"):
        _run(fake, config, lambda tx: run_ddl(tx, q.INDEX_MEMORIES_HASH))


def _go_schema(fake: FakeOracle, config) -> None:
    """A database set up by the Go PicoOraClaw: version 1.0.0 tables and Go-shaped rows."""
    async def work(tx):
        for stmt in MIGRATIONS[0].statements:
            await run_ddl(tx, stmt)
        await tx.run(q.META_SET, meta_key="schema_version", meta_value="1.0.0", now=datetime(2026, 1, 2))

    _run(fake, config, work)
    vector = fake.embed("User prefers Oracle Database")
    t0 = datetime(2026, 1, 2, 9, 30)
    fake.tables["PICO_MEMORIES"].rows.append(dict(
        memory_id="go01", agent_id="default", content="User prefers Oracle Database", embedding=vector,
        importance=0.8, category="preference", access_count=2, created_at=t0, accessed_at=None, updated_at=t0))
    go_messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "content": "21C", "tool_call_id": "c1"},
    ]
    fake.tables["PICO_SESSIONS"].rows.append(dict(
        session_key="cli:default", agent_id="default", messages=json.dumps(go_messages), summary=None,
        created_at=t0, updated_at=t0))
    fake.tables["PICO_PROMPTS"].rows.append(dict(prompt_name="IDENTITY", agent_id="default", content="I am Pico.",
                                                 updated_at=t0))
    for seq, role in enumerate(["user", "assistant"], start=1):
        fake.tables["PICO_TRANSCRIPTS"].identity += 1
        fake.tables["PICO_TRANSCRIPTS"].rows.append(dict(
            id=fake.tables["PICO_TRANSCRIPTS"].identity, session_key="cli:default", agent_id="default",
            sequence_num=seq, role=role, content=f"{role} said hi", created_at=t0))


def test_a_go_schema_is_upgraded_in_place_and_its_rows_still_read(fake, config):
    _go_schema(fake, config)
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    try:
        assert store.meta.get("schema_version") == str(LATEST_VERSION)
        go_row = fake.rows("PICO_MEMORIES")[0]
        assert go_row["content_hash"] and go_row["embedding_model"] == "ALL_MINILM_L12_V2"
        again = store.memories.add("user prefers oracle database.")
        assert (again.created, again.memory.id) == (False, "go01")
        session = store.sessions.load("cli:default")
        assert session.messages[1].tool_calls == [ToolCall(id="c1", name="weather", arguments={"city": "Oslo"})]
        assert session.messages[2].tool_call_id == "c1"
        assert [p.name for p in store.prompts.list()] == ["IDENTITY.md"]
        assert store.prompts.get("IDENTITY.md").content == "I am Pico."
        assert [(e.seq, e.message) for e in store.transcripts.read("cli:default")] == [
            (1, Message("user", "user said hi")), (2, Message("assistant", "assistant said hi"))]
        assert store.transcripts.append("cli:default", [Message("user", "next")]) == [3]
        other = open_oracle_store(oracle_config(agent_id="other"), pool_factory=fake.pool_factory)
        other.sessions.append("cli:default", [Message("user", "same key, other agent")])  # the Go PK forbade this
        assert len(store.sessions.load("cli:default").messages) == 3
        other.close()
    finally:
        store.close()


def test_migration_11_gives_existing_memories_unknown_provenance_and_new_ones_theirs(fake, config):
    _go_schema(fake, config)
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    try:
        assert "provenance" in store.meta.get("migration.011")
        assert fake.rows("PICO_MEMORIES")[0]["source_how"] == "unknown"
        old = store.memories.get("go01")
        assert old.provenance == Provenance() and old.is_current()
        told = Provenance(how="told", person="ana", session="cli:default", turn_id="t1")
        new = store.memories.add("User prefers Oracle Database 23ai over MySQL", provenance=told).memory
        row = next(r for r in fake.rows("PICO_MEMORIES") if r["memory_id"] == new.id)
        assert (row["source_how"], row["source_person"], row["source_session"], row["source_turn"]) == (
            "told", "ana", "cli:default", "t1")
        assert store.memories.get(new.id).provenance == told
    finally:
        store.close()


def test_an_upgrade_that_cannot_apply_says_so(fake, config):
    _go_schema(fake, config)
    fake.fail_next["add_daily_notes_day_key"] = ora_error(2299, "UQ_PICO_DAILY_NOTES_DAY")
    with pytest.raises(OracleUnavailable) as err:
        open_oracle_store(config, pool_factory=fake.pool_factory)
    assert err.value.reason == "schema"
    assert "Upgrading the picoora schema" in str(err.value) and "ORA-02299" in str(err.value)
    assert "picoora setup-oracle" in str(err.value)


# ---- opening ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("setup, reason, words", [
    (lambda fake: None, "schema", "no picoora schema"),
    (lambda fake: fake.models.clear(), "model", "ALL_MINILM_L12_V2 is not loaded"),
    (lambda fake: setattr(fake, "refuse", ora_error(1017)), "credentials", "wrong user or password"),
    (lambda fake: setattr(fake, "down", True), "unreachable", "Cannot reach Oracle"),
    (lambda fake: setattr(fake, "silent", True), "timeout", "did not answer within 0.2 s"),
])
def test_open_fails_with_the_reason_and_what_to_run(fake, setup, reason, words):
    config = oracle_config(connect_timeout_seconds=0.2)
    if reason != "schema":
        set_up_schema(fake, config)
    setup(fake)
    with pytest.raises(OracleUnavailable) as err:
        open_oracle_store(config, pool_factory=fake.pool_factory)
    assert err.value.reason == reason and words in str(err.value)
    assert "s3cret" not in str(err.value)


def test_text_index_switches_keyword_matching_to_oracle_text(fake, config, open_store):
    plain = open_store()
    plain.memories.add("Locker code A7-4421 is for the gym")
    plain.memories.add("The gym opens at six")
    fake.executed.clear()
    best = plain.memories.recall("what is locker A7-4421", limit=2).matches[0]
    assert best.memory.content.startswith("Locker code A7-4421")
    scan = next(e for e in fake.executed if e.name == "memory_keyword_scan")
    assert scan.binds["pattern"] == "a7-4421|4421|a7|locker"  # codes first, then longer words
    _run(fake, config, lambda tx: run_ddl(tx, q.TEXT_INDEX_MEMORIES))
    indexed = open_store()
    fake.executed.clear()
    assert indexed.memories.recall("what is locker A7-4421", limit=2).matches[0].memory.id == best.memory.id
    text = next(e for e in fake.executed if e.name == "memory_keyword_text")
    assert text.binds["text_query"] == "{a7-4421} ACCUM {4421} ACCUM {a7} ACCUM {locker}"


# ---- what each operation sends ---------------------------------------------------------------------


def test_recall_embeds_once_searches_approximately_and_records_access(fake, open_store):
    store = open_store()
    cat = store.memories.add("The cat sleeps on the blue sofa").memory
    fake.executed.clear()
    result = store.memories.recall("where does the cat sleep", limit=2)
    assert fake.names() == ["embed", "memory_nearest", "memory_keyword_scan", "memory_touch"]
    nearest = fake.executed[1]
    assert "FETCH APPROX FIRST :k ROWS ONLY" in nearest.sql and nearest.binds["k"] == 20
    assert nearest.binds["embedding_model"] == "ALL_MINILM_L12_V2"
    assert all(e.binds["agent_id"] == "default" for e in fake.executed[1:])
    assert result.matches[0].memory.id == cat.id and 0 < result.matches[0].similarity <= 1
    assert fake.rows("PICO_MEMORIES")[0]["access_count"] == 1


def test_add_memory_checks_exact_then_semantic_duplicates_then_inserts(fake, open_store):
    store = open_store()
    fake.executed.clear()
    store.memories.add("Prefers tea over coffee", importance=0.666)  # states no subject/value: nothing to supersede
    assert fake.names() == ["embed", "memory_by_hash", "memory_nearest_exact", "memory_insert"]
    inserted = fake.executed[-1].binds
    assert inserted["importance"] == 0.67 and len(inserted["content_hash"]) == 64
    assert inserted["embedding_model"] == "ALL_MINILM_L12_V2" and len(inserted["embedding"]) == 384


def test_a_fact_with_a_subject_looks_for_current_memories_about_it_before_inserting(fake, open_store):
    store = open_store()
    old = store.memories.add("The door code is 4421").memory
    fake.executed.clear()
    new = store.memories.add("The door code is now 9981")
    assert fake.names() == ["embed", "memory_by_hash", "memory_nearest_exact", "memory_nearest",
                            "memory_keyword_scan", "memory_insert", "memory_supersede"]
    assert fake.executed[4].binds["pattern"] == scan_pattern(["code", "door"])  # the subject's words, by keywords
    assert [m.id for m in new.replaced] == [old.id]
    assert fake.executed[-1].binds["superseded_by"] == new.memory.id


def test_daily_notes_are_embedded_and_searchable(fake, open_store):
    store = open_store()
    store.notes.append("Repaired the garden fence with Tomas.", day=date(2026, 3, 1))
    store.notes.append("Booked flights to Lisbon for May.", day=date(2026, 3, 2))
    assert all(row["embedding"] is not None for row in fake.rows("PICO_DAILY_NOTES"))
    found = store.notes.search("flights to Lisbon", limit=1)
    assert [(note.day, round(sim, 2) > 0.3) for note, sim in found] == [(date(2026, 3, 2), True)]
    assert fake.executed[-1].name == "note_search" and "FETCH APPROX FIRST" in fake.executed[-1].sql
    listed = store.notes.list(5)
    assert [(n.day, n.has_vector) for n in listed] == [(date(2026, 3, 2), True), (date(2026, 3, 1), True)]


def test_without_the_model_notes_and_memories_are_kept_without_vectors(fake, open_store):
    fake.models.clear()
    store = open_store(require_model=False)
    note = store.notes.append("A plain day.")
    assert fake.rows("PICO_DAILY_NOTES")[0]["embedding"] is None and "A plain day." in note.content
    assert store.notes.search("plain") == []
    record = store.memories.add("Passport number X1234567").memory
    assert record.embedding_model is None
    with pytest.raises(StoreError, match="setup-oracle --onnx-file"):
        store.memories.reindex()
    result = store.memories.recall("passport number", limit=1)
    assert result.degraded and "ALL_MINILM_L12_V2 is not loaded" in result.note


def test_agents_only_see_their_own_rows(fake, config, open_store):
    mine = open_store()
    theirs = open_store(config=oracle_config(agent_id="work"))
    mine.memories.add("Home wifi is on the router label")
    mine.state.set("last_channel", "cli:default")
    theirs.prompts.set("SOUL.md", "work soul")
    assert theirs.memories.list() == [] and theirs.state.all() == {}
    assert mine.prompts.list() == [] and theirs.stats().prompts == 1 and mine.stats().memories == 1
    assert {e.binds["agent_id"] for e in fake.executed if "agent_id" in e.binds} == {"default", "work"}


def test_config_values_are_redacted_before_they_are_stored(fake, open_store):
    store = open_store()
    snapshot = {"oracle": {"user": "picoora", "password": "s3cret-Pw"}, "providers": {"openai": {"api_key": "fk-1"}}}
    store.config.set("full_config", json.dumps(snapshot))
    store.config.set("note", "connect with s3cret-Pw please")
    stored = {r["config_key"]: r["config_value"] for r in fake.rows("PICO_CONFIG")}
    assert json.loads(stored["full_config"]) == {"oracle": {"user": "picoora", "password": "***"},
                                                 "providers": {"openai": {"api_key": "***"}}}
    assert stored["note"] == "connect with *** please"


# ---- failures in the middle of a run ----------------------------------------------------------------


def test_a_database_lost_mid_run_fails_the_operation_and_the_next_one_reconnects(fake, open_store):
    store = open_store()
    store.state.set("k", "before")
    pools = len(fake.pool_params)
    fake.down = True
    with pytest.raises(StoreError) as err:
        store.state.set("k", "during")
    assert "Oracle could not save state" in str(err.value) and "next operation reconnects" in str(err.value)
    assert "Traceback" not in str(err.value) and "CONNECTION_ID" not in str(err.value)
    with pytest.raises(StoreError, match="DPY-6005"):
        store.state.get("k")  # still down: connecting fails fast
    fake.down = False
    assert store.state.get("k") == "before"
    assert len(fake.pool_params) > pools  # the broken pool was replaced


def test_a_silent_database_times_out_instead_of_hanging(fake):
    config = oracle_config(connect_timeout_seconds=0.2)
    set_up_schema(fake, config)
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    try:
        store.state.set("k", "v")
        fake.silent = True
        with pytest.raises(StoreError, match="no answer from localhost:1521/FREEPDB1 in time"):
            store.state.get("k")
        fake.silent = False
        assert store.state.get("k") == "v"
    finally:
        store.close()


def test_a_failed_unit_of_work_is_rolled_back_whole(fake, open_store):
    store = open_store()
    fake.fail_next["memory_insert"] = (2, ora_error(1))  # the third insert of the batch fails
    records = [MemoryRecord(id=f"r{n}", content=f"imported fact number {n} about {word}")
               for n, word in enumerate(["boats", "huts", "owls"])]
    with pytest.raises(StoreError, match="rolled back"):
        store.memories.import_records(records)
    assert store.memories.list() == []
    assert store.memories.import_records(records) == 3


# ---- the fake keeps the store honest ----------------------------------------------------------------


def test_the_fake_rejects_unknown_sql_mismatched_binds_and_lob_fetches(fake, config):
    set_up_schema(fake, config)
    conn = FakeConnection(fake)

    async def attempt(sql, binds, fetch_lobs=False):
        await fake.execute(conn, sql, binds, fetch_lobs=fetch_lobs)

    with pytest.raises(AssertionError, match="does not know this statement"):
        asyncio.run(attempt("SELECT 2 FROM DUAL", {}))
    with pytest.raises(AssertionError, match="bind mismatch"):
        asyncio.run(attempt(q.STATE_GET.text, {"agent_id": "default"}))
    with pytest.raises(AssertionError, match="fetch_lobs=False"):
        asyncio.run(attempt(q.STATE_GET.text, {"agent_id": "a", "state_key": "k"}, fetch_lobs=None))
    with pytest.raises(AssertionError, match="naive UTC"):
        asyncio.run(attempt(q.META_SET.text, {"meta_key": "k", "meta_value": "v",
                                              "now": datetime.now().astimezone()}))


def test_fake_errors_are_the_drivers_own(fake):
    exc = ora_error(955)
    assert type(exc) is oracledb.DatabaseError
    assert exc.args[0].code == 955 and exc.args[0].full_code == "ORA-00955"
    assert type(ora_error(1)).__name__ == "IntegrityError"
    assert driver_error(6005).args[0].full_code == "DPY-6005"
    assert "DPY-4011" in driver_error(4011).args[0].full_code
