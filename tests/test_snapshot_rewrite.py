"""Rewriting the memory snapshot from the loaded one (not from the log) gives what a full rebuild gives."""

from __future__ import annotations

import json
import random
import shutil
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from picoora.store.base import MemoryRecord
from picoora.store.embedder import EmbedderUnavailable
from picoora.store.files import FileStore, file_memories, memory_index, memory_snapshot
from picoora.store.files.file_memories import MemoryLog
from picoora.store.files.log_index import LogIndex, Overlay
from picoora.store.files.memory_index import MemoryIndex
from picoora.store.files.memory_ops import add_op, decode_vector, encode_vector
from picoora.store.files.memory_snapshot import Snapshot, snapshot_dir
from picoora.store.layout import FileLayout
from tests.fakes.hash_embedder import HashEmbedder

pytestmark = pytest.mark.slow  # many rewrites compared with full rebuilds: `pytest -m slow` (.ci/run) runs it

MODEL = HashEmbedder().model_id
OTHER = HashEmbedder("other")
WORDS = ["boat", "pier", "key", "flowerpot", "invoice", "INV-0381", "laptop", "Rosa", "spring", "garden", "shed",
         "Porto", "dentist", "Tuesday", "ORA-01234", "billing"]
QUERIES = ["boat pier", "INV-0381 invoice", "Rosa spring garden", "dentist Tuesday", "ORA-01234"]


class FlakyEmbedder(HashEmbedder):
    """Sometimes down, so some memories are stored without a vector."""

    def __init__(self, rng: random.Random):
        super().__init__()
        self.rng = rng

    def embed(self, texts):
        if self.rng.random() < 0.15:
            raise EmbedderUnavailable("the test says it is down")
        return super().embed(texts)


def _text(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, rng.randint(1, 4)))


def _generation(log: Path) -> dict:
    """Everything a generation holds, read into memory."""
    directory = snapshot_dir(log)
    manifest = json.loads((directory / "manifest.json").read_text())
    out = {name: np.load(directory / f"{manifest['gen']}.{name}.npy") for name in memory_snapshot._ARRAYS}
    out["records"] = (directory / f"{manifest['gen']}.records.jsonl").read_bytes()
    out["manifest"] = {key: manifest[key] for key in ("format", "rows", "lines", "model")}
    return out


def _full_rebuild(log: Path, offset: int, where: Path) -> Path:
    """A snapshot folded from the first ``offset`` bytes of ``log`` by a process that has none."""
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    copy = where / "memories.jsonl"
    with open(log, "rb") as source:
        copy.write_bytes(source.read(offset))
    MemoryLog(copy, lambda anchors=None: MemoryIndex(HashEmbedder(), anchors=anchors), MODEL).refresh()
    return copy


def _search(log: Path) -> list:
    snapshot = Snapshot.load(log, MODEL)
    index = LogIndex(snapshot, Overlay(), MemoryIndex(HashEmbedder()))
    now = datetime(2030, 1, 1, tzinfo=timezone.utc)  # one clock for both, so recency cannot differ
    return [[(m.memory, m.score, m.similarity) for m in index.search(q, 4, now=now).matches] for q in QUERIES]


def _check_against_the_log(log: Path) -> None:
    """The snapshot holds exactly the fold of the log up to its offset: records, vectors, lookups."""
    snapshot = Snapshot.load(log, MODEL)
    with open(log, "rb") as file:
        prefix = file.read(snapshot.position.offset).decode().splitlines()
    entries, _ = file_memories._fold(json.loads(line) for line in prefix)
    assert snapshot.rows == len(entries)
    for memory_id, entry in entries.items():
        row = snapshot.row_of(memory_id)
        assert row is not None and snapshot.record(row) == entry.record
        assert row in snapshot.rows_with_text(entry.record.content)
        has = entry.vec is not None and entry.record.embedding_model == MODEL
        assert bool(snapshot.has_vector[row]) == has
        if has:
            assert np.array_equal(snapshot.vectors[row], decode_vector(entry.vec))


