"""Provider presets: ``"provider": "openrouter"`` (and the other Go provider names) is the OpenAI-compatible
client on that service's endpoint, with the key from its own variable; an unknown name lists the presets."""

from __future__ import annotations

import json

import pytest

from picoora.config import Config, ConfigError, Providers, load_config
from picoora.llm import create_llm
from picoora.llm.base import LLMError
from picoora.llm.openai_compat import OpenAICompatLLM
from picoora.providers import PRESETS, provider_names
from tests.cli_support import run_cli
from tests.fakes.openai_server import FakeOpenAI, Reply


def _write(home, data):
    (home / "config.json").write_text(json.dumps(data))


def test_every_provider_name_has_its_section_and_each_preset_its_endpoint():
    assert tuple(Providers.model_fields) == provider_names()
    for name, preset in PRESETS.items():
        assert getattr(Config().providers, name).api_base == preset.api_base


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_preset_is_the_openai_client_on_its_own_endpoint(name):
    config = Config()
    config.agents.defaults.provider = name
    llm = create_llm(config, model="m")
    assert isinstance(llm, OpenAICompatLLM)
    assert llm.base == PRESETS[name].api_base and llm.provider == name


def test_the_go_config_provider_names_load(isolated_home):
    for go_name, ours in (("openrouter", "openrouter"), ("google", "gemini"), ("GROQ", "groq"), ("claude", "anthropic"),
                          ("gpt", "openai"), ("vllm", "vllm"), ("deepseek", "deepseek")):
        _write(isolated_home, {"agents": {"defaults": {"provider": go_name}}})
        assert load_config().agents.defaults.provider == ours


def test_an_unknown_provider_lists_every_preset(isolated_home):
    _write(isolated_home, {"agents": {"defaults": {"provider": "grok"}}})
    with pytest.raises(ConfigError) as info:
        load_config()
    message = str(info.value)
    assert "agents.defaults.provider: unknown provider 'grok'" in message
    assert "Value error" not in message
    for name in PRESETS:
        assert name in message
    with pytest.raises(LLMError, match="openrouter, groq"):
        create_llm(Config(), provider="grok")


def test_the_key_comes_from_the_presets_variable_only_for_its_own_endpoint(isolated_home, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "fake-or-from-env")
    monkeypatch.setenv("GROQ_API_KEY", "fake-groq-from-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-anthropic-key-from-env")
    _write(isolated_home, {"providers": {"groq": {"api_base": "https://proxy.example/v1"},
                                         "deepseek": {"api_key": "key-from-the-file"}}})
    config = load_config()
    assert config.providers.openrouter.api_key == "fake-or-from-env"
    assert config.providers.anthropic.api_key == "fake-anthropic-key-from-env"
    assert config.providers.groq.api_key == ""  # never sent to another host than Groq's
    assert config.providers.deepseek.api_key == "key-from-the-file"  # the file wins
    from picoora.config import secret_values

    assert "fake-or-from-env" in secret_values(config)  # scrubbed from logs and traces like any key


def test_a_turn_through_a_preset_reaches_its_server_with_its_key(isolated_home):
    with FakeOpenAI(replies=[Reply(content="Hello from the preset.")]) as fake:
        _write(isolated_home, {
            "agents": {"defaults": {"provider": "llamacpp", "model": "smollm2"}},
            "providers": {"llamacpp": {"api_base": f"{fake.url}/v1", "api_key": "local-secret", "max_retries": 0}},
            "memory": {"embedder": "none"},
        })
        result = run_cli("agent", "-m", "hi", home=isolated_home)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "Hello from the preset."
        assert fake.requests[0]["model"] == "smollm2"
        assert fake.request_headers[0]["authorization"] == "Bearer local-secret"


def test_status_names_the_variable_a_hosted_presets_key_comes_from(isolated_home):
    _write(isolated_home, {"agents": {"defaults": {"provider": "openrouter", "model": "openai/gpt-4o-mini"}},
                           "memory": {"embedder": "none"}})
    result = run_cli("status", home=isolated_home)
    assert "openrouter at https://openrouter.ai/api/v1" in result.stdout
    assert "export OPENROUTER_API_KEY=..." in result.stdout
    assert result.returncode != 0  # a chat would fail: scripts must not read "ready"
