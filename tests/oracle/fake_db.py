"""A recording fake of an Oracle schema behind python-oracledb's async pool API, for tests without a server.

What makes it a fair stand-in rather than a mock that agrees with everything:
  * it only accepts statements from ``picoora.store.oracle.sql.REGISTRY`` (normalised text, model name
    rendered) and fails loudly on any other SQL;
  * at every call it checks the bind names in the SQL against the binds passed, that queries run with
    ``fetch_lobs=False``, and that TIMESTAMP values are naive (UTC by convention);
  * DDL is interpreted from the statement text: tables and columns exist only once created, and
    "already exists" comes back as the real ``oracledb`` error objects (ORA-00955, ORA-01408, ...);
  * transactions are real enough: a session's uncommitted rows are invisible to the others (they read the
    committed image), writes are undone on rollback, ``FOR UPDATE`` and written rows are locked until
    commit/rollback, an insert of a key another session's uncommitted insert holds waits for it (then
    ORA-00001), unique keys raise ORA-00001, and every call yields to the event loop so concurrent
    operations interleave;
  * lock waits end: ``FOR UPDATE WAIT n`` and ``LOCK TABLE ... WAIT n`` after n seconds (ORA-30006,
    ``wait_scale`` shortens them), any
    call at the connection's ``call_timeout`` (DPY-4024); a pool closed with ``force`` kills the sessions
    it lent, failing their running calls (DPY-4011) and rolling their work back; a plain close with
    connections out is refused (DPY-1005);
  * NOT NULL columns refuse NULL and '' (ORA-01400 / ORA-01407), ``IS JSON`` checks refuse bad JSON
    (ORA-02290), CONTAINS on a text index that is not VALID fails (ORA-29902 with DRG-10599);
  * every fake database runs its sessions on one shared event loop (``database_loop``), so several
    ``Database`` objects on their own loops (several nodes) can share one fake schema; ``systimestamp()``
    is the database clock (``clock_offset`` moves it);
  * vector indexes have an INDEX_SUBTYPE (HNSW or IVF, from the DDL); ONLINE is refused (ORA-02158) for
    HNSW and for the index kinds in ``offline_only``;
  * ``VECTOR_EMBEDDING`` needs the model in USER_MINING_MODELS (else ORA-40284) and embeds with the
    deterministic hash embedder of ``tests/fakes/hash_embedder.py``; VECTOR(384, ...) columns check
    dimensions (ORA-51803).
What a real database or driver refuses, the fake refuses too (so a green run means something):
  * VARCHAR2 lengths as declared, in bytes of UTF-8 unless declared ``CHAR`` (ORA-12899);
  * a ``datetime`` bound without the TIMESTAMP input type handler arrives as DATE, fractional seconds lost;
  * a string bind over 4000 bytes is a LONG bind, accepted only as the value of a CLOB column in an
    INSERT or UPDATE (ORA-01461; not in a MERGE), never in array DML (ORA-01478); a temporary LOB goes
    only into a LOB column (ORA-00932); REGEXP patterns over 512 bytes fail (ORA-12733);
  * VECTOR_DISTANCE of vectors with different dimension counts fails (ORA-51808);
  * a MERGE of a new key racing another session's MERGE gets ORA-00001, as in Oracle;
  * ``approx_misses``: approximate (``FETCH APPROX``) searches may drop that many nearest rows;
  * cursor keywords must exist in the installed python-oracledb (``AsyncCursor.execute``'s signature).
Failure switches: ``down`` (connects fail with DPY-6005, open connections with DPY-4011), ``silent``
(connects never answer), ``refuse`` (connects raise that error), ``fail_next[name] = exc`` (one
statement fails once). ``rendezvous[name] = n``: the first n calls of a statement wait for each other, so
sessions certainly race past that point together.
"""

from __future__ import annotations

import array
import asyncio
import contextvars
import inspect
import json
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

import oracledb
from oracledb import errors as oracledb_errors

from picoora.store.oracle import sql as q
from tests.fakes.hash_embedder import HashEmbedder
from tests.oracle.sqlcheck import check_binds

MODEL = "ALL_MINILM_L12_V2"
MAX_STRING_BYTES = 4000  # MAX_STRING_SIZE=STANDARD, the gvenzl and Free default
REGEXP_MAX_BYTES = 512
_DRIVER_KEYWORDS = {
    "execute": set(inspect.signature(oracledb.AsyncCursor.execute).parameters),
    "executemany": set(inspect.signature(oracledb.AsyncCursor.executemany).parameters),
}
_VARCHAR = re.compile(r"VARCHAR2\((\d+)( CHAR| BYTE)?\)")


def check_driver_keywords(method: str, keywords: dict[str, Any]) -> None:
    """The installed python-oracledb must accept every keyword the code passes (fetch_lobs came in 3.4)."""
    unknown = set(keywords) - _DRIVER_KEYWORDS[method]
    if unknown:
        raise TypeError(f"AsyncCursor.{method}() got unexpected keyword arguments {sorted(unknown)} "
                        f"(python-oracledb {oracledb.__version__})")


def _utf8_len(value: str) -> int:
    return len(value.encode("utf-8"))

_ORA_TEXT = {
    1: "unique constraint ({name}) violated",
    1017: "invalid credential or not authorized; logon denied",
    942: "table or view does not exist",
    904: "\"{name}\": invalid identifier",
    955: "name is already used by an existing object",
    1408: "such column list already indexed",
    1430: "column being added already exists in table",
    2260: "table can have only one primary key",
    2261: "such unique or primary key already exists in the table",
    2264: "name already used by an existing constraint",
    2299: "cannot validate ({name}) - duplicate keys found",
    2441: "Cannot drop nonexistent primary key",
    29833: "indextype does not exist",
    40204: "model {name} already exists",
    40284: "model {name} does not exist",
    51950: "Vector memory area is not enabled",
    2158: "invalid CREATE INDEX option",
    54: "resource busy and acquire with NOWAIT specified or timeout expired",
    932: "inconsistent datatypes: expected - got CLOB",
    1400: "cannot insert NULL into ({name})",
    1407: "cannot update ({name}) to NULL",
    2290: "check constraint ({name}) violated",
    29902: "error in executing ODCIIndexStart() routine\nORA-20000: Oracle Text error:\n"
           "DRG-10599: column is not indexed",
    1418: "specified index does not exist",
    1441: "cannot decrease column length because some value is too big",
    1461: "can bind a LONG value only for insert into a LONG column",
    1653: "unable to extend table {name} by 128 in tablespace USERS",
    30006: "resource busy; acquire with WAIT timeout expired",
    1478: "array bind may not include any LONG columns",
    12733: "regular expression is too long",
    12899: "value too large for column {name}",
    51808: "VECTOR_DISTANCE() is not supported for vectors with different dimension counts ({name})",
    51803: "Vector dimension count must match the dimension count specified in the column definition "
           "(actual: {name}, required: 384).",
}


def ora_error(code: int, name: str = "") -> Exception:
    """The exception python-oracledb raises for ORA-<code>, built the way the driver builds it."""
    error = oracledb._Error(f"ORA-{code:05d}: {_ORA_TEXT[code].format(name=name)}", code=code)
    return error.exc_type(error)


def driver_error(number: int, **args: Any) -> Exception:
    """A DPY-<number> error exactly as the driver creates it (e.g. 6005 cannot connect, 4011 closed)."""
    if number == 6005:
        args.setdefault("connection_id", "fake")
        return oracledb_errors._create_exception(number, "[Errno 111] Connection refused", **args)
    return oracledb_errors._create_exception(number, **args)


# The session (connection) and the ``FOR UPDATE WAIT n`` seconds of the statement being executed: what a
# handler reads, and which uncommitted rows it may see, depend on them.
_session: contextvars.ContextVar[FakeConnection | None] = contextvars.ContextVar("fake_session", default=None)
_lock_wait: contextvars.ContextVar[float | None] = contextvars.ContextVar("fake_lock_wait", default=None)
_FOR_UPDATE_WAIT = re.compile(r"(?:FOR UPDATE|MODE) WAIT (\d+)$")  # a row lock, or LOCK TABLE ... WAIT n
_database_loop: asyncio.AbstractEventLoop | None = None
_database_loop_guard = threading.Lock()


def database_loop() -> asyncio.AbstractEventLoop:
    """The one event loop every fake database runs its sessions on (a daemon thread, started once), so
    several ``Database`` objects, each on its private loop, can share one fake schema the way several
    gateways share one Autonomous Database: their lock waits and rendezvous meet on this loop."""
    global _database_loop
    with _database_loop_guard:
        if _database_loop is None:
            _database_loop = asyncio.new_event_loop()
            threading.Thread(target=_database_loop.run_forever, name="fake-oracle", daemon=True).start()
        return _database_loop


async def on_database_loop(coro: Any) -> Any:
    """Await ``coro`` on the database loop from any loop; cancelling the caller cancels it there too."""
    loop = database_loop()
    if asyncio.get_running_loop() is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a killed call's outcome as seen, so asyncio does not report it as never retrieved."""
    if not task.cancelled():
        task.exception()