def _step(rng: random.Random, store: FileStore, forgotten: list[str]) -> None:
    memories = store.memories.log
    live = [r.id for r in store.memories.list()]
    roll = rng.random()
    if roll < 0.3 or not live:
        store.memories.add(_text(rng), importance=rng.choice([0.3, 0.5, 0.9]))
    elif roll < 0.4:  # an exact duplicate: raises the importance of the one there
        store.memories.add(store.memories.get(rng.choice(live)).content, importance=rng.choice([0.5, 1.0]))
    elif roll < 0.5:
        forgotten.extend(memory_id for memory_id in [rng.choice(live)] if store.memories.forget(memory_id))
    elif roll < 0.7:
        store.memories.recall(rng.choice(QUERIES), limit=3)  # touches what it finds
    elif roll < 0.78:  # reindex's op, with this model's vector or another model's
        memory_id = rng.choice(live)
        content = store.memories.get(memory_id).content
        model = rng.choice([MODEL, OTHER.model_id])
        with store._lock:
            memories.refresh()
            memories.store_reembedded({memory_id: content}, [HashEmbedder("re").embed([content])[0]], model)
    elif roll < 0.86:  # another model's vector, or none
        vector, model = rng.choice([(OTHER.embed(["x"])[0], OTHER.model_id), (None, None)])
        with store._lock:
            memories.add(_text(rng) + " extra", 0.5, "general", vector, model)
    elif roll < 0.93 and forgotten:  # an import keeps a forgotten memory's id: added again, at the end
        with store._lock:
            memories.refresh()
            memories.import_records([MemoryRecord(id=forgotten.pop(), content=_text(rng) + " back")], [None], None)
    else:  # an add under an id already there (a merged log): a fold keeps it where it was
        record = MemoryRecord(id=rng.choice(live), content=_text(rng) + " again", importance=0.6)
        with store._lock:
            memories.refresh()
            memories._append([add_op(record, encode_vector(HashEmbedder().embed([record.content])[0]))])


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_incremental_rewrites_equal_full_rebuilds_of_the_log(tmp_path, monkeypatch, seed):
    monkeypatch.setattr(file_memories, "SNAPSHOT_TAIL_OPS", 6)
    monkeypatch.setattr(file_memories, "COMPACT_MIN_DEAD_LINES", 60)  # compactions (full rebuilds) join the mix
    monkeypatch.setattr(memory_index, "RETRY_EMBEDDER_SECONDS", 0.0)
    rewrites = []
    real_rewrite = MemoryLog._rewrite
    monkeypatch.setattr(MemoryLog, "_rewrite", lambda self: rewrites.append(1) or real_rewrite(self))
    rng = random.Random(seed)
    ws = tmp_path / "ws"
    log = FileLayout(ws).memory_log
    stores = [FileStore(ws, embedder=FlakyEmbedder(rng)), FileStore(ws, embedder=HashEmbedder())]  # two processes
    forgotten: list[str] = []
    last_gen = None
    compared = 0
    try:
        for _ in range(160):
            _step(rng, rng.choice(stores), forgotten)
            if not (snapshot_dir(log) / "manifest.json").exists():
                continue
            manifest = json.loads((snapshot_dir(log) / "manifest.json").read_text())
            if manifest["gen"] == last_gen:
                continue
            last_gen = manifest["gen"]
            rebuilt = _full_rebuild(log, manifest["log"]["offset"], tmp_path / "rebuilt")
            incremental, full = _generation(log), _generation(rebuilt)
            assert incremental["records"] == full["records"]
            assert incremental["manifest"] == full["manifest"]
            for name in memory_snapshot._ARRAYS:
                assert (incremental[name].dtype == full[name].dtype
                        and np.array_equal(incremental[name], full[name])), name
            _check_against_the_log(log)
            assert _search(log) == _search(rebuilt)
            compared += 1
    finally:
        for store in stores:
            store.close()
    assert len(rewrites) >= 10 and compared >= 10


