"""The live tier: the same contract and the setup command against a real Oracle AI Database.

Skipped unless PICO_TEST_ORACLE_DSN (Easy Connect, e.g. localhost:1521/FREEPDB1), PICO_TEST_ORACLE_USER
and PICO_TEST_ORACLE_PASSWORD point at a database that answers. The ONNX model must be loaded already,
or PICO_TEST_ORACLE_ONNX_FILE must name Oracle's augmented all_MiniLM_L12_v2.onnx so the session set-up
can load it. PICO_TEST_ORACLE_REQUIRED=1 (CI) turns those skips into failures.
Run:  pytest -m oracle tests/oracle/test_live.py   (docs/oracle.md has the container recipe).

Every test works under its own agent_id and deletes that agent's rows afterwards. PICO_META has no
agent column, so its non-schema rows are set aside during each test and put back afterwards.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from datetime import date
from pathlib import Path

import pytest

from picoora.config import Config
from picoora.messages import Message
from picoora.store import limits
from picoora.store.oracle import OracleUnavailable, indexes, open_database, open_oracle_store
from picoora.store.oracle import sql as q
from picoora.store.oracle.connection import Tx, error_code
from picoora.store.oracle.context import MODEL_MISSING
from picoora.store.oracle.schema import run_ddl
from picoora.store.oracle.setup import OracleSetup
from tests.oracle.sqlcheck import check_binds
from tests.store_contract import StoreContract

pytestmark = pytest.mark.oracle

DSN = os.environ.get("PICO_TEST_ORACLE_DSN", "")
REQUIRED = os.environ.get("PICO_TEST_ORACLE_REQUIRED") == "1"  # CI: an unreachable database fails, never skips
TABLES = ("PICO_MEMORIES", "PICO_DAILY_NOTES", "PICO_SESSIONS", "PICO_TRANSCRIPTS", "PICO_STATE", "PICO_CONFIG",
          "PICO_PROMPTS")
SCHEMA_META = "meta_key = 'schema_version' OR meta_key LIKE 'migration.%'"


def live_config(agent_id: str = "default", **oracle: object) -> Config:
    config = Config()
    config.oracle = config.oracle.model_copy(update={
        "enabled": True, "mode": "dsn", "dsn": DSN, "user": os.environ.get("PICO_TEST_ORACLE_USER", "picoora"),
        "password": os.environ.get("PICO_TEST_ORACLE_PASSWORD", ""), "agent_id": agent_id,
        "connect_timeout_seconds": 10.0, **oracle})
    return config


def _run(config: Config, work):
    db = open_database(config)
    try:
        return db.run(work, what="run a live-test step", timeout=600.0)
    finally:
        db.close()


def _skip(reason: str) -> None:
    if REQUIRED:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def live_db() -> Config:
    """The set-up database: reachable, schema migrated, model loaded, indexes created (once per session)."""
    if not DSN:
        _skip("no live Oracle: set PICO_TEST_ORACLE_DSN, PICO_TEST_ORACLE_USER, PICO_TEST_ORACLE_PASSWORD")
    config = live_config()
    db = open_database(config)
    try:
        setup = OracleSetup(db)
        try:
            setup.connect()
        except OracleUnavailable as err:
            if err.reason in ("unreachable", "timeout"):
                _skip(f"live Oracle not reachable: {err}")
            raise
        setup.migrate()
        if not setup.model_loaded():
            onnx = os.environ.get("PICO_TEST_ORACLE_ONNX_FILE")
            if not onnx:
                _skip("the ONNX model is not loaded: set PICO_TEST_ORACLE_ONNX_FILE to all_MiniLM_L12_v2.onnx")
            setup.load_model_file(Path(onnx))
        assert setup.self_test() == 384
        assert all(outcome.error is None for outcome in setup.vector_indexes(hnsw=False))
    finally:
        db.close()
    return config


def _raw(config: Config, statements: list[tuple[str, dict]]) -> list:
    """Test-only housekeeping SQL (cleanup, EXPLAIN PLAN): straight through the driver's cursor, after the
    same bind check the fake applies to the store's own SQL (a missing bind is DPY-4010 before the server)."""
    for text, binds in statements:
        check_binds(text, binds)

    async def work(tx: Tx) -> list:
        results = []
        for text, binds in statements:
            cursor = tx._conn.cursor()
            await cursor.execute(text, binds)
            results.append(await cursor.fetchall() if cursor.description else None)
        return results

    return _run(config, work)