def _drop(rows: list[Any], row: Any) -> None:
    """Remove ``row`` itself (not an equal one) from ``rows``."""
    for position, candidate in enumerate(rows):
        if candidate is row:
            del rows[position]
            return


@dataclass
class Table:
    name: str
    columns: dict[str, str]  # lower-case name -> declared type text
    rows: list[dict[str, Any]] = field(default_factory=list)
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)  # constraint name -> columns (PK + unique)
    primary: str | None = None  # which of ``keys`` is the primary key
    identity: int = 0
    deleted: list[tuple[FakeConnection, dict[str, Any]]] = field(default_factory=list)  # uncommitted deletes

    def not_null(self) -> set[str]:
        primary = set(self.keys.get(self.primary or "", ()))
        return primary | {c for c, declared in self.columns.items() if "NOT NULL" in declared
                          or "PRIMARY KEY" in declared}

    def json_columns(self) -> set[str]:
        return {c for c, declared in self.columns.items() if f"check ({c} is json)" in declared.lower()}

    def require(self, *columns: str) -> None:
        for column in columns:
            if column not in self.columns:
                raise ora_error(904, column.upper())


@dataclass
class Executed:
    name: str
    sql: str
    binds: dict[str, Any]


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in text:
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        depth += char == "("
        depth -= char == ")"
        current.append(char)
    parts.append("".join(current).strip())
    return parts


def _balanced(text: str) -> str:
    """The prefix of ``text`` up to the parenthesis closing an already open one."""
    depth = 0
    for position, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if depth < 0:
            return text[:position]
    return text


def _cosine_distance(a: array.array, b: array.array) -> float:
    if len(a) != len(b):
        raise ora_error(51808, f"{len(a)}, {len(b)}")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - (dot / norm if norm else 0.0)


