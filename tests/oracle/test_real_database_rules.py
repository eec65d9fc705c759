"""Issue 11: what a real Oracle database or python-oracledb would refuse, one test per finding. Each test
fails on the code before its fix, because the fake (tests/oracle/fake_db.py) refuses what Oracle refuses."""

from __future__ import annotations

import array
import asyncio
import re
import threading
import time
from datetime import date, datetime

import oracledb
import pytest
import tomllib
from oracledb import errors as oracledb_errors

from picoora.messages import Message
from picoora.store import limits
from picoora.store.aio import AsyncStore
from picoora.store.base import MemoryRecord, StoreError
from picoora.store.files import FileStore
from picoora.store.oracle import OracleUnavailable, connection, open_database, open_oracle_store
from picoora.store.oracle import sql as q
from picoora.store.oracle.connection import MIN_DRIVER_VERSION, explain_connect_failure, require_driver
from picoora.store.oracle.query_text import embedding_text
from picoora.store.oracle.schema import LATEST_VERSION, MIGRATION_SECONDS, MIGRATIONS, run_ddl, upgrade
from picoora.store.oracle.setup import OracleSetup
from tests.cli_support import REPO
from tests.oracle.conftest import oracle_config, set_up_schema
from tests.oracle.fake_db import check_driver_keywords, driver_error, ora_error
from tests.oracle.test_oracle_store import _go_schema, _run

# ---- 1. the driver version floor -------------------------------------------------------------------


def test_pyproject_requires_the_driver_version_the_code_needs():
    requirements = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["oracle"]
    floor = next(r for r in requirements if r.startswith("oracledb"))
    assert floor.split(">=")[1].split(",")[0].strip() == ".".join(map(str, MIN_DRIVER_VERSION))


def test_an_older_driver_is_refused_with_what_to_install(monkeypatch):
    monkeypatch.setattr(oracledb, "__version__", "2.5.1")
    with pytest.raises(OracleUnavailable) as err:
        require_driver()
    assert err.value.reason == "config" and "oracledb>=3.4" in str(err.value)
    with pytest.raises(OracleUnavailable):
        open_database(oracle_config())


def test_the_fake_checks_cursor_keywords_against_the_installed_driver():
    check_driver_keywords("execute", {"fetch_lobs": False})
    with pytest.raises(TypeError, match="fetch_everything"):
        check_driver_keywords("execute", {"fetch_everything": True})


# ---- 2. TIMESTAMP, not DATE --------------------------------------------------------------------------


def test_timestamps_keep_their_fractional_seconds(fake, open_store):
    store = open_store()
    record = store.memories.add("The meeting moved to Thursday").memory
    assert store.memories.get(record.id) == record
    stored = fake.rows("PICO_MEMORIES")[0]
    assert stored["created_at"] == record.created_at.replace(tzinfo=None)
    recalled = store.memories.recall("when is the meeting", limit=1).matches[0].memory  # executemany binds too
    assert fake.rows("PICO_MEMORIES")[0]["accessed_at"] == recalled.accessed_at.replace(tzinfo=None)


def test_without_the_input_type_handler_the_fake_drops_fractions_as_oracle_does(fake, open_store, monkeypatch):
    monkeypatch.setattr(connection, "bind_timestamps", lambda cursor, value, size: None)
    store = open_store()
    record = store.memories.add("The meeting moved to Friday").memory
    assert fake.rows("PICO_MEMORIES")[0]["created_at"].microsecond == 0 != record.created_at.microsecond


# ---- 3. keys and values of the sizes picoora accepts --------------------------------------------------


def test_long_and_non_ascii_keys_fit_after_the_widening_migration(fake, open_store):
    store = open_store()
    key = "ü" * limits.SESSION_KEY_CHARS  # 2000 bytes
    store.sessions.append(key, [Message("user", "hi")])
    assert store.transcripts.append(key, [Message("user", "hi")]) == [1]
    name = "ключ" * 60  # 240 characters, 480 bytes
    store.state.set(name, "v")
    store.memories.add("A memory in a long category", category="ž" * limits.KEY_CHARS)
    assert store.state.get(name) == "v" and store.sessions.load(key).messages[0].content == "hi"


