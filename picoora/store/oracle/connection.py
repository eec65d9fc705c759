"""Connecting to Oracle without ever hanging: connect parameters per mode, deadlines, error wording.

python-oracledb's thin *synchronous* ``connect()`` can hang forever on a listener that accepts and
never answers (``tcp_connect_timeout`` only covers the TCP handshake), and a hung sync connect blocks
every other sync connect in the process. So the whole backend runs on the driver's asyncio API, on a
private event loop in one daemon thread: every pool acquire is under ``asyncio.wait_for``, every
round trip under the connection's ``call_timeout``, and the caller's thread waits with a timeout too.
Callers (the synchronous ``Store`` methods) see plain blocking calls.

A failure that means "the connection is gone" (network, call timeout, killed session) drops that one
connection from the pool: the calls of its healthy neighbours go on, and the next operation gets a fresh
connection (that is the reconnect). The whole pool is replaced only when even the drop fails, or when an
acquire fails while no connection is out (a connect stuck on a silent listener would block the pool).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from picoora.store.base import StoreError

if TYPE_CHECKING:
    from picoora.config import OracleConfig
    from picoora.store.oracle.sql import Sql

T = TypeVar("T")

# Oracle's rule for unquoted identifiers (DBMS_VECTOR model names follow it): binds cannot name objects,
# so anything interpolated into SQL must match this first.
_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_$#]{0,122}$")

# Errors after which the session is unusable: the pool is discarded and rebuilt on the next operation.
_CONNECTION_LOST = frozenset({
    "DPY-1001", "DPY-4011", "DPY-4024", "DPY-6005", "DPI-1080",
    "ORA-00028", "ORA-01012", "ORA-02396", "ORA-03113", "ORA-03114", "ORA-03135", "ORA-12170",
})
_RETRY_HINT = "Nothing was changed; the next operation reconnects."
# The oldest python-oracledb with every driver feature used here: ``fetch_lobs=`` on ``execute`` came in 3.4
# (on 2.x every query fails with DPY-2005). pyproject.toml requires the same version; a test keeps them equal.
MIN_DRIVER_VERSION = (3, 4)
_CODE = re.compile(r"\b(ORA|DPY|DPI|TNS)-(\d{4,5})\b")
_SIMILAR_TO = re.compile(r"Similar to ORA-(?:ORA-)?(\d{4,5})")  # DPY-6000 names the listener's ORA code this way
_SHUTDOWN_SECONDS = 2.0
PROBE_SECONDS = 30.0  # the open-time checks: a few catalogue reads (migrations get their own deadline)
UNIQUE_VIOLATED = "ORA-00001"  # another session inserted the same key first


class OracleUnavailable(Exception):
    """Oracle cannot be used right now. ``reason`` is one of: config, unreachable, timeout, credentials,
    service, schema, model, error; ``str(err)`` says what failed and what to run."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def validate_identifier(name: str, what: str = "ONNX model name") -> str:
    """``name`` upper-cased if it is a safe unquoted Oracle identifier, else ``ValueError``."""
    if not _IDENTIFIER.match(name or ""):
        raise ValueError(
            f"{what} {name!r} is not a valid Oracle identifier (a letter, then letters, digits, _ $ #; "
            "at most 123 characters)"
        )
    return name.upper()


def error_code(exc: BaseException) -> str:
    """``"ORA-00955"`` / ``"DPY-6005"`` for a python-oracledb error, ``""`` for anything else."""
    args = getattr(exc, "args", ())
    full = getattr(args[0], "full_code", "") if args else ""
    return full or ""


def error_codes(exc: BaseException) -> list[str]:
    """Every error code in ``exc``, the errors it wraps and their messages, outermost first.

    Thin mode reports a failed connect as DPY-6005 and puts the real reason (a refused TCP connect, the
    listener's ORA-12514, ORA-01017) in the wrapped error: classify by all of them, not the first."""
    found: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        codes = [error_code(current)] + [f"{kind}-{int(num):05d}" if kind == "ORA" else f"{kind}-{num}"
                                         for kind, num in _CODE.findall(str(current))]
        codes += [f"ORA-{int(num):05d}" for num in _SIMILAR_TO.findall(str(current))]
        found += [code for code in codes if code and code not in found]
        current = current.__cause__ or current.__context__
    return found


