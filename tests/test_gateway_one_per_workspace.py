"""One gateway per file workspace (issue 18): a second ``picoora gateway`` on the same workspace refuses with
the first one's PID and port; a ``kill -9``ed gateway never blocks a restart; ``picoora agent`` runs beside."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from picoora.store.base import StoreError
from picoora.store.files import FileStore
from picoora.store.files.service_lock import ServiceBusy
from tests.cli_support import REPO, run_cli
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.test_gateway_lifecycle import gateway_home, start_gateway


def _port(url: str) -> int:
    return int(re.search(r":(\d+)$", url).group(1))


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(20)


@pytest.mark.slow
def test_a_second_gateway_refuses_naming_the_first_and_a_killed_one_never_blocks_a_restart(isolated_home):
    with FakeOllama(responder=lambda body: Reply(content="hello")) as fake:
        gateway_home(isolated_home, fake.url)
        first, url, _ = start_gateway(isolated_home)
        try:
            second = run_cli("gateway", "--port", "0", home=isolated_home, timeout=60)
            assert second.returncode == 1, second.stderr
            lines = [line for line in second.stderr.splitlines() if line.strip()]
            assert len(lines) == 1 and "Traceback" not in second.stderr, second.stderr
            assert lines[0].startswith("Error: another picoora gateway (PID ")
            assert f"PID {first.pid}, port {_port(url)}" in lines[0]
            assert str(isolated_home / "workspace") in lines[0]
            assert first.poll() is None  # the first one was not disturbed

            first.send_signal(signal.SIGKILL)
            first.wait(10)
            again, again_url, banner = start_gateway(isolated_home)  # the kernel dropped the dead one's lock
            try:
                note = json.loads((isolated_home / "workspace" / ".picoora" / "gateway.json").read_text())
                assert note["pid"] == again.pid and note["port"] == _port(again_url) and note["started"]
            finally:
                _stop(again)
            assert again.returncode == 0
            assert not (isolated_home / "workspace" / ".picoora" / "gateway.json").exists()  # a clean stop's note goes
        finally:
            if first.poll() is None:
                first.kill()
                first.wait(10)


@pytest.mark.slow
def test_an_agent_runs_beside_a_gateway_on_the_same_workspace(isolated_home):
    with FakeOllama(responder=lambda body: Reply(content="an answer beside the gateway")) as fake:
        gateway_home(isolated_home, fake.url)
        gateway, _, _ = start_gateway(isolated_home)
        try:
            result = run_cli("agent", "-m", "hello from the terminal", home=isolated_home, timeout=60)
            assert result.returncode == 0, result.stderr
            assert "an answer beside the gateway" in result.stdout
            assert gateway.poll() is None
        finally:
            _stop(gateway)
        assert gateway.returncode == 0


def test_the_lock_is_one_holder_at_a_time_and_free_again_after_release(tmp_path):
    store, other = FileStore(tmp_path / "ws"), FileStore(tmp_path / "ws")
    try:
        with store.exclusive_service_lock("gateway", {"port": 18790}):
            with pytest.raises(ServiceBusy) as refused:
                with other.exclusive_service_lock("gateway", {"port": 18791}):
                    pass
            assert refused.value.holder["pid"] == os.getpid() and refused.value.holder["port"] == 18790
            assert isinstance(refused.value, StoreError)
        with other.exclusive_service_lock("gateway", {"port": 18791}):
            note = json.loads((tmp_path / "ws" / ".picoora" / "gateway.json").read_text())
            assert note["port"] == 18791
    finally:
        store.close()
        other.close()


def test_a_crashed_holders_stale_note_is_not_named(tmp_path):
    """The note of a process that died is not shown as the holder (its PID may be anyone's by now)."""
    private = tmp_path / "ws" / ".picoora"
    private.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          cwd=REPO).stdout.strip()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(private / 'gateway.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\n"
        "time.sleep(30)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        (private / "gateway.json").write_text(json.dumps({"pid": int(dead), "port": 1234, "started": "then"}))
        store = FileStore(tmp_path / "ws")
        try:
            started = time.monotonic()
            with pytest.raises(ServiceBusy) as refused:
                with store.exclusive_service_lock("gateway", {"port": 1}):
                    pass
            assert time.monotonic() - started < 5
        finally:
            store.close()
        assert refused.value.holder == {} and "PID" not in str(refused.value)
        assert str(refused.value).startswith("another picoora gateway is already serving the workspace")
    finally:
        holder.kill()
        holder.wait(10)


def test_on_oracle_there_is_no_workspace_lock(monkeypatch):
    from picoora.store import open_store
    from tests.oracle.conftest import oracle_config, set_up_schema
    from tests.oracle.fake_db import FakeOracle

    fake = FakeOracle()
    monkeypatch.setattr("picoora.store.oracle.connection._default_pool_factory", fake.pool_factory)
    config = oracle_config()
    set_up_schema(fake, config)
    store = open_store(config)
    try:
        assert store.backend == "oracle" and store.exclusive_service_lock("gateway", {"port": 1}) is None
    finally:
        store.close()
