"""Config loading (defaults < file < PICO_* env), ${VAR} expansion, errors for people, saving, secrets."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import get_args, get_origin

import pytest
from pydantic import BaseModel

from picoora.config import (
    SECRET_MAPS,
    Config,
    ConfigError,
    default_config_path,
    env_override,
    env_override_warnings,
    load_config,
    redacted,
    save_config,
    secret_values,
    unknown_env_overrides,
)

REPO = Path(__file__).resolve().parent.parent


def set_env(monkeypatch, **variables: str) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def write_config(path: Path, data: dict | str) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


# --- defaults, file, environment --------------------------------------------------------------

def test_defaults_when_no_file_exists(isolated_home):
    assert not default_config_path().exists()
    assert default_config_path() == isolated_home / "config.json"
    config = load_config()
    assert config.agents.defaults.provider == "ollama"
    assert config.agents.defaults.model == "qwen3:latest"
    assert config.providers.ollama.api_base == "http://localhost:11434"
    assert config.gateway.host == "127.0.0.1"


def test_file_overrides_are_deep_merged_over_defaults(isolated_home):
    write_config(isolated_home / "config.json", {
        "agents": {"defaults": {"model": "llama3.2:3b", "temperature": 0.2}},
        "providers": {"ollama": {"api_key": "k"}},  # api_base must keep its default
    })
    config = load_config()
    assert config.agents.defaults.model == "llama3.2:3b"
    assert config.agents.defaults.temperature == 0.2
    assert config.agents.defaults.max_tokens == 4096
    assert config.providers.ollama.api_key == "k"
    assert config.providers.ollama.api_base == "http://localhost:11434"


def test_explicit_path_is_read_instead_of_home(tmp_path, isolated_home):
    write_config(isolated_home / "config.json", {"agents": {"defaults": {"model": "home-model"}}})
    other = write_config(tmp_path / "other.json", {"agents": {"defaults": {"model": "other-model"}}})
    assert load_config(other).agents.defaults.model == "other-model"


def test_env_overrides_apply_without_a_file(monkeypatch):
    set_env(
        monkeypatch,
        PICO_ORACLE_PASSWORD="s3cret",
        PICO_AGENTS_DEFAULTS_MODEL="mistral:7b",
        PICO_ORACLE_ENABLED="yes",
        PICO_ORACLE_PORT="1522",
    )
    config = load_config()
    assert config.oracle.password == "s3cret"
    assert config.agents.defaults.model == "mistral:7b"
    assert config.oracle.enabled is True
    assert config.oracle.port == 1522


def test_env_overrides_win_over_the_file(isolated_home, monkeypatch):
    write_config(isolated_home / "config.json", {
        "agents": {"defaults": {"model": "from-file", "max_tokens": 1000}},
        "heartbeat": {"enabled": True},
    })
    set_env(monkeypatch, PICO_AGENTS_DEFAULTS_MODEL="from-env", PICO_HEARTBEAT_ENABLED="0")
    config = load_config()
    assert config.agents.defaults.model == "from-env"
    assert config.agents.defaults.max_tokens == 1000  # untouched by env
    assert config.heartbeat.enabled is False


def test_env_override_names_the_variable_that_set_a_value(isolated_home, monkeypatch):
    write_config(isolated_home / "config.json", {"agents": {"defaults": {"model": "from-file", "provider": "openai"}}})
    set_env(monkeypatch, PICO_AGENTS_DEFAULTS_MODEL="from-env", PICO_HEARTBEAT_ENABLED="yes")
    config = load_config()
    assert env_override(config, "agents", "defaults", "model") == "PICO_AGENTS_DEFAULTS_MODEL"
    assert env_override(config, "agents", "defaults", "provider") is None  # the file's
    assert env_override(config, "heartbeat", "enabled") == "PICO_HEARTBEAT_ENABLED"  # "yes" is True
    built = Config()  # a config made in code is not the variable's, though the variable is set
    assert env_override(built, "agents", "defaults", "model") is None
    assert env_override(built, "agents", "defaults", "temperature") is None


def test_env_names_walk_fields_that_contain_underscores(monkeypatch):
    set_env(
        monkeypatch,
        PICO_PROVIDERS_OPENAI_API_KEY="fk-env",
        PICO_TOOLS_EXEC_TIMEOUT_SECONDS="12.5",
        PICO_TOOLS_WEB_FETCH_MAX_BYTES="5000",
        PICO_ORACLE_WALLET_PASSWORD="wp",
        PICO_AGENTS_DEFAULTS_RESTRICT_TO_WORKSPACE="false",
    )
    config = load_config()
    assert config.providers.openai.api_key == "fk-env"
    assert config.providers.anthropic.api_key == ""
    assert config.tools.exec.timeout_seconds == 12.5
    assert config.tools.web_fetch.max_bytes == 5000
    assert config.oracle.wallet_password == "wp"
    assert config.oracle.password == ""
    assert config.agents.defaults.restrict_to_workspace is False


@pytest.mark.parametrize("raw, expected", [
    ("111, 222 ,333", ["111", "222", "333"]),
    ('["alice", "bob,jr"]', ["alice", "bob,jr"]),
    ("*", ["*"]),
    ("", []),
])
def test_list_env_values(monkeypatch, raw, expected):
    monkeypatch.setenv("PICO_CHANNELS_TELEGRAM_ALLOW_FROM", raw)
    assert load_config().channels.telegram.allow_from == expected


def test_unknown_and_test_env_names_are_ignored_but_listed(monkeypatch):
    set_env(
        monkeypatch,
        PICO_ORACLE_PASSWROD="typo",
        PICO_SOMETHING_ELSE="x",
        PICO_TEST_ORACLE_DSN="localhost/FREEPDB1",
        PICO_ORACLE_USER="scott",
    )
    config = load_config()
    assert config.oracle.user == "scott"
    assert config.oracle.password == ""
    assert unknown_env_overrides() == ["PICO_ORACLE_PASSWROD", "PICO_SOMETHING_ELSE"]
    warnings = env_override_warnings()
    assert warnings[0].endswith(
        "PICO_ORACLE_PASSWROD matches no setting and is ignored (did you mean PICO_ORACLE_PASSWORD?)")
    assert "PICO_SOMETHING_ELSE" in warnings[1] and "did you mean" not in warnings[1]


# --- ${VAR} references --------------------------------------------------------------------------

def test_references_expand_from_the_environment(isolated_home, monkeypatch):
    set_env(monkeypatch, MY_DB_PW="pw-from-env", TG_ADMIN="4242", MY_HOST="db.example")
    write_config(isolated_home / "config.json", {
        "oracle": {"password": "${MY_DB_PW}", "dsn": "${MY_HOST}:1521/FREEPDB1"},
        "channels": {"telegram": {"allow_from": ["${TG_ADMIN}", "7"]}},
        "agents": {"defaults": {"workspace": "/srv/$HOME/$${NOT_A_REF}"}},
    })
    monkeypatch.setenv("PICO_GATEWAY_TOKEN", "${MY_DB_PW}-gw")
    config = load_config()
    assert config.oracle.password == "pw-from-env"
    assert config.oracle.dsn == "db.example:1521/FREEPDB1"
    assert config.channels.telegram.allow_from == ["4242", "7"]
    assert config.agents.defaults.workspace == "/srv/$HOME/${NOT_A_REF}"  # only ${...} expands; $${ escapes
    assert config.gateway.token == "pw-from-env-gw"


def test_unset_reference_names_key_and_variable(isolated_home):
    path = write_config(isolated_home / "config.json", {"providers": {"openai": {"api_key": "${NOPE_KEY}"}}})
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert str(path) in message
    assert "providers.openai.api_key" in message
    assert "NOPE_KEY" in message and "not set" in message


def test_unset_reference_overridden_by_env_is_not_an_error(isolated_home, monkeypatch):
    write_config(isolated_home / "config.json", {"oracle": {"password": "${NOPE_PW}"}})
    monkeypatch.setenv("PICO_ORACLE_PASSWORD", "direct")
    assert load_config().oracle.password == "direct"


# --- errors for people ---------------------------------------------------------------------------

def test_malformed_json_names_file_line_and_column(isolated_home):
    bad_line = '    "defaults": {"model": "x",}'  # trailing comma: the parser stops at the "}"
    path = write_config(isolated_home / "config.json", '{\n  "agents": {\n' + bad_line + '\n  }\n}\n')
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert str(path) in message
    assert f"not valid JSON at line 3, column {bad_line.index(',}') + 2}" in message


def test_top_level_must_be_an_object(isolated_home):
    path = write_config(isolated_home / "config.json", "[1, 2]")
    with pytest.raises(ConfigError, match="must hold one JSON object") as info:
        load_config()
    assert str(path) in str(info.value)


@pytest.mark.parametrize("section, value, key, problem", [
    ({"agents": {"defaults": {"temperature": 5}}}, None, "agents.defaults.temperature", "must be at most 2.0 (got 5)"),
    ({"agents": {"defaults": {"max_tokens": "lots"}}}, None, "agents.defaults.max_tokens",
     'must be a whole number (got "lots")'),
    ({"agents": {"defaults": {"provider": "grok"}}}, None, "agents.defaults.provider",
     "unknown provider 'grok': use ollama, openai or anthropic, or a preset"),
    ({"oracle": {"enabled": "maybe"}}, None, "oracle.enabled", "must be true or false"),
    ({"channels": {"telegram": {"allow_from": [123]}}}, None, "channels.telegram.allow_from[0]",
     "must be text (a string in quotes) (got 123)"),
    ({"tools": "none"}, None, "tools", "must be an object with keys"),
])
def test_invalid_values_name_file_key_path_and_problem(isolated_home, section, value, key, problem):
    path = write_config(isolated_home / "config.json", section)
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert message.startswith(f"Invalid configuration in {path}:")
    assert f"{key}: {problem}" in message


def test_every_problem_is_reported_at_once(isolated_home):
    write_config(isolated_home / "config.json", {"agents": {"defaults": {"temperature": -1, "max_tokens": 0}}})
    with pytest.raises(ConfigError) as info:
        load_config()
    assert "agents.defaults.temperature: must be at least 0.0" in str(info.value)
    assert "agents.defaults.max_tokens: must be at least 1" in str(info.value)


def test_wrong_secret_value_is_not_echoed(isolated_home):
    write_config(isolated_home / "config.json", {"oracle": {"password": 987654321}})
    with pytest.raises(ConfigError) as info:
        load_config()
    assert "oracle.password: must be text" in str(info.value)
    assert "987654321" not in str(info.value)


@pytest.mark.parametrize("data, key, hint", [
    ({"agents": {"defaults": {"temprature": 0.5}}}, "agents.defaults.temprature", "did you mean 'temperature'?"),
    ({"oracle": {"walletPath": "/w"}}, "oracle.walletPath", "did you mean 'wallet_path'?"),
    ({"agent": {}}, "agent", "did you mean 'agents'?"),
    ({"gateway": {"zzz": 1}}, "gateway.zzz",
     "known keys here: host, port, token, cors_origins, max_body_bytes, max_message_chars, shutdown_seconds"),
])
def test_unknown_key_suggests_the_closest_known_key(isolated_home, data, key, hint):
    path = write_config(isolated_home / "config.json", data)
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert str(path) in message
    assert f"{key}: unknown key ({hint})" in message


def test_bad_env_override_names_the_variable(isolated_home, monkeypatch):
    write_config(isolated_home / "config.json", {"agents": {"defaults": {"model": "fine"}}})
    monkeypatch.setenv("PICO_AGENTS_DEFAULTS_MAX_TOKENS", "abc")
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert "environment variable PICO_AGENTS_DEFAULTS_MAX_TOKENS" in message
    assert 'agents.defaults.max_tokens: must be a whole number (got "abc")' in message
    assert str(isolated_home / "config.json") not in message  # the file is not to blame


def test_bad_json_list_in_env_names_the_variable(monkeypatch):
    monkeypatch.setenv("PICO_TOOLS_WEB_FETCH_ALLOW_HOSTS", '["a",')
    with pytest.raises(ConfigError) as info:
        load_config()
    assert "PICO_TOOLS_WEB_FETCH_ALLOW_HOSTS" in str(info.value)
    assert "tools.web_fetch.allow_hosts: not a valid JSON array" in str(info.value)


def test_cli_style_error_has_no_traceback(isolated_home):
    # What the CLI does: print str(err) and exit 2. Run it in a real process to see the whole output.
    write_config(isolated_home / "config.json", '{"agents": ')
    script = ("import sys\nfrom picoora.config import ConfigError, load_config\n"
              "try:\n    load_config()\nexcept ConfigError as err:\n    print(err, file=sys.stderr)\n    sys.exit(2)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PICOORA_HOME": str(isolated_home)}, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "not valid JSON at line 1" in done.stderr


# --- saving --------------------------------------------------------------------------------------

def test_save_writes_0600_json_and_round_trips(isolated_home):
    config = Config()
    config.agents.defaults.model = "phi4:14b"
    config.oracle.password = "pa$$word${LITERAL}"
    config.channels.slack.allow_from = ["U1", "U2"]
    target = isolated_home / "nested" / "dir" / "config.json"
    assert save_config(config, target) == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    text = target.read_text()
    assert text.startswith('{\n  "agents": {\n    "defaults": {')
    assert load_config(target) == config
    assert [p.name for p in target.parent.iterdir()] == ["config.json"]  # no temp file left behind


def test_save_to_default_path_tightens_an_existing_file(isolated_home):
    path = write_config(isolated_home / "config.json", {"heartbeat": {"enabled": True}})
    path.chmod(0o644)
    config = load_config()
    config.heartbeat.interval = 5
    assert save_config(config) == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_config().heartbeat == config.heartbeat


def test_save_failure_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(ConfigError, match="Cannot write the configuration"):
        save_config(Config(), blocker / "config.json")


# --- secrets -------------------------------------------------------------------------------------

def test_secret_values_and_redaction():
    config = Config()
    config.providers.openai.api_key = "fk-openai"
    config.oracle.password = "db-pw"
    config.oracle.wallet_password = "db-pw-wallet"
    config.gateway.token = "gw-token"
    config.channels.telegram.token = "gw-token"  # duplicates are listed once
    assert secret_values(config) == ["db-pw-wallet", "fk-openai", "gw-token", "db-pw"]

    shown = redacted(config)
    assert shown["providers"]["openai"]["api_key"] == "***"
    assert shown["oracle"]["password"] == "***"
    assert shown["oracle"]["wallet_password"] == "***"
    assert shown["channels"]["telegram"]["token"] == "***"
    assert shown["providers"]["anthropic"]["api_key"] == ""  # unset stays visibly unset
    assert shown["oracle"]["user"] == "picoora"
    dumped = json.dumps(shown)
    assert not any(secret in dumped for secret in secret_values(config))
    assert config.oracle.password == "db-pw"  # the config itself is untouched


# --- the example file ----------------------------------------------------------------------------

def _section(annotation) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def field_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every field path; a map of sections (``tools.mcp_servers``) has ``*`` for its keys."""
    paths = set()
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        paths.add(path)
        if _section(field.annotation):
            paths |= field_paths(field.annotation, path + ".")
        elif get_origin(field.annotation) is dict and _section(get_args(field.annotation)[1]):
            paths |= field_paths(get_args(field.annotation)[1], path + ".*.")
    return paths