@pytest.fixture
def agent(live_db):
    """A fresh agent id for one test; its rows are removed afterwards, PICO_META is restored."""
    agent_id = f"t_{uuid.uuid4().hex[:12]}"
    saved = _raw(live_db, [(f"SELECT meta_key, meta_value FROM PICO_META WHERE NOT ({SCHEMA_META})", {}),
                           (f"DELETE FROM PICO_META WHERE NOT ({SCHEMA_META})", {})])[0]
    yield agent_id
    cleanup = [(f"DELETE FROM {table} WHERE agent_id = :agent_id", {"agent_id": agent_id}) for table in TABLES]
    cleanup.append((f"DELETE FROM PICO_META WHERE NOT ({SCHEMA_META})", {}))
    cleanup += [("INSERT INTO PICO_META (meta_key, meta_value) VALUES (:k, :v)", {"k": k, "v": v}) for k, v in saved]
    _raw(live_db, cleanup)


class TestLiveOracleContract(StoreContract):
    @pytest.fixture
    def store(self, agent):
        store = open_oracle_store(live_config(agent))
        yield store
        store.close()

    @pytest.fixture
    def reopen(self, agent):
        opened = []

        def opener():
            opened.append(open_oracle_store(live_config(agent)))
            return opened[-1]

        yield opener
        for store in opened:
            store.close()

    @pytest.fixture
    def degraded_store(self, agent):
        # A model name that is not loaded: VECTOR_EMBEDDING fails, so recall must fall back to keywords.
        store = open_oracle_store(live_config(agent, onnx_model="PICOORA_NO_SUCH_MODEL"), require_model=False)
        yield store
        store.close()


_SAFE_LITERAL = re.compile(r"^[A-Za-z0-9_]+$")
PLAN_ROWS = 2000  # an optimizer choosing the vector index needs a table worth indexing


def plan_statement(model: str, agent_id: str, statement_id: str) -> str:
    """EXPLAIN PLAN for the recall search with every bind written as a literal: EXPLAIN PLAN is sent without
    values, and the driver refuses placeholders it has no value for (DPY-4010)."""
    for value in (model, agent_id, statement_id):
        if not _SAFE_LITERAL.match(value):
            raise ValueError(f"{value!r} cannot be written into SQL as a literal")
    literals = {"VECTOR": f"VECTOR_EMBEDDING({model} USING 'which box holds the item' AS data)",
                "AGENT_ID": f"'{agent_id}'", "EMBEDDING_MODEL": f"'{model}'", "K": "10",
                "NOW": "SYS_EXTRACT_UTC(SYSTIMESTAMP)"}
    search = re.sub(r":(\w+)", lambda m: literals[m.group(1).upper()], q.MEMORY_NEAREST.render(model))
    return f"EXPLAIN PLAN SET STATEMENT_ID = '{statement_id}' FOR {search}"


def _load_rows(store, agent: str, count: int = PLAN_ROWS) -> None:
    """``count`` memories of ``agent``, embedded by the database, in one executemany."""
    insert = ("INSERT INTO PICO_MEMORIES (memory_id, agent_id, content, embedding, embedding_model) "
              f"VALUES (:memory_id, :agent_id, :content, VECTOR_EMBEDDING({store.model} USING :content AS data), "
              ":embedding_model)")
    rows = [{"memory_id": f"{agent}_{n}", "agent_id": agent,
             "content": f"Item {uuid.uuid4().hex[:6]} is in box {n % 97}", "embedding_model": store.model}
            for n in range(count)]
    check_binds(insert, rows[0])

    async def load(tx: Tx) -> None:  # VECTOR_EMBEDDING in the database, one round trip per batch
        await tx._conn.cursor().executemany(insert, rows)

    store._db.run(load, what="load rows", timeout=900.0)