def driver_version(version: str) -> tuple[int, ...]:
    """``"26.1.0"`` -> (26, 1, 0); a pre-release suffix is ignored."""
    return tuple(int(part) for part in re.findall(r"^\d+|(?<=\.)\d+", version))


def require_driver() -> None:
    """``OracleUnavailable`` when python-oracledb is missing (the ``oracle`` extra) or older than the code needs."""
    from picoora.extras import missing

    problem = missing("oracle")
    if problem is not None:
        raise OracleUnavailable("config", problem)
    import oracledb

    if driver_version(oracledb.__version__)[:2] < MIN_DRIVER_VERSION:
        need = ".".join(map(str, MIN_DRIVER_VERSION))
        raise OracleUnavailable("config", f"python-oracledb {oracledb.__version__} is too old for picoora "
                                          f"(it needs {need} or newer): pip install 'oracledb>={need}'")


def bind_timestamps(cursor: Any, value: Any, arraysize: int) -> Any:
    """Input type handler: a ``datetime`` goes to the server as TIMESTAMP, not DATE (the driver's default,
    which drops the fractional seconds that keep "newest first" free of ties). Covers ``executemany`` too."""
    if isinstance(value, datetime):
        import oracledb

        return cursor.var(oracledb.DB_TYPE_TIMESTAMP, arraysize=arraysize)
    return None


def error_text(exc: BaseException) -> str:
    """The driver's message without its CONNECTION_ID noise and on one line."""
    args = getattr(exc, "args", ())
    text = str(getattr(args[0], "message", "") if args else "") or str(exc) or type(exc).__name__
    text = re.sub(r"\s*\(CONNECTION_ID=[^)]*\)", "", text)
    lines = [line for line in text.splitlines() if not line.startswith("Help: ")]  # thin mode appends a URL
    return " ".join(" ".join(lines).split())


def target_of(config: OracleConfig) -> str:
    """Where we connect, for messages and stats: never a password."""
    if config.mode == "freepdb":
        return f"{config.host}:{config.port}/{config.service}"
    dsn = re.sub(r"^[^/@()\s]+/[^@\s]*@", "", config.dsn.strip())  # drop a user/password@ prefix
    if config.mode == "adb":
        return f"{dsn or '(wallet default alias)'} (wallet {config.wallet_path})"
    return dsn


def wallet_alias(wallet_dir: Path) -> str:
    """The alias to use from a wallet's tnsnames.ora: the first ``*_low`` one (least contention), else the first."""
    text = (wallet_dir / "tnsnames.ora").read_text(encoding="utf-8", errors="replace")
    aliases = re.findall(r"^\s*([A-Za-z][\w.-]*)\s*=", text, flags=re.MULTILINE)
    if not aliases:
        raise OracleUnavailable("config", f"{wallet_dir / 'tnsnames.ora'} names no database alias; "
                                          "download the wallet again or set oracle.dsn")
    low = [alias for alias in aliases if alias.lower().endswith("_low")]
    return (low or aliases)[0]


def connect_params(config: OracleConfig) -> dict[str, Any]:
    """Keyword arguments for ``oracledb.connect_async`` / ``create_pool_async`` for the configured mode.

    User and password are always passed separately (never merged into a DSN), so a full descriptor or
    an Easy Connect string works in every mode."""
    params: dict[str, Any] = {
        "user": config.user,
        "password": config.password,
        "tcp_connect_timeout": config.connect_timeout_seconds,
    }
    if config.mode == "freepdb":
        params.update(host=config.host, port=config.port, service_name=config.service)
    elif config.mode == "dsn":
        if not config.dsn.strip():
            raise OracleUnavailable("config", "oracle.mode is \"dsn\" but oracle.dsn is empty; set it to an "
                                              "Easy Connect string (host:1521/service) or a full descriptor")
        params["dsn"] = config.dsn.strip()
    else:  # adb: mTLS with a wallet directory holding tnsnames.ora + ewallet.pem
        wallet = Path(config.wallet_path).expanduser()
        if not config.wallet_path or not (wallet / "tnsnames.ora").is_file():
            raise OracleUnavailable("config", "oracle.mode is \"adb\" but oracle.wallet_path "
                                              f"({config.wallet_path or 'empty'})"
                                              " is not an unzipped wallet directory with tnsnames.ora")
        params.update(
            dsn=config.dsn.strip() or wallet_alias(wallet),
            config_dir=str(wallet),
            wallet_location=str(wallet),
            wallet_password=config.wallet_password or None,
        )
    return params


