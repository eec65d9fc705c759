"""The file backend's persistent memory index: beside the log, trusted only while it matches the log."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from picoora.store.base import MemoryRecord
from picoora.store.files import FileStore, file_memories, memory_ops
from picoora.store.files.memory_index import MemoryIndex
from picoora.store.files.memory_snapshot import Snapshot, snapshot_dir
from picoora.store.layout import FileLayout
from tests.fakes.hash_embedder import HashEmbedder

FACTS = ["The boat is moored at pier seven", "The spare key is under the blue flowerpot",
         "Invoice INV-2024-0381 covers the new laptops", "Grandma Rosa turns ninety next spring"]


def _store(workspace: Path, salt: str = "") -> FileStore:
    return FileStore(workspace, embedder=HashEmbedder(salt))


def _fill(workspace: Path) -> list[str]:
    with closing(_store(workspace)) as store:
        return [store.memories.add(fact).memory.id for fact in FACTS]


def _no_replay(monkeypatch) -> None:
    def refuse(ops):
        raise AssertionError("the whole log was replayed")

    monkeypatch.setattr(file_memories, "_fold", refuse)


def test_a_new_process_answers_from_the_snapshot_without_replaying_the_log(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ids = _fill(ws)
    with closing(_store(ws)) as store:
        store.memories.list()  # the first open after writes folds the log once and snapshots it
    assert (snapshot_dir(FileLayout(ws).memory_log) / "manifest.json").is_file()
    _no_replay(monkeypatch)
    with closing(_store(ws)) as store:
        assert store.memories.recall("boat moored pier", limit=1).matches[0].memory.id == ids[0]
        assert store.memories.recall("INV-2024-0381", limit=1).matches[0].memory.id == ids[2]
        assert store.memories.get(ids[1]).content == FACTS[1]
        assert store.memories.forget(ids[3]) and store.memories.get(ids[3]) is None
        assert store.memories.add(FACTS[0]).created is False  # dedup sees snapshot rows
        assert len(store.memories.list()) == 3


def test_the_index_lives_beside_the_log_wherever_the_log_is(tmp_path):
    log = tmp_path / "private" / "store" / "mem.jsonl"
    log.parent.mkdir(parents=True)
    memories = file_memories.MemoryLog(log, lambda anchors=None: MemoryIndex(HashEmbedder(), anchors=anchors),
                                       "test-hash-384")
    memories.add("The boat is moored at pier seven", 0.5, "fact", HashEmbedder().embed(["boat"])[0], "test-hash-384")
    memories.compact()
    assert (tmp_path / "private" / "store" / "mem.index" / "manifest.json").is_file()
    assert not (tmp_path / "memory").exists()


def test_a_log_rewritten_behind_the_snapshot_is_never_trusted(tmp_path):
    ws = tmp_path / "ws"
    _fill(ws)
    with closing(_store(ws)) as store:
        store.memories.list()
    log = FileLayout(ws).memory_log
    lines = log.read_text().splitlines(keepends=True)
    replaced = json.loads(lines[0])
    replaced.update(id="edited0001", content="The canoe is stored in the shed")
    # Same file, same length or longer: only the content differs.
    log.write_text(json.dumps(replaced) + "\n" + "".join(lines[1:]))
    with closing(_store(ws)) as store:
        contents = {m.content for m in store.memories.list()}
    assert "The canoe is stored in the shed" in contents and FACTS[0] not in contents


def test_lines_appended_after_the_snapshot_are_replayed_on_top_of_it(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    _fill(ws)
    with closing(_store(ws)) as reader, closing(_store(ws)) as writer:
        reader.memories.list()
        extra = writer.memories.add("The bike lock combination is 3-9-1-5").memory
        writer.memories.recall("boat moored", limit=1)  # a touch of a snapshot row
        _no_replay(monkeypatch)
        assert reader.memories.recall("bike lock combination", limit=1).matches[0].memory.id == extra.id
        boat = next(m for m in reader.memories.list() if m.content == FACTS[0])
        assert boat.access_count == 1


def test_damaged_or_half_written_index_files_are_rebuilt_from_the_log(tmp_path, caplog):
    ws = tmp_path / "ws"
    ids = _fill(ws)
    with closing(_store(ws)) as store:
        store.memories.list()
    directory = snapshot_dir(FileLayout(ws).memory_log)
    gen = json.loads((directory / "manifest.json").read_text())["gen"]
    (directory / f"{gen}.vectors.npy").write_bytes(b"\x93NUMPY garbage")
    (directory / "0123456789ab.vectors.npy").write_bytes(b"left by a crash before the manifest switched")
    with closing(_store(ws)) as store:
        assert store.memories.recall("spare key flowerpot", limit=1).matches[0].memory.id == ids[1]
    assert "rebuilding it from the log" in caplog.text
    assert not (directory / "0123456789ab.vectors.npy").exists()


def test_a_snapshot_of_another_embedding_model_is_not_used_for_vectors(tmp_path):
    ws = tmp_path / "ws"
    ids = _fill(ws)
    with closing(_store(ws)) as store:
        store.memories.list()
    with closing(_store(ws, salt="other")) as store:
        result = store.memories.recall("boat moored pier", limit=1)
        assert result.matches[0].memory.id == ids[0]  # by keywords: the vectors are another model's
        assert result.matches[0].similarity is None and "reindex" in (result.note or "")


def test_a_long_tail_is_folded_into_a_new_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(file_memories, "SNAPSHOT_TAIL_OPS", 5)
    ws = tmp_path / "ws"
    _fill(ws)
    directory = snapshot_dir(FileLayout(ws).memory_log)
    with closing(_store(ws)) as store:
        store.memories.list()
        first = json.loads((directory / "manifest.json").read_text())["gen"]
        for n in range(7):
            store.memories.add(f"tail fact {n} number {n * 11}")
        assert len(store.memories.list()) == len(FACTS) + 7
        manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["gen"] != first and manifest["rows"] > len(FACTS)  # the tail went into the snapshot


@pytest.mark.parametrize("count", [0, 1])
def test_tiny_and_empty_logs(tmp_path, count):
    ws = tmp_path / "ws"
    with closing(_store(ws)) as store:
        for n in range(count):
            store.memories.add(f"only fact {n}")
        assert len(store.memories.list()) == count
    with closing(_store(ws)) as store:
        assert len(store.memories.recall("only fact", limit=3).matches) == count


def test_a_store_takes_the_snapshot_another_store_rewrote_instead_of_folding_again(tmp_path, monkeypatch):
    monkeypatch.setattr(file_memories, "SNAPSHOT_TAIL_OPS", 5)
    ws = tmp_path / "ws"
    _fill(ws)
    with closing(_store(ws)) as reader, closing(_store(ws)) as writer:
        reader.memories.list()
        for n in range(7):
            writer.memories.add(f"tail fact {n} number {n * 11}")
        writer.memories.list()  # the writer folds its long tail into a new snapshot
        _no_replay(monkeypatch)
        assert len(reader.memories.list()) == len(FACTS) + 7


def test_vector_status_counts_missing_vectors_without_decoding_a_record(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    with closing(_store(ws, salt="old")) as old:  # vectors of another model: missing for the store below
        old_ids = [old.memories.add(f"old fact {n} about the {word}").memory.id
                   for n, word in enumerate(("harbour", "garden", "attic"))]
    ids = _fill(ws)
    with closing(_store(ws)) as store, closing(_store(ws, salt="old")) as writer:
        store.memories.list()  # the snapshot: 3 rows without this model's vector, 4 with
        assert store.memories.forget(old_ids[0]) and store.memories.forget(ids[3])
        store.memories.recall("boat moored pier", limit=1)  # a touched row changes its record, not its vector
        store.memories.add("The canoe is stored in the shed")
        writer.memories.add("old fact about the cellar")  # another process's line, read from the tail
        decoded = sum(1 for m in store.memories.list() if m.embedding_model != store.memories.vector_status().embedder)

        def refuse(self, row):
            raise AssertionError("a record was decoded to count vectors")

        monkeypatch.setattr(Snapshot, "record", refuse)
        assert store.memories.vector_status().missing == decoded == 3
    monkeypatch.undo()
    with closing(_store(ws, salt="new")) as other:  # a snapshot of another model's: its records say
        assert other.memories.vector_status().missing == len(other.memories.list()) == 7


def _seeded_log(path: Path, count: int, model: str) -> np.ndarray:
    """A memory log of ``count`` memories with random unit vectors of ``model``; returns the vectors."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for i, vector in enumerate(vectors):
            record = MemoryRecord(id=f"s{i:05d}", content=f"seeded memory number {i}", embedding_model=model)
            out.write(json.dumps(memory_ops.add_op(record, memory_ops.encode_vector(vector))) + "\n")
    return vectors