def test_approximate_search_uses_the_vector_index(live_db, agent):
    store = open_oracle_store(live_config(agent))
    try:
        _load_rows(store, agent)
        indexes.rebuild_memory_index(store._db)  # centroids from the data now there
        assert store.memories.recall("which box holds the item", limit=3).matches
    finally:
        store.close()
    statement_id = f"pico_{uuid.uuid4().hex[:8]}"
    plan = _raw(live_db, [
        ("BEGIN DBMS_STATS.GATHER_TABLE_STATS(ownname => USER, tabname => 'PICO_MEMORIES'); END;", {}),
        (plan_statement(store.model, agent, statement_id), {}),
        ("SELECT plan_table_output FROM TABLE(DBMS_XPLAN.DISPLAY('PLAN_TABLE', :statement_id, 'BASIC'))",
         {"statement_id": statement_id}),
    ])[2]
    text = "\n".join(row[0] for row in plan)
    assert "IDX_PICO_MEMORIES_VEC" in text or "VECTOR INDEX" in text, text


def test_review_items_hold_on_a_real_database(live_db, agent):
    """Issue 11 on the real thing: TIMESTAMP precision, wide and non-ASCII keys, multibyte embedding text, a
    pasted paragraph, an 8 KB prompt and a 100 KB tool result in CLOBs, None into VECTOR, and the model-missing
    error code the degraded path relies on."""
    store = open_oracle_store(live_config(agent))
    try:
        record = store.memories.add("The meeting moved to Thursday").memory
        assert store.memories.get(record.id) == record and record.created_at.microsecond  # (1 in 10^6 flake)
        key = "ü" * limits.SESSION_KEY_CHARS
        store.sessions.append(key, [Message("user", "wide key")])
        assert store.transcripts.append(key, [Message("user", "wide key")]) == [1]
        store.state.set("ключ" * 60, "v")
        assert store.memories.add("漢字" * 700).created
        store.memories.add("Locker code A7-4421 is for the gym")
        paragraph = " ".join("".join(chr(97 + n // 26 ** i % 26) for i in range(3)) for n in range(400)) + " A7-4421"
        assert store.memories.recall(paragraph, limit=1).matches
        store.prompts.set("USER.md", "p" * 8_000)
        assert store.prompts.get("USER.md").content == "p" * 8_000
        result = Message("tool", "r" * 100_000, tool_call_id="c1")
        assert store.transcripts.append("cli:big", [Message("user", "go"), result]) == [1, 2]
        assert store.transcripts.read("cli:big")[1].message.content == "r" * 100_000
    finally:
        store.close()
    keyword_only = open_oracle_store(live_config(agent, onnx_model="PICOORA_NO_SUCH_MODEL"), require_model=False)
    try:
        assert keyword_only.memories.add("Stored without a vector").memory.embedding_model is None  # None into VECTOR
    finally:
        keyword_only.close()

    async def missing(tx: Tx) -> str:
        cursor = tx._conn.cursor()
        try:
            await cursor.execute("SELECT VECTOR_EMBEDDING(PICOORA_NO_SUCH_MODEL USING 'x' AS data) FROM DUAL")
        except Exception as exc:
            return error_code(exc)
        return ""

    db = open_database(live_config(agent))
    try:
        assert db.run(missing, what="embed with a missing model") in MODEL_MISSING
    finally:
        db.close()


def test_setup_oracle_end_to_end_with_import(live_db, agent, tmp_path, isolated_home, monkeypatch):
    from picoora.config import save_config
    from picoora.store.files import FileStore
    from tests.oracle.cli_app import picoora

    config = live_config(agent)
    config.agents.defaults.workspace = str(tmp_path / "ws")
    save_config(config)
    files = FileStore(tmp_path / "ws")
    files.prompts.set("IDENTITY.md", "I am the live test.")
    files.memories.add("The live test's favourite number is 42", category="fact")
    files.notes.append("Ran the live tier.", day=date.today())
    files.transcripts.append("cli:live", [Message("user", "hello live"), Message("assistant", "hi")])
    files.close()
    code, output = picoora("setup-oracle", "--import-files")
    assert code in (0, 3), output
    assert "✓ Embedding test passed: VECTOR_EMBEDDING returns 384 dimensions" in output
    assert "✓ Background questions for automatic recall" in output
    store = open_oracle_store(config)
    try:
        assert store.prompts.get("IDENTITY.md").content == "I am the live test."
        best = store.memories.recall("what number does the live test like", limit=1).matches[0]
        assert best.memory.content.endswith("42")
        assert [e.message.content for e in store.transcripts.read("cli:live")] == ["hello live", "hi"]
        assert store.notes.search("live tier", limit=1)[0][0].day == date.today()
    finally:
        store.close()


def test_push_calibration_runs_on_the_live_database(live_db):
    """bench/oracle_calibrate.py on the real thing, with a part of tests/data (the whole of it is what
    scripts/oracle-live-check.sh prints): the database fills the background questions itself, every query
    gets its background cosine, the grid is measured and the scratch agent is gone afterwards."""
    from tests.oracle.test_oracle_calibrate import load_calibration_script, small_sets

    script = load_calibration_script()
    sets = small_sets(script)
    result = script.calibrate(live_db, sets, floors=(0.2, 0.3), margins=(-0.04, 0.0))
    assert result.memories == len(sets.facts) and result.without_anchors == 0
    assert len(result.grid) == 4
    for row in result.grid:
        assert 0.0 <= row.recall_at_1 <= row.recall_at_5 <= 1.0 and 0.0 <= row.silence <= 1.0
    assert max(row.recall_at_5 for row in result.grid) > 0  # the codes at least are pushed
    store = open_oracle_store(live_config(result.agent))
    try:
        assert store.memories.list() == []
    finally:
        store.close()
    print("\n".join(script.report(result)))


# ---- a fleet on one database (issue 25): what the fake cannot prove about the real SQL ------------------


def test_live_leases_renew_expire_and_are_taken_over_on_the_database_clock(agent):
    import asyncio
    import time

    first, second = open_oracle_store(live_config(agent)), open_oracle_store(live_config(agent))
    try:
        a, b = first.leases, second.leases
        assert asyncio.run(a.acquire("duty", "node-a", 2))
        assert not asyncio.run(b.acquire("duty", "node-b", 2))  # ORA-00001 on the key, or a live row
        assert asyncio.run(a.acquire("duty", "node-a", 2))  # renewed
        time.sleep(2.5)  # node-a stopped renewing
        assert asyncio.run(b.acquire("duty", "node-b", 30))
        assert asyncio.run(b.claim("cron:x:2026-12-01T08:00", 60)) and not asyncio.run(
            a.claim("cron:x:2026-12-01T08:00", 60))
        asyncio.run(b.release("duty", "node-b"))
    finally:
        _raw(live_config(agent), [("DELETE FROM PICO_LEASES WHERE lease_name LIKE :p", {"p": f"{agent}/%"})])
        first.close()
        second.close()


def test_live_a_locked_session_row_gives_ora_30006_to_the_second_holder(agent):
    import asyncio

    store = open_oracle_store(live_config(agent))
    store.sessions.append("s", [Message(role="user", content="hi")])
    holder = open_database(live_config(agent))
    try:
        async def hold_then_wait() -> str:
            async def locked(tx: Tx) -> str:
                await tx.rows(q.SESSION_LOCK, agent_id=agent, session_key="s")
                try:
                    await asyncio.to_thread(store.sessions.append, "s", [Message(role="user", content="again")])
                except Exception as exc:  # the second holder waited its 10 s, then gave up
                    return str(exc)
                return ""
            return await holder.arun(locked, what="hold the session row", timeout=60)

        assert "ORA-30006" in asyncio.run(hold_then_wait())
    finally:
        holder.close()
        store.close()


def test_live_a_multibyte_value_in_a_merge_and_a_2000_message_import(agent, tmp_path):
    from picoora.store.files import FileStore
    from picoora.store.transfer import transfer
    from tests.fakes.hash_embedder import HashEmbedder

    store = open_oracle_store(live_config(agent))
    source = FileStore(tmp_path / "ws", embedder=HashEmbedder())
    try:
        store.state.set("k", "ü€" * 800)  # 4000 bytes of 2- and 3-byte characters through a MERGE
        assert store.state.get("k") == "ü€" * 800
        source.transcripts.append("long", [Message(role="user", content=f"message {n} ✓") for n in range(2000)])
        transfer(source, store)
        assert [e.seq for e in store.transcripts.read("long")] == list(range(1, 2001))
    finally:
        source.close()
        store.close()


def test_live_the_vector_index_organisation_comes_from_the_dictionary(live_db, agent):
    store = open_oracle_store(live_config(agent))
    db = open_database(live_db)
    try:
        store.memories.add("The spare key is under the blue flowerpot")
        [outcome] = [o for o in indexes.build_vector_indexes(db) if o.name == indexes.MEMORIES.name]
        assert outcome.error is None, outcome.error
        [(subtype,)] = _raw(live_db, [("SELECT index_subtype FROM USER_INDEXES WHERE index_name = :name",
                                       {"name": indexes.MEMORIES.name})])[0]
        print(f"\nUSER_INDEXES.INDEX_SUBTYPE of {indexes.MEMORIES.name}: {subtype}")
        assert indexes.organisation(subtype) in ("IVF", "HNSW") and outcome.kind == indexes.organisation(subtype)
    finally:
        db.close()
        store.close()


def test_live_an_index_build_lets_inserts_go_on(live_db, agent):
    """The IVF index rebuilt over 2,000 rows while another session keeps inserting: built ONLINE, the inserts
    go on meanwhile; refused (a code of ONLINE_REFUSED), the plain form is what setup-oracle falls back to."""
    store, writer = open_oracle_store(live_config(agent)), open_oracle_store(live_config(agent))
    started, building, built = threading.Event(), threading.Event(), threading.Event()
    during: list[int] = []
    errors: list[Exception] = []

    def write() -> None:
        n = 0
        while not built.is_set():
            try:
                writer.memories.add(f"Written during the build, number {n} ({uuid.uuid4().hex[:6]})")
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return
            if building.is_set() and not built.is_set():
                during.append(n)
            n += 1
            started.set()

    async def rebuild(tx: Tx) -> str:
        await run_ddl(tx, indexes.MEMORIES.drop)
        try:
            await tx.run(q.IVF_MEMORIES)
        except Exception as exc:
            if error_code(exc) not in q.ONLINE_REFUSED:
                raise
            await tx.run(q.IVF_MEMORIES.offline)
            return f"offline (ONLINE refused: {error_code(exc)})"
        return "ONLINE"

    thread = threading.Thread(target=write)
    try:
        _load_rows(store, agent)
        thread.start()
        assert started.wait(60), errors
        building.set()
        began = time.monotonic()
        how = store._db.run(rebuild, what="rebuild the memories' vector index", timeout=900.0)
        took = time.monotonic() - began
        built.set()
        thread.join(60)
        print(f"\nIVF index over {PLAN_ROWS} rows built {how} in {took:.1f} s; {len(during)} inserts meanwhile")
        assert not errors, errors
        if how == "ONLINE":
            assert during, "no insert finished while the ONLINE build ran"
    finally:
        built.set()
        thread.join(60)
        writer.close()
        store.close()


def test_live_a_text_index_marked_unusable_falls_back_to_the_scan_and_is_used_again(live_db, agent, monkeypatch):
    """A text index that breaks after the store opened (ALTER INDEX ... UNUSABLE stands in for a failed sync):
    the CONTAINS query fails with a code of TEXT_INDEX_BROKEN, recall answers from the plain scan, and the
    index rebuilt is used again."""
    db = open_database(live_db)
    try:
        outcome = OracleSetup(db).text_index()
    finally:
        db.close()
    if outcome.error:
        _skip(f"no usable Oracle Text index here: {outcome.error}")
    store = open_oracle_store(live_config(agent))
    try:
        assert store.text_index
        store.memories.add("Locker code A7-4421 is for the gym")
        _raw(live_db, [("ALTER INDEX IDX_PICO_MEMORIES_TEXT UNUSABLE", {})])
        assert store.memories.recall("locker A7-4421", limit=1).matches  # the scan answered the failed query
        assert not store.text_index
        _raw(live_db, [("ALTER INDEX IDX_PICO_MEMORIES_TEXT REBUILD", {})])
        monkeypatch.setattr(indexes, "TEXT_INDEX_RECHECK_SECONDS", 0.0)
        assert store.memories.recall("locker A7-4421", limit=1).matches
        assert store.text_index  # checked again in USER_INDEXES, and used
    finally:
        _raw(live_db, [("ALTER INDEX IDX_PICO_MEMORIES_TEXT REBUILD", {})])
        store.close()
