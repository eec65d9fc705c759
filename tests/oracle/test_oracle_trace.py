"""Turn traces on the Oracle backend (over the fake connection), and ``picoora trace`` reading them."""

from __future__ import annotations

import json
import re

import typer
from typer.testing import CliRunner

from picoora.cli import trace_cmd
from picoora.config import save_config
from picoora.store.base import TurnTrace
from picoora.store.oracle import sql as q
from picoora.store.oracle.schema import LATEST_VERSION
from tests.oracle.conftest import oracle_config, set_up_schema
from tests.oracle.fake_db import FakeOracle
from tests.trace_checks import SECRET, check_trace, run_traced_turn


def test_trace_last_json_on_oracle(isolated_home, monkeypatch):
    fake = FakeOracle()
    monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
    config = oracle_config()
    save_config(config)
    set_up_schema(fake, config)
    from picoora.store.oracle import open_oracle_store

    store = open_oracle_store(config)
    turn_id = run_traced_turn(store, isolated_home)
    store.close()
    assert fake.rows("PICO_TRACES") and SECRET not in repr(fake.rows("PICO_TRACES"))

    cli = typer.Typer()

    @cli.callback()
    def root(ctx: typer.Context) -> None:
        ctx.obj = {"config_path": None}

    trace_cmd.register(cli)
    result = CliRunner().invoke(cli, ["trace", "last", "--json"])
    assert result.exit_code == 0, result.output
    check_trace(json.loads(result.output), turn_id)


def test_each_trace_lookup_is_served_by_an_index(fake, config):
    """``trace <id>`` by the primary key; ``trace last`` (per session or not) reads an index whose columns are
    its equality columns and then ``created_at``, backwards, stopping at the first row."""
    set_up_schema(fake, config)
    indexes = [cols for table, cols, kind in fake.indexes.values() if table == "PICO_TRACES" and kind == "NORMAL"]
    indexes += list(fake.tables["PICO_TRACES"].keys.values())
    for stmt, is_last in ((q.TRACE_GET, False), (q.TRACE_LAST, True), (q.TRACE_LAST_IN_SESSION, True)):
        equal = set(re.findall(r"(\w+) = :\w+", stmt.text))
        order = re.findall(r"ORDER BY (\w+) DESC FETCH FIRST 1 ROWS ONLY$", stmt.text)
        assert bool(order) == is_last, stmt.name
        assert any(set(cols[:len(equal)]) == equal and list(cols[len(equal):len(equal) + len(order)]) == order
                   for cols in indexes), f"{stmt.name}: no index on {sorted(equal)} then {order}"


def test_a_schema_of_version_8_gets_the_newest_trace_index(fake, config):
    set_up_schema(fake, config)
    del fake.indexes["idx_pico_traces_recent"]
    for row in fake.rows("PICO_META"):
        if row["meta_key"] == "schema_version":
            row["meta_value"] = "8"
    from picoora.store.oracle import open_oracle_store

    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    try:
        assert store.meta.get("schema_version") == str(LATEST_VERSION)
        assert fake.indexes["idx_pico_traces_recent"] == ("PICO_TRACES", ("agent_id", "created_at"), "NORMAL")
        store.traces.append(TurnTrace("t1", "web:a"))
        assert store.traces.last().turn_id == "t1"
    finally:
        store.close()
