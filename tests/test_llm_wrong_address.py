"""A wrong api_base gets the right advice: an HTML page is a different server (said in one line, not
printed whole, not retried), a 404 from a server that is not Ollama is not "run ollama pull"."""

from __future__ import annotations

import asyncio

import pytest

from picoora.llm.base import LLMError, ModelNotFoundError
from picoora.messages import Message
from tests.fakes.ollama_server import FakeOllama
from tests.fakes.web_page_server import WebPageServer
from tests.llm_support import make_llm


async def _noop(kind: str, text: str) -> None:
    return None


@pytest.mark.parametrize("provider", ["ollama", "openai", "anthropic"])
@pytest.mark.parametrize("status", [404, 502])
def test_an_html_page_is_a_wrong_address_in_one_line_and_not_retried(provider, status):
    with WebPageServer(status=status) as web:
        llm, sleeps = make_llm(provider, web.url, api_key="k-test")
        with pytest.raises(LLMError) as caught:
            asyncio.run(llm.chat([Message("user", "hello")], on_delta=_noop))
    text = str(caught.value)
    assert f"answered {status} with a web page ('404 Not Found'), not an API response" in text
    assert f"providers.{provider}.api_base" in text
    assert "<html" not in text.lower() and len(text) < 400 and "\n" not in text
    assert "ollama pull" not in text
    assert sleeps == [] and web.hits <= 2  # Ollama asks /api/show first; nothing is retried


def test_a_json_404_from_something_that_is_not_ollama_is_not_model_advice():
    with WebPageServer(as_json=True) as other:
        llm, _ = make_llm("ollama", other.url)
        with pytest.raises(LLMError) as caught:
            asyncio.run(llm.chat([Message("user", "hello")]))
    assert "is not Ollama" in str(caught.value) and "ollama pull" not in str(caught.value)


def test_a_model_ollama_does_not_have_still_says_pull_it():
    with FakeOllama(models=("gemma3:1b",)) as fake:
        llm, _ = make_llm("ollama", fake.url, model="qwen3")
        with pytest.raises(ModelNotFoundError) as caught:
            asyncio.run(llm.chat([Message("user", "hello")]))
    assert "ollama pull qwen3" in str(caught.value)


def test_an_openai_404_names_both_possible_causes():
    with WebPageServer(as_json=True) as other:
        llm, _ = make_llm("openai", other.url, api_key="k-test")
        with pytest.raises(ModelNotFoundError) as caught:
            asyncio.run(llm.chat([Message("user", "hello")]))
    text = str(caught.value)
    assert "either the model does not exist there" in text and "/v1" in text


def test_a_hostile_page_where_the_api_should_be_is_read_in_linear_time():
    """256 KB of unclosed ``<title>`` tags (the old pattern retried from each to the end: 100 s) is still
    said in one line, as a page without a title, and a real title after a long head is still found."""
    from picoora.llm.retry import web_page_title

    bait = "<html>" + "<title>x" * 32_000
    with WebPageServer(status=502, page=bait) as web:
        llm, _ = make_llm("openai", web.url, api_key="k-test")
        with pytest.raises(LLMError) as caught:
            asyncio.run(llm.chat([Message("user", "hello")], on_delta=_noop))
    assert "answered 502 with a web page, not an API response" in str(caught.value)
    long_head = "<!DOCTYPE html>" + " " * 10_000
    assert web_page_title(long_head + "<TITLE lang=en> Router\n login </TITLE>") == "Router login"
    assert web_page_title("<html>" + "<title" * 60_000) == ""