def _open(ws: Path) -> FileStore:
    return FileStore(ws, embedder=HashEmbedder())


def _seed(ws: Path, count: int) -> list[str]:
    """``count`` memories, and a snapshot that ends where the log does."""
    with closing(_open(ws)) as store:
        ids = [store.memories.add(f"fact number {n} about the harbour code H-{n:04d}").memory.id for n in range(count)]
    with closing(_open(ws)) as store:
        store.memories.list()
    return ids


def test_a_rewrite_reads_no_log_line_before_the_snapshot_and_tokenises_only_new_memories(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    _seed(ws, 20)
    with closing(_open(ws)) as store:
        store.memories.list()
        monkeypatch.setattr(file_memories, "SNAPSHOT_TAIL_OPS", 5)
        before = json.loads((snapshot_dir(FileLayout(ws).memory_log) / "manifest.json").read_text())["gen"]
        monkeypatch.setattr(file_memories, "_fold", lambda ops: pytest.fail("the whole log was folded"))
        tokenised = []
        real_tokenize = memory_snapshot.tokenize
        monkeypatch.setattr(memory_snapshot, "tokenize", lambda text: tokenised.append(text) or real_tokenize(text))
        store.memories.recall("harbour code H-0003", limit=2)  # touches: records change, texts do not
        new = [store.memories.add(f"new tail fact {n}").memory.content for n in range(5)]
        store.memories.list()
        manifest = json.loads((snapshot_dir(FileLayout(ws).memory_log) / "manifest.json").read_text())
    assert manifest["gen"] != before and manifest["rows"] == 25
    assert sorted(tokenised) == sorted(new)


def test_a_rewrite_interrupted_before_the_manifest_switch_leaves_the_old_snapshot_trusted(tmp_path, monkeypatch,
                                                                                           caplog):
    ws = tmp_path / "ws"
    ids = _seed(ws, 10)
    monkeypatch.setattr(file_memories, "SNAPSHOT_TAIL_OPS", 5)
    log = FileLayout(ws).memory_log
    directory = snapshot_dir(log)
    old = json.loads((directory / "manifest.json").read_text())
    real_write_array = memory_snapshot._write_array

    def full_disk(path, array):
        if path.name.endswith(".term_rows.npy"):  # the records and vectors are written by then
            raise OSError(28, "No space left on device")
        real_write_array(path, array)

    monkeypatch.setattr(memory_snapshot, "_write_array", full_disk)
    with closing(_open(ws)) as store:
        added = [store.memories.add(f"tail fact {n} with code T-{n}").memory.id for n in range(8)]
        assert store.memories.get(added[-1]) is not None  # the failed rewrites cost no operation
        assert "not rewritten" in caplog.text and "No space left" in caplog.text
        assert json.loads((directory / "manifest.json").read_text()) == old
        assert len(list(directory.glob("*.vectors.npy"))) > 1  # the unfinished generations' files are there
        with closing(_open(ws)) as other:  # another process trusts the old snapshot and replays the tail
            assert Snapshot.load(log, MODEL).position.offset == old["log"]["offset"]
            assert {m.id for m in other.memories.list()} == set(ids) | set(added)
            assert other.memories.recall("code T-5", limit=1).matches[0].memory.id == added[5]
        monkeypatch.setattr(memory_snapshot, "_write_array", real_write_array)
        store.memories.list()  # the next operation rewrites it
        new = json.loads((directory / "manifest.json").read_text())
    assert new["gen"] != old["gen"] and new["rows"] == len(ids) + len(added)
    assert all(p.name.startswith(new["gen"]) for p in directory.iterdir() if p.name != "manifest.json")


def test_a_process_holding_the_old_generation_keeps_searching_it_after_a_rewrite(tmp_path, monkeypatch):
    monkeypatch.setattr(file_memories, "SNAPSHOT_TAIL_OPS", 5)
    ws = tmp_path / "ws"
    ids = _seed(ws, 10)
    directory = snapshot_dir(FileLayout(ws).memory_log)
    with closing(_open(ws)) as reader, closing(_open(ws)) as writer:
        with reader._lock:
            held = reader.memories.log.searchable()  # maps the current generation
        old_gen = json.loads((directory / "manifest.json").read_text())["gen"]
        for n in range(7):
            writer.memories.add(f"writer fact {n}")
        writer.memories.list()
        assert not any(p.name.startswith(old_gen) for p in directory.iterdir())  # its files are gone
        assert held.search("harbour code H-0007", 1).matches[0].memory.id == ids[7]
        assert reader.memories.recall("writer fact 6", limit=1).matches[0].memory.content == "writer fact 6"


def test_a_snapshot_of_the_previous_format_is_rebuilt_from_the_log_once(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ids = _seed(ws, 8)
    manifest_path = snapshot_dir(FileLayout(ws).memory_log) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "format": memory_snapshot.FORMAT - 1}))
    folds = []
    real_fold = file_memories._fold
    monkeypatch.setattr(file_memories, "_fold", lambda ops: folds.append(1) or real_fold(ops))
    for _ in range(2):
        with closing(_open(ws)) as store:
            assert {m.id for m in store.memories.list()} == set(ids)
    assert len(folds) == 1
    assert json.loads(manifest_path.read_text())["format"] == memory_snapshot.FORMAT


