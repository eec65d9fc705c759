"""Quick Ollama questions for ``onboard`` and ``status`` against the fake Ollama server."""

from __future__ import annotations

import ollama
import pytest

from picoora.llm.base import LLMError, ModelNotFoundError, ProviderUnavailableError, RetryableError
from picoora.llm.ollama_admin import (
    ModelInfo,
    capabilities_of,
    classify_ollama_error,
    client_options,
    list_models,
    model_available,
    native_base,
)
from tests.fakes._http import closed_port_url
from tests.fakes.ollama_server import FakeOllama


def test_pulled_models_are_listed_with_their_tool_support():
    with FakeOllama(models=("qwen3", "gemma3:1b"), tool_models=("qwen3",)) as fake:
        assert list_models(fake.url) == [ModelInfo("qwen3:latest", True), ModelInfo("gemma3:1b", False)]


def test_model_availability_and_ollama_down():
    with FakeOllama(models=("qwen3",)) as fake:
        assert model_available(fake.url, "qwen3") and model_available(fake.url, "qwen3:latest")
        assert not model_available(fake.url, "llama3.2")
    down = closed_port_url()
    with pytest.raises(ProviderUnavailableError, match="ollama serve"):
        list_models(down)
    with pytest.raises(ProviderUnavailableError):
        model_available(down, "qwen3")


def test_older_ollama_without_capabilities_is_read_from_the_template():
    tools_template = ollama.ShowResponse(template="{{ if .Tools }}{{ .Tools }}{{ end }}", model_info={})
    plain_template = ollama.ShowResponse(template="{{ .Prompt }}", model_info={})
    assert "tools" in capabilities_of(tools_template)
    assert "tools" not in capabilities_of(plain_template)
    assert capabilities_of(ollama.ShowResponse(model_info={})) is None
    assert capabilities_of(ollama.ShowResponse(capabilities=["completion", "thinking"], model_info={})) == {
        "completion", "thinking"}


def test_an_openai_style_base_is_turned_into_the_native_one():
    assert native_base("http://gpu-box:11434/v1/") == "http://gpu-box:11434"
    assert native_base("") == "http://localhost:11434"


def test_ollama_errors_are_classified_by_status_code():
    base = "http://localhost:11434"
    missing = classify_ollama_error(ollama.ResponseError("model 'x' not found", 404), base=base, model="x")
    assert isinstance(missing, ModelNotFoundError) and "ollama pull x" in str(missing)
    busy = classify_ollama_error(ollama.ResponseError("busy", 503), base=base, model="x")
    assert isinstance(busy, RetryableError) and busy.status == 503
    # An error line in a stream:
    midway = classify_ollama_error(ollama.ResponseError("out of memory"), base=base, model="x")
    assert type(midway) is LLMError and "out of memory" in str(midway) and not midway.retryable


def test_only_plain_http_bases_skip_tls_setup_and_then_never_follow_redirects():
    assert client_options("http://localhost:11434") == {"verify": False, "follow_redirects": False}
    assert client_options("https://ollama.example.com") == {}
