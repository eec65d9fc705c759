"""Turn traces on the Oracle backend (over the fake connection), and ``picoora trace`` reading them."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from picoora.cli import trace_cmd
from picoora.config import save_config
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
