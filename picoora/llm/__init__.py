"""Model providers behind one small interface (``picoora.llm.base.LLM``).

``create_llm(config)`` imports only the configured provider's module, so importing this package
pulls in no SDK (``anthropic`` alone costs most of a second).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from picoora.config import Config
    from picoora.llm.base import LLM
    from picoora.llm.retry import RetryPolicy

# provider name in config -> (module, class)
PROVIDERS = {
    "ollama": ("picoora.llm.ollama", "OllamaLLM"),
    "openai": ("picoora.llm.openai_compat", "OpenAICompatLLM"),
    "anthropic": ("picoora.llm.anthropic", "AnthropicLLM"),
}


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
    problem = missing(provider) if provider in EXTRAS else None  # a hosted provider's SDK is an extra
    if problem is not None:
        from picoora.llm.base import LLMError

        raise LLMError(problem)
    module_name, class_name = PROVIDERS[provider]
    provider_class = getattr(importlib.import_module(module_name), class_name)
    return provider_class(ProviderSettings.from_config(config, provider=provider, model=model, retry=retry))


def check_provider(provider: str) -> None:
    """Raise ``LLMError`` unless ``provider`` is one picoora has a client for."""
    if provider not in PROVIDERS:
        from picoora.llm.base import LLMError

        raise LLMError(f"unknown provider {provider!r}: use one of {', '.join(PROVIDERS)}")
