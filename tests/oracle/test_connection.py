"""Connecting with the real python-oracledb driver, no server needed: parameters per mode, wallets, and the
two ways a connect can fail without an answer (closed port, silent listener) ending as OracleUnavailable."""

from __future__ import annotations

import asyncio
import socket
import threading

import oracledb
import pytest

from picoora.store.oracle import OracleUnavailable, open_oracle_store
from picoora.store.oracle.connection import (
    connect_params,
    error_text,
    explain_connect_failure,
    target_of,
    validate_identifier,
)
from tests.oracle.conftest import oracle_config
from tests.oracle.fake_db import driver_error, ora_error

TNSNAMES = """
# written by the ADB console
mydb_high = (description=(retry_count=20)(retry_delay=3)(address=(protocol=tcps)(port=1522)(host=adb.eu-frankfurt-1.oraclecloud.com))(connect_data=(service_name=abc_mydb_high.adb.oraclecloud.com))(security=(ssl_server_dn_match=yes)))
mydb_low = (description=(retry_count=20)(retry_delay=3)(address=(protocol=tcps)(port=1522)(host=adb.eu-frankfurt-1.oraclecloud.com))(connect_data=(service_name=abc_mydb_low.adb.oraclecloud.com))(security=(ssl_server_dn_match=yes)))
"""  # noqa: E501 (one line per alias, as the ADB console writes the file)


def _parsed(params: dict) -> oracledb.ConnectParams:
    """What the driver makes of our keyword arguments (the DSN parsed as the driver parses it)."""
    extra = {k: v for k, v in params.items() if k not in ("dsn", "password", "wallet_password")}
    cp = oracledb.ConnectParams(**extra)
    if "dsn" in params:
        cp.parse_connect_string(params["dsn"])
    return cp


def test_freepdb_mode_builds_host_port_service():
    config = oracle_config(host="db.local", port=1600, service="FREEPDB1", user="picoora", connect_timeout_seconds=3)
    params = connect_params(config.oracle)
    cp = _parsed(params)
    assert (cp.host, cp.port, cp.service_name, cp.user, cp.tcp_connect_timeout) == (
        "db.local", 1600, "FREEPDB1", "picoora", 3)
    assert params["password"] == "s3cret-Pw"
    assert "s3cret" not in target_of(config.oracle) and target_of(config.oracle) == "db.local:1600/FREEPDB1"


@pytest.mark.parametrize("dsn, host, port, service", [
    ("dbhost:1522/ORCLPDB1", "dbhost", 1522, "ORCLPDB1"),
    ("(description=(address=(protocol=tcp)(host=h2)(port=1531))(connect_data=(service_name=S2)))", "h2", 1531, "S2"),
])
def test_dsn_mode_keeps_the_dsn_and_applies_user_and_password(dsn, host, port, service):
    config = oracle_config(mode="dsn", dsn=dsn, user="app")
    params = connect_params(config.oracle)
    assert (params["user"], params["password"], params["dsn"]) == ("app", "s3cret-Pw", dsn)
    cp = _parsed(params)
    assert (cp.host, cp.port, cp.service_name) == (host, port, service)


def test_dsn_mode_hides_credentials_written_into_the_dsn():
    config = oracle_config(mode="dsn", dsn="scott/tiger@dbhost:1521/ORCL")
    assert target_of(config.oracle) == "dbhost:1521/ORCL"


def test_adb_mode_resolves_the_low_alias_from_the_wallet(tmp_path):
    (tmp_path / "tnsnames.ora").write_text(TNSNAMES)
    config = oracle_config(mode="adb", wallet_path=str(tmp_path), wallet_password="walletpw", user="ADMIN")
    params = connect_params(config.oracle)
    assert params["dsn"] == "mydb_low"
    assert params["config_dir"] == params["wallet_location"] == str(tmp_path)
    assert params["wallet_password"] == "walletpw"
    cp = _parsed(params)  # the alias resolved through config_dir, as the driver does at connect time
    assert (cp.host, cp.port, cp.protocol) == ("adb.eu-frankfurt-1.oraclecloud.com", 1522, "tcps")
    assert cp.service_name == "abc_mydb_low.adb.oraclecloud.com"
    explicit = connect_params(oracle_config(mode="adb", wallet_path=str(tmp_path), dsn="mydb_high").oracle)
    assert _parsed(explicit).service_name == "abc_mydb_high.adb.oraclecloud.com"