def test_the_fake_measures_varchar_columns_in_bytes_like_oracle(fake, config):
    _run(fake, config, lambda tx: run_ddl(tx, MIGRATIONS[0].statements[0]))  # PICO_META, Go sizes
    with pytest.raises(OracleUnavailable, match="ORA-12899"):
        _run(fake, config, lambda tx: tx.run(q.META_SET, meta_key="é" * 200, meta_value="v", now=datetime(2026, 1, 1)))


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["files", "oracle"])
def test_both_backends_refuse_what_does_not_fit_with_a_clear_error(backend, tmp_path, open_store):
    store = FileStore(tmp_path / "ws") if backend == "files" else open_store()
    try:
        with pytest.raises(limits.TooLong, match="4002 bytes in UTF-8; at most 4000"):
            store.state.set("big", "é" * 2001)
        with pytest.raises(limits.TooLong, match="at most 4000"):
            store.meta.set("big", "x" * 4001)
        store.config.set("big", "x" * 100_000)  # config values are CLOBs: no limit
        with pytest.raises(limits.TooLong, match="session key is 1001 characters"):
            store.sessions.append("k" * 1001, [Message("user", "hi")])
        assert store.state.get("big") is None
    finally:
        store.close()


# ---- 5. and 6. bounded binds: REGEXP, Oracle Text, VECTOR_EMBEDDING -----------------------------------

