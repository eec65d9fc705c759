"""``picoora onboard`` gives the gateway a token when it has none, and never replaces one."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url


def _onboard(home, **env):
    return run_cli("onboard", "--non-interactive", home=home,
                   extra_env={"PICO_PROVIDERS_OLLAMA_API_BASE": closed_port_url(), **env})


def _token(home) -> str | None:
    return json.loads((home / "config.json").read_text()).get("gateway", {}).get("token")


@pytest.mark.slow
def test_a_fresh_config_gets_a_token_that_later_runs_keep(isolated_home):
    assert _onboard(isolated_home).returncode == 1  # set up; Ollama is not running here, so not ready
    token = _token(isolated_home)
    assert token and len(token) >= 32
    assert _onboard(isolated_home).returncode == 1  # set up; Ollama is not running here, so not ready
    assert _token(isolated_home) == token


def test_an_existing_config_without_a_token_gets_one_and_keeps_the_rest(isolated_home):
    path = write_config(isolated_home, ollama_url="http://127.0.0.1:9", temperature=0.1)
    result = _onboard(isolated_home)
    assert result.returncode == 1 and "gateway.token" in result.stdout  # set up, Ollama not running: not ready
    data = json.loads(path.read_text())
    assert len(data["gateway"]["token"]) >= 32 and data["agents"]["defaults"]["temperature"] == 0.1
    assert data["gateway"]["token"] not in result.stdout  # the value itself is never printed


def test_a_token_from_the_environment_is_enough(isolated_home):
    write_config(isolated_home, ollama_url="http://127.0.0.1:9")
    assert _onboard(isolated_home, PICO_GATEWAY_TOKEN="env-token").returncode == 1  # not ready: no Ollama
    assert _token(isolated_home) is None