def test_adb_mode_without_a_wallet_is_a_config_problem(tmp_path):
    with pytest.raises(OracleUnavailable) as err:
        connect_params(oracle_config(mode="adb", wallet_path=str(tmp_path)).oracle)
    assert err.value.reason == "config" and "tnsnames.ora" in str(err.value)
    with pytest.raises(OracleUnavailable, match="oracle.dsn is empty"):
        connect_params(oracle_config(mode="dsn").oracle)


def test_the_driver_accepts_every_pool_parameter_we_pass():
    """A pool with min=0 connects lazily, so this checks our keyword arguments without a server."""
    from picoora.store.oracle.connection import Database

    config = oracle_config(pool_min=0, pool_max=3)

    async def build():
        db_params = connect_params(config.oracle)
        pool = oracledb.create_pool_async(**db_params, min=0, max=3, increment=1, ping_interval=10)
        assert (pool.min, pool.max, pool.opened) == (0, 3, 0)
        await pool.close()

    asyncio.run(build())
    db = Database(config.oracle)
    db.close()


def test_model_names_must_be_identifiers():
    assert validate_identifier("all_minilm_l12_v2") == "ALL_MINILM_L12_V2"
    for bad in ("", "1abc", "model; DROP TABLE x", "a-b", "x" * 124):
        with pytest.raises(ValueError):
            validate_identifier(bad)
    with pytest.raises(OracleUnavailable) as err:
        open_oracle_store(oracle_config(onnx_model="bad name"))
    assert err.value.reason == "config" and "oracle.onnx_model" in str(err.value)


def test_driver_errors_become_sentences():
    config = oracle_config().oracle
    refused = explain_connect_failure(config, driver_error(6005))
    assert refused.reason == "unreachable" and "Cannot reach Oracle at localhost:1521/FREEPDB1" in str(refused)
    assert "CONNECTION_ID" not in str(refused) and "Help:" not in error_text(driver_error(6005))
    assert explain_connect_failure(config, TimeoutError()).reason == "timeout"
    assert "ORA-00955" in error_text(ora_error(955))


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


class SilentListener:
    """Accepts TCP connections and never says a word (python-oracledb issue #451)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self):
        self.sock.close()
        for conn in self.accepted:
            conn.close()


def _open_in_thread(config) -> BaseException | None:
    """Open the store in a worker; the join timeout only guards the test run against a real hang."""
    outcome: list[BaseException | None] = []

    def target():
        try:
            open_oracle_store(config).close()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(60)
    assert outcome, "opening the store hung"
    return outcome[0]


def test_closed_port_is_reported_as_unreachable():
    err = _open_in_thread(oracle_config(host="127.0.0.1", port=_closed_port(), connect_timeout_seconds=2))
    assert isinstance(err, OracleUnavailable) and err.reason == "unreachable"
    assert "DPY-6005" in str(err) and "scripts/setup-oracle.sh" in str(err)


def test_silent_listener_hits_the_deadline_and_later_connects_still_work():
    listener = SilentListener()
    try:
        err = _open_in_thread(oracle_config(host="127.0.0.1", port=listener.port, connect_timeout_seconds=1))
        assert isinstance(err, OracleUnavailable) and err.reason == "timeout"
        assert listener.accepted, "the driver did reach the listener"
        # the stuck attempt must not block the next one (the sync API would: see offline.md section 5)
        again = _open_in_thread(oracle_config(host="127.0.0.1", port=_closed_port(), connect_timeout_seconds=1))
        assert isinstance(again, OracleUnavailable) and again.reason == "unreachable"
    finally:
        listener.close()