def json_paths(data: dict, prefix: str = "", maps: frozenset[str] = frozenset({"tools.mcp_servers"})) -> set[str]:
    paths = set()
    for key, value in data.items():
        paths.add(f"{prefix}{key}")
        if f"{prefix}{key}" in maps:
            for entry in value.values():
                paths |= json_paths(entry, f"{prefix}{key}.*.", maps)
        elif isinstance(value, dict) and key not in SECRET_MAPS:
            paths |= json_paths(value, f"{prefix}{key}.", maps)
    return paths


def secret_leaves(data: dict) -> list[str]:
    found = []
    for key, value in data.items():
        if isinstance(value, dict) and key in SECRET_MAPS:
            found += list(value.values())
        elif isinstance(value, dict):
            found += secret_leaves(value)
        elif key in {"api_key", "password", "wallet_password", "token"}:
            found.append(value)
    return found


def test_example_config_loads_as_copied_and_covers_every_field(isolated_home, tmp_path):
    copied = tmp_path / "config.json"
    copied.write_text((REPO / "config.example.json").read_text())
    config = load_config(copied)  # no variables set: it must load as it is
    raw = json.loads(copied.read_text())
    assert json_paths(raw) == field_paths(Config)
    assert secret_leaves(raw) and all(v == "" for v in secret_leaves(raw))  # nothing to leak, nothing unset
    assert config.agents.defaults.provider == "ollama"


def test_mcp_server_env_and_headers_are_secrets_and_a_server_needs_one_transport(tmp_path):
    path = tmp_path / "config.json"
    servers = {"a": {"command": "srv", "env": {"KEY": "env-secret-1"}},
               "b": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer header-secret"}}}
    path.write_text(json.dumps({"tools": {"mcp_servers": servers}}))
    config = load_config(path)
    assert {"env-secret-1", "Bearer header-secret"} <= set(secret_values(config))
    shown = redacted(config)["tools"]["mcp_servers"]
    assert shown["a"]["env"]["KEY"] == "***" and shown["b"]["headers"]["Authorization"] == "***"
    path.write_text(json.dumps({"tools": {"mcp_servers": {"c": {"command": "srv", "url": "http://x"}}}}))
    with pytest.raises(ConfigError, match="tools.mcp_servers.c: .*either command .* or url"):
        load_config(path)