def _mapped_kb(name_end: str) -> int:
    """Rss of this process's mapping of the file whose name ends with ``name_end`` (/proc/self/smaps)."""
    rss, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if line[:1].isdigit() or line[:1] in "abcdef" and "-" in line.split()[0]:
            inside = line.rstrip().endswith(name_end)
        elif inside and line.startswith("Rss:"):
            rss += int(line.split()[1])
    return rss


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads /proc/self/smaps")
def test_a_scan_of_the_vectors_matches_the_product_without_mapping_the_matrix(tmp_path, monkeypatch):
    from picoora.store.files import memory_snapshot

    monkeypatch.setattr(memory_snapshot, "SCAN_ROWS", 96)  # 144 KB chunks, the last one short: 11 reads
    monkeypatch.setattr(memory_snapshot, "MAPPED_SCAN_BYTES", 1 << 20)  # the 1.5 MB matrix counts as large
    log = tmp_path / "memories.jsonl"
    vectors = _seeded_log(log, 1000, "test-hash-384")
    memories = file_memories.MemoryLog(log, lambda anchors=None: MemoryIndex(HashEmbedder(), anchors=anchors),
                                       "test-hash-384")
    memories.refresh()
    snapshot = memories._base
    query = vectors[123]
    np.testing.assert_allclose(snapshot.similarities(query), vectors @ query, atol=1e-6)
    # Read into a buffer: of the map's 1.5 MB at most the kernel's fault-around near the header (64 KB) is mapped.
    assert _mapped_kb("vectors.npy") <= 128
    index = memories.searchable()
    assert index.find_duplicate("the seeded memory number 123", query).id == "s00123"  # dedup scans too
    assert int(np.argmax(snapshot.similarities(query))) == 123
    monkeypatch.setattr(memory_snapshot, "MAPPED_SCAN_BYTES", 2 << 20)  # small enough to scan through the map
    np.testing.assert_allclose(snapshot.similarities(vectors[:3]), vectors @ vectors[:3].T, atol=1e-6)


