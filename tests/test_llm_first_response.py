"""A model server that accepts and never answers is reported within the first-response limit, for every
provider; Ollama gets longer only while /api/ps says the model is still loading."""

from __future__ import annotations

import asyncio
import time

import pytest

from picoora.llm.base import NoResponseError
from picoora.messages import Message
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.silent_server import SilentServer
from tests.llm_support import make_llm


async def _noop(kind: str, text: str) -> None:
    return None


@pytest.mark.parametrize("provider", ["ollama", "openai", "anthropic"])
def test_a_silent_server_is_reported_at_the_first_response_limit_not_retried(provider):
    with SilentServer() as silent:
        llm, sleeps = make_llm(provider, silent.url, api_key="k-test")
        llm._settings = type(llm._settings)(**{**llm._settings.__dict__, "first_response": 0.5})
        started = time.monotonic()
        with pytest.raises(NoResponseError) as caught:
            asyncio.run(llm.chat([Message("user", "hello")], on_delta=_noop))
        took = time.monotonic() - started
    assert took < 5, took
    assert "sent nothing for 0.5 seconds" in str(caught.value)
    assert f"providers.{provider}.first_response_seconds" in str(caught.value)
    assert sleeps == []  # a stuck server stays stuck: no retries


def test_ollama_loading_the_model_gets_longer_than_the_limit():
    with FakeOllama([Reply("loaded and ready")], load_seconds=1.5) as fake:
        llm, _ = make_llm("ollama", fake.url)
        llm._settings = type(llm._settings)(**{**llm._settings.__dict__, "first_response": 0.4})
        response = asyncio.run(llm.chat([Message("user", "hello")]))
    assert response.content == "loaded and ready"


def test_ollama_with_the_model_loaded_and_silent_is_not_waited_for():
    with FakeOllama([Reply("first"), Reply("too late")], delay=0.0) as fake:
        llm, _ = make_llm("ollama", fake.url)
        llm._settings = type(llm._settings)(**{**llm._settings.__dict__, "first_response": 0.4})

        async def two_chats() -> None:
            await llm.chat([Message("user", "hello")])  # loads the model: /api/ps lists it now
            fake.delay = 3.0
            await llm.chat([Message("user", "again")])

        with pytest.raises(NoResponseError):
            asyncio.run(two_chats())