class FakeOracle:
    def __init__(self, *, model_loaded: bool = True, oracle_text: bool = True, model: str = MODEL):
        self.model = model
        self.tables: dict[str, Table] = {}
        self.indexes: dict[str, tuple[str, tuple[str, ...], str]] = {}  # name -> (table, columns, type)
        self.models: dict[str, tuple[str, str]] = {model: ("EMBEDDING", "ONNX")} if model_loaded else {}
        self.oracle_text = oracle_text
        self.embedder = HashEmbedder()
        self.executed: list[Executed] = []
        self.pool_params: list[dict[str, Any]] = []
        self.pools: list[FakePool] = []
        self.connections: list[FakeConnection] = []  # every connection handed out, in order
        self.down = False
        self.silent = False
        self.refuse: Exception | None = None  # what every connect attempt raises (e.g. ORA-01017)
        self.fail_next: dict[str, Exception | tuple[int, Exception]] = {}  # (calls to let through first, error)
        self.raised: list[str] = []  # codes of the Oracle errors the fake raised, in order
        self.open_connections = 0
        self.approx_misses = 0  # how many of the nearest rows an approximate search leaves out
        self.unusable_indexes: set[str] = set()  # indexes that exist but whose status is not VALID
        self.index_subtypes: dict[str, str] = {}  # vector index name -> USER_INDEXES.INDEX_SUBTYPE
        # index kinds ("NORMAL", "VECTOR", "DOMAIN") this database builds only offline: ONLINE is ORA-02158,
        # as on a release before ONLINE vector index builds
        self.offline_only: set[str] = set()
        self.online_builds: list[str] = []  # indexes created ONLINE, in order
        self.delay: dict[str, float] = {}  # statement name -> seconds it takes
        self.in_flight = self.most_in_flight = 0  # delayed statements running at once (now, at most)
        # statement name -> how many sessions its first calls hold until they have all arrived (a race made certain)
        self.rendezvous: dict[str, int] = {}
        self._arrivals: dict[str, list[asyncio.Event]] = {}
        self._locks: dict[tuple, FakeConnection] = {}
        # id(row) -> (session that changed it, its committed image; None for a row that session inserted)
        self._pending: dict[int, tuple[FakeConnection, dict[str, Any] | None]] = {}
        self.clock_offset = timedelta()  # SYSTIMESTAMP is the real UTC time plus this (tests move it)
        self.array_dml: list[int] = []  # rows of each executemany (one round trip each), in order
        self.wait_scale = 1.0  # ``FOR UPDATE WAIT n`` waits n times this many seconds (tests shorten it)
        self._by_text = {stmt.render(model): stmt for stmt in q.REGISTRY.values()}

    # ---- the driver surface ------------------------------------------------------------------------

    def pool_factory(self, **params: Any) -> FakePool:
        self.pool_params.append(params)
        self.pools.append(FakePool(self, params))
        return self.pools[-1]

    def names(self) -> list[str]:
        """Names of the statements executed so far, in order."""
        return [e.name for e in self.executed]

    def rows(self, table: str) -> list[dict[str, Any]]:
        return self.tables[table].rows

    # ---- statement dispatch --------------------------------------------------------------------------

    def systimestamp(self) -> datetime:
        """The database clock (naive UTC), shared by every session whichever machine it comes from."""
        return datetime.utcnow() + self.clock_offset

    async def execute(self, conn: FakeConnection, sql: str, binds: dict[str, Any], *, fetch_lobs: Any,
                      array_dml: bool = False) -> Any:
        return await on_database_loop(self._in_session(conn, self._execute(conn, sql, binds, fetch_lobs=fetch_lobs,
                                                                           array_dml=array_dml)))

    async def _in_session(self, conn: FakeConnection, work: Any) -> Any:
        """Run one call of ``conn``'s session: under its call timeout (DPY-4024), and failing with DPY-4011
        when the pool closes it mid-call (a killed session)."""
        _session.set(conn)
        task = asyncio.current_task()
        assert task is not None
        conn.running.add(task)
        try:
            if not conn.call_timeout:
                return await work
            try:
                return await asyncio.wait_for(work, conn.call_timeout / 1000)
            except TimeoutError:
                raise driver_error(4024, timeout=conn.call_timeout) from None
        except asyncio.CancelledError:
            if conn.killed:
                raise driver_error(4011) from None
            raise
        finally:
            conn.running.discard(task)

    async def _execute(self, conn: FakeConnection, sql: str, binds: dict[str, Any], *, fetch_lobs: Any,
                       array_dml: bool) -> Any:
        await asyncio.sleep(0)  # let other operations interleave, as separate sessions would
        if self.down or conn.killed:
            raise driver_error(4011)
        stmt = self._by_text.get(" ".join(sql.split()))
        if stmt is None:
            raise AssertionError(f"the fake does not know this statement (not in the registry?):\n  {sql}")
        check_binds(sql, binds)
        if stmt.kind == "query" and fetch_lobs is not False:
            raise AssertionError(f"{stmt.name}: queries must run with fetch_lobs=False")
        for key, value in binds.items():
            if isinstance(value, datetime) and value.tzinfo is not None:
                raise AssertionError(f"{stmt.name}: :{key} is an aware datetime; TIMESTAMP columns hold naive UTC")
        self.executed.append(Executed(stmt.name, sql, dict(binds)))
        wait = _FOR_UPDATE_WAIT.search(stmt.text)
        _lock_wait.set(float(wait.group(1)) * self.wait_scale if wait else None)
        self._inject_failure(stmt.name)
        if stmt.name in self.rendezvous:
            await self._meet(stmt.name)
        if stmt.name in self.delay:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            await asyncio.sleep(self.delay[stmt.name])
            self.in_flight -= 1
        try:
            self._check_long_binds(stmt.render(self.model), binds, array_dml)
            if stmt.kind == "ddl":
                conn.commit_now()  # DDL commits the open transaction first, as in Oracle
                result = self._ddl(stmt.render(self.model))
                conn.commit_now()
                return result
            handler: Callable = getattr(self, f"_{stmt.name}")
            return await handler(conn, {k.lower(): v for k, v in binds.items()})
        except oracledb.Error as exc:
            self.raised.append(exc.args[0].full_code)
            raise

    async def _meet(self, name: str) -> None:
        waiting = self._arrivals.setdefault(name, [])
        if len(waiting) + 1 < self.rendezvous[name]:
            waiting.append(asyncio.Event())
            await waiting[-1].wait()
            return
        del self.rendezvous[name]
        for arrived in waiting:
            arrived.set()

    def _check_long_binds(self, sql: str, binds: dict[str, Any], array_dml: bool) -> None:
        """A str over 4000 bytes goes as LONG: fine as a CLOB column's value, refused anywhere else."""
        long = {k.lower() for k, v in binds.items() if isinstance(v, str) and _utf8_len(v) > MAX_STRING_BYTES}
        if not long:
            return
        if array_dml:
            raise ora_error(1478)
        if long - self._lob_targets(sql):
            raise ora_error(1461)

    def _lob_targets(self, sql: str) -> set[str]:
        """Bind names that are the value of a CLOB column in this INSERT / UPDATE. None in a MERGE: Oracle
        refuses LONG binds there even for CLOB columns (ORA-01461 once the MERGE updates)."""
        m = re.match(r"(?:INSERT INTO|UPDATE) (\w+)", sql)
        table = self.tables.get(m.group(1)) if m else None
        if table is None:
            return set()
        clobs = {c for c, declared in table.columns.items() if declared.startswith("CLOB")}
        targets = {bind.lower() for column, bind in re.findall(r"(?:\w+\.)?(\w+) = :(\w+)", sql)
                   if column.lower() in clobs}
        insert = re.search(r"INSERT (?:INTO \w+ )?\(([^()]*)\) VALUES \((.*)\)", sql)
        if insert:
            values = _split_top(_balanced(insert.group(2)))
            for column, value in zip(insert.group(1).split(","), values, strict=False):
                if column.strip().lower() in clobs and value.startswith(":"):
                    targets.add(value[1:].lower())
        return targets

    def _inject_failure(self, name: str) -> None:
        planned = self.fail_next.get(name)
        if planned is None:
            return
        skip, failure = planned if isinstance(planned, tuple) else (0, planned)
        if skip:
            self.fail_next[name] = (skip - 1, failure)
            return
        del self.fail_next[name]
        raise failure

    # ---- DDL, interpreted from the text ------------------------------------------------------------

    def _ddl(self, sql: str) -> int:
        if m := re.match(r"CREATE TABLE (\w+) \((.*)\)$", sql):
            return self._create_table(m.group(1), m.group(2))
        if m := re.match(r"CREATE (UNIQUE )?(VECTOR )?INDEX (\w+) ON (\w+)\((.*?)\)(.*)$", sql):
            return self._create_index(m.group(3), m.group(4), m.group(5), m.group(2) or "", m.group(6))
        if m := re.match(r"ALTER TABLE (\w+) ADD \((\w+) (.*)\)$", sql):
            table = self._table(m.group(1))
            if m.group(2).lower() in table.columns:
                raise ora_error(1430)
            table.columns[m.group(2).lower()] = m.group(3)
            for row in table.rows:
                row[m.group(2).lower()] = None
            return 0
        if m := re.match(r"ALTER TABLE (\w+) MODIFY \((.*)\)$", sql):
            table = self._table(m.group(1))
            for item in _split_top(m.group(2)):
                column, declared = item.split(" ", 1)
                table.require(column.lower())
                table.columns[column.lower()] = declared
            return 0
        if m := re.match(r"DROP INDEX (\w+)$", sql):
            if self.indexes.pop(m.group(1), None) is None:
                raise ora_error(1418)
            self.index_subtypes.pop(m.group(1), None)
            return 0
        if re.match(r"ALTER SESSION SET DDL_LOCK_TIMEOUT = \d+$", sql):
            return 0
        if m := re.match(r"ALTER TABLE (\w+) DROP PRIMARY KEY$", sql):
            table = self._table(m.group(1))
            if table.primary is None:
                raise ora_error(2441)
            del table.keys[table.primary]
            table.primary = None
            return 0
        if m := re.match(r"ALTER TABLE (\w+) ADD CONSTRAINT (\w+) (PRIMARY KEY|UNIQUE) \((.*)\)$", sql):
            return self._add_constraint(self._table(m.group(1)), m.group(2), m.group(3), m.group(4))
        raise AssertionError(f"the fake cannot interpret this DDL:\n  {sql}")

    def _create_table(self, name: str, body: str) -> int:
        if name in self.tables:
            raise ora_error(955)
        table = Table(name, {})
        for item in _split_top(body):
            if m := re.match(r"PRIMARY KEY \((.*)\)$", item):
                table.keys[f"SYS_PK_{name}"] = tuple(c.strip().lower() for c in m.group(1).split(","))
                table.primary = f"SYS_PK_{name}"
                continue
            column, declared = item.split(" ", 1)
            table.columns[column.lower()] = declared
            if "PRIMARY KEY" in declared:
                table.keys[f"SYS_PK_{name}"] = (column.lower(),)
                table.primary = f"SYS_PK_{name}"
        self.tables[name] = table
        return 0

    def _create_index(self, name: str, table_name: str, columns: str, vector: str, rest: str) -> int:
        table = self._table(table_name)
        cols = tuple(c.strip().lower() for c in columns.split(","))
        table.require(*cols)
        kind = "VECTOR" if vector else "DOMAIN" if "INDEXTYPE IS CTXSYS.CONTEXT" in rest else "NORMAL"
        if kind == "DOMAIN" and not self.oracle_text:
            raise ora_error(29833)
        online = re.search(r"\bONLINE\b", rest) is not None
        if online and (kind in self.offline_only or "INMEMORY NEIGHBOR GRAPH" in rest):
            raise ora_error(2158)  # HNSW's syntax has no ONLINE at all
        if name in self.indexes:
            raise ora_error(955)
        if any(t == table_name and c == cols and k == kind for t, c, k in self.indexes.values()):
            raise ora_error(1408)
        self.indexes[name] = (table_name, cols, kind)
        if kind == "VECTOR":
            self.index_subtypes[name] = ("INMEMORY_NEIGHBOR_GRAPH_HNSW" if "INMEMORY NEIGHBOR GRAPH" in rest
                                         else "NEIGHBOR_PARTITIONS_IVF")
        if online:
            self.online_builds.append(name)
        return 0

    def _add_constraint(self, table: Table, name: str, kind: str, columns: str) -> int:
        cols = tuple(c.strip().lower() for c in columns.split(","))
        table.require(*cols)
        if kind == "PRIMARY KEY" and table.primary is not None:
            raise ora_error(2260)
        if name in table.keys:
            raise ora_error(2264)
        if cols in table.keys.values():
            raise ora_error(2261)
        seen = {tuple(row[c] for c in cols) for row in table.rows}
        if len(seen) != len(table.rows):
            raise ora_error(2299, name)
        table.keys[name] = cols
        if kind == "PRIMARY KEY":
            table.primary = name
        return 0

    def _table(self, name: str) -> Table:
        table = self.tables.get(name)
        if table is None:
            raise ora_error(942)
        return table

    # ---- row-level helpers: locks, undo, keys --------------------------------------------------------

    async def lock(self, conn: FakeConnection, table: str, key: tuple) -> None:
        """Take a row lock as FOR UPDATE / UPDATE / DELETE do; waits while another session holds it, up to
        the statement's ``FOR UPDATE WAIT n`` (then ORA-30006), else until the call timeout."""
        wait = _lock_wait.get()
        deadline = None if wait is None else asyncio.get_running_loop().time() + wait
        while (owner := self._locks.get((table, key))) not in (None, conn):
            await self._wait_for_end(owner, deadline)
        self._locks[(table, key)] = conn
        conn.held.add((table, key))

    @staticmethod
    async def _wait_for_end(owner: FakeConnection, deadline: float | None) -> None:
        """Wait until ``owner`` commits or rolls back (past ``deadline``: ORA-30006)."""
        if deadline is None:
            await owner.finished.wait()
            return
        try:
            await asyncio.wait_for(owner.finished.wait(), max(deadline - asyncio.get_running_loop().time(), 0))
        except TimeoutError:
            raise ora_error(30006) from None

    def end_transaction(self, conn: FakeConnection) -> None:
        """After commit or rollback (undo already applied): ``conn``'s changes are everyone's, its locks free."""
        for table, row in conn.touched:
            if self._pending.get(id(row), (None,))[0] is conn:
                del self._pending[id(row)]
            table.deleted = [(owner, image) for owner, image in table.deleted if owner is not conn]
        conn.touched.clear()
        for held in conn.held:
            self._locks.pop(held, None)
        conn.held.clear()

    async def kill(self, conn: FakeConnection) -> None:
        """The session ends under a running call (a pool closed with force): the call fails with DPY-4011
        and the database rolls its transaction back, as PMON does."""
        conn.killed = True
        for task in list(conn.running):
            task.cancel()
            task.add_done_callback(_retrieved)  # its caller may be gone already (a call cut off)
        await conn.rollback_here()

    # ---- what a session sees: its own changes and what others committed ----------------------------

    def _seen_by(self, conn: FakeConnection | None, row: dict[str, Any]) -> dict[str, Any] | None:
        """``row`` as ``conn`` sees it: itself, its committed image (another session changed it and has not
        committed), or None (another session inserted it and has not committed)."""
        owner, image = self._pending.get(id(row), (None, None))
        return row if owner is None or owner is conn else image

    def visible(self, table: Table) -> list[dict[str, Any]]:
        conn = _session.get()
        seen = [version for row in table.rows if (version := self._seen_by(conn, row)) is not None]
        return seen + [image for owner, image in table.deleted if owner is not conn]

    def _changing(self, conn: FakeConnection, table: Table, row: dict[str, Any]) -> None:
        """Keep the committed image of ``row`` for the other sessions, before ``conn`` first changes it."""
        if id(row) not in self._pending:
            self._pending[id(row)] = (conn, dict(row))
            conn.touched.append((table, row))

    def _key_holder(self, conn: FakeConnection, table: Table, row: dict[str, Any]) -> FakeConnection | None:
        """Another session whose uncommitted insert or delete holds one of ``row``'s unique keys: an insert
        of the same key waits for it (then ORA-00001 if it committed), as Oracle's unique index makes it."""
        others = [(owner, r) for r in table.rows if (owner := self._pending.get(id(r), (None, ""))[0])
                  not in (None, conn) and self._pending[id(r)][1] is None]
        others += [(owner, image) for owner, image in table.deleted if owner is not conn]
        for cols in table.keys.values():
            value = tuple(row.get(c) for c in cols)
            for owner, other in others:
                if tuple(other.get(c) for c in cols) == value:
                    return owner
        return None

    def _check_values(self, table: Table, row: dict[str, Any], null_code: int) -> None:
        """NOT NULL columns (ORA-01400 on insert, ORA-01407 on update) and ``IS JSON`` checks (ORA-02290)."""
        for column in sorted(table.not_null()):
            if row.get(column) is None:
                raise ora_error(null_code, f'"PICOORA"."{table.name}"."{column.upper()}"')
        for column in sorted(table.json_columns()):
            if row.get(column) is not None:
                try:
                    json.loads(row[column])
                except ValueError:
                    raise ora_error(2290, f"PICOORA.SYS_C_{table.name}_{column.upper()}_JSON") from None

    def _check_keys(self, table: Table, row: dict[str, Any], ignore: dict[str, Any] | None = None) -> None:
        for name, cols in table.keys.items():
            value = tuple(row.get(c) for c in cols)
            if any(other is not ignore and tuple(other.get(c) for c in cols) == value for other in table.rows):
                raise ora_error(1, name)

    def _store_value(self, table: Table, column: str, value: Any) -> Any:
        declared = table.columns[column]
        if isinstance(value, FakeLob):  # a temporary LOB: its text, and only into a LOB column
            if not declared.startswith(("CLOB", "BLOB")):
                raise ora_error(932)
            value = value.data
        if (size := _VARCHAR.match(declared)) and isinstance(value, str):
            used = len(value) if size.group(2) == " CHAR" else _utf8_len(value)
            if used > int(size.group(1)) or _utf8_len(value) > MAX_STRING_BYTES:
                raise ora_error(12899, f'"{table.name}"."{column.upper()}" (actual: {used}, maximum: {size.group(1)})')
        if declared.startswith("NUMBER(3,2)") and value is not None:
            return round(float(value), 2)
        if declared.startswith("VECTOR(384") and value is not None and len(value) != 384:
            raise ora_error(51803, str(len(value)))
        if declared.startswith("DATE") and isinstance(value, date) and not isinstance(value, datetime):
            return datetime(value.year, value.month, value.day)
        if value == "" and declared.startswith(("VARCHAR2", "CLOB")):
            return None  # Oracle stores the empty string as NULL
        return value

    async def insert(self, conn: FakeConnection, table_name: str, values: dict[str, Any]) -> None:
        table = self._table(table_name)
        table.require(*values)
        row = {column: None for column in table.columns}
        for column, value in values.items():
            row[column] = self._store_value(table, column, value)
        if "id" in table.columns and "GENERATED ALWAYS AS IDENTITY" in table.columns["id"]:
            table.identity += 1
            row["id"] = table.identity
        self._check_values(table, row, 1400)
        while (holder := self._key_holder(conn, table, row)) is not None:
            await self._wait_for_end(holder, None)
        self._check_keys(table, row)
        table.rows.append(row)
        self._pending[id(row)] = (conn, None)
        conn.touched.append((table, row))
        conn.undo.append(lambda: _drop(table.rows, row))

    async def update(self, conn: FakeConnection, table_name: str, where: Callable[[dict], bool],
                     values: dict[str, Any] | Callable[[dict], dict[str, Any]]) -> int:
        table = self._table(table_name)
        changed = 0
        for row in await self._locked_targets(conn, table, where):
            new = values(row) if callable(values) else values
            table.require(*new)
            before = dict(row)
            candidate = dict(row)
            candidate.update({c: self._store_value(table, c, v) for c, v in new.items()})
            self._check_values(table, candidate, 1407)
            self._check_keys(table, candidate, ignore=row)
            self._changing(conn, table, row)
            row.update(candidate)
            conn.undo.append(lambda row=row, before=before: (row.clear(), row.update(before)))
            changed += 1
        return changed

    async def _locked_targets(self, conn: FakeConnection, table: Table,
                              where: Callable[[dict], bool]) -> list[dict[str, Any]]:
        """The rows an UPDATE or DELETE changes, each locked: chosen as this session sees them, then checked
        again once locked (another session may have changed or removed it meanwhile), as Oracle restarts."""
        targets = []
        for row in list(table.rows):
            seen = self._seen_by(conn, row)
            if seen is None or not where(seen):
                continue
            await self.lock(conn, table.name, self._row_key(table, seen))
            if any(r is row for r in table.rows) and where(row):
                targets.append(row)
        return targets

    async def delete(self, conn: FakeConnection, table_name: str, where: Callable[[dict], bool]) -> int:
        table = self._table(table_name)
        targets = await self._locked_targets(conn, table, where)
        for row in targets:
            image = self._pending.get(id(row), (conn, dict(row)))[1]
            _drop(table.rows, row)
            if image is not None:  # the others keep seeing the committed row until this session commits
                table.deleted.append((conn, image))
                conn.touched.append((table, row))
            conn.undo.append(lambda row=row: table.rows.append(row))
        return len(targets)

    @staticmethod
    def _row_key(table: Table, row: dict[str, Any]) -> tuple:
        cols = table.keys.get(table.primary or "", tuple(sorted(table.columns)))
        return tuple(row.get(c) for c in cols)

    async def _select_for_update(self, conn: FakeConnection, table_name: str,
                                 where: Callable[[dict], bool]) -> list[dict[str, Any]]:
        """SELECT ... FOR UPDATE: lock the rows seen, then return them as they are once locked."""
        table = self._table(table_name)
        for row in self._select(table_name, where):
            await self.lock(conn, table_name, self._row_key(table, row))
        return self._select(table_name, where)

    def embed(self, text: str) -> array.array:
        if self.model not in self.models:
            raise ora_error(40284, self.model)
        return array.array("f", self.embedder.embed([text])[0].tolist())

    def _select(self, table_name: str, where: Callable[[dict], bool], *columns: str) -> list[dict[str, Any]]:
        table = self._table(table_name)
        table.require(*columns)
        return [row for row in self.visible(table) if where(row)]

    # ---- handlers: one per registry statement (name = "_" + statement name) -------------------------

    _MEMORY = ("memory_id", "content", "importance", "category", "created_at", "accessed_at", "access_count",
               "embedding_model", "source_how", "source_person", "source_session", "source_turn", "superseded_by",
               "expires_at")

    def _memory_tuple(self, row: dict[str, Any], *extra: Any) -> tuple:
        return tuple(row[c] for c in self._MEMORY) + extra

    @staticmethod
    def _current(b: dict[str, Any]) -> Callable[[dict], bool]:
        """sql._CURRENT: not superseded, not expired at ``:now``."""
        return lambda r: r["superseded_by"] is None and (r["expires_at"] is None or r["expires_at"] > b["now"])

    async def _meta_get(self, conn, b):
        return [(r["meta_value"],) for r in self._select("PICO_META", lambda r: r["meta_key"] == b["meta_key"])]

    async def _meta_all(self, conn, b):
        rows = sorted(self._select("PICO_META", lambda r: True), key=lambda r: r["meta_key"])
        return [(r["meta_key"], r["meta_value"], r["updated_at"]) for r in rows]

    async def _merge(self, conn, table: str, keys: dict[str, Any], values: dict[str, Any]) -> int:
        def match(row: dict) -> bool:
            return all(row[k] == v for k, v in keys.items())

        if await self.update(conn, table, match, values):
            return 1
        await asyncio.sleep(0)  # MERGE decides "not matched" before inserting: a racing session can insert first
        await self.insert(conn, table, {**keys, **values})
        return 1

    async def _meta_set(self, conn, b):
        return await self._merge(conn, "PICO_META", {"meta_key": b["meta_key"]},
                                 {"meta_value": b["meta_value"], "updated_at": b["now"]})

    async def _unhashed_memories(self, conn, b):
        rows = self._select("PICO_MEMORIES", lambda r: r["content_hash"] is None, "content_hash")
        return [(r["memory_id"], r["content"]) for r in rows]

    async def _set_memory_hash(self, conn, b):
        return await self.update(conn, "PICO_MEMORIES", lambda r: r["memory_id"] == b["memory_id"],
                                 {"content_hash": b["content_hash"]})

    async def _backfill_memory_model(self, conn, b):
        return await self.update(conn, "PICO_MEMORIES",
                                 lambda r: r["embedding"] is not None and r["embedding_model"] is None
                                 and len(r["embedding"]) == b["dimensions"],
                                 {"embedding_model": b["embedding_model"]})

    async def _renumber_transcripts(self, conn, b):
        groups: dict[tuple, list[dict]] = {}
        for row in self._select("PICO_TRANSCRIPTS", lambda r: True):
            groups.setdefault((row["agent_id"], row["session_key"]), []).append(row)
        changed = 0
        for rows in groups.values():
            rows.sort(key=lambda r: (r["sequence_num"] is None, r["sequence_num"] or 0, r["id"]))
            for seq, row in enumerate(rows, start=1):
                if row["sequence_num"] != seq:
                    changed += await self.update(conn, "PICO_TRANSCRIPTS", lambda r, row=row: r is row,
                                                 {"sequence_num": seq})
        return changed

    async def _notes_same_day(self, conn, b):
        rows = self._select("PICO_DAILY_NOTES", lambda r: True)
        counts: dict[tuple, int] = {}
        for row in rows:
            counts[(row["agent_id"], row["note_date"])] = counts.get((row["agent_id"], row["note_date"]), 0) + 1
        same = [r for r in rows if counts[(r["agent_id"], r["note_date"])] > 1]
        same.sort(key=lambda r: (r["agent_id"], r["note_date"], r["created_at"], r["note_id"]))
        for row in same:
            await self.lock(conn, "PICO_DAILY_NOTES", (row["note_id"],))
        return [(r["note_id"], r["agent_id"], r["note_date"], r["content"]) for r in same]

    async def _note_set_content(self, conn, b):
        return await self.update(conn, "PICO_DAILY_NOTES", lambda r: r["note_id"] == b["note_id"],
                                 {"content": b["content"], "updated_at": b["now"]})

    async def _note_delete(self, conn, b):
        return await self.delete(conn, "PICO_DAILY_NOTES", lambda r: r["note_id"] == b["note_id"])

    async def _take_migration_lock(self, conn, b):
        self._table("PICO_MIGRATION_LOCK")
        await self.lock(conn, "PICO_MIGRATION_LOCK", ())
        return 0

    async def _text_index_usable(self, conn, b):
        usable = any(t == "PICO_MEMORIES" and k == "DOMAIN" and name not in self.unusable_indexes
                     for name, (t, _, k) in self.indexes.items())
        return [(int(usable),)]

    async def _vectors_stored(self, conn, b):
        return [tuple(sum(r["embedding"] is not None for r in self._select(t, lambda r: True))
                      for t in ("PICO_MEMORIES", "PICO_DAILY_NOTES"))]

    async def _memory_id_taken(self, conn, b):
        return [(r["agent_id"],) for r in self._select("PICO_MEMORIES", lambda r: r["memory_id"] == b["memory_id"])]

    async def _embed(self, conn, b):
        return [(self.embed(b["text"]),)]

    def _mine(self, b: dict[str, Any]) -> Callable[[dict], bool]:
        return lambda r: r["agent_id"] == b["agent_id"]

    async def _memory_by_hash(self, conn, b):
        current = self._current(b)
        rows = self._select("PICO_MEMORIES", lambda r: r["agent_id"] == b["agent_id"]
                            and r["content_hash"] == b["content_hash"] and current(r), "content_hash")
        return [self._memory_tuple(r) for r in sorted(rows, key=lambda r: r["created_at"])[:1]]

    def _nearest_memories(self, b: dict[str, Any], k: int) -> list[tuple]:
        assert isinstance(b["vector"], array.array), "vectors bind as array.array"
        current = self._current(b)
        rows = self._select("PICO_MEMORIES", lambda r: r["agent_id"] == b["agent_id"] and r["embedding"] is not None
                            and r["embedding_model"] == b["embedding_model"] and current(r))
        scored = sorted((_cosine_distance(r["embedding"], b["vector"]), n, r) for n, r in enumerate(rows))
        return [self._memory_tuple(r, d) for d, _, r in scored[:k]]

    async def _memory_nearest(self, conn, b):  # FETCH APPROX: may leave out the nearest rows
        return self._nearest_memories(b, b["k"] + self.approx_misses)[self.approx_misses:][: b["k"]]

    async def _memory_nearest_exact(self, conn, b):
        return self._nearest_memories(b, 1)

    async def _memory_keyword_text(self, conn, b):
        text_indexes = [n for n, (t, _, k) in self.indexes.items() if t == "PICO_MEMORIES" and k == "DOMAIN"]
        if not text_indexes:
            raise AssertionError("CONTAINS without an Oracle Text index fails in Oracle (DRG-10599)")
        if all(name in self.unusable_indexes for name in text_indexes):
            raise ora_error(29902)  # a FAILED or UNUSABLE text index answers no query
        terms = re.findall(r"\{([^}]*)\}", b["text_query"])
        assert terms and " ACCUM ".join(f"{{{t}}}" for t in terms) == b["text_query"], b["text_query"]

        def score(row: dict) -> int:
            return sum(bool(re.search(r"\b" + r"\W+".join(map(re.escape, re.findall(r"\w+", t))) + r"\b",
                                      row["content"] or "", re.I)) for t in terms)

        rows = [r for r in self._select("PICO_MEMORIES", self._mine(b)) if score(r) and self._current(b)(r)]
        rows.sort(key=score, reverse=True)
        return [self._memory_tuple(r, r["embedding"]) for r in rows[: b["k"]]]

    # ---- the knowledge base (migration 13) ----

    _DOC = ("doc_id", "source", "title", "content_hash", "chunks", "shared", "person", "added_at")
    # UTL_TO_CHUNKS's documented JSON parameters and the values used here
    _CHUNK_PARAMS = {"by", "max", "overlap", "split", "custom_list", "vocabulary", "language", "normalize",
                     "norm_options", "extended"}
    _CHUNK_SPLITS = {"none", "newline", "blankline", "space", "recursively", "sentence", "custom"}

    def _doc_visible(self, b: dict[str, Any]) -> Callable[[dict], bool]:
        return lambda r: r["agent_id"] == b["agent_id"] and (r["person"] == b["person"] or r["shared"] == 1)

    async def _doc_get(self, conn, b):
        rows = self._select("PICO_DOCUMENTS", lambda r: r["agent_id"] == b["agent_id"] and r["doc_id"] == b["doc_id"])
        return [tuple(r[c] for c in self._DOC) for r in rows]

    async def _doc_list(self, conn, b):
        rows = sorted(self._select("PICO_DOCUMENTS", self._doc_visible(b)), key=lambda r: r["source"])
        return [tuple(r[c] for c in self._DOC) for r in rows]

    async def _doc_any(self, conn, b):
        return [(min(len(self._select("PICO_DOCUMENTS", self._doc_visible(b))), 1),)]

    async def _doc_all(self, conn, b):
        rows = sorted(self._select("PICO_DOCUMENTS", self._mine(b)), key=lambda r: r["doc_id"])
        rows.sort(key=lambda r: r["added_at"], reverse=True)
        return [tuple(r[c] for c in self._DOC) for r in rows[: b["k"]]]

    async def _doc_counts(self, conn, b):
        rows = self._select("PICO_DOCUMENTS", self._mine(b))
        return [(len(rows), sum(r["chunks"] or 0 for r in rows), sum(r["shared"] for r in rows))]

    async def _doc_ids(self, conn, b):
        rows = sorted(self._select("PICO_DOCUMENTS", self._mine(b)), key=lambda r: r["doc_id"])
        return [(r["doc_id"],) for r in rows]

    async def _doc_delete(self, conn, b):
        return await self.delete(conn, "PICO_DOCUMENTS", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["doc_id"] == b["doc_id"])

    async def _doc_chunks_delete(self, conn, b):
        return await self.delete(conn, "PICO_DOC_CHUNKS", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["doc_id"] == b["doc_id"])

    async def _doc_insert(self, conn, b):
        await self.insert(conn, "PICO_DOCUMENTS", {**{k: v for k, v in b.items() if k != "now"},
                                                   "chunks": 0, "added_at": b["now"]})
        return 1

    async def _doc_set_chunks(self, conn, b):
        count = len(self._select("PICO_DOC_CHUNKS", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["doc_id"] == b["doc_id"]))
        return await self.update(conn, "PICO_DOCUMENTS", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["doc_id"] == b["doc_id"], {"chunks": count})

    async def _doc_chunk_count(self, conn, b):
        return [(len(self._select("PICO_DOC_CHUNKS", lambda r: r["agent_id"] == b["agent_id"]
                                  and r["doc_id"] == b["doc_id"])),)]

    def utl_to_chunks(self, text: str, params: str) -> list[str]:
        """UTL_TO_CHUNKS as documented for what picoora asks: by words, MAX, OVERLAP, SPLIT by sentence or none."""
        from picoora.store.chunker import _by_sentences, _by_words

        spec = json.loads(params)
        unknown = set(spec) - self._CHUNK_PARAMS
        assert not unknown, f"UTL_TO_CHUNKS has no parameter {sorted(unknown)}"
        assert spec.get("by") in ("words", "chars", "characters", "vocabulary"), spec
        size, overlap = int(spec["max"]), int(spec.get("overlap", 0))
        assert 10 <= size <= 1000 and 0 <= overlap < size, spec  # "max" for words is 10 to 1000
        assert spec.get("split", "recursively") in self._CHUNK_SPLITS, spec
        cut = _by_sentences if spec.get("split") == "sentence" else _by_words
        return [chunk[:MAX_STRING_BYTES] for chunk in cut(text, size, overlap)]  # chunk_data is VARCHAR2(4000)

    async def _doc_chunks_insert(self, conn, b):
        docs = self._select("PICO_DOCUMENTS", lambda r: r["agent_id"] == b["agent_id"] and r["doc_id"] == b["doc_id"])
        inserted = 0
        for doc in docs:
            for page in json.loads(doc["pages"]):
                for chunk in self.utl_to_chunks(page["text"], b["params"]):
                    await self.insert(conn, "PICO_DOC_CHUNKS", {
                        "doc_id": doc["doc_id"], "agent_id": doc["agent_id"], "person": doc["person"],
                        "shared": doc["shared"], "chunk_no": inserted, "page_no": page["page"], "chunk_text": chunk,
                        "embedding": self.embed(chunk), "embedding_model": b["embedding_model"]})
                    inserted += 1
        return inserted

    def _chunk_tuple(self, row: dict[str, Any], vector: Any) -> tuple:
        distance = _cosine_distance(row["embedding"], vector) if vector is not None and row["embedding"] else None
        return (row["doc_id"], row["chunk_no"], row["page_no"], row["chunk_text"], distance)

    async def _doc_nearest(self, conn, b):
        assert isinstance(b["vector"], array.array), "vectors bind as array.array"
        rows = self._select("PICO_DOC_CHUNKS", lambda r: self._doc_visible(b)(r) and r["embedding"] is not None
                            and r["embedding_model"] == b["embedding_model"])
        scored = sorted((self._chunk_tuple(r, b["vector"]) for r in rows), key=lambda t: t[4])
        return scored[self.approx_misses:][: b["k"]]

    def _doc_terms_match(self, terms: list[str], row: dict) -> int:
        return sum(bool(re.search(r"\b" + r"\W+".join(map(re.escape, re.findall(r"\w+", t))) + r"\b",
                                  row["chunk_text"] or "", re.I)) for t in terms)

    async def _doc_keyword_text(self, conn, b):
        text_indexes = [n for n, (t, _, k) in self.indexes.items() if t == "PICO_DOC_CHUNKS" and k == "DOMAIN"]
        if not text_indexes or all(name in self.unusable_indexes for name in text_indexes):
            raise ora_error(29902)  # DRG-10599: column is not indexed
        terms = re.findall(r"\{([^}]*)\}", b["text_query"])
        rows = [r for r in self._select("PICO_DOC_CHUNKS", self._doc_visible(b)) if self._doc_terms_match(terms, r)]
        rows.sort(key=lambda r: self._doc_terms_match(terms, r), reverse=True)
        return [self._chunk_tuple(r, b["vector"]) for r in rows[: b["k"]]]

    async def _doc_keyword_scan(self, conn, b):
        if _utf8_len(b["pattern"]) > REGEXP_MAX_BYTES:
            raise ora_error(12733)
        pattern = re.compile(b["pattern"], re.I)
        rows = [r for r in self._select("PICO_DOC_CHUNKS", self._doc_visible(b))
                if pattern.search(r["chunk_text"] or "")]
        return [self._chunk_tuple(r, b["vector"]) for r in rows[: b["k"]]]

    async def _memory_keyword_scan(self, conn, b):
        if _utf8_len(b["pattern"]) > REGEXP_MAX_BYTES:
            raise ora_error(12733)
        pattern = re.compile(b["pattern"], re.I)
        rows = [r for r in self._select("PICO_MEMORIES", self._mine(b))
                if pattern.search(r["content"] or "") and self._current(b)(r)]
        rows.sort(key=lambda r: r["created_at"], reverse=True)
        return [self._memory_tuple(r, r["embedding"]) for r in rows[: b["k"]]]

    async def _memory_insert(self, conn, b):
        await self.insert(conn, "PICO_MEMORIES", {**{k: v for k, v in b.items() if k != "now"}, "updated_at": b["now"]})
        return 1

    async def _memory_supersede(self, conn, b):
        return await self.update(conn, "PICO_MEMORIES", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["memory_id"] == b["memory_id"] and r["superseded_by"] is None,
                                 {"superseded_by": b["superseded_by"], "updated_at": b["now"]})

    async def _backfill_memory_provenance(self, conn, b):
        return await self.update(conn, "PICO_MEMORIES", lambda r: r["source_how"] is None, {"source_how": "unknown"})

    async def _memory_raise_importance(self, conn, b):
        return await self.update(conn, "PICO_MEMORIES", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["memory_id"] == b["memory_id"] and r["importance"] < b["importance"],
                                 {"importance": b["importance"], "updated_at": b["now"]})

    async def _memory_get(self, conn, b):
        rows = self._select("PICO_MEMORIES",
                            lambda r: r["agent_id"] == b["agent_id"] and r["memory_id"] == b["memory_id"])
        return [self._memory_tuple(r) for r in rows]

    async def _memory_list(self, conn, b):
        rows = sorted(self._select("PICO_MEMORIES", self._mine(b)), key=lambda r: r["memory_id"])
        rows.sort(key=lambda r: r["created_at"], reverse=True)
        return [self._memory_tuple(r) for r in rows[: b["k"]]]

    async def _memory_delete(self, conn, b):
        return await self.delete(conn, "PICO_MEMORIES", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["memory_id"] == b["memory_id"])

    async def _memory_touch(self, conn, b):
        return await self.update(conn, "PICO_MEMORIES", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["memory_id"] == b["memory_id"],
                                 lambda r: {"access_count": (r["access_count"] or 0) + 1, "accessed_at": b["now"]})

    async def _memory_contents(self, conn, b):
        rows = sorted(self._select("PICO_MEMORIES", self._mine(b)), key=lambda r: r["memory_id"])
        return [(r["memory_id"], r["content"]) for r in rows]

    async def _memory_set_embedding(self, conn, b):
        rows = self._select("PICO_MEMORIES",
                            lambda r: r["agent_id"] == b["agent_id"] and r["memory_id"] == b["memory_id"])
        vector = self.embed(b["text"]) if rows else None
        return await self.update(conn, "PICO_MEMORIES", lambda r: r in rows, {
            "embedding": vector, "embedding_model": b["embedding_model"], "updated_at": b["now"]})

    def _day(self, b: dict[str, Any]) -> Callable[[dict], bool]:
        day = datetime(b["note_date"].year, b["note_date"].month, b["note_date"].day)
        return lambda r: r["agent_id"] == b["agent_id"] and r["note_date"] == day

    async def _note_lock(self, conn, b):
        assert type(b["note_date"]) is date, "note dates bind as datetime.date"
        rows = await self._select_for_update(conn, "PICO_DAILY_NOTES", self._day(b))
        return [(r["note_id"], r["content"]) for r in rows]

    async def _note_insert(self, conn, b):
        await self.insert(conn, "PICO_DAILY_NOTES", {
            "note_id": b["note_id"], "agent_id": b["agent_id"], "note_date": b["note_date"], "content": b["content"],
            "embedding": b["embedding"], "created_at": b["now"], "updated_at": b["now"]})
        return 1

    async def _note_update(self, conn, b):
        return await self.update(conn, "PICO_DAILY_NOTES", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["note_id"] == b["note_id"],
                                 {"content": b["content"], "embedding": b["embedding"], "updated_at": b["now"]})

    async def _note_recent(self, conn, b):
        low = datetime(b["since"].year, b["since"].month, b["since"].day)
        high = datetime(b["today"].year, b["today"].month, b["today"].day)
        rows = self._select("PICO_DAILY_NOTES",
                            lambda r: r["agent_id"] == b["agent_id"] and low <= r["note_date"] <= high)
        return [(r["note_date"], r["content"]) for r in sorted(rows, key=lambda r: r["note_date"], reverse=True)]

    async def _note_search(self, conn, b):
        rows = self._select("PICO_DAILY_NOTES", lambda r: r["agent_id"] == b["agent_id"] and r["embedding"] is not None
                            and len(r["embedding"]) == b["dimensions"])
        scored = sorted(((_cosine_distance(r["embedding"], b["vector"]), n, r) for n, r in enumerate(rows)),
                        key=lambda t: t[:2])
        return [(r["note_date"], r["content"], d) for d, _, r in scored[: b["k"]]]

    async def _note_list(self, conn, b):
        rows = sorted(self._select("PICO_DAILY_NOTES", self._mine(b)), key=lambda r: r["note_date"], reverse=True)
        return [(r["note_date"], r["note_id"], r["content"], r["updated_at"],
                 "yes" if r["embedding"] is not None else "no") for r in rows[: b["k"]]]

    def _session(self, b: dict[str, Any]) -> Callable[[dict], bool]:
        return lambda r: r["agent_id"] == b["agent_id"] and r["session_key"] == b["session_key"]

    async def _session_get(self, conn, b):
        rows = self._select("PICO_SESSIONS", self._session(b))
        return [(r["messages"], r["summary"], r["created_at"], r["updated_at"]) for r in rows]

    async def _session_lock(self, conn, b):
        rows = await self._select_for_update(conn, "PICO_SESSIONS", self._session(b))
        return [(r["messages"], r["summary"]) for r in rows]

    async def _session_insert(self, conn, b):
        await self.insert(conn, "PICO_SESSIONS", {
            "session_key": b["session_key"], "agent_id": b["agent_id"], "messages": b["messages"],
            "summary": b["summary"], "created_at": b["now"], "updated_at": b["now"]})
        return 1

    async def _session_restore(self, conn, b):
        await self.insert(conn, "PICO_SESSIONS", {
            "session_key": b["session_key"], "agent_id": b["agent_id"], "messages": b["messages"],
            "summary": b["summary"], "created_at": b["created_at"], "updated_at": b["updated_at"]})
        return 1

    async def _session_update(self, conn, b):
        return await self.update(conn, "PICO_SESSIONS", self._session(b),
                                 {"messages": b["messages"], "summary": b["summary"], "updated_at": b["now"]})

    async def _session_delete(self, conn, b):
        return await self.delete(conn, "PICO_SESSIONS", self._session(b))

    async def _session_list(self, conn, b):
        rows = sorted(self._select("PICO_SESSIONS", self._mine(b)), key=lambda r: r["session_key"])
        rows.sort(key=lambda r: r["updated_at"], reverse=True)
        return [(r["session_key"], r["messages"], r["summary"], r["created_at"], r["updated_at"]) for r in rows]

    async def _transcript_last_seq(self, conn, b):
        rows = self._select("PICO_TRANSCRIPTS", self._session(b))
        return [(max((r["sequence_num"] for r in rows), default=0),)]

    async def _transcript_insert(self, conn, b):
        await self.insert(conn, "PICO_TRANSCRIPTS",
                          {**{k: v for k, v in b.items() if k != "now"}, "created_at": b["now"]})
        return 1

    async def _transcript_read(self, conn, b):
        rows = sorted(self._select("PICO_TRANSCRIPTS", self._session(b)), key=lambda r: r["sequence_num"])
        rows = rows[-b["k"]:] if b["k"] > 0 else []
        return [(r["sequence_num"], r["role"], r["content"], r["message_json"], r["created_at"]) for r in rows]

    async def _transcript_keys(self, conn, b):
        return [(key,) for key in sorted({r["session_key"] for r in self._select("PICO_TRANSCRIPTS", self._mine(b))})]

    async def _transcript_recent(self, conn, b):
        rows = sorted(self._select("PICO_TRANSCRIPTS", self._mine(b)), key=lambda r: r["id"], reverse=True)
        return [(r["session_key"], r["sequence_num"], r["role"], r["content"], r["message_json"], r["created_at"])
                for r in rows[: b["k"]]]

    async def _trace_insert(self, conn, b):
        await self.insert(conn, "PICO_TRACES", {**{k: v for k, v in b.items() if k != "now"}, "created_at": b["now"]})
        return 1

    async def _trace_get(self, conn, b):
        return [(r["trace_json"],) for r in self._select("PICO_TRACES", lambda r: r["agent_id"] == b["agent_id"]
                                                          and r["trace_id"] == b["trace_id"])]

    def _newest_trace(self, where: Callable[[dict], bool]) -> list[tuple]:
        rows = sorted(self._select("PICO_TRACES", where), key=lambda r: r["created_at"], reverse=True)
        return [(r["trace_json"],) for r in rows[:1]]

    async def _trace_last(self, conn, b):
        return self._newest_trace(self._mine(b))

    async def _trace_last_in_session(self, conn, b):
        return self._newest_trace(self._session(b))

    async def _tool_output_insert(self, conn, b):
        await self.insert(conn, "PICO_TOOL_OUTPUTS", {**{k: v for k, v in b.items() if k != "now"},
                                                      "created_at": b["now"]})
        return 1

    async def _tool_output_get(self, conn, b):
        rows = self._select("PICO_TOOL_OUTPUTS", lambda r: r["agent_id"] == b["agent_id"]
                            and r["handle"] == b["handle"] and r["created_at"] >= b["oldest"])
        return [(r["session_key"], r["turn_id"], r["tool_name"], r["content"], r["created_at"]) for r in rows]

    async def _tool_output_expire(self, conn, b):
        return await self.delete(conn, "PICO_TOOL_OUTPUTS",
                                 lambda r: r["agent_id"] == b["agent_id"] and r["created_at"] < b["oldest"])

    async def _memory_vectors_missing(self, conn, b):
        rows = self._select("PICO_MEMORIES", lambda r: r["agent_id"] == b["agent_id"] and (
            r["embedding"] is None or r["embedding_model"] != b["embedding_model"]))
        return [(len(rows),)]

    def _background_set(self, b: dict[str, Any]) -> list[dict[str, Any]]:
        return self._select("PICO_BACKGROUND_QUESTIONS", lambda r: r["embedding_model"] == b["embedding_model"]
                            and r["set_hash"] == b["set_hash"])

    async def _background_count(self, conn, b):
        return [(len(self._background_set(b)),)]

    async def _background_best(self, conn, b):
        assert isinstance(b["vector"], array.array), "vectors bind as array.array"
        rows = self._background_set(b)
        cosines = [1.0 - _cosine_distance(r["embedding"], b["vector"]) for r in rows if r["embedding"] is not None]
        return [(len(rows), max(cosines) if cosines else None)]  # MAX over no rows is NULL

    async def _background_lock(self, conn, b):
        self._table("PICO_BACKGROUND_QUESTIONS")
        await self.lock(conn, "PICO_BACKGROUND_QUESTIONS", ())
        return 0

    async def _background_clear(self, conn, b):
        return await self.delete(conn, "PICO_BACKGROUND_QUESTIONS",
                                 lambda r: r["embedding_model"] == b["embedding_model"])

    async def _background_insert(self, conn, b):
        await self.insert(conn, "PICO_BACKGROUND_QUESTIONS", {
            **{k: v for k, v in b.items() if k != "now"}, "embedding": self.embed(b["content"]),
            "created_at": b["now"]})
        return 1

    async def _lease_renew(self, conn, b):
        now = self.systimestamp()
        return await self.update(conn, "PICO_LEASES", lambda r: r["lease_name"] == b["lease_name"] and (
            r["holder"] == b["holder"] or r["expires_at"] <= now), lambda r: {
            "acquired_at": r["acquired_at"] if r["holder"] == b["holder"] else now, "holder": b["holder"],
            "expires_at": now + timedelta(seconds=b["seconds"])})

    async def _lease_take(self, conn, b):
        now = self.systimestamp()
        await self.insert(conn, "PICO_LEASES", {
            "lease_name": b["lease_name"], "holder": b["holder"], "acquired_at": now,
            "expires_at": now + timedelta(seconds=b["seconds"])})
        return 1

    async def _lease_release(self, conn, b):
        return await self.delete(conn, "PICO_LEASES", lambda r: r["lease_name"] == b["lease_name"]
                                 and r["holder"] == b["holder"])

    async def _lease_purge(self, conn, b):
        cutoff = self.systimestamp() - timedelta(seconds=b["seconds"])
        return await self.delete(conn, "PICO_LEASES", lambda r: r["expires_at"] < cutoff)

    async def _database_time(self, conn, b):
        return [(self.systimestamp(),)]

    async def _ping(self, conn, b):
        return [(1,)]

    async def _kv_get(self, table: str, key_col: str, value_col: str, b) -> list[tuple]:
        rows = self._select(table, lambda r: r["agent_id"] == b["agent_id"] and r[key_col] == b[key_col])
        return [(r[value_col],) for r in rows]

    async def _kv_all(self, table: str, key_col: str, value_col: str, b) -> list[tuple]:
        rows = sorted(self._select(table, self._mine(b)), key=lambda r: r[key_col])
        return [(r[key_col], r[value_col], r["updated_at"]) for r in rows]

    async def _state_get(self, conn, b):
        return await self._kv_get("PICO_STATE", "state_key", "state_value", b)

    async def _state_all(self, conn, b):
        return await self._kv_all("PICO_STATE", "state_key", "state_value", b)

    async def _state_delete(self, conn, b):
        return await self.delete(conn, "PICO_STATE", lambda r: r["agent_id"] == b["agent_id"]
                                 and r["state_key"] == b["state_key"])

    async def _state_set(self, conn, b):
        return await self._merge(conn, "PICO_STATE", {"state_key": b["state_key"], "agent_id": b["agent_id"]},
                                 {"state_value": b["state_value"], "updated_at": b["now"]})

    async def _config_get(self, conn, b):
        return await self._kv_get("PICO_CONFIG", "config_key", "config_value", b)

    async def _config_all(self, conn, b):
        return await self._kv_all("PICO_CONFIG", "config_key", "config_value", b)

    async def _config_set(self, conn, b):
        return await self._merge(conn, "PICO_CONFIG", {"config_key": b["config_key"], "agent_id": b["agent_id"]},
                                 {"config_value": b["config_value"], "updated_at": b["now"]})

    async def _prompt_get(self, conn, b):
        rows = self._select("PICO_PROMPTS", lambda r: r["agent_id"] == b["agent_id"]
                            and r["prompt_name"] in (b["prompt_name"], b["legacy_name"]))
        return [(r["prompt_name"], r["content"]) for r in rows]

    async def _prompt_all(self, conn, b):
        return await self._kv_all("PICO_PROMPTS", "prompt_name", "content", b)

    async def _prompt_set(self, conn, b):
        return await self._merge(conn, "PICO_PROMPTS", {"prompt_name": b["prompt_name"], "agent_id": b["agent_id"]},
                                 {"content": b["content"], "updated_at": b["now"]})

    async def _stats(self, conn, b):
        tables = ("PICO_MEMORIES", "PICO_DAILY_NOTES", "PICO_SESSIONS", "PICO_TRANSCRIPTS", "PICO_STATE",
                  "PICO_PROMPTS", "PICO_CONFIG")
        counts = tuple(len(self._select(t, self._mine(b))) for t in tables)
        return [counts + (len(self._table("PICO_META").rows),)]

    async def _model_loaded(self, conn, b):
        return [(int(b["model_name"] in self.models),)]

    async def _models(self, conn, b):
        return [(name, function, algorithm) for name, (function, algorithm) in sorted(self.models.items())]

    async def _pico_indexes(self, conn, b):
        return [(name, table, kind, "UNUSABLE" if name in self.unusable_indexes else "VALID")
                for name, (table, _, kind) in sorted(self.indexes.items()) if name.startswith("IDX_PICO_")]

    async def _vector_index_kinds(self, conn, b):
        return [(name, self.index_subtypes.get(name), "UNUSABLE" if name in self.unusable_indexes else "VALID")
                for name, (_, _, kind) in sorted(self.indexes.items())
                if kind == "VECTOR" and name.startswith("IDX_PICO_")]

    async def _self_test(self, conn, b):
        return [(len(self.embed(b["text"])),)]

    def _load_model(self, name: str) -> int:
        if name in self.models:
            raise ora_error(40204, name)
        self.models[name] = ("EMBEDDING", "ONNX")
        return 0

    async def _load_onnx_blob(self, conn, b):
        assert isinstance(b["model_data"], FakeLob) and b["model_data"].data, "the model goes in as a BLOB"
        assert '"function":"embedding"' in b["metadata"].replace(" ", "")
        return self._load_model(b["model_name"])

    async def _load_onnx_directory(self, conn, b):
        return self._load_model(b["model_name"])

    async def _load_onnx_cloud(self, conn, b):
        assert b["uri"].startswith("https://")
        return self._load_model(b["model_name"])


