"""The names a PicoOraClaw (Go) user types keep working: ``PICOCLAW_*`` variables (read, with a notice to
rename them), ``agent -d`` and ``cron add -n/-m/-e/-c/-d/--to``."""

from __future__ import annotations

import json

from picoora.config import go_env_notices, load_config
from tests.cli_support import run_cli, write_config
from tests.fakes.ollama_server import FakeOllama, Reply


def test_picoclaw_variables_are_read_below_pico_ones_with_a_notice(isolated_home, monkeypatch):
    monkeypatch.setenv("PICOCLAW_AGENTS_DEFAULTS_MODEL", "go-model")
    monkeypatch.setenv("PICOCLAW_AGENTS_DEFAULTS_MAX_TOKENS", "32768")  # Go's context size
    monkeypatch.setenv("PICOCLAW_CHANNELS_SLACK_BOT_TOKEN", "xoxb-go")
    config = load_config()
    assert config.agents.defaults.model == "go-model" and config.agents.defaults.context_window == 32768
    assert config.channels.slack.token == "xoxb-go"
    assert ("Note: PICOCLAW_AGENTS_DEFAULTS_MODEL (PicoOraClaw's name) is read as PICO_AGENTS_DEFAULTS_MODEL; "
            "rename it") in go_env_notices()
    monkeypatch.setenv("PICO_AGENTS_DEFAULTS_MODEL", "pico-model")
    assert load_config().agents.defaults.model == "pico-model"
    assert not any("AGENTS_DEFAULTS_MODEL" in line for line in go_env_notices())


def test_the_cli_says_once_which_go_variable_it_read(isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    result = run_cli("memory", "list", home=isolated_home, extra_env={"PICOCLAW_HEARTBEAT_INTERVAL": "45"})
    assert result.stderr.count("PICOCLAW_HEARTBEAT_INTERVAL (PicoOraClaw's name) is read as "
                               "PICO_HEARTBEAT_INTERVAL") == 1


def test_agent_d_is_the_debug_log(isolated_home):
    with FakeOllama(replies=[Reply(content="pong")]) as fake:
        write_config(isolated_home, ollama_url=fake.url)
        result = run_cli("agent", "-d", "-m", "ping", home=isolated_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "pong"
    assert "DEBUG picoora: agent: session cli:default, ollama/qwen3:latest" in result.stderr


def test_cron_add_takes_the_go_flags(isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    every = run_cli("cron", "add", "-n", "Stretch", "-m", "Time to stretch", "-e", "7200", "-d",
                    "--channel", "telegram", "--to", "123", home=isolated_home)
    assert every.returncode == 0, every.stderr
    cron = run_cli("cron", "add", "-n", "Tides", "-m", "Check the tides", "-c", "0 7 * * *", home=isolated_home)
    assert cron.returncode == 0, cron.stderr
    jobs = {job["text"]: job for job in json.loads(run_cli("cron", "list", "--json", home=isolated_home).stdout)}
    stretch = jobs["Time to stretch"]
    assert (stretch["kind"], stretch["spec"], stretch["action"], stretch["channel"], stretch["chat_id"]) == \
        ("every", "7200s", "reminder", "telegram", "123")
    assert (jobs["Check the tides"]["kind"], jobs["Check the tides"]["spec"]) == ("cron", "0 7 * * *")
    both = run_cli("cron", "add", "-m", "x", "-e", "60", "-c", "* * * * *", home=isolated_home)
    assert both.returncode == 2 and "one of -e SECONDS or -c" in both.stderr


def test_a_go_config_loaded_as_it_is_points_at_migrate(isolated_home):
    from tests.go_home import go_default_config

    (isolated_home / "config.json").write_text(json.dumps(go_default_config()))
    result = run_cli("status", home=isolated_home)
    assert result.returncode == 2
    assert "This is a PicoOraClaw (Go) config: `picoora migrate --from DIR`" in result.stderr
    (isolated_home / "config.json").write_text(json.dumps({"agents": {"defaults": {"modle": "x"}}}))
    assert "PicoOraClaw" not in run_cli("status", home=isolated_home).stderr  # a typo is only a typo