def explain_connect_failure(config: OracleConfig, exc: BaseException) -> OracleUnavailable:
    """Turn a failed connect into the sentence a person needs: what happened and what to do."""
    where = target_of(config)
    if isinstance(exc, OracleUnavailable):
        return exc
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return OracleUnavailable("timeout", f"Oracle at {where} did not answer within "
                                            f"{config.connect_timeout_seconds:g} s "
                                            "(is the database still starting?). Check it with: picoora setup-oracle")
    if isinstance(exc, (socket.gaierror, ConnectionError)):  # the driver lets a failed name lookup through
        return OracleUnavailable("unreachable", f"Cannot reach Oracle at {where} ({exc.strerror or exc}). Start "
                                                "it (scripts/setup-oracle.sh) or fix oracle.host / oracle.port / "
                                                "oracle.dsn")
    code, text, codes = error_code(exc), error_text(exc), set(error_codes(exc))
    if "ORA-01017" in codes:
        return OracleUnavailable("credentials", f"Oracle at {where} refused user {config.user!r}: wrong user or "
                                                "password. Set oracle.user / oracle.password (or PICO_ORACLE_PASSWORD)")
    locked = codes & {"ORA-28000", "ORA-28001"}
    if locked:
        return OracleUnavailable("credentials", f"Oracle account {config.user!r} is locked or expired ({min(locked)}); "
                                                "unlock it as an administrator")
    if codes & {"ORA-12514", "ORA-12505", "DPY-6001", "DPY-6003"}:
        return OracleUnavailable("service", f"Oracle at {where} is running but does not know that service ({text}). "
                                            "Check oracle.service (FREEPDB1 on Oracle Database Free) or oracle.dsn")
    if codes & {"DPY-6005", "ORA-12541", "ORA-12170", "DPY-4011"}:
        return OracleUnavailable("unreachable", f"Cannot reach Oracle at {where} ({text}). Start it "
                                                "(scripts/setup-oracle.sh) or fix oracle.host / oracle.port / "
                                                "oracle.dsn")
    return OracleUnavailable("error", f"Cannot connect to Oracle at {where}: "
                                      f"{code + ': ' if code and code not in text else ''}{text}")


MAX_STRING_BYTES = 4000  # VARCHAR2 binds under MAX_STRING_SIZE=STANDARD (the Free default)