# ---- connection, cursor, pool --------------------------------------------------------------------------


@dataclass
class FakeLob:
    kind: Any
    data: bytes | str


@dataclass
class FakeVar:
    type: Any
    arraysize: int


class FakeCursor:
    def __init__(self, conn: FakeConnection):
        self._conn = conn
        self._rows: list[tuple] = []
        self.rowcount = 0

    def var(self, kind: Any, arraysize: int = 1, **_: Any) -> FakeVar:
        return FakeVar(kind, arraysize)

    def _bound(self, value: Any, arraysize: int) -> Any:
        """A datetime goes to the server as DATE (whole seconds) unless the input type handler makes it TIMESTAMP."""
        if not isinstance(value, datetime):
            return value
        handler = self._conn.inputtypehandler
        var = handler(self, value, arraysize) if handler else None
        return value if var is not None and var.type is oracledb.DB_TYPE_TIMESTAMP else value.replace(microsecond=0)

    async def execute(self, sql: str, parameters: dict | None = None, **keywords: Any) -> None:
        check_driver_keywords("execute", keywords)
        await self._execute(sql, parameters, keywords.get("fetch_lobs"), array_dml=False)

    async def _execute(self, sql: str, parameters: dict | None, fetch_lobs: Any, *, array_dml: bool) -> None:
        binds = {k: self._bound(v, 1) for k, v in dict(parameters or {}).items()}
        result = await self._conn.db.execute(self._conn, sql, binds, fetch_lobs=fetch_lobs, array_dml=array_dml)
        if isinstance(result, list):
            self._rows, self.rowcount = result, len(result)
        else:
            self._rows, self.rowcount = [], int(result or 0)

    async def executemany(self, sql: str, rows: list[dict], **keywords: Any) -> None:
        check_driver_keywords("executemany", keywords)
        self._conn.db.array_dml.append(len(rows))
        total = 0
        for row in rows:
            await self._execute(sql, row, None, array_dml=True)
            total += self.rowcount
        self.rowcount = total

    async def fetchall(self) -> list[tuple]:
        rows, self._rows = self._rows, []
        return rows

    def close(self) -> None:
        self._rows = []


