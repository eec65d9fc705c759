"""Every SQL statement picoora can send to Oracle, by name, in one registry.

Keeping them here (and nowhere else) lets the lint test enumerate and parse all of them, and lets the
fake connection in the tests recognise each one. Values are always named binds (``:agent_id``); the
only interpolation is ``{model}``, the ONNX model name, which binds cannot carry: it is validated as an
identifier before :meth:`Sql.render` is called (see ``connection.validate_identifier``).

Timestamps are bound from Python in UTC, so note dates and recency do not depend on the database
server's time zone (the Go version mixed SYSDATE with the client's date).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["query", "dml", "ddl", "plsql"]

REGISTRY: dict[str, Sql] = {}


@dataclass(frozen=True)
class Sql:
    name: str
    text: str
    kind: Kind
    tolerate: frozenset[str] = frozenset()  # ORA codes that mean "already done" (DDL only)
    offline: Sql | None = None  # an ONLINE index build: the plain form for a database that refuses ONLINE

    def render(self, model: str) -> str:
        return self.text.replace("{model}", model)


def _sql(name: str, kind: Kind, text: str, tolerate: tuple[str, ...] = (), offline: Sql | None = None) -> Sql:
    if name in REGISTRY:
        raise ValueError(f"duplicate SQL statement name {name}")
    stmt = Sql(name, " ".join(text.split()), kind, frozenset(tolerate), offline)
    REGISTRY[name] = stmt
    return stmt


def _online_index(name: str, text: str) -> Sql:
    """An index built ONLINE (writes to its table go on meanwhile: several nodes keep working through a
    setup or a migration), with the plain form registered as ``<name>_offline`` for a database that refuses
    ONLINE for it (``ONLINE_REFUSED``); ``{online}`` marks where the keyword goes."""
    offline = _sql(f"{name}_offline", "ddl", text.replace("{online}", ""), _INDEXED)
    return _sql(name, "ddl", text.replace("{online}", "ONLINE"), _INDEXED, offline)


# What a database says to an ONLINE it does not take for that index: not for this index's feature
# (ORA-51940), an option it does not know (ORA-02158 / ORA-00922 / ORA-00933, releases before ONLINE vector
# index builds), or an edition without online index builds (ORA-00439).
ONLINE_REFUSED = frozenset({"ORA-51940", "ORA-02158", "ORA-00922", "ORA-00933", "ORA-00439"})

ALL_ROWS = 2**31 - 1  # FETCH FIRST bound when the caller wants everything

_EXISTS = ("ORA-00955",)
_INDEXED = ("ORA-00955", "ORA-01408")
_COLUMN_EXISTS = ("ORA-01430",)
_CONSTRAINT_EXISTS = ("ORA-02260", "ORA-02261", "ORA-02264", "ORA-02275")

# ---------------------------------------------------------------------------------------------------
# Schema version 1: the Go PicoOraClaw tables, names and columns unchanged (an existing schema passes
# through with ORA-00955), with typed vectors on a new install.

CREATE_META = _sql("create_meta", "ddl", """
    CREATE TABLE PICO_META (
        meta_key   VARCHAR2(255) PRIMARY KEY,
        meta_value VARCHAR2(4000),
        updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)""", _EXISTS)

CREATE_MEMORIES = _sql("create_memories", "ddl", """
    CREATE TABLE PICO_MEMORIES (
        memory_id    VARCHAR2(64) PRIMARY KEY,
        agent_id     VARCHAR2(64) NOT NULL,
        content      CLOB,
        embedding    VECTOR(384, FLOAT32),
        importance   NUMBER(3,2) DEFAULT 0.5,
        category     VARCHAR2(255),
        access_count NUMBER DEFAULT 0,
        created_at   TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        accessed_at  TIMESTAMP,
        updated_at   TIMESTAMP DEFAULT CURRENT_TIMESTAMP)""", _EXISTS)

CREATE_DAILY_NOTES = _sql("create_daily_notes", "ddl", """
    CREATE TABLE PICO_DAILY_NOTES (
        note_id    VARCHAR2(64) PRIMARY KEY,
        agent_id   VARCHAR2(64) NOT NULL,
        note_date  DATE NOT NULL,
        content    CLOB,
        embedding  VECTOR(384, FLOAT32),
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)""", _EXISTS)

CREATE_SESSIONS = _sql("create_sessions", "ddl", """
    CREATE TABLE PICO_SESSIONS (
        session_key VARCHAR2(255) PRIMARY KEY,
        agent_id    VARCHAR2(64) NOT NULL,
        messages    CLOB,
        summary     CLOB,
        created_at  TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        updated_at  TIMESTAMP DEFAULT CURRENT_TIMESTAMP)""", _EXISTS)

CREATE_STATE = _sql("create_state", "ddl", """
    CREATE TABLE PICO_STATE (
        state_key   VARCHAR2(255) NOT NULL,
        agent_id    VARCHAR2(64) NOT NULL,
        state_value VARCHAR2(4000),
        updated_at  TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (state_key, agent_id))""", _EXISTS)

CREATE_CONFIG = _sql("create_config", "ddl", """
    CREATE TABLE PICO_CONFIG (
        config_key   VARCHAR2(255) NOT NULL,
        agent_id     VARCHAR2(64) NOT NULL,
        config_value CLOB,
        updated_at   TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (config_key, agent_id))""", _EXISTS)

CREATE_PROMPTS = _sql("create_prompts", "ddl", """
    CREATE TABLE PICO_PROMPTS (
        prompt_name VARCHAR2(255) NOT NULL,
        agent_id    VARCHAR2(64) NOT NULL,
        content     CLOB,
        updated_at  TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (prompt_name, agent_id))""", _EXISTS)

CREATE_TRANSCRIPTS = _sql("create_transcripts", "ddl", """
    CREATE TABLE PICO_TRANSCRIPTS (
        id           NUMBER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_key  VARCHAR2(255),
        agent_id     VARCHAR2(64),
        sequence_num NUMBER,
        role         VARCHAR2(32),
        content      CLOB,
        created_at   TIMESTAMP DEFAULT CURRENT_TIMESTAMP)""", _EXISTS)

INDEX_MEMORIES_AGENT = _sql("index_memories_agent", "ddl",
                            "CREATE INDEX IDX_PICO_MEMORIES_AGENT ON PICO_MEMORIES(agent_id)", _INDEXED)
INDEX_DAILY_AGENT_DATE = _sql("index_daily_agent_date", "ddl",
                              "CREATE INDEX IDX_PICO_DAILY_AGENT_DATE ON PICO_DAILY_NOTES(agent_id, note_date)",
                              _INDEXED)
INDEX_SESSIONS_AGENT = _sql("index_sessions_agent", "ddl",
                            "CREATE INDEX IDX_PICO_SESSIONS_AGENT ON PICO_SESSIONS(agent_id)", _INDEXED)
INDEX_TRANSCRIPTS_SESSION = _sql("index_transcripts_session", "ddl",
                                 "CREATE INDEX IDX_PICO_TRANSCRIPTS_SESSION ON PICO_TRANSCRIPTS(session_key)", _INDEXED)
INDEX_STATE_AGENT = _sql("index_state_agent", "ddl",
                         "CREATE INDEX IDX_PICO_STATE_AGENT ON PICO_STATE(agent_id)", _INDEXED)
INDEX_MEMORIES_AGENT_CAT = _sql("index_memories_agent_cat", "ddl",
                                "CREATE INDEX IDX_PICO_MEMORIES_AGENT_CAT ON PICO_MEMORIES(agent_id, category)",
                                _INDEXED)

# Version 2: exact dedup by a content hash (a CLOB cannot be compared with =), and which model made each vector.
ADD_MEMORIES_HASH = _sql("add_memories_hash", "ddl",
                         "ALTER TABLE PICO_MEMORIES ADD (content_hash VARCHAR2(64))", _COLUMN_EXISTS)
ADD_MEMORIES_MODEL = _sql("add_memories_model", "ddl",
                          "ALTER TABLE PICO_MEMORIES ADD (embedding_model VARCHAR2(128))", _COLUMN_EXISTS)
INDEX_MEMORIES_HASH = _online_index("index_memories_hash", """
    CREATE INDEX IDX_PICO_MEMORIES_HASH ON PICO_MEMORIES(agent_id, content_hash) {online}""")
UNHASHED_MEMORIES = _sql("unhashed_memories", "query", """
    SELECT memory_id, content FROM PICO_MEMORIES WHERE content_hash IS NULL""")
SET_MEMORY_HASH = _sql("set_memory_hash", "dml", """
    UPDATE PICO_MEMORIES SET content_hash = :content_hash WHERE memory_id = :memory_id""")
# Only vectors the configured model could have made: Go's embedding_provider=api wrote other dimensions,
# which VECTOR_DISTANCE cannot compare with ours; they stay unlabelled until `memory reindex` re-embeds them.
BACKFILL_MEMORY_MODEL = _sql("backfill_memory_model", "dml", """
    UPDATE PICO_MEMORIES SET embedding_model = :embedding_model
    WHERE embedding IS NOT NULL AND embedding_model IS NULL AND VECTOR_DIMENSION_COUNT(embedding) = :dimensions""")

# Version 3: sessions keyed by agent as well as key (the Go key was session_key alone).
DROP_SESSIONS_KEY = _sql("drop_sessions_key", "ddl",
                         "ALTER TABLE PICO_SESSIONS DROP PRIMARY KEY", ("ORA-02441",))
ADD_SESSIONS_KEY = _sql("add_sessions_key", "ddl", """
    ALTER TABLE PICO_SESSIONS ADD CONSTRAINT PK_PICO_SESSIONS PRIMARY KEY (agent_id, session_key)""",
                        _CONSTRAINT_EXISTS)

# Version 4: transcripts keep whole messages (tool calls, ids) and one sequence number per message.
ADD_TRANSCRIPTS_MESSAGE = _sql("add_transcripts_message", "ddl",
                               "ALTER TABLE PICO_TRANSCRIPTS ADD (message_json CLOB)", _COLUMN_EXISTS)
# A Go database can hold duplicate numbers (its seed-demo run twice): renumber each session 1..n in the
# stored order first, or the unique key below fails with ORA-02299.
RENUMBER_TRANSCRIPTS = _sql("renumber_transcripts", "dml", """
    MERGE INTO PICO_TRANSCRIPTS t USING (
        SELECT id, ROW_NUMBER() OVER (PARTITION BY agent_id, session_key ORDER BY sequence_num, id) AS seq
        FROM PICO_TRANSCRIPTS) s
    ON (t.id = s.id)
    WHEN MATCHED THEN UPDATE SET t.sequence_num = s.seq
    WHERE t.sequence_num IS NULL OR t.sequence_num <> s.seq""")
ADD_TRANSCRIPTS_SEQ_KEY = _sql("add_transcripts_seq_key", "ddl", """
    ALTER TABLE PICO_TRANSCRIPTS ADD CONSTRAINT UQ_PICO_TRANSCRIPTS_SEQ
    UNIQUE (agent_id, session_key, sequence_num)""", _CONSTRAINT_EXISTS)

# Version 5: one daily note per agent and day (appends are read-modify-write under a row lock). Go wrote a
# note per append, so same-day notes are merged (oldest first) before the key is added.
NOTES_SAME_DAY = _sql("notes_same_day", "query", """
    SELECT note_id, agent_id, note_date, content FROM PICO_DAILY_NOTES n
    WHERE EXISTS (SELECT 1 FROM PICO_DAILY_NOTES o
                  WHERE o.agent_id = n.agent_id AND o.note_date = n.note_date AND o.note_id <> n.note_id)
    ORDER BY agent_id, note_date, created_at, note_id FOR UPDATE""")
NOTE_SET_CONTENT = _sql("note_set_content", "dml", """
    UPDATE PICO_DAILY_NOTES SET content = :content, updated_at = :now WHERE note_id = :note_id""")
NOTE_DELETE = _sql("note_delete", "dml", "DELETE FROM PICO_DAILY_NOTES WHERE note_id = :note_id")
ADD_DAILY_NOTES_DAY_KEY = _sql("add_daily_notes_day_key", "ddl", """
    ALTER TABLE PICO_DAILY_NOTES ADD CONSTRAINT UQ_PICO_DAILY_NOTES_DAY UNIQUE (agent_id, note_date)""",
                               _CONSTRAINT_EXISTS)

# Version 6: the Go VARCHAR2 sizes were bytes, too small for the keys picoora accepts (a 300-character session
# key, any non-ASCII name). Widening keeps every Go reader working; the sizes are picoora.store.limits'.
_WIDENED = ("ORA-01441",)  # "cannot decrease column length": someone already made it wider
WIDEN_SESSIONS = _sql("widen_sessions", "ddl",
                      "ALTER TABLE PICO_SESSIONS MODIFY (session_key VARCHAR2(1000 CHAR))", _WIDENED)
WIDEN_TRANSCRIPTS = _sql("widen_transcripts", "ddl", """
    ALTER TABLE PICO_TRANSCRIPTS MODIFY (session_key VARCHAR2(1000 CHAR), role VARCHAR2(32 CHAR))""", _WIDENED)
WIDEN_MEMORIES = _sql("widen_memories", "ddl",
                      "ALTER TABLE PICO_MEMORIES MODIFY (category VARCHAR2(255 CHAR))", _WIDENED)
WIDEN_STATE = _sql("widen_state", "ddl", "ALTER TABLE PICO_STATE MODIFY (state_key VARCHAR2(255 CHAR))", _WIDENED)
WIDEN_CONFIG = _sql("widen_config", "ddl", "ALTER TABLE PICO_CONFIG MODIFY (config_key VARCHAR2(255 CHAR))", _WIDENED)
WIDEN_PROMPTS = _sql("widen_prompts", "ddl",
                     "ALTER TABLE PICO_PROMPTS MODIFY (prompt_name VARCHAR2(255 CHAR))", _WIDENED)
WIDEN_META = _sql("widen_meta", "ddl", "ALTER TABLE PICO_META MODIFY (meta_key VARCHAR2(255 CHAR))", _WIDENED)

# Processes migrating at once take turns: each holds an exclusive lock on this one-purpose table for the
# whole migration (a separate session; DDL commits, so the migrating session could not hold it). No
# migration alters it, and the Go version never sees it. The wait is as long as a migration may run
# (schema.MIGRATION_SECONDS): a node starting while another upgrades waits for it, then finds it done.
CREATE_MIGRATION_LOCK = _sql("create_migration_lock", "ddl",
                             "CREATE TABLE PICO_MIGRATION_LOCK (held_by VARCHAR2(64))", _EXISTS)
TAKE_MIGRATION_LOCK = _sql("take_migration_lock", "dml",
                           "LOCK TABLE PICO_MIGRATION_LOCK IN EXCLUSIVE MODE WAIT 900")

# Migrations wait for a busy table instead of failing at once with ORA-00054 (schema.run_ddl also retries).
DDL_WAIT = _sql("ddl_wait", "ddl", "ALTER SESSION SET DDL_LOCK_TIMEOUT = 30")

# Vector and text indexes: created by setup-oracle (IVF by default; HNSW needs a vector pool).
DROP_MEMORIES_VECTOR_INDEX = _sql("drop_memories_vector_index", "ddl", "DROP INDEX IDX_PICO_MEMORIES_VEC",
                                  ("ORA-01418",))
DROP_DAILY_NOTES_VECTOR_INDEX = _sql("drop_daily_notes_vector_index", "ddl", "DROP INDEX IDX_PICO_DAILY_NOTES_VEC",
                                     ("ORA-01418",))
# IVF builds ONLINE where the database documents it (26ai "Create IVF Index Online"); HNSW's syntax has no
# ONLINE (an in-memory graph, built from a snapshot), so it is built as before.
IVF_MEMORIES = _online_index("ivf_memories", """
    CREATE VECTOR INDEX IDX_PICO_MEMORIES_VEC ON PICO_MEMORIES(embedding)
    ORGANIZATION NEIGHBOR PARTITIONS DISTANCE COSINE WITH TARGET ACCURACY 95 {online}""")
IVF_DAILY_NOTES = _online_index("ivf_daily_notes", """
    CREATE VECTOR INDEX IDX_PICO_DAILY_NOTES_VEC ON PICO_DAILY_NOTES(embedding)
    ORGANIZATION NEIGHBOR PARTITIONS DISTANCE COSINE WITH TARGET ACCURACY 95 {online}""")
HNSW_MEMORIES = _sql("hnsw_memories", "ddl", """
    CREATE VECTOR INDEX IDX_PICO_MEMORIES_VEC ON PICO_MEMORIES(embedding)
    ORGANIZATION INMEMORY NEIGHBOR GRAPH DISTANCE COSINE WITH TARGET ACCURACY 95""", _INDEXED)
HNSW_DAILY_NOTES = _sql("hnsw_daily_notes", "ddl", """
    CREATE VECTOR INDEX IDX_PICO_DAILY_NOTES_VEC ON PICO_DAILY_NOTES(embedding)
    ORGANIZATION INMEMORY NEIGHBOR GRAPH DISTANCE COSINE WITH TARGET ACCURACY 95""", _INDEXED)
# Oracle Text takes ONLINE right after the indextype, before PARAMETERS (Oracle Text Reference, CREATE INDEX).
TEXT_INDEX_MEMORIES = _online_index("text_index_memories", """
    CREATE INDEX IDX_PICO_MEMORIES_TEXT ON PICO_MEMORIES(content)
    INDEXTYPE IS CTXSYS.CONTEXT {online} PARAMETERS ('SYNC (ON COMMIT)')""")

# ---------------------------------------------------------------------------------------------------
# Leases (schema version 10): which node of a fleet does a singleton duty now, on the database's clock (never
# a node's), so nodes whose clocks disagree still agree on who holds what. Names carry their agent scope.
# A renewal or takeover is one UPDATE (a free row, an expired one, or the holder's own); a new name is one
# INSERT, and two nodes inserting it at once meet on the primary key (ORA-00001: the other one has it).

CREATE_LEASES = _sql("create_leases", "ddl", """
    CREATE TABLE PICO_LEASES (
        lease_name  VARCHAR2(300 CHAR) PRIMARY KEY,
        holder      VARCHAR2(255 CHAR) NOT NULL,
        acquired_at TIMESTAMP NOT NULL,
        expires_at  TIMESTAMP NOT NULL)""", _EXISTS)
LEASE_RENEW = _sql("lease_renew", "dml", """
    UPDATE PICO_LEASES SET
        acquired_at = CASE WHEN holder = :holder THEN acquired_at ELSE SYS_EXTRACT_UTC(SYSTIMESTAMP) END,
        holder = :holder,
        expires_at = SYS_EXTRACT_UTC(SYSTIMESTAMP) + NUMTODSINTERVAL(:seconds, 'SECOND')
    WHERE lease_name = :lease_name AND (holder = :holder OR expires_at <= SYS_EXTRACT_UTC(SYSTIMESTAMP))""")
LEASE_TAKE = _sql("lease_take", "dml", """
    INSERT INTO PICO_LEASES (lease_name, holder, acquired_at, expires_at)
    VALUES (:lease_name, :holder, SYS_EXTRACT_UTC(SYSTIMESTAMP),
            SYS_EXTRACT_UTC(SYSTIMESTAMP) + NUMTODSINTERVAL(:seconds, 'SECOND'))""")
LEASE_RELEASE = _sql("lease_release", "dml",
                     "DELETE FROM PICO_LEASES WHERE lease_name = :lease_name AND holder = :holder")

# ---------------------------------------------------------------------------------------------------
# Memories that stay true (schema version 11): where each came from (how: told, inferred, imported, by hand;
# "unknown" for rows older than this), which newer memory superseded it, when it stops being true.

ADD_MEMORIES_PROVENANCE = tuple(
    _sql(f"add_memories_{column}", "ddl", f"ALTER TABLE PICO_MEMORIES ADD ({column} {declared})", _COLUMN_EXISTS)
    for column, declared in (("source_how", "VARCHAR2(16)"), ("source_person", "VARCHAR2(255 CHAR)"),
                             ("source_session", "VARCHAR2(1000 CHAR)"), ("source_turn", "VARCHAR2(64)"),
                             ("superseded_by", "VARCHAR2(64)"), ("expires_at", "TIMESTAMP"))
)
BACKFILL_MEMORY_PROVENANCE = _sql("backfill_memory_provenance", "dml", """
    UPDATE PICO_MEMORIES SET source_how = 'unknown' WHERE source_how IS NULL""")
LEASE_PURGE = _sql("lease_purge", "dml", """
    DELETE FROM PICO_LEASES WHERE expires_at < SYS_EXTRACT_UTC(SYSTIMESTAMP) - NUMTODSINTERVAL(:seconds, 'SECOND')""")

# ---------------------------------------------------------------------------------------------------
# Meta (schema-wide, like the Go table: no agent_id column).

META_GET = _sql("meta_get", "query", "SELECT meta_value FROM PICO_META WHERE meta_key = :meta_key")
META_ALL = _sql("meta_all", "query", "SELECT meta_key, meta_value, updated_at FROM PICO_META ORDER BY meta_key")
META_SET = _sql("meta_set", "dml", """
    MERGE INTO PICO_META m USING (SELECT :meta_key AS meta_key FROM DUAL) s ON (m.meta_key = s.meta_key)
    WHEN MATCHED THEN UPDATE SET m.meta_value = :meta_value, m.updated_at = :now
    WHEN NOT MATCHED THEN INSERT (meta_key, meta_value, updated_at) VALUES (s.meta_key, :meta_value, :now)""")

# ---------------------------------------------------------------------------------------------------
# Memories.

_MEMORY_COLUMNS = ("memory_id, content, importance, category, created_at, accessed_at, access_count, embedding_model, "
                   "source_how, source_person, source_session, source_turn, superseded_by, expires_at")
# What recall, dedup and supersession see: memories true now (superseded and expired ones stay listed).
_CURRENT = "superseded_by IS NULL AND (expires_at IS NULL OR expires_at > :now)"

EMBED = _sql("embed", "query", "SELECT VECTOR_EMBEDDING({model} USING :text AS data) FROM DUAL")
MEMORY_BY_HASH = _sql("memory_by_hash", "query", f"""
    SELECT {_MEMORY_COLUMNS} FROM PICO_MEMORIES
    WHERE agent_id = :agent_id AND content_hash = :content_hash AND {_CURRENT}
    ORDER BY created_at FETCH FIRST 1 ROWS ONLY""")
MEMORY_NEAREST = _sql("memory_nearest", "query", f"""
    SELECT {_MEMORY_COLUMNS}, VECTOR_DISTANCE(embedding, :vector, COSINE) AS distance
    FROM PICO_MEMORIES
    WHERE agent_id = :agent_id AND embedding IS NOT NULL AND embedding_model = :embedding_model AND {_CURRENT}
    ORDER BY VECTOR_DISTANCE(embedding, :vector, COSINE)
    FETCH APPROX FIRST :k ROWS ONLY""")
# Dedup asks for the single nearest row: exact search, because an approximate one may miss it (a filtered
# IVF probe can return fewer rows than asked).
MEMORY_NEAREST_EXACT = _sql("memory_nearest_exact", "query", f"""
    SELECT {_MEMORY_COLUMNS}, VECTOR_DISTANCE(embedding, :vector, COSINE) AS distance
    FROM PICO_MEMORIES
    WHERE agent_id = :agent_id AND embedding IS NOT NULL AND embedding_model = :embedding_model AND {_CURRENT}
    ORDER BY VECTOR_DISTANCE(embedding, :vector, COSINE)
    FETCH EXACT FIRST 1 ROWS ONLY""")
MEMORY_ID_TAKEN = _sql("memory_id_taken", "query",
                       "SELECT agent_id FROM PICO_MEMORIES WHERE memory_id = :memory_id")
VECTORS_STORED = _sql("vectors_stored", "query", """
    SELECT (SELECT COUNT(*) FROM PICO_MEMORIES WHERE embedding IS NOT NULL),
           (SELECT COUNT(*) FROM PICO_DAILY_NOTES WHERE embedding IS NOT NULL) FROM DUAL""")
MEMORY_KEYWORD_TEXT = _sql("memory_keyword_text", "query", f"""
    SELECT {_MEMORY_COLUMNS}, embedding FROM PICO_MEMORIES
    WHERE agent_id = :agent_id AND CONTAINS(content, :text_query, 1) > 0 AND {_CURRENT}
    ORDER BY SCORE(1) DESC FETCH FIRST :k ROWS ONLY""")
MEMORY_KEYWORD_SCAN = _sql("memory_keyword_scan", "query", f"""
    SELECT {_MEMORY_COLUMNS}, embedding FROM PICO_MEMORIES
    WHERE agent_id = :agent_id AND REGEXP_LIKE(content, :pattern, 'i') AND {_CURRENT}
    ORDER BY created_at DESC FETCH FIRST :k ROWS ONLY""")
MEMORY_INSERT = _sql("memory_insert", "dml", """
    INSERT INTO PICO_MEMORIES (memory_id, agent_id, content, content_hash, embedding, embedding_model,
                               importance, category, access_count, created_at, accessed_at, updated_at,
                               source_how, source_person, source_session, source_turn, superseded_by, expires_at)
    VALUES (:memory_id, :agent_id, :content, :content_hash, :embedding, :embedding_model,
            :importance, :category, :access_count, :created_at, :accessed_at, :now,
            :source_how, :source_person, :source_session, :source_turn, :superseded_by, :expires_at)""")
MEMORY_SUPERSEDE = _sql("memory_supersede", "dml", """
    UPDATE PICO_MEMORIES SET superseded_by = :superseded_by, updated_at = :now
    WHERE agent_id = :agent_id AND memory_id = :memory_id AND superseded_by IS NULL""")
MEMORY_RAISE_IMPORTANCE = _sql("memory_raise_importance", "dml", """
    UPDATE PICO_MEMORIES SET importance = :importance, updated_at = :now
    WHERE agent_id = :agent_id AND memory_id = :memory_id AND importance < :importance""")
MEMORY_GET = _sql("memory_get", "query", f"""
    SELECT {_MEMORY_COLUMNS} FROM PICO_MEMORIES WHERE agent_id = :agent_id AND memory_id = :memory_id""")
MEMORY_LIST = _sql("memory_list", "query", f"""
    SELECT {_MEMORY_COLUMNS} FROM PICO_MEMORIES WHERE agent_id = :agent_id
    ORDER BY created_at DESC, memory_id FETCH FIRST :k ROWS ONLY""")
MEMORY_DELETE = _sql("memory_delete", "dml",
                     "DELETE FROM PICO_MEMORIES WHERE agent_id = :agent_id AND memory_id = :memory_id")
MEMORY_TOUCH = _sql("memory_touch", "dml", """
    UPDATE PICO_MEMORIES SET access_count = NVL(access_count, 0) + 1, accessed_at = :now
    WHERE agent_id = :agent_id AND memory_id = :memory_id""")
MEMORY_CONTENTS = _sql("memory_contents", "query", """
    SELECT memory_id, content FROM PICO_MEMORIES WHERE agent_id = :agent_id ORDER BY memory_id""")
MEMORY_SET_EMBEDDING = _sql("memory_set_embedding", "dml", """
    UPDATE PICO_MEMORIES SET embedding = VECTOR_EMBEDDING({model} USING :text AS data),
                             embedding_model = :embedding_model, updated_at = :now
    WHERE agent_id = :agent_id AND memory_id = :memory_id""")

# ---------------------------------------------------------------------------------------------------
# Daily notes: one row per agent and day, re-embedded (vector from EMBED) on every append.

NOTE_LOCK = _sql("note_lock", "query", """
    SELECT note_id, content FROM PICO_DAILY_NOTES
    WHERE agent_id = :agent_id AND note_date = :note_date FOR UPDATE WAIT 10""")
NOTE_INSERT = _sql("note_insert", "dml", """
    INSERT INTO PICO_DAILY_NOTES (note_id, agent_id, note_date, content, embedding, created_at, updated_at)
    VALUES (:note_id, :agent_id, :note_date, :content, :embedding, :now, :now)""")
NOTE_UPDATE = _sql("note_update", "dml", """
    UPDATE PICO_DAILY_NOTES SET content = :content, embedding = :embedding, updated_at = :now
    WHERE agent_id = :agent_id AND note_id = :note_id""")
NOTE_RECENT = _sql("note_recent", "query", """
    SELECT note_date, content FROM PICO_DAILY_NOTES
    WHERE agent_id = :agent_id AND note_date >= :since AND note_date <= :today ORDER BY note_date DESC""")
NOTE_SEARCH = _sql("note_search", "query", """
    SELECT note_date, content, VECTOR_DISTANCE(embedding, :vector, COSINE) AS distance
    FROM PICO_DAILY_NOTES
    WHERE agent_id = :agent_id AND embedding IS NOT NULL AND VECTOR_DIMENSION_COUNT(embedding) = :dimensions
    ORDER BY VECTOR_DISTANCE(embedding, :vector, COSINE)
    FETCH APPROX FIRST :k ROWS ONLY""")
NOTE_LIST = _sql("note_list", "query", """
    SELECT note_date, note_id, content, updated_at,
           CASE WHEN embedding IS NOT NULL THEN 'yes' ELSE 'no' END AS has_vector
    FROM PICO_DAILY_NOTES WHERE agent_id = :agent_id ORDER BY note_date DESC FETCH FIRST :k ROWS ONLY""")

# ---------------------------------------------------------------------------------------------------
# Sessions: messages as a JSON array in a CLOB (the Go shape), read-modify-write under a row lock. Lock waits
# are bounded (``FOR UPDATE WAIT``): a writer stuck on another node fails this one call with ORA-30006
# instead of running into the call timeout, which would throw the connection away.

SESSION_GET = _sql("session_get", "query", """
    SELECT messages, summary, created_at, updated_at FROM PICO_SESSIONS
    WHERE agent_id = :agent_id AND session_key = :session_key""")
SESSION_LOCK = _sql("session_lock", "query", """
    SELECT messages, summary FROM PICO_SESSIONS
    WHERE agent_id = :agent_id AND session_key = :session_key FOR UPDATE WAIT 10""")
SESSION_INSERT = _sql("session_insert", "dml", """
    INSERT INTO PICO_SESSIONS (session_key, agent_id, messages, summary, created_at, updated_at)
    VALUES (:session_key, :agent_id, :messages, :summary, :now, :now)""")
SESSION_RESTORE = _sql("session_restore", "dml", """
    INSERT INTO PICO_SESSIONS (session_key, agent_id, messages, summary, created_at, updated_at)
    VALUES (:session_key, :agent_id, :messages, :summary, :created_at, :updated_at)""")
SESSION_UPDATE = _sql("session_update", "dml", """
    UPDATE PICO_SESSIONS SET messages = :messages, summary = :summary, updated_at = :now
    WHERE agent_id = :agent_id AND session_key = :session_key""")
SESSION_DELETE = _sql("session_delete", "dml",
                      "DELETE FROM PICO_SESSIONS WHERE agent_id = :agent_id AND session_key = :session_key")
SESSION_LIST = _sql("session_list", "query", """
    SELECT session_key, messages, summary, created_at, updated_at FROM PICO_SESSIONS
    WHERE agent_id = :agent_id ORDER BY updated_at DESC, session_key""")

# ---------------------------------------------------------------------------------------------------
# Transcripts: append-only; the unique (agent, session, sequence) key makes concurrent appenders retry.

TRANSCRIPT_LAST_SEQ = _sql("transcript_last_seq", "query", """
    SELECT NVL(MAX(sequence_num), 0) FROM PICO_TRANSCRIPTS
    WHERE agent_id = :agent_id AND session_key = :session_key""")
TRANSCRIPT_INSERT = _sql("transcript_insert", "dml", """
    INSERT INTO PICO_TRANSCRIPTS (session_key, agent_id, sequence_num, role, content, message_json, created_at)
    VALUES (:session_key, :agent_id, :sequence_num, :role, :content, :message_json, :now)""")
TRANSCRIPT_READ = _sql("transcript_read", "query", """
    SELECT sequence_num, role, content, message_json, created_at FROM (
        SELECT sequence_num, role, content, message_json, created_at FROM PICO_TRANSCRIPTS
        WHERE agent_id = :agent_id AND session_key = :session_key
        ORDER BY sequence_num DESC FETCH FIRST :k ROWS ONLY)
    ORDER BY sequence_num""")
TRANSCRIPT_KEYS = _sql("transcript_keys", "query", """
    SELECT DISTINCT session_key FROM PICO_TRANSCRIPTS WHERE agent_id = :agent_id ORDER BY session_key""")
TRANSCRIPT_RECENT = _sql("transcript_recent", "query", """
    SELECT session_key, sequence_num, role, content, message_json, created_at FROM PICO_TRANSCRIPTS
    WHERE agent_id = :agent_id ORDER BY id DESC FETCH FIRST :k ROWS ONLY""")

# ---------------------------------------------------------------------------------------------------
# State, config, prompts: key/value rows per agent, upserted with MERGE.

STATE_GET = _sql("state_get", "query",
                 "SELECT state_value FROM PICO_STATE WHERE agent_id = :agent_id AND state_key = :state_key")
STATE_ALL = _sql("state_all", "query", """
    SELECT state_key, state_value, updated_at FROM PICO_STATE WHERE agent_id = :agent_id ORDER BY state_key""")
STATE_DELETE = _sql("state_delete", "dml",
                    "DELETE FROM PICO_STATE WHERE agent_id = :agent_id AND state_key = :state_key")
STATE_SET = _sql("state_set", "dml", """
    MERGE INTO PICO_STATE t USING (SELECT :state_key AS state_key, :agent_id AS agent_id FROM DUAL) s
    ON (t.state_key = s.state_key AND t.agent_id = s.agent_id)
    WHEN MATCHED THEN UPDATE SET t.state_value = :state_value, t.updated_at = :now
    WHEN NOT MATCHED THEN INSERT (state_key, agent_id, state_value, updated_at)
    VALUES (s.state_key, s.agent_id, :state_value, :now)""")

CONFIG_GET = _sql("config_get", "query",
                  "SELECT config_value FROM PICO_CONFIG WHERE agent_id = :agent_id AND config_key = :config_key")
CONFIG_ALL = _sql("config_all", "query", """
    SELECT config_key, config_value, updated_at FROM PICO_CONFIG WHERE agent_id = :agent_id ORDER BY config_key""")
CONFIG_SET = _sql("config_set", "dml", """
    MERGE INTO PICO_CONFIG t USING (SELECT :config_key AS config_key, :agent_id AS agent_id FROM DUAL) s
    ON (t.config_key = s.config_key AND t.agent_id = s.agent_id)
    WHEN MATCHED THEN UPDATE SET t.config_value = :config_value, t.updated_at = :now
    WHEN NOT MATCHED THEN INSERT (config_key, agent_id, config_value, updated_at)
    VALUES (s.config_key, s.agent_id, :config_value, :now)""")

PROMPT_GET = _sql("prompt_get", "query", """
    SELECT prompt_name, content FROM PICO_PROMPTS
    WHERE agent_id = :agent_id AND prompt_name IN (:prompt_name, :legacy_name)""")
PROMPT_ALL = _sql("prompt_all", "query", """
    SELECT prompt_name, content, updated_at FROM PICO_PROMPTS WHERE agent_id = :agent_id ORDER BY prompt_name""")
PROMPT_SET = _sql("prompt_set", "dml", """
    MERGE INTO PICO_PROMPTS t USING (SELECT :prompt_name AS prompt_name, :agent_id AS agent_id FROM DUAL) s
    ON (t.prompt_name = s.prompt_name AND t.agent_id = s.agent_id)
    WHEN MATCHED THEN UPDATE SET t.content = :content, t.updated_at = :now
    WHEN NOT MATCHED THEN INSERT (prompt_name, agent_id, content, updated_at)
    VALUES (s.prompt_name, s.agent_id, :content, :now)""")

# ---------------------------------------------------------------------------------------------------
# Turn traces (schema version 6): one JSON document per turn, beside the transcript.

CREATE_TRACES = _sql("create_traces", "ddl", """
    CREATE TABLE PICO_TRACES (
        trace_id    VARCHAR2(64) NOT NULL,
        agent_id    VARCHAR2(64) NOT NULL,
        session_key VARCHAR2(1024 CHAR) NOT NULL,
        trace_json  CLOB CHECK (trace_json IS JSON),
        created_at  TIMESTAMP DEFAULT SYSTIMESTAMP,
        PRIMARY KEY (trace_id, agent_id))""", _EXISTS)
INDEX_TRACES_SESSION = _sql("index_traces_session", "ddl",
                            "CREATE INDEX idx_pico_traces_session ON PICO_TRACES(agent_id, session_key, created_at)",
                            _INDEXED)
# Version 9: ``trace last`` over all sessions reads this index backwards and stops at the first row (the
# session index above has session_key between agent_id and created_at, so it could not give that order).
INDEX_TRACES_RECENT = _online_index("index_traces_recent",
                                    "CREATE INDEX idx_pico_traces_recent ON PICO_TRACES(agent_id, created_at) {online}")
TRACE_INSERT = _sql("trace_insert", "dml", """
    INSERT INTO PICO_TRACES (trace_id, agent_id, session_key, trace_json, created_at)
    VALUES (:trace_id, :agent_id, :session_key, :trace_json, :now)""")
TRACE_GET = _sql("trace_get", "query",
                 "SELECT trace_json FROM PICO_TRACES WHERE agent_id = :agent_id AND trace_id = :trace_id")
TRACE_LAST = _sql("trace_last", "query", """
    SELECT trace_json FROM PICO_TRACES WHERE agent_id = :agent_id
    ORDER BY created_at DESC FETCH FIRST 1 ROWS ONLY""")
TRACE_LAST_IN_SESSION = _sql("trace_last_in_session", "query", """
    SELECT trace_json FROM PICO_TRACES WHERE agent_id = :agent_id AND session_key = :session_key
    ORDER BY created_at DESC FETCH FIRST 1 ROWS ONLY""")

# ---------------------------------------------------------------------------------------------------
# Whole tool outputs (schema version 12): what the model got only the start of, read back by handle by
# ``read_tool_output``; scoped by agent_id like everything of a person's, kept ``limits.TOOL_OUTPUT_DAYS``
# (each save deletes the agent's expired rows, through the (agent_id, created_at) index).

CREATE_TOOL_OUTPUTS = _sql("create_tool_outputs", "ddl", """
    CREATE TABLE PICO_TOOL_OUTPUTS (
        handle      VARCHAR2(64) NOT NULL,
        agent_id    VARCHAR2(64) NOT NULL,
        session_key VARCHAR2(1000 CHAR) NOT NULL,
        turn_id     VARCHAR2(64) NOT NULL,
        tool_name   VARCHAR2(255 CHAR) NOT NULL,
        content     CLOB,
        created_at  TIMESTAMP DEFAULT SYSTIMESTAMP,
        PRIMARY KEY (handle, agent_id))""", _EXISTS)
INDEX_TOOL_OUTPUTS_AGE = _sql("index_tool_outputs_age", "ddl",
                              "CREATE INDEX idx_pico_tool_outputs_age ON PICO_TOOL_OUTPUTS(agent_id, created_at)",
                              _INDEXED)
TOOL_OUTPUT_INSERT = _sql("tool_output_insert", "dml", """
    INSERT INTO PICO_TOOL_OUTPUTS (handle, agent_id, session_key, turn_id, tool_name, content, created_at)
    VALUES (:handle, :agent_id, :session_key, :turn_id, :tool_name, :content, :now)""")
TOOL_OUTPUT_GET = _sql("tool_output_get", "query", """
    SELECT session_key, turn_id, tool_name, content, created_at FROM PICO_TOOL_OUTPUTS
    WHERE agent_id = :agent_id AND handle = :handle AND created_at >= :oldest""")
TOOL_OUTPUT_EXPIRE = _sql("tool_output_expire", "dml",
                          "DELETE FROM PICO_TOOL_OUTPUTS WHERE agent_id = :agent_id AND created_at < :oldest")

# ---------------------------------------------------------------------------------------------------
# Background questions (schema version 8): store/data/background_queries.txt embedded by the in-database model,
# schema-wide (no agent_id: the same for everyone), one set per model. ``set_hash`` says which version of the
# texts a row belongs to, so changed texts are re-embedded. About 120 rows a model: the nearest one is found
# by an exact scan, no vector index needed.

CREATE_BACKGROUND = _sql("create_background", "ddl", """
    CREATE TABLE PICO_BACKGROUND_QUESTIONS (
        embedding_model VARCHAR2(128) NOT NULL,
        question_no     NUMBER NOT NULL,
        set_hash        VARCHAR2(64) NOT NULL,
        content         VARCHAR2(1000 CHAR) NOT NULL,
        embedding       VECTOR(384, FLOAT32),
        created_at      TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        PRIMARY KEY (embedding_model, question_no))""", _EXISTS)
# How many of the current set the model has (complete when it is the number of texts) and the query's best
# cosine against them, in one round trip.
BACKGROUND_BEST = _sql("background_best", "query", """
    SELECT COUNT(*), MAX(1 - VECTOR_DISTANCE(embedding, :vector, COSINE)) FROM PICO_BACKGROUND_QUESTIONS
    WHERE embedding_model = :embedding_model AND set_hash = :set_hash""")
BACKGROUND_COUNT = _sql("background_count", "query", """
    SELECT COUNT(*) FROM PICO_BACKGROUND_QUESTIONS WHERE embedding_model = :embedding_model AND set_hash = :set_hash""")
# Fillers take turns (a recall and setup-oracle, or two first recalls): the second waits, then finds the set
# complete. Queries are not blocked by it.
BACKGROUND_LOCK = _sql("background_lock", "dml", "LOCK TABLE PICO_BACKGROUND_QUESTIONS IN EXCLUSIVE MODE WAIT 10")
BACKGROUND_CLEAR = _sql("background_clear", "dml",
                        "DELETE FROM PICO_BACKGROUND_QUESTIONS WHERE embedding_model = :embedding_model")
# Filled with one executemany: the database embeds each text as it inserts the row.
BACKGROUND_INSERT = _sql("background_insert", "dml", """
    INSERT INTO PICO_BACKGROUND_QUESTIONS (embedding_model, question_no, set_hash, content, embedding, created_at)
    VALUES (:embedding_model, :question_no, :set_hash, :content, VECTOR_EMBEDDING({model} USING :content AS data),
            :now)""")

MEMORY_VECTORS_MISSING = _sql("memory_vectors_missing", "query", """
    SELECT COUNT(*) FROM PICO_MEMORIES WHERE agent_id = :agent_id
    AND (embedding IS NULL OR embedding_model IS NULL OR embedding_model <> :embedding_model)""")
PING = _sql("ping", "query", "SELECT 1 FROM DUAL")
DATABASE_TIME = _sql("database_time", "query", "SELECT SYS_EXTRACT_UTC(SYSTIMESTAMP) FROM DUAL")

# ---------------------------------------------------------------------------------------------------
# Counts (per agent; meta is schema-wide) and the catalogue views the inspector and setup read.

STATS = _sql("stats", "query", """
    SELECT (SELECT COUNT(*) FROM PICO_MEMORIES WHERE agent_id = :agent_id),
           (SELECT COUNT(*) FROM PICO_DAILY_NOTES WHERE agent_id = :agent_id),
           (SELECT COUNT(*) FROM PICO_SESSIONS WHERE agent_id = :agent_id),
           (SELECT COUNT(*) FROM PICO_TRANSCRIPTS WHERE agent_id = :agent_id),
           (SELECT COUNT(*) FROM PICO_STATE WHERE agent_id = :agent_id),
           (SELECT COUNT(*) FROM PICO_PROMPTS WHERE agent_id = :agent_id),
           (SELECT COUNT(*) FROM PICO_CONFIG WHERE agent_id = :agent_id),
           (SELECT COUNT(*) FROM PICO_META)
    FROM DUAL""")
MODEL_LOADED = _sql("model_loaded", "query",
                    "SELECT COUNT(*) FROM USER_MINING_MODELS WHERE model_name = :model_name")
MODELS = _sql("models", "query",
              "SELECT model_name, mining_function, algorithm FROM USER_MINING_MODELS ORDER BY model_name")
# Whether keyword recall may use CONTAINS: the Oracle Text index must exist *and* be usable (a failed
# CREATE INDEX ... INDEXTYPE IS CTXSYS.CONTEXT leaves an index whose operation status is FAILED).
TEXT_INDEX_USABLE = _sql("text_index_usable", "query", """
    SELECT COUNT(*) FROM USER_INDEXES
    WHERE table_name = 'PICO_MEMORIES' AND index_type = 'DOMAIN' AND ityp_name = 'CONTEXT'
      AND status = 'VALID' AND NVL(domidx_status, 'VALID') = 'VALID' AND NVL(domidx_opstatus, 'VALID') = 'VALID'""")
# The organisation of each vector index, as the dictionary says it: INDEX_SUBTYPE is
# INMEMORY_NEIGHBOR_GRAPH_HNSW or NEIGHBOR_PARTITIONS_IVF ("Guidelines for Using Vector Indexes").
VECTOR_INDEX_KINDS = _sql("vector_index_kinds", "query", """
    SELECT index_name, index_subtype, status FROM USER_INDEXES
    WHERE index_type = 'VECTOR' AND index_name LIKE 'IDX_PICO_%' ORDER BY index_name""")
PICO_INDEXES = _sql("pico_indexes", "query", """
    SELECT index_name, table_name, index_type, status FROM USER_INDEXES
    WHERE index_name LIKE 'IDX_PICO_%' ORDER BY index_name""")
SELF_TEST = _sql("self_test", "query", """
    SELECT VECTOR_DIMENSION_COUNT(VECTOR_EMBEDDING({model} USING :text AS data)) FROM DUAL""")

# ---------------------------------------------------------------------------------------------------
# Loading the ONNX embedding model (setup-oracle). The model name is a VARCHAR2 argument, so it binds.

LOAD_ONNX_BLOB = _sql("load_onnx_blob", "plsql", """
    BEGIN DBMS_VECTOR.LOAD_ONNX_MODEL(model_name => :model_name, model_data => :model_data,
                                      metadata => JSON(:metadata)); END;""")
LOAD_ONNX_DIRECTORY = _sql("load_onnx_directory", "plsql", """
    BEGIN DBMS_VECTOR.LOAD_ONNX_MODEL(directory => :directory, file_name => :file_name,
                                      model_name => :model_name, metadata => JSON(:metadata)); END;""")
LOAD_ONNX_CLOUD = _sql("load_onnx_cloud", "plsql", """
    BEGIN DBMS_VECTOR.LOAD_ONNX_MODEL_CLOUD(model_name => :model_name, credential => NULL, uri => :uri,
                                            metadata => JSON(:metadata)); END;""")

# ---------------------------------------------------------------------------------------------------
# The knowledge base (schema version 13): documents, and their chunks cut by DBMS_VECTOR_CHAIN.UTL_TO_CHUNKS
# and embedded by VECTOR_EMBEDDING in the INSERT itself, so no chunk text or vector crosses the network on
# the way in. ``person`` is who added it ('.' the owner: '' is NULL in Oracle); ``shared`` = 1 lets everyone
# see it. Every read filters on agent_id and (person = :person OR shared = 1) before any ranking.

CREATE_DOCUMENTS = _sql("create_documents", "ddl", """
    CREATE TABLE PICO_DOCUMENTS (
        doc_id       VARCHAR2(64) PRIMARY KEY,
        agent_id     VARCHAR2(64) NOT NULL,
        person       VARCHAR2(64) NOT NULL,
        source       VARCHAR2(2000 CHAR) NOT NULL,
        title        VARCHAR2(1000 CHAR),
        content_hash VARCHAR2(64) NOT NULL,
        shared       NUMBER(1) DEFAULT 0 NOT NULL,
        chunks       NUMBER DEFAULT 0,
        pages        CLOB CHECK (pages IS JSON),
        added_at     TIMESTAMP)""", _EXISTS)
CREATE_DOC_CHUNKS = _sql("create_doc_chunks", "ddl", """
    CREATE TABLE PICO_DOC_CHUNKS (
        doc_id          VARCHAR2(64) NOT NULL,
        agent_id        VARCHAR2(64) NOT NULL,
        person          VARCHAR2(64) NOT NULL,
        shared          NUMBER(1) DEFAULT 0 NOT NULL,
        chunk_no        NUMBER NOT NULL,
        page_no         NUMBER,
        chunk_text      VARCHAR2(4000),
        embedding       VECTOR(384, FLOAT32),
        embedding_model VARCHAR2(255),
        PRIMARY KEY (doc_id, chunk_no))""", _EXISTS)
INDEX_DOCUMENTS_SCOPE = _sql("index_documents_scope", "ddl",
                             "CREATE INDEX IDX_PICO_DOCUMENTS_SCOPE ON PICO_DOCUMENTS(agent_id, person)", _INDEXED)
INDEX_DOC_CHUNKS_SCOPE = _sql("index_doc_chunks_scope", "ddl",
                              "CREATE INDEX IDX_PICO_DOC_CHUNKS_SCOPE ON PICO_DOC_CHUNKS(agent_id, person, shared)",
                              _INDEXED)
# Without Oracle Text installed (ORA-29833) keyword search scans with REGEXP_LIKE instead.
TEXT_INDEX_DOC_CHUNKS = _sql("text_index_doc_chunks", "ddl", """
    CREATE INDEX IDX_PICO_DOC_CHUNKS_TEXT ON PICO_DOC_CHUNKS(chunk_text)
    INDEXTYPE IS CTXSYS.CONTEXT PARAMETERS ('SYNC (ON COMMIT)')""", (*_INDEXED, "ORA-29833"))

_DOC_COLUMNS = "doc_id, source, title, content_hash, chunks, shared, person, added_at"
DOC_GET = _sql("doc_get", "query", f"""
    SELECT {_DOC_COLUMNS} FROM PICO_DOCUMENTS WHERE agent_id = :agent_id AND doc_id = :doc_id""")
DOC_LIST = _sql("doc_list", "query", f"""
    SELECT {_DOC_COLUMNS} FROM PICO_DOCUMENTS
    WHERE agent_id = :agent_id AND (person = :person OR shared = 1) ORDER BY source""")
DOC_ANY = _sql("doc_any", "query", """
    SELECT COUNT(*) FROM PICO_DOCUMENTS
    WHERE agent_id = :agent_id AND (person = :person OR shared = 1) FETCH FIRST 1 ROWS ONLY""")
# What is stored, whoever added it (status, the inspector): the counts from the documents' own chunk counts
# (kept by DOC_SET_CHUNKS in the transaction that cuts them), so PICO_DOC_CHUNKS is not scanned.
DOC_ALL = _sql("doc_all", "query", f"""
    SELECT {_DOC_COLUMNS} FROM PICO_DOCUMENTS
    WHERE agent_id = :agent_id ORDER BY added_at DESC, doc_id FETCH FIRST :k ROWS ONLY""")
DOC_COUNTS = _sql("doc_counts", "query", """
    SELECT COUNT(*), NVL(SUM(chunks), 0), NVL(SUM(shared), 0) FROM PICO_DOCUMENTS WHERE agent_id = :agent_id""")
DOC_IDS = _sql("doc_ids", "query", "SELECT doc_id FROM PICO_DOCUMENTS WHERE agent_id = :agent_id ORDER BY doc_id")
DOC_DELETE = _sql("doc_delete", "dml", "DELETE FROM PICO_DOCUMENTS WHERE agent_id = :agent_id AND doc_id = :doc_id")
DOC_CHUNKS_DELETE = _sql("doc_chunks_delete", "dml",
                         "DELETE FROM PICO_DOC_CHUNKS WHERE agent_id = :agent_id AND doc_id = :doc_id")
DOC_INSERT = _sql("doc_insert", "dml", """
    INSERT INTO PICO_DOCUMENTS (doc_id, agent_id, person, source, title, content_hash, shared, chunks, pages,
                                added_at)
    VALUES (:doc_id, :agent_id, :person, :source, :title, :content_hash, :shared, 0, :pages, :now)""")
DOC_SET_CHUNKS = _sql("doc_set_chunks", "dml", """
    UPDATE PICO_DOCUMENTS
    SET chunks = (SELECT COUNT(*) FROM PICO_DOC_CHUNKS c WHERE c.agent_id = :agent_id AND c.doc_id = :doc_id)
    WHERE agent_id = :agent_id AND doc_id = :doc_id""")
# The document's chunks, cut from its stored pages (never a long bind): JSON_TABLE opens the pages' JSON,
# UTL_TO_CHUNKS cuts each page and returns a VECTOR_ARRAY_T of JSON CLOBs ({"chunk_id", "chunk_offset",
# "chunk_length", "chunk_data"}); :params is its JSON ({"by": "words", "max": ..., "overlap": ...,
# "split": ..., "normalize": "all"}) from the docs.chunk_* settings.
DOC_CHUNKS_INSERT = _sql("doc_chunks_insert", "dml", """
    INSERT INTO PICO_DOC_CHUNKS (doc_id, agent_id, person, shared, chunk_no, page_no, chunk_text, embedding,
                                 embedding_model)
    SELECT d.doc_id, d.agent_id, d.person, d.shared,
           ROW_NUMBER() OVER (ORDER BY p.ord, JSON_VALUE(c.column_value, '$.chunk_id' RETURNING NUMBER)) - 1,
           p.page_no,
           JSON_VALUE(c.column_value, '$.chunk_data' RETURNING VARCHAR2(4000)),
           VECTOR_EMBEDDING({model} USING JSON_VALUE(c.column_value, '$.chunk_data' RETURNING VARCHAR2(4000))
                            AS data),
           :embedding_model
    FROM PICO_DOCUMENTS d,
         JSON_TABLE(d.pages, '$[*]' COLUMNS (ord FOR ORDINALITY, page_no NUMBER PATH '$.page',
                                             page_text CLOB PATH '$.text')) p,
         TABLE(DBMS_VECTOR_CHAIN.UTL_TO_CHUNKS(p.page_text, JSON(:params))) c
    WHERE d.agent_id = :agent_id AND d.doc_id = :doc_id""")
DOC_CHUNK_COUNT = _sql("doc_chunk_count", "query",
                       "SELECT COUNT(*) FROM PICO_DOC_CHUNKS WHERE agent_id = :agent_id AND doc_id = :doc_id")

_CHUNK_COLUMNS = "c.doc_id, c.chunk_no, c.page_no, c.chunk_text"
_VISIBLE = "c.agent_id = :agent_id AND (c.person = :person OR c.shared = 1)"
DOC_NEAREST = _sql("doc_nearest", "query", f"""
    SELECT {_CHUNK_COLUMNS}, VECTOR_DISTANCE(c.embedding, :vector, COSINE) AS distance
    FROM PICO_DOC_CHUNKS c
    WHERE {_VISIBLE} AND c.embedding IS NOT NULL AND c.embedding_model = :embedding_model
    ORDER BY VECTOR_DISTANCE(c.embedding, :vector, COSINE)
    FETCH APPROX FIRST :k ROWS ONLY""")
DOC_KEYWORD_TEXT = _sql("doc_keyword_text", "query", f"""
    SELECT {_CHUNK_COLUMNS}, VECTOR_DISTANCE(c.embedding, :vector, COSINE) AS distance
    FROM PICO_DOC_CHUNKS c
    WHERE {_VISIBLE} AND CONTAINS(c.chunk_text, :text_query, 1) > 0
    ORDER BY SCORE(1) DESC FETCH FIRST :k ROWS ONLY""")
DOC_KEYWORD_SCAN = _sql("doc_keyword_scan", "query", f"""
    SELECT {_CHUNK_COLUMNS}, VECTOR_DISTANCE(c.embedding, :vector, COSINE) AS distance
    FROM PICO_DOC_CHUNKS c
    WHERE {_VISIBLE} AND REGEXP_LIKE(c.chunk_text, :pattern, 'i')
    FETCH FIRST :k ROWS ONLY""")
