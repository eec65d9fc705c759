"""``picoora gateway`` as a real process: what it prints, binding rules, SIGTERM with a turn in flight."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from picoora.gateway.binding import BindingRefused, effective_token, is_loopback
from picoora.store.files import FileStore
from tests.cli_support import REPO, run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply

TOKEN = "lifecycle-token-42"


def start_gateway(home: Path, *args: str) -> tuple[subprocess.Popen, str, list[str]]:
    """Start ``picoora gateway --port 0``; returns the process, its base URL and the banner lines."""
    env = {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1"}
    process = subprocess.Popen([sys.executable, "-m", "picoora", "gateway", "--port", "0", *args], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"the gateway exited: {process.wait()} {process.stderr.read()}")
        lines.append(line.rstrip("\n"))
        if line.startswith("Stop with"):
            url = re.search(r"listening on (http://\S+)", lines[0]).group(1)
            return process, url, lines
    process.kill()
    raise AssertionError(f"no banner: {lines}")


def gateway_home(home: Path, ollama_url: str, **gateway) -> None:
    path = write_config(home, ollama_url=ollama_url)
    data = json.loads(path.read_text())
    data["gateway"] = {"token": TOKEN, **gateway}
    path.write_text(json.dumps(data))


def transcript(home: Path, key: str) -> list[tuple[str, str]]:
    store = FileStore(home / "workspace")
    try:
        return [(e.message.role, e.message.content) for e in store.transcripts.read(key)]
    finally:
        store.close()


def test_sigterm_lets_the_turn_in_flight_finish_records_it_and_exits_0(isolated_home):
    release = threading.Event()

    def slow(body: dict) -> Reply:
        release.wait(20)
        return Reply(content="finished during shutdown")

    with FakeOllama(responder=slow) as fake:
        gateway_home(isolated_home, fake.url, shutdown_seconds=20)
        process, url, banner = start_gateway(isolated_home)
        try:
            assert f"  web chat:  {url}/?token=<gateway.token> (the token is in the config, kept out of logs)" in banner
            assert TOKEN not in "\n".join(banner)  # stdout is a pipe here, as in a service's journal
            assert any(line.startswith(f"  MCP:       {url}/mcp ") for line in banner)
            headers = {"Authorization": f"Bearer {TOKEN}"}
            answers: list[httpx.Response] = []
            asking = threading.Thread(target=lambda: answers.append(httpx.post(
                url + "/v1/chat", json={"session_id": "inflight", "text": "take your time"}, headers=headers,
                timeout=30)))
            asking.start()
            while not fake.requests:  # the turn is at the model
                time.sleep(0.02)
            process.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            with pytest.raises(httpx.HTTPError):  # no new connections once stopping
                httpx.post(url + "/v1/chat", json={"text": "too late"}, headers=headers, timeout=2)
            release.set()
            asking.join(30)
            code = process.wait(30)
        finally:
            release.set()
            if process.poll() is None:
                process.kill()
    assert code == 0, process.stderr.read()
    assert answers[0].status_code == 200 and answers[0].json()["text"] == "finished during shutdown"
    assert transcript(isolated_home, "web:inflight") == [("user", "take your time"),
                                                           ("assistant", "finished during shutdown")]
    assert "stopped" in process.stdout.read()


@pytest.mark.slow
def test_a_turn_past_the_deadline_is_cancelled_its_message_kept_and_the_exit_is_still_0(isolated_home):
    release = threading.Event()
    with FakeOllama(responder=lambda body: (release.wait(20), Reply(content="too slow"))[1]) as fake:
        gateway_home(isolated_home, fake.url, shutdown_seconds=1)
        process, url, _ = start_gateway(isolated_home)
        try:
            with httpx.stream("POST", url + "/v1/chat",
                              json={"session_id": "late", "text": "a long job", "stream": True},
                              headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as response:
                next(response.iter_lines())
                while not fake.requests:
                    time.sleep(0.02)
                started = time.monotonic()
                process.send_signal(signal.SIGINT)
                code = process.wait(15)
                took = time.monotonic() - started
        finally:
            release.set()
            if process.poll() is None:
                process.kill()
    assert code == 0, process.stderr.read()
    assert took < 8
    assert transcript(isolated_home, "web:late")[0] == ("user", "a long job")
    assert "Traceback" not in process.stderr.read()


@pytest.mark.slow
def test_without_a_configured_token_a_one_off_token_protects_the_run(isolated_home):
    with FakeOllama() as fake:
        write_config(isolated_home, ollama_url=fake.url)
        process, url, banner = start_gateway(isolated_home)
        try:
            token = re.search(r"\?token=(\S+)", "\n".join(banner)).group(1)
            assert len(token) >= 32 and any("made up for this run" in line for line in banner)
            assert httpx.get(url + "/v1/sessions").status_code == 401
            assert httpx.get(url + "/v1/sessions", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(15) == 0


def test_listening_off_loopback_without_a_token_is_refused(isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    result = run_cli("gateway", "--host", "0.0.0.0", "--port", "0", home=isolated_home)
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in result.stderr and "Traceback" not in result.stderr


def test_a_port_in_use_is_one_clear_line(isolated_home):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        write_config(isolated_home, ollama_url="http://127.0.0.1:9")
        result = run_cli("gateway", "--port", str(port), home=isolated_home)
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
                                            ("127.8.9.10", True), ("0.0.0.0", False), ("::", False),
                                            ("192.168.1.5", False), ("example.com", False), ("", False)])
def test_loopback_detection(host, loopback):
    assert is_loopback(host) is loopback


def test_token_rules():
    assert effective_token("0.0.0.0", "set") == ("set", False)
    token, made_up = effective_token("127.0.0.1", "")
    assert made_up and len(token) >= 32 and token != effective_token("127.0.0.1", "")[0]
    with pytest.raises(BindingRefused, match="PICO_GATEWAY_TOKEN"):
        effective_token("10.0.0.1", "")


def test_the_token_comes_from_the_environment(isolated_home, monkeypatch):
    from picoora.config import load_config

    monkeypatch.setenv("PICO_GATEWAY_TOKEN", "from-env")
    assert load_config(write_config(isolated_home, ollama_url="http://127.0.0.1:9")).gateway.token == "from-env"


def test_help_stays_free_of_fastapi_and_uvicorn():
    code = ("import sys; from picoora.cli.app import build_app; import typer.testing as t; "
            "t.CliRunner().invoke(build_app(), ['gateway', '--help']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'uvicorn', 'starlette')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=30)
    assert result.stdout.strip() == "[]", result.stderr


def test_print_systemd_unit_as_a_system_unit_for_this_user_or_a_user_unit(isolated_home):
    pytest.importorskip("picoora.gateway.systemd", reason="the unit writer (picoora/gateway/systemd.py) is not merged")
    import getpass

    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    system = run_cli("gateway", "--print-systemd-unit", home=isolated_home)
    assert system.returncode == 0, system.stderr
    assert f"User={getpass.getuser()}" in system.stdout and "WantedBy=multi-user.target" in system.stdout
    assert f"ReadWritePaths={isolated_home.resolve()}" in system.stdout
    assert f"--config {(isolated_home / 'config.json').resolve()} gateway" in system.stdout
    user = run_cli("gateway", "--print-systemd-unit", "--user-unit", home=isolated_home)
    assert "User=" not in user.stdout and "WantedBy=default.target" in user.stdout


def test_print_systemd_unit_keeps_the_host_and_port_given(isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    unit = run_cli("gateway", "--print-systemd-unit", "--port", "19123", "--host", "0.0.0.0", home=isolated_home)
    assert unit.returncode == 0, unit.stderr
    assert f"--config {(isolated_home / 'config.json').resolve()} gateway --host 0.0.0.0 --port 19123\n" in unit.stdout


def recording_runtime(log: list[str], fail: bool = False):
    """A GatewayRuntime recording when it starts and stops and whether the assistant was open."""
    from picoora.gateway.runtime.services import GatewayRuntime

    class Recording(GatewayRuntime):
        async def start(self) -> None:
            log.append(f"start (store open: {self.assistant.store is not None})")
            if fail:
                raise RuntimeError("a channel cannot start")
            self.started = ["turn service", "channel test"]

        async def stop_intake(self) -> None:
            log.append("stop intake")
            await super().stop_intake()

        async def close(self) -> None:
            log.append("close")
            await super().close()

    return Recording


def test_the_runtime_starts_on_the_open_assistant_and_stops_before_it_closes(isolated_home):
    from tests.fakes.gateway_kit import RunningGateway, gateway_config

    log: list[str] = []
    with FakeOllama() as fake:
        gw = RunningGateway(gateway_config(isolated_home, fake.url), recording_runtime(log))
        with gw:
            assert gw.gateway.service_lines == ["turn service", "channel test"]
            assert log == ["start (store open: True)"]
        assert log == ["start (store open: True)", "stop intake", "close"]
        assert gw.gateway.assistant is None  # closed after the runtime stopped


def test_a_runtime_that_cannot_start_is_stopped_and_the_gateway_does_not_serve(isolated_home):
    from tests.fakes.gateway_kit import RunningGateway, gateway_config

    log: list[str] = []
    with FakeOllama() as fake:
        with pytest.raises(RuntimeError, match="did not start"):
            with RunningGateway(gateway_config(isolated_home, fake.url), recording_runtime(log, fail=True)):
                pass
    assert log == ["start (store open: True)", "stop intake", "close"]


@pytest.mark.slow
def test_the_real_runtime_runs_beside_the_http_app(isolated_home):
    with FakeOllama() as fake:
        gateway_home(isolated_home, fake.url)
        process, _, banner = start_gateway(isolated_home)
        process.send_signal(signal.SIGTERM)
        assert process.wait(15) == 0
    services = next(line for line in banner if line.startswith("  services:"))
    assert "turn service" in services


def test_the_banner_carries_the_token_only_when_asked():
    from picoora.config import Config
    from picoora.gateway.server import banner
    from picoora.gateway.state import Gateway

    state = Gateway(config=Config(), token="s3cret-token")
    shown = "\n".join(banner(state, 18790, show_token=True))
    assert "web chat:  http://127.0.0.1:18790/?token=s3cret-token" in shown
    assert "s3cret-token" not in "\n".join(banner(state, 18790, show_token=False))
