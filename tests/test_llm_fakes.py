"""The fake model servers themselves: standalone mode, Ollama's model routes, embeddings."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from tests.fakes.ollama_server import EMBED_DIMENSIONS, FakeOllama, hashed_embedding

ROOT = Path(__file__).resolve().parents[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def _post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_standalone_fake_ollama_prints_its_url_and_serves_until_killed():
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.ollama_server"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert _get(url + "/api/version")["version"]
        assert [m["name"] for m in _get(url + "/api/tags")["models"]] == ["qwen3:latest"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=5)


def test_fake_ollama_knows_only_its_models_and_their_capabilities():
    with FakeOllama(models=("qwen3", "gemma:2b"), tool_models=("qwen3",), thinking_models=()) as fake:
        status, shown = _post(fake.url + "/api/show", {"model": "qwen3"})
        assert status == 200 and shown["capabilities"] == ["completion", "tools"]
        status, error = _post(fake.url + "/api/chat", {"model": "missing", "messages": []})
        assert (status, error) == (404, {"error": "model 'missing' not found"})
        tool = {"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}
        status, error = _post(fake.url + "/api/chat", {"model": "gemma:2b", "messages": [], "tools": [tool]})
        assert status == 400 and "does not support tools" in error["error"]
        assert [body["model"] for body in fake.requests] == ["missing", "gemma:2b"]


def test_hashed_embeddings_are_deterministic_unit_vectors_that_reward_shared_words():
    a, b, c = (hashed_embedding(t) for t in ("the cat sat", "the cat sat down", "quantum ledger"))
    assert len(a) == EMBED_DIMENSIONS and a == hashed_embedding("the cat sat")
    assert math.isclose(sum(v * v for v in a), 1.0)
    cosine = lambda x, y: sum(p * q for p, q in zip(x, y, strict=True))  # noqa: E731
    assert cosine(a, b) > cosine(a, c)
    with FakeOllama(models=("all-minilm",)) as fake:
        status, body = _post(fake.url + "/api/embed", {"model": "all-minilm", "input": ["the cat sat", "x"]})
        assert status == 200 and body["embeddings"][0] == a and len(body["embeddings"]) == 2
