"""Helpers for the provider tests: a provider from config pointed at a fake, with sleeps recorded not slept."""

from __future__ import annotations

from typing import Any

from picoora.config import Config
from picoora.llm import create_llm
from picoora.llm.retry import RetryPolicy


class Sleeps(list):
    """An injectable ``sleep`` that records the pauses instead of waiting."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


class Deltas(list):
    """An async ``on_delta`` that records (kind, text) pairs."""

    async def __call__(self, kind: str, text: str) -> None:
        self.append((kind, text))

    def text(self, kind: str) -> str:
        return "".join(t for k, t in self if k == kind)


def make_llm(provider: str, api_base: str, *, model: str = "qwen3", api_key: str = "", max_retries: int = 3,
             **defaults: Any):
    """(llm, sleeps) built through ``create_llm`` from a Config, as the agent does."""
    config = Config()
    config.agents.defaults.provider = provider
    config.agents.defaults.model = model
    for key, value in defaults.items():
        setattr(config.agents.defaults, key, value)
    settings = getattr(config.providers, provider)
    settings.api_base = api_base
    settings.api_key = api_key
    sleeps = Sleeps()
    retry = RetryPolicy(max_retries=max_retries, sleep=sleeps, jitter=lambda: 1.0)
    return create_llm(config, retry=retry), sleeps