def test_an_import_batch_finds_the_same_duplicates_as_one_check_per_text(tmp_path, monkeypatch):
    from picoora.store.files import memory_index

    monkeypatch.setattr(memory_index, "DEDUP_PRODUCT", 3)  # a product of 3 similarities: many small batches
    ws = tmp_path / "ws"
    ids = _fill(ws)  # FACTS, in the snapshot once the next store opens
    with closing(_store(ws)) as store:
        store.memories.list()
        store.memories.forget(ids[3])
        tail = store.memories.add("The canoe is stored in the shed").memory.id
        index = store.memories.log.searchable()
        contents = [
            "at pier seven the boat is moored",  # the snapshot's FACTS[0], words reordered: same vector
            "The spare key is under the blue flowerpot",  # exact text of a snapshot row
            "Invoice INV-2024-0999 covers the new laptops",  # another code: a new fact
            "Grandma Rosa turns ninety next spring",  # forgotten: new again
            "in the shed the canoe is stored",  # the tail's memory, reordered
            "Something nobody said before",
        ]
        vectors = HashEmbedder().embed(contents)
        batched = index.find_duplicates(contents, vectors)
        one_by_one = [index.find_duplicate(c, v) for c, v in zip(contents, vectors, strict=True)]
        assert [r and r.id for r in batched] == [r and r.id for r in one_by_one] == [ids[0], ids[1], None, None,
                                                                                     tail, None]
        assert [r and r.id for r in index.find_duplicates(contents, None)] == [None, ids[1], None, None, None, None]
        tail_only = MemoryIndex(HashEmbedder())
        for record in store.memories.list():
            tail_only.add(record, HashEmbedder().embed([record.content])[0])
        assert [r and r.id for r in tail_only.find_duplicates(contents, vectors)] == [r and r.id for r in batched]


def test_an_import_sized_check_through_the_projection_finds_exactly_what_the_full_scan_finds(tmp_path, monkeypatch):
    """``dedup_prefilter``: a batched duplicate check first compares 64 projected dimensions, then only the
    rows that pass in full. The bound is exact, so the answers are the full product's, row for row."""
    from picoora.store.files import log_index

    log = tmp_path / "memories.jsonl"
    vectors = _seeded_log(log, 3000, "test-hash-384")
    memories = file_memories.MemoryLog(log, lambda anchors=None: MemoryIndex(HashEmbedder(), anchors=anchors),
                                       "test-hash-384")
    memories.refresh()
    index = memories.searchable()
    rng = np.random.default_rng(7)
    rows = rng.choice(3000, size=60, replace=False)
    queries, contents = [], []
    for k, row in enumerate(rows):
        noise = rng.standard_normal(384).astype(np.float32)
        # cosines from ~0.99 (a duplicate) down to ~0.9 (close, not a duplicate), some texts naming another number
        query = vectors[row] + noise / np.linalg.norm(noise) * (0.1 + 0.4 * (k % 4) / 3)
        queries.append(query / np.linalg.norm(query))
        contents.append(f"the seeded memory number {row if k % 5 else row + 1}")
    matrix = np.stack(queries).astype(np.float32)
    projected = [r and r.id for r in index.find_duplicates(contents, matrix)]
    monkeypatch.setattr(log_index, "PREFILTER_QUERIES", 10**9)  # the full product for every text
    scanned = [r and r.id for r in index.find_duplicates(contents, matrix)]
    assert projected == scanned
    assert 10 < sum(found is not None for found in projected) < 60  # both kinds were asked
    assert memories._base.near_rows(matrix[:1], 0.95)[0].size < 30  # and the projection let few rows through
