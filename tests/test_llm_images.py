"""Pictures through each provider, over HTTP to its fake: this turn's image in the provider's own shape, an
earlier turn's as a short note, and which models are taken to see pictures."""

from __future__ import annotations

import asyncio
import base64

import pytest

from picoora.messages import Image, Message
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.fakes.openai_server import FakeOpenAI
from tests.llm_support import make_llm

PNG = b"\x89PNG\r\n\x1a\n" + b"\x07" * 64
B64 = base64.b64encode(PNG).decode()


def conversation() -> list[Message]:
    earlier = Image("cat.jpg", "image/jpeg", "inbox/cat.jpg")  # from the transcript: no bytes
    return [Message("system", "be brief"), Message("user", "and this one?", images=[earlier]),
            Message("assistant", "A cat."), Message("user", "what now?", images=[Image("dog.png", "image/png",
                                                                                         "inbox/dog.png", PNG)])]


def chat(llm, messages):
    async def go():
        try:
            return await llm.chat(messages), await llm.sees_images()
        finally:
            await llm.close()

    return asyncio.run(go())


def test_ollama_gets_base64_images_on_the_message_and_asks_api_show_whether_the_model_sees():
    with FakeOllama(models=["llava"], vision_models=["llava"], replies=[Reply(content="A dog.")]) as fake:
        llm, _ = make_llm("ollama", fake.url, model="llava")
        response, sees = chat(llm, conversation())
    messages = fake.requests[0]["messages"]
    assert messages[-1] == {"role": "user", "content": "what now?", "images": [B64]}
    assert messages[1] == {"role": "user", "content": "[image: inbox/cat.jpg]\nand this one?"}
    assert response.content == "A dog." and sees is True


def test_an_ollama_model_without_vision_in_api_show_does_not_see():
    with FakeOllama() as fake:
        llm, _ = make_llm("ollama", fake.url)
        _, sees = chat(llm, [Message("user", "hi")])
    assert sees is False


def test_openai_gets_image_url_content_parts_with_a_data_url():
    with FakeOpenAI(replies=[Reply(content="A dog.")]) as fake:
        llm, _ = make_llm("openai", fake.url + "/v1", model="gpt-4o-mini")
        response, sees = chat(llm, conversation())
    messages = fake.requests[0]["messages"]
    assert messages[-1] == {"role": "user", "content": [
        {"type": "text", "text": "what now?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}]}
    assert messages[1] == {"role": "user", "content": "[image: inbox/cat.jpg]\nand this one?"}
    assert response.content == "A dog." and sees is True


def test_anthropic_gets_base64_image_blocks_before_the_text():
    with FakeAnthropic(replies=[Reply(content="A dog.")]) as fake:
        llm, _ = make_llm("anthropic", fake.url, model="claude-sonnet-4-5", api_key="fake-anthropic-key")
        response, sees = chat(llm, conversation())
    messages = fake.requests[0]["messages"]
    assert messages[-1] == {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}},
        {"type": "text", "text": "what now?"}]}
    assert messages[0]["content"] == [{"type": "text", "text": "[image: inbox/cat.jpg]\nand this one?"}]
    assert response.content == "A dog." and sees is True


@pytest.mark.parametrize(("provider", "model", "sees"), [
    ("openai", "gpt-4o", True), ("openai", "o3-mini", False), ("openai", "gpt-3.5-turbo", False),
    ("openrouter", "openai/gpt-4.1-mini", True), ("vllm", "Qwen/Qwen2.5-VL-7B-Instruct", True),
    ("anthropic", "claude-opus-4-1", True), ("anthropic", "claude-2.1", False)])
def test_openai_compatible_and_anthropic_models_see_by_the_known_model_rule(provider, model, sees):
    llm, _ = make_llm(provider, "http://127.0.0.1:9", model=model, api_key="k")
    assert asyncio.run(llm.sees_images()) is sees


def test_vision_models_in_the_config_replace_the_known_rule():
    llm, _ = make_llm("openai", "http://127.0.0.1:9", model="my-local-vlm", vision_models=["my-local-*"])
    assert asyncio.run(llm.sees_images()) is True


def test_a_picture_without_words_goes_alone_to_each_provider():
    alone = [Message("user", "", images=[Image("dog.png", "image/png", "inbox/dog.png", PNG)])]
    with FakeOpenAI() as openai_fake, FakeAnthropic() as anthropic_fake:
        chat(make_llm("openai", openai_fake.url + "/v1", model="gpt-4o")[0], alone)
        chat(make_llm("anthropic", anthropic_fake.url, model="claude-sonnet-4-5", api_key="k")[0], alone)
    assert openai_fake.requests[0]["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}]
    assert anthropic_fake.requests[0]["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}}]
