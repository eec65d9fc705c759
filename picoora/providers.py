"""Named presets of the OpenAI-compatible provider: ``"provider": "openrouter"`` means the ``openai`` client
pointed at OpenRouter's base URL, with the key from ``OPENROUTER_API_KEY`` unless the config gives one.

A leaf module (no picoora or SDK imports): the config model, the factory, ``status`` and ``onboard`` all read
this one table, so a preset is added in one place.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str  # the value of agents.defaults.provider, and the providers.<name> section
    label: str  # for people
    api_base: str
    key_env: str = ""  # the environment variable the key is read from when providers.<name>.api_key is empty
    needs_key: bool = True  # False: a local server that runs without one
    example_model: str = ""  # what onboard offers when nothing else is known

    @property
    def local(self) -> bool:
        return not self.needs_key


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
           example_model="openai/gpt-4o-mini"),
    Preset("groq", "Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", example_model="llama-3.3-70b-versatile"),
    Preset("deepseek", "DeepSeek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", example_model="deepseek-chat"),
    Preset("gemini", "Gemini (OpenAI endpoint)", "https://generativelanguage.googleapis.com/v1beta/openai",
           "GEMINI_API_KEY", example_model="gemini-2.5-flash"),
    Preset("zhipu", "Zhipu GLM", "https://open.bigmodel.cn/api/paas/v4", "ZHIPU_API_KEY", example_model="glm-4-flash"),
    # OCI Generative AI's OpenAI-compatible endpoint with a Generative AI API key; another region is a
    # different api_base (https://inference.generativeai.<region>.oci.oraclecloud.com/openai/v1).
    Preset("oci", "OCI Generative AI", "https://inference.generativeai.us-chicago-1.oci.oraclecloud.com/openai/v1",
           "OCI_GENAI_API_KEY", example_model="xai.grok-4"),
    Preset("vllm", "vLLM", "http://localhost:8000/v1", "VLLM_API_KEY", needs_key=False),
    Preset("llamacpp", "llama.cpp server", "http://localhost:8080/v1", "LLAMA_API_KEY", needs_key=False),
    Preset("lmstudio", "LM Studio", "http://localhost:1234/v1", needs_key=False),
)}

# Provider names the Go version accepted for the same thing (its CreateProvider aliases).
ALIASES = {"gpt": "openai", "claude": "anthropic", "google": "gemini", "llama.cpp": "llamacpp",
           "lm_studio": "lmstudio", "lm-studio": "lmstudio", "oci-genai": "oci", "oci_genai": "oci"}

CLIENTS = ("ollama", "openai", "anthropic")  # the providers with a client of their own
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}  # for their public endpoints
PUBLIC_BASES = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}


def provider_names() -> tuple[str, ...]:
    """Every valid agents.defaults.provider: the three clients, then the presets."""
    return (*CLIENTS, *PRESETS)


def client_of(provider: str) -> str:
    """The client that speaks for ``provider``: itself, or ``openai`` for a preset."""
    return "openai" if provider in PRESETS else provider


def key_env(provider: str) -> str:
    """The environment variable a key for ``provider`` may come from ("" when none)."""
    preset = PRESETS.get(provider)
    return preset.key_env if preset else KEY_ENV.get(provider, "")


def own_endpoint(provider: str, api_base: str) -> bool:
    """Whether ``api_base`` is ``provider``'s own service (its preset base, its public API, or empty for its
    default): only then may a key from the provider's variable be sent there."""
    base = api_base.rstrip("/")
    if provider in PRESETS:
        return base in ("", PRESETS[provider].api_base)
    return base in ("", PUBLIC_BASES.get(provider))
