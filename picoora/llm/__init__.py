"""Model providers behind one small interface (``picoora.llm.base.LLM``).

``create_llm(config)`` imports only the configured provider's module, so importing this package
pulls in no SDK (``anthropic`` alone costs most of a second). A preset (``openrouter``, ``groq``, ...;
``picoora.providers``) is the OpenAI-compatible client on the preset's ``providers.<name>`` section.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from picoora.providers import PRESETS, client_of, provider_names

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.llm.base import LLM, CallOptions
    from picoora.llm.retry import RetryPolicy

# client name -> (module, class); every preset uses the "openai" entry
CLIENT_CLASSES = {
    "ollama": ("picoora.llm.ollama", "OllamaLLM"),
    "openai": ("picoora.llm.openai_compat", "OpenAICompatLLM"),
    "anthropic": ("picoora.llm.anthropic", "AnthropicLLM"),
}
PROVIDERS = provider_names()  # every name agents.defaults.provider (or a session's choice) may give


def create_llm(config: Config, *, provider: str | None = None, model: str | None = None,
               retry: RetryPolicy | None = None) -> LLM:
    """A client for ``provider``/``model`` (default: ``agents.defaults``), set up from ``providers.<name>``.

    ``retry`` replaces the policy built from ``providers.<name>.max_retries`` (tests inject a sleep).
    Creating never touches the network; errors surface on the first ``chat``.
    """
    from picoora.extras import EXTRAS, missing
    from picoora.llm.common import ProviderSettings

    provider = provider or config.agents.defaults.provider
    check_provider(provider)
    client = client_of(provider)
    problem = missing(client) if client in EXTRAS else None  # a hosted provider's SDK is an extra
    if problem is not None:
        from picoora.llm.base import LLMError

        raise LLMError(problem)
    module_name, class_name = CLIENT_CLASSES[client]
    provider_class = getattr(importlib.import_module(module_name), class_name)
    llm: LLM = provider_class(ProviderSettings.from_config(config, provider=provider, model=model, retry=retry))
    if provider in PRESETS:
        llm.provider = provider  # traces, the session's model and the client pool name the preset
    return llm


def check_provider(provider: str) -> None:
    """Raise ``LLMError`` unless ``provider`` is one picoora has a client for."""
    if provider not in PROVIDERS:
        from picoora.llm.base import LLMError

        raise LLMError(f"unknown provider {provider!r}: use ollama, openai or anthropic, or a preset of the "
                       f"OpenAI-compatible one: {', '.join(PRESETS)}")


def unsupported_options(provider: str, options: CallOptions) -> tuple[str, str] | None:
    """(parameter, why) for the first of a request's ``options`` that ``provider`` cannot honour, else None."""
    check_provider(provider)
    module_name, class_name = CLIENT_CLASSES[client_of(provider)]
    refusal: tuple[str, str] | None = getattr(importlib.import_module(module_name), class_name).unsupported(options)
    return refusal
