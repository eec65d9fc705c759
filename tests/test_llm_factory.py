"""``create_llm``: the configured provider, set up from config, with no SDK imported before it is needed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from picoora.config import Config
from picoora.llm import create_llm
from picoora.llm.anthropic import AnthropicLLM
from picoora.llm.common import ProviderSettings
from picoora.llm.ollama import OllamaLLM
from picoora.llm.openai_compat import OpenAICompatLLM

HEAVY = ["ollama", "openai", "anthropic", "httpx", "httpx2"]


def test_importing_the_package_and_its_interface_loads_no_sdk():
    code = (
        "import sys, json, picoora.llm, picoora.llm.base, picoora.llm.common, picoora.llm.retry; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert loaded == []


@pytest.mark.parametrize(
    "provider, expected", [("ollama", OllamaLLM), ("openai", OpenAICompatLLM), ("anthropic", AnthropicLLM)]
)
def test_the_configured_provider_is_created(provider, expected):
    config = Config()
    config.agents.defaults.provider = provider
    config.agents.defaults.model = "some-model"
    llm = create_llm(config)
    assert isinstance(llm, expected) and llm.provider == provider and llm.model == "some-model"


def test_settings_come_from_the_providers_section_and_agent_defaults():
    config = Config()
    config.agents.defaults.provider = "openai"
    config.agents.defaults.max_tokens = 999
    config.agents.defaults.temperature = 0.1
    config.providers.openai.api_key = "fk-x"
    config.providers.openai.api_base = "https://api.groq.com/openai/v1"
    config.providers.openai.timeout_seconds = 30
    config.providers.openai.max_retries = 5
    settings = ProviderSettings.from_config(config)
    assert (settings.api_key, settings.api_base, settings.timeout) == ("fk-x", "https://api.groq.com/openai/v1", 30)
    assert (settings.max_tokens, settings.temperature, settings.retry.max_retries) == (999, 0.1, 5)


def test_the_default_config_talks_to_local_ollama():
    llm = create_llm(Config())
    assert isinstance(llm, OllamaLLM) and llm.base == "http://localhost:11434" and llm.model == "qwen3:latest"
