"""Which provider the Go version really sent the model to: its ``CreateProvider`` (the reference's §7.1).

Go took ``agents.defaults.provider`` only when that provider had what it needs (a key, or a base for vllm);
otherwise, and when the provider was empty, it chose by the model's name (``anthropic/...`` to OpenRouter)
and last fell back to OpenRouter when it had a key. A migration that carried the provider as written would
send ``anthropic/claude-opus-4-5`` to Ollama, or a groq model to Groq without a key.

A pure function over the Go config's dict: nothing is read or written here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Go's provider names for its config sections (the rest are the section's own name).
SECTION_OF = {"gpt": "openai", "claude": "anthropic", "google": "gemini", "copilot": "github_copilot"}
_NEEDS_KEY = frozenset({"groq", "openai", "anthropic", "openrouter", "gemini", "deepseek"})
_OAUTH = frozenset({"openai", "anthropic"})  # an auth_method (OAuth, a pasted token) counts as a key there
OPENROUTER_PREFIXES = ("openrouter/", "anthropic/", "openai/", "meta-llama/", "deepseek/", "google/")
# (a word in the model's name, the provider whose key then takes it), in Go's order after the prefixes.
BY_NAME = (("claude", "anthropic"), ("gpt", "openai"), ("gemini", "gemini"), ("groq", "groq"), ("nvidia", "nvidia"))


@dataclass(frozen=True)
class Resolved:
    section: str  # the Go providers.<section> the model went to
    why: str  # "" when it is the provider the config names


def go_provider(go: dict[str, Any]) -> Resolved | None:
    """The provider Go used for the configured model, or None when Go would have refused to start
    (``no API key configured``)."""
    agents, providers = go.get("agents"), go.get("providers")
    defaults = agents.get("defaults") if isinstance(agents, dict) else None
    defaults = defaults if isinstance(defaults, dict) else {}
    providers = providers if isinstance(providers, dict) else {}
    named = str(defaults.get("provider") or "").strip().lower()
    model = str(defaults.get("model") or "")

    def has(section: str, part: str = "api_key") -> bool:
        entry = providers.get(section)
        return isinstance(entry, dict) and bool(entry.get(part))

    section = SECTION_OF.get(named, named)
    if named:
        if section not in _NEEDS_KEY and section != "vllm":
            return Resolved(section, "")  # ollama and providers without a key to check: taken as named
        if has(section) or (section in _OAUTH and has(section, "auth_method")) or \
                (section == "vllm" and has("vllm", "api_base")):
            return Resolved(section, "")
    missing = f"provider {named!r} had no key" if named else "no provider was named"
    lower = model.lower()
    if ("kimi" in lower or "moonshot" in lower) and has("moonshot"):
        return Resolved("moonshot", f"{missing}; the model's name chose moonshot")
    if model.startswith(OPENROUTER_PREFIXES):
        return Resolved("openrouter", f"{missing}; the model's prefix ({model.split('/')[0]}/) chose OpenRouter")
    for word, by_name in BY_NAME:
        if word in lower and has(by_name):
            return Resolved(by_name, f"{missing}; the model's name chose {by_name}")
    if "ollama" in lower and has("ollama", "api_base"):
        return Resolved("ollama", f"{missing}; the model's name chose ollama")
    if has("vllm", "api_base"):
        return Resolved("vllm", f"{missing}; vllm had an api_base")
    if has("openrouter"):
        return Resolved("openrouter", f"{missing}; Go fell back to OpenRouter, which had a key")
    return None