class FakeConnection:
    def __init__(self, db: FakeOracle):
        self.db = db
        self.undo: list[Callable[[], Any]] = []
        self.held: set[tuple] = set()
        self.touched: list[tuple[Table, dict[str, Any]]] = []  # rows this transaction changed
        self.finished = asyncio.Event()  # set when this session ends a transaction holding locks
        self.running: set[asyncio.Task[Any]] = set()  # calls in progress (on the database loop)
        self.call_timeout = 0
        self.inputtypehandler: Callable[..., Any] | None = None
        self.closed = False
        self.killed = False  # closed under a running call by a forced pool close

    @property
    def transaction_in_progress(self) -> bool:
        return bool(self.undo or self.held or self.touched)

    def cursor(self) -> FakeCursor:
        if self.closed:
            raise driver_error(1001)
        return FakeCursor(self)

    def _end(self) -> None:
        self.undo.clear()
        self.db.end_transaction(self)
        self.finished.set()
        self.finished = asyncio.Event()

    def commit_now(self) -> None:
        self._end()

    async def commit(self) -> None:
        if self.db.down or self.killed:
            raise driver_error(4011)
        await on_database_loop(self._commit_here())

    async def _commit_here(self) -> None:
        self._end()

    async def rollback(self) -> None:
        await on_database_loop(self.rollback_here())

    async def rollback_here(self) -> None:
        for step in reversed(self.undo):
            step()
        self._end()

    async def createlob(self, kind: Any, data: bytes | None = None) -> FakeLob:
        return FakeLob(kind, data or b"")


