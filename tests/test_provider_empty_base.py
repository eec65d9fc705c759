"""An empty ``api_base`` (the Go config's value for every provider) is the provider's own endpoint, in any
config: a Groq key reaches Groq, never the OpenAI client's default host."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from picoora.config import load_config
from picoora.llm import create_llm
from picoora.messages import Message
from picoora.providers import PRESETS, key_env
from tests.fakes.openai_server import FakeOpenAI, Reply


def test_an_empty_base_loads_as_the_presets_own(isolated_home):
    (isolated_home / "config.json").write_text(json.dumps({
        "agents": {"defaults": {"provider": "groq", "model": "llama-3.3-70b-versatile"}},
        "providers": {"groq": {"api_key": "gsk-file-key", "api_base": ""}, "ollama": {"api_base": ""}}}))
    config = load_config()
    assert config.providers.groq.api_base == PRESETS["groq"].api_base
    assert config.providers.ollama.api_base == "http://localhost:11434"
    assert create_llm(config).base == PRESETS["groq"].api_base


def test_status_shows_the_presets_host_and_its_key(isolated_home, monkeypatch):
    from picoora.cli import status

    monkeypatch.setattr(status, "_port_open", lambda url: False)  # no network: the probe's answer is not the point
    (isolated_home / "config.json").write_text(json.dumps({
        "agents": {"defaults": {"provider": "groq"}}, "providers": {"groq": {"api_key": "gsk-key", "api_base": ""}}}))
    line = status._provider_lines(load_config(), "groq", "m")[0]
    assert line.text.startswith(f"groq at {PRESETS['groq'].api_base} ") and "API key set" in line.text


def test_a_key_with_an_empty_base_goes_to_its_provider_only(isolated_home, monkeypatch):
    with FakeOpenAI(replies=[Reply(content="from groq")]) as groq, FakeOpenAI() as other:
        # The two hosts are fakes: Groq's preset base and the OpenAI client's default point at them.
        monkeypatch.setitem(PRESETS, "groq", dataclasses.replace(PRESETS["groq"], api_base=f"{groq.url}/v1"))
        monkeypatch.setattr("picoora.llm.openai_compat.DEFAULT_BASE", f"{other.url}/v1")
        (isolated_home / "config.json").write_text(json.dumps({
            "agents": {"defaults": {"provider": "groq", "model": "m"}},
            "providers": {"groq": {"api_key": "gsk-secret", "api_base": "", "max_retries": 0}}}))
        llm = create_llm(load_config())
        answer = asyncio.run(llm.chat([Message(role="user", content="hi")]))
        assert answer.content == "from groq"
        assert groq.request_headers[0]["authorization"] == "Bearer gsk-secret"
        assert other.requests == []


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_the_presets_variable_key_is_taken_for_an_empty_base(isolated_home, monkeypatch, name):
    variable = key_env(name)
    if not variable:
        pytest.skip(f"{name} has no key variable")
    monkeypatch.setenv(variable, "key-from-env")
    (isolated_home / "config.json").write_text(json.dumps({"providers": {name: {"api_base": ""}}}))
    assert getattr(load_config().providers, name).api_key == "key-from-env"