def test_arrays_of_a_snapshot_that_disagree_in_length_are_not_trusted(tmp_path, caplog):
    ws = tmp_path / "ws"
    ids = _seed(ws, 6)
    directory = snapshot_dir(FileLayout(ws).memory_log)
    gen = json.loads((directory / "manifest.json").read_text())["gen"]
    np.save(directory / f"{gen}.row_term_starts.npy", np.array([0, 1, 2], dtype=np.int64))
    with closing(_open(ws)) as store:
        assert store.memories.recall("harbour code H-0002", limit=1).matches[0].memory.id == ids[2]
    assert "rebuilding it from the log" in caplog.text


def test_recall_works_when_every_snapshot_row_with_a_vector_is_forgotten(tmp_path):
    # Found by the random test above: the candidates then have no vector, while the query has one.
    ws = tmp_path / "ws"
    with closing(_open(ws)) as store:
        with_vector = store.memories.add("the boat is at pier seven").memory.id
        with store._lock:
            store.memories.log.add("a keyword-only note about the boat", 0.5, "general", None, None)
        store.memories.list()
    with closing(_open(ws)) as store:
        assert store.memories.forget(with_vector)
        assert [m.memory.content for m in store.memories.recall("boat", limit=3).matches] == [
            "a keyword-only note about the boat"]


@pytest.mark.parametrize("damage", ["offsets", "row_term_starts", "id_rows"])
def test_a_snapshot_damaged_in_place_is_rebuilt_from_the_log_at_the_rewrite(tmp_path, monkeypatch, caplog, damage):
    ws = tmp_path / "ws"
    ids = _seed(ws, 12)
    directory = snapshot_dir(FileLayout(ws).memory_log)
    with closing(_open(ws)) as store:
        store.memories.list()
        gen = json.loads((directory / "manifest.json").read_text())["gen"]
        array = np.load(directory / f"{gen}.{damage}.npy")
        with open(directory / f"{gen}.{damage}.npy", "r+b") as file:  # same shape, values out of order
            np.lib.format.read_magic(file)
            np.lib.format.read_array_header_1_0(file)
            file.write(array[::-1].tobytes() if damage != "id_rows" else (array + 100).tobytes())
        monkeypatch.setattr(file_memories, "SNAPSHOT_TAIL_OPS", 3)
        added = [store.memories.add(f"late fact {n}").memory.id for n in range(4)]
        assert {m.id for m in store.memories.list()} == set(ids) | set(added)
    assert "inconsistent" in caplog.text and "rebuilding it from the log" in caplog.text
    with closing(_open(ws)) as store:
        assert store.memories.recall("harbour code H-0011", limit=1).matches[0].memory.id == ids[11]
        assert store.memories.get(added[3]).content == "late fact 3"