PARAGRAPH = " ".join("".join(chr(97 + n // 26 ** i % 26) for i in range(3)) + "word" for n in range(400)) \
    + " the locker code is A7-4421"  # 400 ordinary words, then one code


def test_a_pasted_paragraph_keeps_keyword_recall_working(fake, open_store):
    store = open_store()
    store.memories.add("Locker code A7-4421 is for the gym")
    fake.executed.clear()  # adding looked for what the memory supersedes: the recall's own scan follows
    result = store.memories.recall(PARAGRAPH, limit=1)
    assert result.matches and result.matches[0].memory.content.startswith("Locker code")
    pattern = next(e for e in fake.executed if e.name == "memory_keyword_scan").binds["pattern"]
    assert len(pattern.encode()) <= 512 and pattern.startswith("a7-4421|")  # the code survives the cut


def test_the_oracle_text_query_is_capped_too(fake, config, open_store):
    _run(fake, config, lambda tx: run_ddl(tx, q.TEXT_INDEX_MEMORIES))
    store = open_store()
    assert store.text_index
    store.memories.add("Locker code A7-4421 is for the gym")
    fake.executed.clear()
    assert store.memories.recall(PARAGRAPH, limit=1).matches
    query = next(e for e in fake.executed if e.name == "memory_keyword_text").binds["text_query"]
    assert len(query.encode()) <= 2000 and query.startswith("{a7-4421}")


def test_multibyte_text_is_cut_to_4000_bytes_before_embedding(fake, open_store):
    text = "🙂" * 1200  # 4 bytes each: head and tail of 500 characters were 4005 bytes with the joiner
    assert len(embedding_text(text).encode()) <= 4000 and len(embedding_text("é" * 999).encode()) <= 4000
    store = open_store()
    assert store.memories.add(text).created
    sent = [e.binds["text"] for e in fake.executed if e.name == "embed"]
    assert sent and all(len(t.encode()) <= 4000 for t in sent)


def _raw_execute(sql: str, binds: dict):
    """A statement straight through the (fake) driver cursor, without Tx's CLOB conversion."""
    async def work(tx):
        await tx._conn.cursor().execute(sql, binds, fetch_lobs=False)

    return work


def test_the_fake_refuses_a_long_bind_outside_a_clob_column(fake, config):
    set_up_schema(fake, config)
    embed = q.EMBED.render(fake.model)
    with pytest.raises(OracleUnavailable, match="ORA-01461"):
        _run(fake, config, _raw_execute(embed, {"text": "x" * 4001}))
    with pytest.raises(OracleUnavailable, match="ORA-12733"):
        _run(fake, config, lambda tx: tx.rows(q.MEMORY_KEYWORD_SCAN, agent_id="a", pattern="a|" * 300, k=1,
                                              now=datetime(2026, 1, 1)))
    merge = {"prompt_name": "USER.md", "agent_id": "a", "content": "p" * 8000, "now": datetime(2026, 1, 1)}
    with pytest.raises(OracleUnavailable, match="ORA-01461"):  # a LONG bind in a MERGE, even into a CLOB
        _run(fake, config, _raw_execute(q.PROMPT_SET.render(fake.model), merge))
    _run(fake, config, lambda tx: tx.run(q.PROMPT_SET, **merge))  # Tx sends it as a temporary CLOB
    assert fake.rows("PICO_PROMPTS")[0]["content"] == "p" * 8000


def test_large_prompts_and_tool_results_go_into_clobs(fake, open_store):
    store = open_store()
    store.prompts.set("USER.md", "p" * 8_000)
    result = Message("tool", "r" * 100_000, tool_call_id="c1")
    assert store.transcripts.append("cli:big", [Message("user", "go"), result]) == [1, 2]
    store.sessions.append("cli:big", [result])
    assert store.prompts.get("USER.md").content == "p" * 8_000
    assert store.transcripts.read("cli:big")[1].message.content == "r" * 100_000


# ---- 7. and 8. a Go database with duplicates and API vectors ------------------------------------------


def test_go_duplicates_are_renumbered_and_same_day_notes_merged_before_the_unique_keys(fake, config):
    _go_schema(fake, config)
    transcripts = fake.rows("PICO_TRANSCRIPTS")
    transcripts.append(dict(transcripts[0], id=99, content="seed-demo ran twice"))  # sequence 1 again
    day = datetime(2026, 1, 2)
    for n, text in enumerate(["# morning", "# evening"]):
        fake.rows("PICO_DAILY_NOTES").append(dict(note_id=f"n{n}", agent_id="default", note_date=day, content=text,
                                                  embedding=None, created_at=datetime(2026, 1, 2, 8 + n),
                                                  updated_at=day))
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    try:
        assert [(e.seq, e.message.content) for e in store.transcripts.read("cli:default")] == [
            (1, "user said hi"), (2, "seed-demo ran twice"), (3, "assistant said hi")]  # stored order kept
        notes = fake.rows("PICO_DAILY_NOTES")
        assert [(n["note_id"], n["content"]) for n in notes] == [("n0", "# morning\n# evening")]
        assert store.notes.append("# night", day=date(2026, 1, 2)).content == "# morning\n# evening\n# night"
    finally:
        store.close()


def test_go_vectors_of_another_dimension_are_not_labelled_and_reindex_fixes_them(fake, config):
    _go_schema(fake, config)
    api_vector = array.array("f", [0.01] * 1536)  # Go's embedding_provider=api
    fake.rows("PICO_MEMORIES").append(dict(
        memory_id="go02", agent_id="default", content="User owns a red bicycle", embedding=api_vector,
        importance=0.5, category="fact", access_count=0, created_at=datetime(2026, 1, 3), accessed_at=None,
        updated_at=datetime(2026, 1, 3)))
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    try:
        labels = {r["memory_id"]: r["embedding_model"] for r in fake.rows("PICO_MEMORIES")}
        assert labels == {"go01": "ALL_MINILM_L12_V2", "go02": None}
        assert store.memories.recall("what does the user prefer", limit=2).matches  # no ORA-51808
        assert store.memories.reindex() == 2
        assert {len(r["embedding"]) for r in fake.rows("PICO_MEMORIES")} == {384}
        assert store.memories.recall("red bicycle", limit=1).matches[0].memory.id == "go02"
    finally:
        store.close()


def test_the_fake_refuses_vector_distance_across_dimensions(fake, config):
    set_up_schema(fake, config)
    fake.rows("PICO_DAILY_NOTES").append(dict(note_id="x", agent_id="a", note_date=datetime(2026, 1, 1),
                                              content="c", embedding=array.array("f", [1.0] * 8),
                                              created_at=None, updated_at=None))
    with pytest.raises(OracleUnavailable, match="ORA-51808"):
        _run(fake, config, lambda tx: tx.rows(q.NOTE_SEARCH, agent_id="a", vector=fake.embed("q"), k=1, dimensions=8))


# ---- 9. migrations: own deadline, DDL waits, one process at a time -------------------------------------


def test_a_slow_upgrade_is_not_cut_off_by_the_open_probe(fake, config, monkeypatch):
    _go_schema(fake, config)
    monkeypatch.setattr(connection, "PROBE_SECONDS", 0.3)
    fake.delay["add_sessions_key"] = 0.6  # a big Go table
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    try:
        assert store.meta.get("schema_version") == str(LATEST_VERSION)
    finally:
        store.close()


def test_ddl_waits_for_a_busy_table_and_retries_ora_00054(fake, config, monkeypatch):
    _go_schema(fake, config)
    monkeypatch.setattr("picoora.store.oracle.schema.asyncio.sleep", _no_sleep)
    fake.fail_next["widen_state"] = ora_error(54)
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    store.close()
    assert "ddl_wait" in fake.names() and fake.names().count("widen_state") == 2  # busy once, then done


async def _no_sleep(seconds: float) -> None:
    return None


def _two_upgrades_at_once(fake, config) -> list:
    db = open_database(config, pool_factory=fake.pool_factory)
    results: list = []
    try:
        threads = [threading.Thread(target=lambda: results.append(upgrade(db))) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    finally:
        db.close()
    return results


AFTER_GO = sum(m.version > 1 for m in MIGRATIONS)  # every migration after the Go schema's (version 1)


def test_two_processes_migrating_at_once_take_turns(fake, config):
    _go_schema(fake, config)
    fake.delay["renumber_transcripts"] = 0.2  # long enough for the other to arrive mid-migration
    results = _two_upgrades_at_once(fake, config)
    assert sorted(len(applied) for _, applied in results) == [0, AFTER_GO]
    assert fake.names().count("renumber_transcripts") == 1


def test_the_migration_lock_waits_as_long_as_a_migration_may_run(fake, config):
    wait = re.search(r"WAIT (\d+)$", q.TAKE_MIGRATION_LOCK.text)
    assert wait and int(wait.group(1)) >= MIGRATION_SECONDS
    _go_schema(fake, config)
    fake.wait_scale = 1 / 1000  # the lock's WAIT 900 lasts 0.9 s here
    fake.delay["renumber_transcripts"] = 0.3  # a 300 s migration (the lock once gave up after 120 s)
    results = _two_upgrades_at_once(fake, config)
    assert sorted(len(applied) for _, applied in results) == [0, AFTER_GO]  # the other waited it out
    assert "ORA-30006" not in fake.raised


# ---- 10. dedup with exact search -----------------------------------------------------------------------


def test_dedup_finds_the_nearest_row_even_when_approximate_search_misses_it(fake, open_store):
    store = open_store()
    store.memories.dedup_similarity = 0.9  # the hash embedder scores this pair 0.94
    first = store.memories.add("the user's garden has roses and tulips along the fence").memory
    fake.approx_misses = 1  # a filtered IVF probe that skips the nearest partition
    again = store.memories.add("the user's garden has roses and tulips by the fence")
    assert (again.created, again.memory.id) == (False, first.id)


def test_reindex_rebuilds_the_vector_index_from_the_data(fake, open_store):
    store = open_store()
    store.memories.add("Bins go out on Tuesday")
    store.memories.reindex()
    names = fake.names()
    assert names.index("drop_memories_vector_index") < names.index("ivf_memories")
    assert fake.indexes["IDX_PICO_MEMORIES_VEC"][2] == "VECTOR"


# ---- 11. thin mode's DPY-6005 wraps the reason --------------------------------------------------------


def _wrapped(cause: Exception) -> Exception:
    return oracledb_errors._create_exception(6005, cause=cause, connection_id="x")


def test_a_wrapped_listener_refusal_is_a_service_problem_not_a_stopped_database():
    refused = oracledb_errors._create_exception(oracledb_errors.ERR_LISTENER_REFUSED_CONNECTION,
                                                error_code="ORA-12514", connection_id="x")
    err = explain_connect_failure(oracle_config().oracle, _wrapped(refused))
    assert err.reason == "service" and "is running but does not know that service" in str(err)
    tcp = explain_connect_failure(oracle_config().oracle, driver_error(6005))
    assert tcp.reason == "unreachable" and "Start it" in str(tcp)


# ---- 12. --onnx-url on a database without network access -----------------------------------------------


def test_a_missing_network_acl_is_recognised_with_the_way_out(fake, config):
    set_up_schema(fake, config)
    fake.models.clear()
    acl = oracledb._Error("ORA-29273: HTTP request failed\nORA-24247: network access denied by access control "
                          "list (ACL)", code=29273)
    fake.fail_next["load_onnx_cloud"] = acl.exc_type(acl)
    db = open_database(config, pool_factory=fake.pool_factory)
    try:
        with pytest.raises(StoreError) as err:
            OracleSetup(db).load_model_url("https://objectstorage.example/p/x/model.onnx")
    finally:
        db.close()
    assert "no network ACL for objectstorage.example" in str(err.value)
    assert "Autonomous Database path" in str(err.value) and "--onnx-file" in str(err.value)


# ---- the audit: status checked, racing upserts, ids across agents --------------------------------------


def test_a_text_index_that_is_not_valid_is_not_used(fake, config, open_store):
    _run(fake, config, lambda tx: run_ddl(tx, q.TEXT_INDEX_MEMORIES))
    fake.unusable_indexes.add("IDX_PICO_MEMORIES_TEXT")
    store = open_store()
    assert store.text_index is False
    store.memories.add("Locker code A7-4421 is for the gym")
    assert store.memories.recall("locker A7-4421", limit=1).matches  # the scan, not a CONTAINS that would fail


def test_racing_upserts_of_a_new_key_all_succeed(fake, open_store):
    store = open_store()
    fake.delay["state_set"] = 0.3  # all four MERGEs in flight at once, even on a loaded machine
    aio = AsyncStore(store)

    async def race() -> list:
        return await asyncio.gather(*(aio.state.set("fresh", f"v{n}") for n in range(4)), return_exceptions=True)

    assert asyncio.run(race()) == [None] * 4
    assert store.state.get("fresh") in {"v0", "v1", "v2", "v3"}
    assert "ORA-00001" in fake.raised  # the race happened and was absorbed


def test_imported_ids_stay_unique_across_agents(fake, config, open_store):
    records = [MemoryRecord(id="shared01", content="The office wifi is called Pico-5G")]
    assert open_store().memories.import_records(records) == 1
    other = open_store(config=oracle_config(agent_id="work"))
    assert other.memories.import_records(records) == 1  # memory_id is the table's key across agents
    assert other.memories.import_records(records) == 0
    ids = [r["memory_id"] for r in fake.rows("PICO_MEMORIES")]
    assert len(set(ids)) == 2 and "shared01" in ids


# ---- issue 6: what matters on the Oracle side ---------------------------------------------------------


def test_the_similarity_floor_is_applied_on_the_oracle_recall_path(fake, open_store):
    store = open_store()
    store.memories.add("Bananas are rich in potassium")
    store.memories.floor = 0.999  # nothing but an identical text clears this
    result = store.memories.recall("quantum chromodynamics lecture", limit=5)
    assert any(e.name == "memory_nearest" for e in fake.executed)  # the candidate was fetched...
    assert result.matches == []  # ...and dropped by the floor


def test_a_lost_connection_is_discarded_not_returned_to_the_pool(fake, open_store):
    store = open_store()
    store.state.set("k", "v")
    pool = fake.pools[-1]
    fake.fail_next["state_get"] = driver_error(4011)
    with pytest.raises(StoreError, match="next operation reconnects"):
        store.state.get("k")
    broken = fake.connections[-1]
    assert all(broken not in pool.released for pool in fake.pools)
    assert store.state.get("k") == "v" and fake.connections[-1] is not broken
    assert broken in pool.dropped and not pool.closed and fake.pools[-1] is pool  # that session only left


def test_an_acquire_that_never_returns_fails_within_the_connect_timeout(fake):
    config = oracle_config(connect_timeout_seconds=0.3)
    set_up_schema(fake, config)
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    try:
        fake.silent = True
        started = time.monotonic()
        with pytest.raises(StoreError, match="no answer"):
            store.state.get("k")
        assert time.monotonic() - started < 0.3 + 1.0
    finally:
        store.close()


def test_the_explain_plan_statement_of_the_live_tier_has_no_placeholders():
    from tests.oracle.sqlcheck import bind_names
    from tests.oracle.test_live import plan_statement

    sql = plan_statement("ALL_MINILM_L12_V2", "t_abc123", "st_1")
    assert bind_names(sql) == [] and sql.startswith("EXPLAIN PLAN SET STATEMENT_ID = 'st_1' FOR SELECT")
    assert "FETCH APPROX FIRST 10 ROWS ONLY" in sql and "'t_abc123'" in sql


def test_a_bad_agent_id_cannot_reach_the_plan_statement():
    from tests.oracle.test_live import plan_statement

    with pytest.raises(ValueError):
        plan_statement("ALL_MINILM_L12_V2", "x' OR '1'='1", "st_1")


def test_the_pool_always_has_room_for_the_migration_lock(fake):
    config = oracle_config(pool_max=1)
    set_up_schema(fake, config)
    assert fake.pool_params[-1]["max"] == 2
