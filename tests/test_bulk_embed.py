"""Bulk embedding for `memory import` and `memory reindex`: chunked, durable per chunk, resumable, parallel."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from contextlib import closing

import numpy as np
import pytest

from picoora.store import bulk_embed
from picoora.store.base import MemoryRecord, StoreError
from picoora.store.embedder import EmbedderUnavailable, MiniLMEmbedder
from picoora.store.files import FileStore
from picoora.store.layout import FileLayout
from tests.cli_support import REPO, write_config
from tests.fakes._http import closed_port_url
from tests.fakes.hash_embedder import HashEmbedder


class FlakyEmbedder(HashEmbedder):
    """Fails on the call numbered ``fail_on`` (1-based); counts the texts it embedded."""

    def __init__(self, fail_on: int | None = None, salt: str = ""):
        super().__init__(salt)
        self.fail_on = fail_on
        self.texts = 0

    def embed(self, texts):
        if self.fail_on is not None and self.calls + 1 == self.fail_on:
            self.calls += 1
            raise EmbedderUnavailable("the embedder went away")
        self.texts += len(texts)
        return super().embed(texts)


def _records(count: int) -> list[MemoryRecord]:
    return [MemoryRecord(id=f"r{i:04d}", content=f"imported fact number {i} about item {i * 7}") for i in range(count)]


def test_an_interrupted_import_keeps_finished_chunks_and_a_rerun_embeds_only_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(bulk_embed, "CHUNK", 10)
    records = _records(35)
    flaky = FlakyEmbedder(fail_on=3)  # call 1: the availability probe, call 2: chunk one, call 3 fails
    with closing(FileStore(tmp_path / "ws", embedder=flaky)) as store:
        with pytest.raises(StoreError, match="stopped after 10 memories .*run it again"):
            store.memories.import_records(records)
        assert len(store.memories.list()) == 10
    working = FlakyEmbedder()
    with closing(FileStore(tmp_path / "ws", embedder=working)) as store:
        assert store.memories.import_records(records) == 25
        assert working.texts == 1 + 25  # the probe, then only what was missing
        assert {m.id for m in store.memories.list()} == {r.id for r in records}


def test_an_interrupted_reindex_resumes_where_it_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(bulk_embed, "CHUNK", 10)
    with closing(FileStore(tmp_path / "ws", embedder=HashEmbedder(salt="old"))) as store:
        assert store.memories.import_records(_records(35)) == 35
    log = FileLayout(tmp_path / "ws").memory_log
    progress = log.with_name("memories.reindex.json")
    with closing(FileStore(tmp_path / "ws", embedder=FlakyEmbedder(fail_on=3, salt="new"))) as store:
        with pytest.raises(StoreError, match="run the reindex again to continue"):
            store.memories.reindex()
    assert len(json.loads(progress.read_text())["done"]) == 20
    resumed = FlakyEmbedder(salt="new")
    with closing(FileStore(tmp_path / "ws", embedder=resumed)) as store:
        assert store.memories.reindex() == 35
        assert resumed.texts == 15
        assert {m.embedding_model for m in store.memories.list()} == {"test-hash-384-new"}
    assert not progress.exists()
    assert {op["model"] for op in map(json.loads, log.read_text().splitlines())} == {"test-hash-384-new"}


@pytest.mark.slow
def test_parallel_bulk_vectors_match_the_numpy_encoder():
    pytest.importorskip("onnxruntime")
    texts = [f"Memory {i}: {word} is stored in box {i * 3}" for i, word in enumerate(["tea", "keys", "maps"] * 200)]
    embedder = MiniLMEmbedder()
    seen = []
    chunks = list(bulk_embed.embed_chunks(embedder, texts, progress=lambda done, total: seen.append((done, total)),
                                          workers=2))
    size = bulk_embed.item_size(len(texts), 2)
    assert [start for start, _ in chunks] == list(range(0, len(texts), size))
    vectors = np.vstack([v for _, v in chunks])
    reference = embedder.embed(texts[::50])
    assert float((vectors[::50] * reference).sum(axis=1).min()) > 0.99999
    assert seen[-1] == (len(texts), len(texts))


def test_work_items_fill_whole_rounds_of_the_workers_and_never_exceed_a_chunk():
    chunk = bulk_embed.CHUNK
    assert bulk_embed.item_size(3 * chunk, 2) == 3 * chunk // 4  # four even items, not 256 + 256 + 256 on two
    assert bulk_embed.item_size(2 * chunk - 58, 2) == chunk - 29  # 454 document chunks: 227 each
    assert bulk_embed.item_size(10, 2) == 5
    assert bulk_embed.item_size(1, 4) == 1
    for texts in (1, 7, chunk, 5 * chunk + 3):
        for workers in (1, 2, 3):
            size = bulk_embed.item_size(texts, workers)
            fewest_rounds = -(-texts // (workers * chunk))
            assert size <= chunk and -(-texts // size) <= workers * fewest_rounds  # no round more than needed


def test_import_on_a_terminal_shows_a_progress_bar(isolated_home, tmp_path):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="minilm")
    source = tmp_path / "seed.jsonl"
    source.write_text("".join(json.dumps({"id": f"p{i}", "content": f"fact {i} for the bar"}) + "\n"
                              for i in range(20)))
    leader, follower = pty.openpty()
    env = {**os.environ, "PICOORA_HOME": str(isolated_home), "COLUMNS": "100"}
    child = subprocess.run([sys.executable, "-m", "picoora", "memory", "import", str(source)], stderr=follower,
                           stdout=subprocess.PIPE, text=True, env=env, cwd=REPO, timeout=60)
    os.close(follower)
    shown = b""
    try:
        while chunk := os.read(leader, 4096):
            shown += chunk
    except OSError:  # the terminal closed
        pass
    os.close(leader)
    assert child.returncode == 0 and "Imported 20 memories" in child.stdout
    assert b"Importing" in shown and b"20/20" in shown
