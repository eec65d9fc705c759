"""``picoora setup-oracle`` and ``picoora oracle-inspect`` in-process, over the fake database.

The commands open Oracle the normal way; only the driver's pool factory is swapped for the fake's, so
everything above it (connect, migrate, model, indexes, store, rendering) is the real code path.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta

import pytest

from picoora.config import Config, save_config, workspace_path
from picoora.messages import Message
from picoora.store.anchors import background_texts
from picoora.store.files import FileStore
from picoora.store.oracle import OracleUnavailable, open_oracle_store
from picoora.store.oracle import sql as q
from picoora.store.oracle.connection import Database
from picoora.store.oracle.schema import LATEST_VERSION
from picoora.store.oracle.setup import OracleSetup
from tests.fakes.hash_embedder import HashEmbedder
from tests.oracle.cli_app import picoora
from tests.oracle.conftest import oracle_config
from tests.oracle.fake_db import FakeOracle, ora_error

PASSWORD = "s3cret-Pw"


@pytest.fixture
def fake(monkeypatch) -> FakeOracle:
    fake = FakeOracle(model_loaded=False)
    monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
    return fake


@pytest.fixture
def config(isolated_home) -> Config:
    config = oracle_config(connect_timeout_seconds=0.5)
    save_config(config)
    workspace = workspace_path(config)
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "IDENTITY.md").write_text("# Identity\nI am picoora.\n")
    (workspace / "SOUL.md").write_text("# Soul\nCalm and precise.\n")
    return config


@pytest.fixture
def onnx_file(tmp_path):
    path = tmp_path / "all_MiniLM_L12_v2.onnx"
    path.write_bytes(b"\x08\x07fake-onnx-graph" * 100)
    return path


def _steps(output: str) -> list[str]:
    return [line for line in output.splitlines() if line and line[0] in "✓⚠✗"]


# ---- setup-oracle ----------------------------------------------------------------------------------


def test_setup_from_scratch_reports_every_step_and_is_ready(fake, config, onnx_file):
    code, out = picoora("setup-oracle", "--onnx-file", str(onnx_file))
    assert code == 0, out
    assert _steps(out) == [
        "✓ Connected to Oracle AI Database at localhost:1521/FREEPDB1 as picoora",
        f"✓ Schema created (version {LATEST_VERSION}, 12 tables with PICO_ prefix)",
        "✓ ONNX model 'ALL_MINILM_L12_V2' loaded",
        "✓ Embedding test passed: VECTOR_EMBEDDING returns 384 dimensions",
        f"✓ Background questions for automatic recall embedded ({len(background_texts())})",
        "✓ Prompts seeded from workspace: IDENTITY.md, SOUL.md",
        "✓ Config snapshot stored in PICO_CONFIG (secrets redacted)",
        "✓ Vector index IDX_PICO_MEMORIES_VEC (IVF) deferred: no vectors stored yet (searches are exact until "
        "then; run `picoora setup-oracle` or `picoora memory reindex` once there is data)",
        "✓ Vector index IDX_PICO_DAILY_NOTES_VEC (IVF) deferred: no vectors stored yet (searches are exact until "
        "then; run `picoora setup-oracle` or `picoora memory reindex` once there is data)",
        "✓ Oracle Text index IDX_PICO_MEMORIES_TEXT created",
    ]
    assert "🎉 Oracle setup complete!" in out
    load = next(e for e in fake.executed if e.name == "load_onnx_blob")
    assert load.binds["model_data"].data == onnx_file.read_bytes()
    assert "IDX_PICO_MEMORIES_VEC" not in fake.indexes  # IVF centroids from an empty table would never adapt
    snapshot = json.loads(next(r["config_value"] for r in fake.rows("PICO_CONFIG")))
    assert snapshot["oracle"]["password"] == "***" and PASSWORD not in json.dumps(snapshot)
    assert PASSWORD not in out


def test_setup_again_builds_the_vector_index_once_there_is_data_then_keeps_it(fake, config, onnx_file):
    assert picoora("setup-oracle", "--onnx-file", str(onnx_file))[0] == 0
    store = open_oracle_store(config)
    store.memories.add("The spare key is under the blue flowerpot")
    store.close()
    code, out = picoora("setup-oracle")
    assert code == 0, out
    steps = _steps(out)
    assert f"✓ Schema up to date (version {LATEST_VERSION}, 12 PICO_ tables)" in steps
    assert "✓ ONNX model 'ALL_MINILM_L12_V2' already loaded" in steps
    assert "✓ Background questions for automatic recall already embedded" in steps
    assert "✓ Vector index IDX_PICO_MEMORIES_VEC (IVF) created" in steps
    assert any(line.startswith("✓ Vector index IDX_PICO_DAILY_NOTES_VEC (IVF) deferred") for line in steps)
    assert "✓ Oracle Text index IDX_PICO_MEMORIES_TEXT already exists" in steps
    code, out = picoora("setup-oracle")
    assert "✓ Vector index IDX_PICO_MEMORIES_VEC (IVF) already exists" in _steps(out)
    assert {"ORA-00955"} <= set(fake.raised)


def test_setup_without_a_model_source_stops_with_what_to_do(fake, config):
    code, out = picoora("setup-oracle")
    assert code == 1
    assert _steps(out)[-1].startswith("✗ ONNX model 'ALL_MINILM_L12_V2' is not loaded. Load it with --onnx-file PATH")
    assert "setup did not finish" in out


def test_setup_loads_from_a_directory_object_or_a_url(fake, config):
    code, out = picoora("setup-oracle", "--onnx-dir", "pico_onnx_dir")
    assert code == 0, out
    load = next(e for e in fake.executed if e.name == "load_onnx_directory")
    assert (load.binds["directory"], load.binds["file_name"]) == ("PICO_ONNX_DIR", "all_MiniLM_L12_v2.onnx")
    fake.models.clear()
    code, out = picoora("setup-oracle", "--onnx-url", "https://objectstorage.example/p/x/model.onnx")
    assert code == 0 and any(e.name == "load_onnx_cloud" for e in fake.executed)
    assert picoora("setup-oracle", "--onnx-url", "https://x", "--onnx-dir", "D")[0] == 2


def test_a_model_loaded_meanwhile_counts_as_loaded(fake, config, onnx_file):
    """ORA-40204 (model exists) from LOAD_ONNX_MODEL is success, not failure."""
    fake.models["ALL_MINILM_L12_V2"] = ("EMBEDDING", "ONNX")
    db = Database(config.oracle, pool_factory=fake.pool_factory)
    try:
        assert OracleSetup(db).load_model_file(onnx_file) is False
    finally:
        db.close()
    assert fake.raised[-1] == "ORA-40204"


def test_optional_steps_that_fail_are_warnings_with_exit_3(fake, config, onnx_file, open_store):
    fake.models["ALL_MINILM_L12_V2"] = ("EMBEDDING", "ONNX")
    store = open_store()
    store.memories.add("The boiler was serviced in March")
    store.notes.append("Called the plumber.")
    fake.oracle_text = False
    fake.fail_next["hnsw_memories"] = ora_error(51950)
    code, out = picoora("setup-oracle", "--onnx-file", str(onnx_file), "--hnsw")
    assert code == 3, out
    warnings = [line for line in _steps(out) if line.startswith("⚠")]
    assert warnings[0].startswith("⚠ Vector index IDX_PICO_MEMORIES_VEC not created")
    assert "vector_memory_size" in warnings[0]
    assert "ORA-29833" in warnings[1] and "keyword recall scans" in warnings[1]
    assert "✓ Vector index IDX_PICO_DAILY_NOTES_VEC (HNSW) created" in _steps(out)
    assert "complete with 2 warning(s)" in out
    store = open_oracle_store(config)
    try:
        assert store.text_index is False  # recall falls back to the plain scan
    finally:
        store.close()


def test_setup_refuses_when_disabled_or_unreachable(fake, config, isolated_home):
    fake.down = True
    code, out = picoora("setup-oracle")
    assert code == 1 and _steps(out) == [
        "✗ Connection failed: Cannot reach Oracle at localhost:1521/FREEPDB1 (DPY-6005: cannot connect to database. "
        "[Errno 111] Connection refused). Start it (scripts/setup-oracle.sh) or fix oracle.host / oracle.port / "
        "oracle.dsn"]
    save_config(config.model_copy(update={"oracle": config.oracle.model_copy(update={"enabled": False})}))
    code, out = picoora("setup-oracle")
    assert code == 1 and "Oracle is not enabled in config" in out


def test_dry_run_prints_the_fresh_install_sql_without_connecting(fake, config, onnx_file):
    code, out = picoora("setup-oracle", "--dry-run", "--onnx-file", str(onnx_file))
    assert code == 0 and fake.pool_params == []  # nothing connected
    assert "embedding VECTOR(384, FLOAT32)" in out
    blocks = [b.strip() for b in re.split(r"\n\s*\n", re.sub(r"^--.*\n?", "", out, flags=re.M)) if b.strip()]
    statements = [b[:-2].strip() if b.endswith("\n/") else b.removesuffix(";") for b in blocks]
    known = {stmt.render("ALL_MINILM_L12_V2") for stmt in q.REGISTRY.values()}
    assert statements and all(s in known for s in statements)
    assert statements.index(q.CREATE_META.text) < statements.index(q.IVF_MEMORIES.text)
    assert any("DBMS_VECTOR.LOAD_ONNX_MODEL(model_name => :model_name, model_data" in s for s in statements)
    _, hnsw = picoora("setup-oracle", "--dry-run", "--hnsw")
    assert "ORGANIZATION INMEMORY NEIGHBOR GRAPH" in hnsw and "must already be loaded" in hnsw


def _file_workspace(config: Config) -> FileStore:
    files = FileStore(workspace_path(config), embedder=HashEmbedder())
    files.memories.add("The user's dog is called Pixel", importance=0.9, category="fact")
    files.memories.add("Favourite editor is Helix")
    files.notes.append("Planted tomatoes.", day=date.today() - timedelta(days=1))
    files.notes.append("Watered them.", day=date.today() - timedelta(days=1))
    files.sessions.append("cli:default", [Message("user", "hi"), Message("assistant", "hello")])
    files.sessions.set_summary("cli:default", "greetings")
    files.transcripts.append("cli:default", [Message("user", "hi"), Message("assistant", "hello")])
    files.sessions.append("telegram:9", [Message("user", "gone soon")])
    files.transcripts.append("telegram:9", [Message("user", "gone soon")])
    files.sessions.reset("telegram:9")  # its transcript stays and must still move
    files.state.set("last_channel", "cli:default")
    files.meta.set("installed_by", "test")
    return files


@pytest.mark.slow
def test_import_files_moves_everything_once(fake, config, onnx_file):
    files = _file_workspace(config)
    code, out = picoora("setup-oracle", "--onnx-file", str(onnx_file), "--import-files")
    files.close()
    assert code == 0, out
    imported = next(line for line in _steps(out) if line.startswith("✓ Imported from"))
    assert "2 memories" in imported and "re-embedded in the database" in imported
    assert "1 daily notes" in imported and "3 transcript entries" in imported
    store = open_oracle_store(config)
    try:
        assert {m.content for m in store.memories.list()} == {"The user's dog is called Pixel",
                                                              "Favourite editor is Helix"}
        assert all(r["embedding"] is not None and r["embedding_model"] == "ALL_MINILM_L12_V2"
                   for r in fake.rows("PICO_MEMORIES"))
        note = store.notes.recent(3)[0]
        assert note.content == f"# {note.day.isoformat()}\n\nPlanted tomatoes.\nWatered them."
        session = store.sessions.load("cli:default")
        assert (len(session.messages), session.summary) == (2, "greetings")
        assert [e.message.content for e in store.transcripts.read("telegram:9")] == ["gone soon"]
        assert store.state.get("last_channel") == "cli:default" and store.meta.get("installed_by") == "test"
        best = store.memories.recall("what is my dog called", limit=1).matches[0]
        assert best.memory.content.startswith("The user's dog")
    finally:
        store.close()
    code, out = picoora("setup-oracle", "--import-files")
    assert code == 0
    assert "Imported from" in out and "nothing new" in out and "already present" in out
    assert len(fake.rows("PICO_MEMORIES")) == 2 and len(fake.rows("PICO_TRANSCRIPTS")) == 3


# ---- oracle-inspect --------------------------------------------------------------------------------


@pytest.fixture
def filled(fake, config, onnx_file):
    assert picoora("setup-oracle", "--onnx-file", str(onnx_file))[0] == 0
    store = open_oracle_store(config)
    store.memories.add("The cat sleeps on the blue sofa", importance=0.8, category="pets")
    store.memories.add("Quarterly taxes are due in April")
    store.notes.append("Fixed the bike and booked flights to Lisbon.")
    store.sessions.append("cli:default", [Message("user", "hello")])
    store.transcripts.append("cli:default", [Message("user", "hello"), Message("assistant", "hi there")])
    store.state.set("db_hint", f"password is {PASSWORD}")
    assert picoora("setup-oracle")[0] == 0  # with data now: the vector indexes are built
    yield store
    store.close()


def test_overview_has_the_go_layout_and_no_secrets(filled):
    code, out = picoora("oracle-inspect")
    assert code == 0, out
    assert "  picoora Oracle AI Database Inspector" in out and "localhost:1521/FREEPDB1 (agent default)" in out
    assert re.search(r"  Memories\s+2  ██\n", out) and re.search(r"  Transcripts\s+2  ██", out)
    for heading in ("Recent Memories (last 5):", "Recent Transcripts (last 5):", "Recent Sessions (last 5):",
                    "Recent State Entries (last 5):", "Recent Daily Notes (last 5):", "System Prompts (last 5):",
                    "Config Entries (last 5):", "Schema Metadata:"):
        assert f"  {heading}" in out
    assert f"schema_version                 = {LATEST_VERSION}" in out
    assert PASSWORD not in out and "password is ***" in out


def test_semantic_search_prints_match_lines_and_does_not_count_as_access(filled, fake):
    code, out = picoora("oracle-inspect", "memories", "-s", "where does the cat sleep")
    assert code == 0, out
    assert re.search(r"\n  \[ ?\d{1,3}\.\d% match\]  ID: \w+\n  Created: .* Category: pets  Accessed: 0x\n"
                     r"  Content: The cat sleeps on the blue sofa", out)
    assert all(r["access_count"] == 0 for r in fake.rows("PICO_MEMORIES"))
    code, data = picoora("oracle-inspect", "memories", "-s", "where does the cat sleep", "--json")
    assert json.loads(data)[0]["content"] == "The cat sleeps on the blue sofa"


def test_table_views(filled):
    _, meta = picoora("oracle-inspect", "meta")
    assert "  ONNX Models" in meta and re.search(r"ALL_MINILM_L12_V2\s+EMBEDDING\s+ONNX", meta)
    assert "IDX_PICO_MEMORIES_VEC" in meta and "on PICO_MEMORIES" in meta
    _, notes = picoora("oracle-inspect", "notes")
    assert "Vector: yes" in notes and "booked flights to Lisbon" in notes
    _, found = picoora("oracle-inspect", "notes", "-s", "flights to Lisbon")
    assert "% match]  Date:" in found
    _, transcripts = picoora("oracle-inspect", "transcripts")
    assert re.search(r"#2 +assistant   \[cli:default\]  hi there", transcripts)
    _, prompt = picoora("oracle-inspect", "prompts", "soul")
    assert prompt.startswith("  Prompt: SOUL.md\n\n# Soul")
    _, config = picoora("oracle-inspect", "config", "--json")
    assert json.loads(json.loads(config)["full_config"])["oracle"]["password"] == "***"
    _, sessions = picoora("oracle-inspect", "sessions")
    assert "Session: cli:default" in sessions and "Messages: 1" in sessions


def test_inspect_errors(fake, config):
    assert picoora("oracle-inspect", "bogus")[0] == 2
    code, out = picoora("oracle-inspect")
    assert code == 1 and "no picoora schema" in out and "--files" in out
    assert picoora("oracle-inspect", "state", "-s", "x")[0] == 2


def test_inspect_reads_the_file_backend_too(fake, config):
    files = _file_workspace(config)
    files.close()
    code, out = picoora("oracle-inspect", "--files")
    assert code == 0, out
    assert "  picoora File Storage Inspector" in out and str(workspace_path(config)) in out
    assert re.search(r"  Memories\s+2", out) and "gone soon" in out  # a reset session's transcript shows
    assert fake.pool_params == []
    _, listed = picoora("oracle-inspect", "memories", "--files", "--json")
    assert {m["content"] for m in json.loads(listed)} == {"The user's dog is called Pixel", "Favourite editor is Helix"}


def _add_documents(store, config) -> None:
    from picoora.store.base import DocPage
    from picoora.store.scoped import open_person_store

    store.documents.add("/d/manual.md", "Boiler manual", [DocPage("The boiler shows E42 when the pressure is low.")],
                       shared=True)
    text = " ".join(f"Sentence {n} is about the shed and its padlock." for n in range(40))
    open_person_store(config, store, "alice").documents.add("/a/diary.md", "Diary", [DocPage(text)])


def _documents_view_checks(out: str, data: str, chunks: int) -> None:
    assert f"  2 documents (1 shared), {chunks} chunks\n" in out
    assert re.search(r"\n  ID: \w{12}  Chunks: \d+  Shared: no\n"
                     r"  Added: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  Person: alice\n"
                     r"  Title: Diary\n  Source: /a/diary.md\n", out), out
    assert re.search(r"Shared: yes\n  Added: .*  Person: owner\n  Title: Boiler manual\n", out), out
    assert out.index("Title: Diary") < out.index("Title: Boiler manual")  # newest first
    rows = json.loads(data)
    assert [(d["title"], d["person"], d["shared"]) for d in rows] == [("Diary", "alice", False)]  # -n 1
    assert set(rows[0]) == {"id", "source", "title", "person", "shared", "chunks", "added_at"}


def test_documents_in_the_overview_and_their_own_view(filled, fake, config):
    code, out = picoora("oracle-inspect")
    assert code == 0, out
    assert re.search(r"  Documents\s+0  \(empty\)\n  Document Chunks\s+0  \(empty\)\n", out)
    assert "  Recent Documents (last 5):\n\n  (no documents yet)" in out
    _add_documents(filled, config)
    chunks = sum(r["chunks"] for r in fake.rows("PICO_DOCUMENTS"))
    assert chunks == len(fake.rows("PICO_DOC_CHUNKS")) > 2
    fake.executed.clear()
    code, out = picoora("oracle-inspect")
    assert code == 0, out
    assert re.search(rf"  Documents\s+2  ██\n  Document Chunks\s+{chunks}  █+\n", out)
    assert re.search(r"\n  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  \[alice\]  Diary  \(\d+ chunks\)\n"
                     r"  \d{4}-.*  \[owner\]  Boiler manual  \(1 chunk, shared\)\n", out), out
    assert {"doc_counts", "doc_all"} <= set(fake.names())
    _, overview = picoora("oracle-inspect", "--json")
    data = json.loads(overview)
    assert data["counts"]["Documents"] == 2 and data["counts"]["Document Chunks"] == chunks
    assert data["shared_documents"] == 1 and [d["title"] for d in data["recent"]["documents"]] == ["Diary",
                                                                                                   "Boiler manual"]
    code, out = picoora("oracle-inspect", "documents")
    assert code == 0, out
    assert "  picoora Oracle AI Database Inspector: Documents" in out
    _documents_view_checks(out, picoora("oracle-inspect", "documents", "-n", "1", "--json")[1], chunks)
    assert picoora("oracle-inspect", "documents", "-s", "boiler")[0] == 2  # -s is for memories and notes


def test_status_counts_the_documents(filled, config):
    from picoora.cli.status import _storage_lines

    _add_documents(filled, config)
    chunks = sum(d.chunks for d in filled.documents.all())
    lines, _, _ = _storage_lines(config, workspace_path(config))
    stored = next(line for line in lines if line.label == "Stored")
    assert stored.text.endswith(f", 2 documents (1 shared, {chunks} chunks)")
    assert (stored.facts["documents"], stored.facts["shared_documents"], stored.facts["document_chunks"]) == (
        2, 1, chunks)


def test_documents_on_the_file_backend_too(fake, config):
    files = _file_workspace(config)
    try:
        _add_documents(files, config)
        chunks = files.documents.counts().chunks
    finally:
        files.close()
    code, out = picoora("oracle-inspect", "documents", "--files")
    assert code == 0, out
    assert "  picoora File Storage Inspector: Documents" in out
    _documents_view_checks(out, picoora("oracle-inspect", "documents", "--files", "-n", "1", "--json")[1], chunks)
    _, overview = picoora("oracle-inspect", "--files")
    assert re.search(rf"  Documents\s+2  ██\n  Document Chunks\s+{chunks}  █+\n", overview)
    assert fake.pool_params == []


def _with_a_memory(config, onnx_file) -> None:
    assert picoora("setup-oracle", "--onnx-file", str(onnx_file))[0] == 0
    store = open_oracle_store(config)
    store.memories.add("The spare key is under the blue flowerpot")
    store.close()


def test_hnsw_over_an_ivf_index_fails_saying_so_and_rebuilds_when_asked(fake, config, onnx_file):
    _with_a_memory(config, onnx_file)
    assert "✓ Vector index IDX_PICO_MEMORIES_VEC (IVF) created" in _steps(picoora("setup-oracle")[1])
    code, out = picoora("setup-oracle", "--hnsw")  # HNSW asked over the IVF index: said so, never a ✓
    assert code == 3, out
    assert ("⚠ Vector index IDX_PICO_MEMORIES_VEC exists as IVF, not the HNSW asked for; it was kept. To rebuild "
            "it as HNSW: picoora setup-oracle --hnsw --rebuild-indexes") in _steps(out)
    assert fake.index_subtypes["IDX_PICO_MEMORIES_VEC"] == "NEIGHBOR_PARTITIONS_IVF"
    code, out = picoora("setup-oracle", "--hnsw", "--rebuild-indexes")
    assert code == 0, out
    assert "✓ Vector index IDX_PICO_MEMORIES_VEC (HNSW) created" in _steps(out)
    assert fake.index_subtypes["IDX_PICO_MEMORIES_VEC"] == "INMEMORY_NEIGHBOR_GRAPH_HNSW"
    fake.executed.clear()
    store = open_oracle_store(config)
    store.memories.reindex()
    store.close()
    assert "hnsw_memories" in fake.names() and "ivf_memories" not in fake.names()  # rebuilt as it is


def test_the_organisation_is_what_the_dictionary_says_not_what_picoora_remembers(fake, config, onnx_file):
    _with_a_memory(config, onnx_file)
    assert picoora("setup-oracle")[0] == 0
    assert not [row for row in fake.rows("PICO_META") if "index_kind" in row["meta_key"]]
    fake.index_subtypes["IDX_PICO_MEMORIES_VEC"] = "INMEMORY_NEIGHBOR_GRAPH_HNSW"  # rebuilt by hand as HNSW
    code, out = picoora("setup-oracle", "--hnsw")
    assert code == 0, out
    assert "✓ Vector index IDX_PICO_MEMORIES_VEC (HNSW) already exists" in _steps(out)
    fake.executed.clear()
    store = open_oracle_store(config)
    store.memories.reindex()
    store.close()
    assert "hnsw_memories" in fake.names()


def test_indexes_are_built_online_and_offline_where_the_database_refuses_online(fake, config, onnx_file):
    _with_a_memory(config, onnx_file)
    assert picoora("setup-oracle")[0] == 0
    assert {"IDX_PICO_MEMORIES_VEC", "IDX_PICO_MEMORIES_TEXT", "IDX_PICO_MEMORIES_HASH"} <= set(fake.online_builds)
    for name in ("IDX_PICO_MEMORIES_VEC", "IDX_PICO_MEMORIES_TEXT"):
        fake.indexes.pop(name)
    fake.index_subtypes.clear()
    fake.online_builds.clear()
    fake.offline_only.update({"VECTOR", "DOMAIN"})  # an older release: ONLINE is ORA-02158 for these
    fake.executed.clear()
    code, out = picoora("setup-oracle")
    assert code == 0, out
    assert "✓ Vector index IDX_PICO_MEMORIES_VEC (IVF) created" in _steps(out)
    assert "✓ Oracle Text index IDX_PICO_MEMORIES_TEXT created" in _steps(out)
    assert {"ivf_memories_offline", "text_index_memories_offline"} <= set(fake.names())
    assert fake.online_builds == [] and "ORA-02158" in fake.raised


def test_hnsw_is_built_without_online_its_syntax_has_none(fake, config, onnx_file):
    _with_a_memory(config, onnx_file)
    code, out = picoora("setup-oracle", "--hnsw")
    assert code == 0, out
    assert "IDX_PICO_MEMORIES_VEC" not in fake.online_builds and "ORA-02158" not in fake.raised


def test_an_existing_vector_index_that_is_not_valid_is_a_warning(fake, config, onnx_file):
    assert picoora("setup-oracle", "--onnx-file", str(onnx_file))[0] == 0
    store = open_oracle_store(config)
    store.memories.add("The spare key is under the blue flowerpot")
    store.close()
    assert picoora("setup-oracle")[0] == 0
    fake.unusable_indexes.add("IDX_PICO_MEMORIES_VEC")
    code, out = picoora("setup-oracle")
    assert code == 3, out
    assert any(line.startswith("⚠ Vector index IDX_PICO_MEMORIES_VEC not created: it exists but its status is UNUSABLE")
               for line in _steps(out))


# ---- a fleet: setup-oracle run again on any node ----------------------------------------------------


def test_setup_again_keeps_the_fleets_prompts_unless_forced(fake, config, onnx_file):
    assert picoora("setup-oracle", "--onnx-file", str(onnx_file))[0] == 0
    store = open_oracle_store(config)
    store.prompts.set("SOUL.md", "# Soul\nEdited in the database.\n")
    store.close()
    code, out = picoora("setup-oracle")  # another node, with the workspace's own SOUL.md
    assert code == 0, out
    assert "✓ Prompts already in the database kept: IDENTITY.md, SOUL.md (--force replaces them)" in _steps(out)
    store = open_oracle_store(config)
    assert store.prompts.get("SOUL.md").content == "# Soul\nEdited in the database.\n"
    store.close()
    code, out = picoora("setup-oracle", "--force")
    assert code == 0 and "✓ Prompts seeded from workspace: IDENTITY.md, SOUL.md" in _steps(out)
    store = open_oracle_store(config)
    assert store.prompts.get("SOUL.md").content == "# Soul\nCalm and precise.\n"
    store.close()


def test_a_schema_newer_than_this_picoora_is_refused(fake, config, onnx_file):
    assert picoora("setup-oracle", "--onnx-file", str(onnx_file))[0] == 0
    for row in fake.rows("PICO_META"):
        if row["meta_key"] == "schema_version":
            row["meta_value"] = str(LATEST_VERSION + 1)  # a newer picoora on another node upgraded it
    fake.executed.clear()
    with pytest.raises(OracleUnavailable, match=f"version {LATEST_VERSION + 1}, newer than this picoora"):
        open_oracle_store(config)
    assert "take_migration_lock" not in fake.names()  # nothing was "upgraded" down or over
    code, out = picoora("setup-oracle")  # setup-oracle on this node refuses it too, before touching anything
    assert code == 1, out
    assert any(line.startswith("✗ Schema initialization failed: ") and "newer than this picoora" in line
               for line in _steps(out))
    assert not any(line.startswith("✓ Schema") for line in _steps(out))
    assert not {"meta_set", "prompt_set", "background_insert"} & set(fake.names())
