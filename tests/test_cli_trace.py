"""``picoora trace``: the last turn's trace from a real CLI process, on the file backend."""

from __future__ import annotations

import json

import pytest

from picoora.store.files import FileStore
from tests.cli_support import closed_port_url_config, run_cli
from tests.trace_checks import check_trace, run_traced_turn


@pytest.mark.slow
def test_trace_last_json_shows_what_the_turn_did(isolated_home):
    closed_port_url_config(isolated_home)
    store = FileStore(isolated_home / "workspace")
    turn_id = run_traced_turn(store, isolated_home / "workspace")
    store.close()

    last = run_cli("trace", "last", "--json", home=isolated_home)
    assert last.returncode == 0, last.stderr
    check_trace(json.loads(last.stdout), turn_id)

    by_id = run_cli("trace", turn_id, home=isolated_home)
    assert by_id.returncode == 0, by_id.stderr
    assert f"Turn {turn_id}" in by_id.stdout and "recall(" in by_id.stdout and "Ended     answer" in by_id.stdout

    in_session = run_cli("trace", "last", "-s", "web:trace", "--json", home=isolated_home)
    assert json.loads(in_session.stdout)["turn_id"] == turn_id


def test_trace_of_nothing_says_so(isolated_home):
    closed_port_url_config(isolated_home)
    result = run_cli("trace", "last", "-s", "nobody", home=isolated_home)
    assert result.returncode == 1 and "no trace" in result.stderr and "Traceback" not in result.stderr
