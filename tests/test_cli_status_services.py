"""``picoora status`` on the gateway's side: the gateway on its port (running or not, token set), each enabled
channel, the scheduled jobs with the next run, the heartbeat's last beat and every session's model choice,
as lines for people and typed facts in ``--json`` (no secret in either)."""

from __future__ import annotations

import json
import signal

import pytest

from picoora import __version__
from picoora.gateway.runtime.heartbeat import LAST_BEAT
from picoora.session_models import encode_choice, state_key
from picoora.store.files import FileStore
from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url, free_port
from tests.fakes.ollama_server import FakeOllama
from tests.test_gateway_lifecycle import TOKEN, gateway_home, start_gateway

BOT_TOKEN = "123456:secret-bot-token"


def _line(output: str, label: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"{label}:"))


@pytest.mark.slow
def test_channels_jobs_heartbeat_and_session_choices_as_lines_and_typed_facts(isolated_home):
    path = write_config(isolated_home, ollama_url=closed_port_url())
    data = json.loads(path.read_text())
    data["gateway"] = {"port": free_port(), "token": TOKEN}
    data["channels"] = {"telegram": {"enabled": True, "token": BOT_TOKEN, "allow_from": ["5", "@ana"],
                                     "api_base": closed_port_url()}}
    data["heartbeat"] = {"enabled": True, "interval": 30}
    path.write_text(json.dumps(data))
    added = run_cli("cron", "add", "every", "2h", "Summarise my notes", home=isolated_home)
    assert added.returncode == 0, added.stderr
    store = FileStore(isolated_home / "workspace")
    store.state.set(LAST_BEAT, json.dumps({"at": "2026-12-01T08:00:00+00:00", "outcome": "ok", "detail": None}))
    store.state.set(state_key("web:kitchen"), encode_choice("ollama", "gemma3:1b"))
    store.state.set(state_key("web:gone-back"), "")  # went back to the default: no choice
    store.close()

    text = run_cli("status", home=isolated_home).stdout
    report = json.loads(run_cli("status", "--json", home=isolated_home).stdout)

    assert _line(text, "Gateway").endswith("token set; not running (start it: picoora gateway)")
    assert _line(text, "Channels").startswith("Channels:  telegram ✗ unreachable, discord off, slack off")
    cron = _line(text, "Cron")
    assert cron.startswith("Cron:      on, 1 job (1 enabled); next: ") and cron.endswith("UTC (`picoora cron list`)")
    assert _line(text, "Heartbeat") == "Heartbeat: on, every 30 min; last beat 2026-12-01T08:00: ok"
    assert [line for line in text.splitlines() if line.startswith("Session:")] == [
        "Session:   web:kitchen answers with ollama/gemma3:1b (chosen with /model)"]
    assert BOT_TOKEN not in text and TOKEN not in text and BOT_TOKEN not in json.dumps(report)

    facts = {}
    for check in report["checks"]:
        facts.setdefault(check.pop("check"), []).append(check)
    assert facts["gateway"] == [{"ok": True, "host": "127.0.0.1", "port": data["gateway"]["port"], "token_set": True,
                                 "running": False, "version": None}]
    assert facts["channels"] == [{"ok": False, "states": {"telegram": "unreachable", "discord": "off", "slack": "off"}}]
    [cron_facts] = facts["cron"]
    [job] = cron_facts["jobs"]
    assert cron_facts["enabled"] is True and job["kind"] == "every" and job["spec"] == "2h" and job["enabled"]
    assert job["next_run"].endswith("+00:00")
    assert facts["heartbeat"] == [{"ok": True, "enabled": True, "interval_minutes": 30,
                                   "last_beat": "2026-12-01T08:00:00+00:00", "last_outcome": "ok"}]
    assert facts["session"] == [{"ok": True, "session": "web:kitchen", "provider": "ollama", "model": "gemma3:1b"}]
    assert any(problem.startswith("Channels: telegram ✗ unreachable") for problem in report["problems"])


@pytest.mark.slow
def test_a_running_gateway_is_seen_on_its_port(isolated_home):
    port = free_port()
    with FakeOllama() as fake:
        gateway_home(isolated_home, fake.url, port=port)
        process, url, _ = start_gateway(isolated_home, "--port", str(port))
        try:
            text = run_cli("status", home=isolated_home).stdout
            report = json.loads(run_cli("status", "--json", home=isolated_home).stdout)
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(15) == 0
    assert url.endswith(f":{port}")
    assert _line(text, "Gateway") == f"Gateway:   127.0.0.1:{port}, token set; ✓ running ({__version__})"
    [gateway] = [check for check in report["checks"] if check["check"] == "gateway"]
    assert gateway["running"] is True and gateway["version"] == __version__ and gateway["port"] == port


def test_a_gateway_started_with_another_port_is_seen_there(isolated_home):
    configured, given = free_port(), free_port()
    with FakeOllama() as fake:
        gateway_home(isolated_home, fake.url, port=configured)
        process, url, _ = start_gateway(isolated_home, "--port", str(given))
        try:
            text = run_cli("status", home=isolated_home).stdout
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(15) == 0
    assert url.endswith(f":{given}")
    assert _line(text, "Gateway") == f"Gateway:   127.0.0.1:{given}, token set; ✓ running ({__version__})"
    after = run_cli("status", home=isolated_home).stdout  # stopped: the configured port, not running
    assert _line(after, "Gateway").startswith(f"Gateway:   127.0.0.1:{configured}, token set; not running")