class FakePool:
    def __init__(self, db: FakeOracle, params: dict[str, Any]):
        self.db = db
        self.params = params
        self._slots = asyncio.Semaphore(params.get("max", 4))
        self.closed = False
        self.released: list[FakeConnection] = []  # connections given back for reuse
        self.lent: list[FakeConnection] = []  # connections acquired and not yet released
        self.dropped: list[FakeConnection] = []  # sessions taken out of the pool (broken or cut off)

    def acquire(self) -> Any:
        return self._acquire()

    async def _acquire(self) -> FakeConnection:
        if self.closed:
            raise driver_error(1002)
        if self.db.silent:
            await asyncio.Event().wait()  # a listener that accepts and never answers
        if self.db.down:
            raise driver_error(6005)
        if self.db.refuse is not None:
            raise self.db.refuse
        await self._slots.acquire()
        self.db.open_connections += 1
        self.db.connections.append(FakeConnection(self.db))
        self.lent.append(self.db.connections[-1])
        return self.db.connections[-1]

    async def release(self, conn: FakeConnection) -> None:
        self.released.append(conn)
        _drop(self.lent, conn)
        await conn.rollback()  # an open transaction is rolled back on release, as the driver does
        conn.closed = True
        self.db.open_connections -= 1
        self._slots.release()

    @property
    def busy(self) -> int:
        return len(self.lent)

    async def drop(self, conn: FakeConnection) -> None:
        """The session leaves the pool (ended: its transaction rolled back); the others go on."""
        _drop(self.lent, conn)
        await on_database_loop(self.db.kill(conn))
        conn.closed = True
        self.dropped.append(conn)
        self.db.open_connections -= 1
        self._slots.release()

    async def close(self, force: bool = False) -> None:
        """Like the driver: refused while connections are out (DPY-1005) unless ``force``, which ends
        their sessions under any call they are running."""
        if self.lent and not force:
            raise driver_error(1005)
        self.closed = True
        for conn in list(self.lent):
            await on_database_loop(self.db.kill(conn))

