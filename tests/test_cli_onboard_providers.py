"""``picoora onboard`` for every provider: ``--provider``, the question on a terminal (Ollama / a service whose
key variable is set / Anthropic), a model typed by name, and one real request that checks the key, against
the scripted fake servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from picoora.providers import PRESETS
from tests.cli_support import REPO, run_cli, write_config
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.ollama_server import FakeOllama
from tests.fakes.openai_server import FakeOpenAI, Reply

NOT_READY = 1


def _service_env(provider: str, fake_url: str, key: str = "test-key") -> dict[str, str]:
    return {f"PICO_PROVIDERS_{provider.upper()}_API_BASE": fake_url,
            f"PICO_PROVIDERS_{provider.upper()}_API_KEY": key,
            f"PICO_PROVIDERS_{provider.upper()}_MAX_RETRIES": "0"}


def _saved(home) -> dict:
    return json.loads((home / "config.json").read_text())["agents"]["defaults"]


def test_a_preset_is_set_up_and_its_key_checked_for_real(isolated_home):
    with FakeOpenAI(replies=[Reply(content="OK")]) as fake:
        result = run_cli("onboard", "--non-interactive", "--provider", "groq", "--model", "llama-3.3-70b-versatile",
                         home=isolated_home, extra_env=_service_env("groq", f"{fake.url}/v1", "gsk-test"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Checked: groq answered with llama-3.3-70b-versatile." in result.stdout
    assert "picoora is ready" in result.stdout
    assert (_saved(isolated_home)["provider"], _saved(isolated_home)["model"]) == ("groq", "llama-3.3-70b-versatile")
    assert "gsk-test" not in (isolated_home / "config.json").read_text()  # keys stay in the environment
    assert fake.request_headers[0]["authorization"] == "Bearer gsk-test"
    assert fake.requests[0]["model"] == "llama-3.3-70b-versatile"


def test_a_refused_key_is_said_and_not_called_ready(isolated_home):
    refused = Reply(status=401, error="Incorrect API key provided", error_code="invalid_api_key")
    with FakeOpenAI(replies=[refused]) as fake:
        result = run_cli("onboard", "--non-interactive", "--provider", "openrouter", home=isolated_home,
                         extra_env=_service_env("openrouter", f"{fake.url}/v1", "sk-or-wrong"))
    assert result.returncode == NOT_READY
    assert "cannot chat yet: OpenRouter refused the key" in result.stdout
    assert "picoora is ready" not in result.stdout
    assert _saved(isolated_home)["model"] == PRESETS["openrouter"].example_model
    assert "sk-or-wrong" not in result.stdout + result.stderr


def test_anthropic_is_checked_through_its_own_client(isolated_home):
    with FakeAnthropic(replies=[Reply(content="OK")]) as fake:
        result = run_cli("onboard", "--non-interactive", "--provider", "anthropic", home=isolated_home,
                         extra_env=_service_env("anthropic", fake.url, "fake-anthropic-key"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Checked: anthropic answered with claude-sonnet-4-5." in result.stdout
    assert "fake-anthropic-key" in " ".join(fake.request_headers[0].values())  # x-api-key or a bearer token


def test_a_hosted_preset_without_a_key_names_its_variable_and_asks_nothing(isolated_home):
    result = run_cli("onboard", "--non-interactive", "--provider", "deepseek", home=isolated_home)
    assert result.returncode == NOT_READY
    assert "no API key for DeepSeek: export DEEPSEEK_API_KEY=..." in result.stdout
    assert "picoora onboard --provider deepseek" in result.stdout


def test_a_key_variable_kept_from_another_host_says_why_it_is_not_used(isolated_home):
    env = {"GROQ_API_KEY": "gsk-exported-key", "PICO_PROVIDERS_GROQ_API_BASE": "http://127.0.0.1:9/v1"}
    result = run_cli("onboard", "--non-interactive", "--provider", "groq", home=isolated_home, extra_env=env)
    assert result.returncode == NOT_READY
    assert "GROQ_API_KEY is set but not used: providers.groq.api_base is http://127.0.0.1:9/v1" in result.stdout
    assert "no API key for" not in result.stdout and "gsk-exported-key" not in result.stdout + result.stderr


def test_a_local_server_offers_the_model_it_serves(isolated_home):
    with FakeOpenAI(replies=[Reply(content="OK")], models=["smollm2-135m"]) as fake:
        result = run_cli("onboard", "--non-interactive", "--provider", "llamacpp", home=isolated_home,
                         extra_env={"PICO_PROVIDERS_LLAMACPP_API_BASE": f"{fake.url}/v1"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert _saved(isolated_home)["model"] == "smollm2-135m"
    assert "Checked: llamacpp answered with smollm2-135m." in result.stdout


def test_an_unknown_provider_lists_the_presets(isolated_home):
    result = run_cli("onboard", "--non-interactive", "--provider", "grok", home=isolated_home)
    assert result.returncode == 2
    assert "unknown provider 'grok'" in result.stderr
    for name in PRESETS:
        assert name in result.stderr
    assert not (isolated_home / "config.json").exists()


def test_switching_the_provider_keeps_the_rest_of_the_config(isolated_home):
    with FakeOpenAI(replies=[Reply(content="OK")]) as fake:
        config = write_config(isolated_home, ollama_url="http://127.0.0.1:9", temperature=0.2)
        result = run_cli("onboard", "--non-interactive", "--provider", "openai", "--model", "gpt-4o-mini",
                         home=isolated_home, extra_env=_service_env("openai", f"{fake.url}/v1"))
    assert result.returncode == 0, result.stdout + result.stderr
    saved = json.loads(config.read_text())
    assert saved["agents"]["defaults"] == {"model": "gpt-4o-mini", "temperature": 0.2, "provider": "openai"}
    assert saved["providers"]["ollama"]["api_base"] == "http://127.0.0.1:9"


def _onboard_on_a_terminal(home, typed: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    controller, terminal = os.openpty()
    full_env = {**os.environ, "PICOORA_HOME": str(home), **env}
    with os.fdopen(controller, "wb", buffering=0) as keyboard:
        keyboard.write(typed)  # typed ahead; the prompts read it from the terminal
        result = subprocess.run([sys.executable, "-m", "picoora", "onboard"], stdin=terminal, capture_output=True,
                                text=True, env=full_env, cwd=REPO, timeout=60)
    os.close(terminal)
    return result


def test_the_question_offers_ollama_the_services_with_a_key_and_anthropic(isolated_home):
    with FakeOpenAI(replies=[Reply(content="OK")]) as fake:
        env = {"GROQ_API_KEY": "gsk-from-env", **_service_env("groq", f"{fake.url}/v1", "gsk-test")}
        result = _onboard_on_a_terminal(isolated_home, b"2\nqwen-qwq-32b\n", env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "  1. Ollama, on this machine (no key)" in result.stdout
    assert "  2. Groq (key from GROQ_API_KEY)" in result.stdout
    assert "  3. Anthropic (needs ANTHROPIC_API_KEY)" in result.stdout
    assert "OpenRouter" not in result.stdout.split("(others:")[0]  # no key set: not offered
    assert (_saved(isolated_home)["provider"], _saved(isolated_home)["model"]) == ("groq", "qwen-qwq-32b")
    assert fake.requests[0]["model"] == "qwen-qwq-32b"


def test_a_model_typed_by_name_that_is_not_pulled_is_taken_with_its_pull_command(isolated_home):
    with FakeOllama(models=("qwen3:latest",), tool_models=("qwen3:latest",)) as fake:
        result = _onboard_on_a_terminal(isolated_home, b"1\nmistral-nemo\n",
                                        {"PICO_PROVIDERS_OLLAMA_API_BASE": fake.url})
    assert result.returncode == NOT_READY  # set up; a chat waits for the pull
    assert "Not in the list" not in result.stdout
    assert "mistral-nemo is not pulled yet: run `ollama pull mistral-nemo`" in result.stdout
    assert _saved(isolated_home)["model"] == "mistral-nemo"