class Tx:
    """What a unit of work sees: one pooled connection, one transaction, statements from the registry.

    Queries always run with ``fetch_lobs=False`` so CLOBs come back as ``str``. A string over 4000 bytes
    (a long prompt, a 100 KB tool result) is sent as a temporary CLOB: as a plain str the driver would
    bind it as LONG, which Oracle accepts only as an INSERT or UPDATE value, not in a MERGE (ORA-01461)
    nor in array DML (ORA-01478)."""

    def __init__(self, conn: Any, model: str):
        self._conn = conn
        self._model = model

    def _sql(self, stmt: Sql) -> str:
        return stmt.render(self._model)

    async def _binds(self, binds: dict[str, Any]) -> dict[str, Any]:
        # (len(v) * 4 first: a string of at most 1000 characters cannot be over 4000 bytes, no need to encode)
        large = [k for k, v in binds.items() if isinstance(v, str) and len(v) * 4 > MAX_STRING_BYTES
                 and len(v.encode("utf-8")) > MAX_STRING_BYTES]
        if not large:
            return binds
        import oracledb

        return {**binds, **{k: await self._conn.createlob(oracledb.DB_TYPE_CLOB, binds[k]) for k in large}}

    async def rows(self, stmt: Sql, **binds: Any) -> list[tuple]:
        cursor = self._conn.cursor()
        try:
            await cursor.execute(self._sql(stmt), await self._binds(binds), fetch_lobs=False)
            return list(await cursor.fetchall())
        finally:
            cursor.close()

    async def one(self, stmt: Sql, **binds: Any) -> tuple | None:
        found = await self.rows(stmt, **binds)
        return found[0] if found else None

    async def run(self, stmt: Sql, **binds: Any) -> int:
        """DML, DDL or PL/SQL; returns the affected row count (0 for DDL/PL/SQL)."""
        cursor = self._conn.cursor()
        try:
            await cursor.execute(self._sql(stmt), await self._binds(binds))
            return max(cursor.rowcount or 0, 0)
        finally:
            cursor.close()

    async def run_many(self, stmt: Sql, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        cursor = self._conn.cursor()
        try:
            await cursor.executemany(self._sql(stmt), [await self._binds(row) for row in rows])
        finally:
            cursor.close()

    async def blob(self, data: bytes) -> Any:
        """A temporary BLOB holding ``data`` (for binds larger than a RAW can carry)."""
        import oracledb

        return await self._conn.createlob(oracledb.DB_TYPE_BLOB, data)

    async def commit(self) -> None:
        await self._conn.commit()

    async def rollback(self) -> None:
        await self._conn.rollback()


PoolFactory = Callable[..., Any]


def _default_pool_factory(**params: Any) -> Any:
    import oracledb

    return oracledb.create_pool_async(**params)


class Database:
    """A pool of async connections driven from a private event-loop thread, with deadlines everywhere.

    ``run(work)`` executes ``await work(tx)`` in one transaction: committed when ``work`` returns,
    rolled back when it raises. Driver errors come out as ``StoreError`` with a readable message;
    ``OracleUnavailable`` is used only by :meth:`probe` (the open-time check)."""

    def __init__(self, config: OracleConfig, *, pool_factory: PoolFactory | None = None,
                 call_timeout_seconds: float = 30.0):
        if pool_factory is None:
            require_driver()
        self.config = config
        self.model = validate_identifier(config.onnx_model)
        self.target = target_of(config)
        self._params = connect_params(config)
        self._pool_factory = pool_factory or _default_pool_factory
        self._call_timeout = call_timeout_seconds
        self._pool: Any = None
        self._closing: set[asyncio.Future] = set()
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="picoora-oracle", daemon=True)
        self._thread.start()

    # -- running work -------------------------------------------------------------------------------

    def run(self, work: Callable[[Tx], Awaitable[T]], *, what: str, timeout: float | None = None) -> T:
        """Run ``work`` in a transaction; ``what`` completes "Oracle could not <what>" in errors."""
        try:
            return self._call(self._transaction(work, timeout or self._call_timeout), timeout)
        except Exception as exc:
            raise self._store_error(exc, what) from None

    async def arun(self, work: Callable[[Tx], Awaitable[T]], *, what: str, timeout: float | None = None) -> T:
        """:meth:`run` for a coroutine on another event loop: the caller's loop awaits the private loop's
        future (no thread per call); same deadlines, same errors."""
        if self._closed:
            raise StoreError("The Oracle store is closed.")
        if asyncio.get_running_loop() is self._loop:
            raise RuntimeError("Database.arun must not be awaited on the database's own event loop")
        future = asyncio.run_coroutine_threadsafe(self._transaction(work, timeout or self._call_timeout), self._loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self._outer_limit(timeout))
        except Exception as exc:
            raise self._store_error(exc, what) from None

    def run_holding(self, lock: Callable[[Tx], Awaitable[Any]], work: Callable[[Tx], Awaitable[T]], *, what: str,
                    timeout: float) -> T:
        """Run ``work`` in its own transaction while a second session holds what ``lock`` takes (released
        when both end). For locks the work's own DDL would drop by committing. Needs ``pool_max >= 2``."""
        async def holding(lock_tx: Tx) -> T:
            await lock(lock_tx)
            return await self._transaction(work, timeout)

        return self.run(holding, what=what, timeout=timeout + self.config.connect_timeout_seconds + 5.0)

    def _store_error(self, exc: Exception, what: str) -> Exception:
        """What a failed unit of work raises: StoreError with a readable message for driver errors and
        deadlines (never a traceback), anything else unchanged."""
        if isinstance(exc, StoreError):
            return exc
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            return StoreError(f"Oracle could not {what}: no answer from {self.target} in time. {_RETRY_HINT}")
        code = error_code(exc)
        if not code and isinstance(exc, OSError):  # a reconnect whose host name no longer resolves
            return StoreError(f"Oracle could not {what}: cannot reach {self.target} ({exc.strerror or exc}). "
                              f"{_RETRY_HINT}")
        if not code:
            return exc
        hint = _RETRY_HINT if code in _CONNECTION_LOST else "The change was rolled back."
        return StoreError(f"Oracle could not {what}: {error_text(exc)}. {hint}")

    def probe(self, work: Callable[[Tx], Awaitable[T]]) -> T:
        """Like :meth:`run`, for the open-time checks: failures become ``OracleUnavailable``."""
        try:
            return self._call(self._transaction(work, PROBE_SECONDS), PROBE_SECONDS)
        except Exception as exc:
            if not error_code(exc) and not isinstance(exc, (TimeoutError, OSError, OracleUnavailable)):
                raise
            raise explain_connect_failure(self.config, exc) from None

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        if self._closed:
            coro.close()
            raise StoreError("The Oracle store is closed.")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(self._outer_limit(timeout))
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None

    def _outer_limit(self, timeout: float | None) -> float:
        # The inner deadlines always fire first; this outer one only guards against a stuck loop.
        return self.config.connect_timeout_seconds + (timeout or self._call_timeout) + 5.0

    async def _transaction(self, work: Callable[[Tx], Awaitable[T]], timeout: float) -> T:
        pool = self._ensure_pool()
        try:
            conn = await asyncio.wait_for(pool.acquire(), self.config.connect_timeout_seconds)
        except BaseException:
            if not pool.busy:  # nothing healthy in it: a fresh pool next time (this one may hold a stuck connect)
                await self._discard_pool(pool)
            raise
        healthy = True
        try:
            conn.call_timeout = int(timeout * 1000)
            conn.inputtypehandler = bind_timestamps
            tx = Tx(conn, self.model)
            result = await asyncio.wait_for(work(tx), timeout)
            if conn.transaction_in_progress:  # reads need no commit round trip
                await conn.commit()
            return result
        except BaseException as exc:
            healthy = error_code(exc) not in _CONNECTION_LOST and not isinstance(
                exc, (asyncio.TimeoutError, TimeoutError, asyncio.CancelledError))
            if healthy:
                await self._quietly(conn.rollback())
            raise
        finally:
            if healthy:
                await self._quietly(pool.release(conn))
            else:
                await self._drop(pool, conn)

    async def _drop(self, pool: Any, conn: Any) -> None:
        """Take one broken or cut-off session out of the pool; if even that fails, replace the pool."""
        try:
            await asyncio.wait_for(pool.drop(conn), _SHUTDOWN_SECONDS)
        except Exception:  # noqa: BLE001 - a pool that cannot drop a session is not to be trusted
            await self._discard_pool(pool)

    def _ensure_pool(self) -> Any:
        if self._pool is None:
            self._pool = self._pool_factory(
                **self._params,
                min=self.config.pool_min,
                max=max(self.config.pool_max, 2),  # run_holding needs a second session
                increment=1,
                ping_interval=10,  # an idle connection older than this is pinged before reuse
            )
        return self._pool

    async def _discard_pool(self, pool: Any) -> None:
        """Forget a pool whose connections may be dead or stuck; its close runs in the background, since
        closing a pool with a connect stuck on a silent listener waits for that connect."""
        if self._pool is pool:
            self._pool = None
        closing = asyncio.ensure_future(self._close_pool(pool))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    @classmethod
    async def _close_pool(cls, pool: Any) -> None:
        await cls._quietly(pool.close(force=True))

    @staticmethod
    async def _quietly(step: Awaitable[Any]) -> None:
        try:
            await asyncio.wait_for(step, _SHUTDOWN_SECONDS)
        except Exception:  # cleanup of a connection that is already broken: nothing useful to report
            return

    # -- shutting down ------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(_SHUTDOWN_SECONDS * 3)
        except Exception:  # a hung driver task must not keep the process from exiting
            pass
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_SHUTDOWN_SECONDS)
        if not self._thread.is_alive():
            self._loop.close()

    async def _shutdown(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await self._close_pool(pool)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        if others:
            await asyncio.wait(others, timeout=_SHUTDOWN_SECONDS)
