"""A persistent image of the memory log, memory-mapped, so a process answers a query without replaying it.

It lives beside the log (``memories.jsonl`` -> ``memories.index/``, derived from the log's path) and is
only a cache: the log stays the truth. One generation is a set of files written first and a
``manifest.json`` atomically replaced last, which names the generation and the log position it folds:
device, inode, byte offset and the SHA-256 of the 4 KB before that offset. A reader trusts it only when the
log still has that identity and those bytes (then it replays just the lines after the offset); a crash
mid-write leaves the previous manifest, and a log that was rewritten, truncated or edited is rebuilt from.

Per generation (``<gen>.<name>``), for ``rows`` live memories in log order:
  records.jsonl + offsets.npy    one record per line (the log's add op without its vector), byte offsets
  vectors.npy                    float32 (rows, dim) of the snapshot's embedding model, zero where none
  has_vector.npy                 which rows have one
  ids.npy / id_rows.npy          64-bit hashes of the ids, sorted, and their rows (lookups by id)
  texts.npy / text_rows.npy      the same for normalised texts (exact-duplicate checks)
  terms.npy / term_starts.npy / term_rows.npy   sorted term hashes and their rows (keyword candidates)
Arrays are .npy files opened with ``mmap_mode="r"``: pages are read when a query touches them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from picoora.atomic import atomic_write_bytes, ensure_dir, fsync_dir
from picoora.store.keywords import tokenize
from picoora.store.ranking import normalise_text

if TYPE_CHECKING:
    import numpy as np

    from picoora.store.base import MemoryRecord

log = logging.getLogger(__name__)

FORMAT = 1
TAIL_CHECK_BYTES = 4096
_ARRAYS = ("offsets", "vectors", "has_vector", "ids", "id_rows", "texts", "text_rows", "terms", "term_starts",
           "term_rows")


def snapshot_dir(log_path: Path) -> Path:
    return log_path.with_name(log_path.stem + ".index")


def key_hash(text: str) -> int:
    """A stable 64-bit hash (Python's ``hash`` changes between processes)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


@dataclass(frozen=True)
class LogPosition:
    """Where in which log file a snapshot stops."""

    dev: int
    ino: int
    offset: int
    tail_sha256: str

    @classmethod
    def of(cls, log_path: Path, offset: int) -> LogPosition:
        with open(log_path, "rb") as file:
            status = os.fstat(file.fileno())
            start = max(0, offset - TAIL_CHECK_BYTES)
            file.seek(start)
            tail = file.read(offset - start)
        return cls(status.st_dev, status.st_ino, offset, hashlib.sha256(tail).hexdigest())


class Snapshot:
    """One loaded generation: read-only arrays and records, looked up by row."""

    def __init__(self, directory: Path, manifest: dict[str, Any]):
        import numpy as np

        gen = manifest["gen"]
        self.rows = int(manifest["rows"])
        self.lines = int(manifest["lines"])  # log lines folded, for the compaction decision
        self.model: str | None = manifest.get("model")
        self.position = LogPosition(**manifest["log"])
        self._arrays = {name: np.load(directory / f"{gen}.{name}.npy", mmap_mode="r") for name in _ARRAYS}
        with open(directory / f"{gen}.records.jsonl", "rb") as file:
            size = os.fstat(file.fileno()).st_size
            self._records = mmap.mmap(file.fileno(), size, prot=mmap.PROT_READ) if size else b""
        self._check_shapes()

    def _check_shapes(self) -> None:
        a = self._arrays
        n = self.rows
        ok = (
            a["offsets"].shape == (n + 1,) and a["has_vector"].shape == (n,) and a["vectors"].shape[0] == n
            and a["ids"].shape == a["id_rows"].shape == (n,) and a["texts"].shape == a["text_rows"].shape == (n,)
            and a["term_starts"].shape == (a["terms"].shape[0] + 1,) and int(a["offsets"][-1]) == len(self._records)
        )
        if not ok:
            raise ValueError("arrays of different lengths")

    @property
    def vectors(self) -> np.ndarray:
        return self._arrays["vectors"]

    @property
    def has_vector(self) -> np.ndarray:
        return self._arrays["has_vector"]

    def record(self, row: int) -> MemoryRecord:
        from dataclasses import replace

        from picoora.store.base import MemoryRecord

        start, end = int(self._arrays["offsets"][row]), int(self._arrays["offsets"][row + 1])
        op = json.loads(self._records[start:end])
        return replace(MemoryRecord.from_json(op), embedding_model=op.get("model"))

    def row_of(self, memory_id: str) -> int | None:
        rows = self._lookup("ids", "id_rows", memory_id)
        for row in rows:  # a hash collision is possible; the record decides
            if self.record(int(row)).id == memory_id:
                return int(row)
        return None

    def rows_with_text(self, content: str) -> list[int]:
        key = normalise_text(content)
        return [int(r) for r in self._lookup("texts", "text_rows", key) if normalise_text(self.record(int(r)).content) == key]

    def term_rows(self, term: str) -> np.ndarray:
        import numpy as np

        terms = self._arrays["terms"]
        h = np.uint64(key_hash(term))
        at = int(np.searchsorted(terms, h))
        if at == len(terms) or terms[at] != h:
            return np.zeros(0, dtype=np.int32)
        starts = self._arrays["term_starts"]
        return self._arrays["term_rows"][int(starts[at]) : int(starts[at + 1])]

    def _lookup(self, keys: str, rows: str, text: str) -> np.ndarray:
        import numpy as np

        hashes = self._arrays[keys]
        h = np.uint64(key_hash(text))
        lo, hi = np.searchsorted(hashes, h, side="left"), np.searchsorted(hashes, h, side="right")
        return self._arrays[rows][lo:hi]

    # ---- loading and writing -----------------------------------------------------------------------

    @classmethod
    def load(cls, log_path: Path, model: str | None) -> Snapshot | None:
        """The snapshot of ``log_path`` if it can be trusted for a reader using ``model``; None otherwise."""
        directory = snapshot_dir(log_path)
        try:
            manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
            if manifest.get("format") != FORMAT or manifest.get("model") != model:
                return None
            position = LogPosition(**manifest["log"])
            if LogPosition.of(log_path, position.offset) != position:
                return None  # the log was rewritten, truncated or edited since
            return cls(directory, manifest)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("memory index %s unusable (%s): rebuilding it from the log", directory, exc)
            return None

    @classmethod
    def write(
        cls, log_path: Path, offset: int, records: list[MemoryRecord], vectors: Iterable[np.ndarray | None],
        model: str | None, dim: int, lines: int,
    ) -> Snapshot:
        """Write a generation folding the log up to ``offset`` (``vectors``: ``model``'s, or None), then
        switch the manifest to it and remove older generations. Callers hold the workspace lock."""
        import numpy as np

        from picoora.store.file_memories import add_op

        directory = snapshot_dir(log_path)
        ensure_dir(directory)
        gen = uuid.uuid4().hex[:12]
        n = len(records)
        matrix = np.zeros((n, dim if model else 0), dtype=np.float32)
        has_vector = np.zeros(n, dtype=bool)
        encoded: list[bytes] = []
        postings: dict[int, list[int]] = {}
        for row, (record, vector) in enumerate(zip(records, vectors)):
            op = add_op(record, None)
            op["model"] = record.embedding_model  # kept without the vector: says which model the log's vector is
            encoded.append(json.dumps(op, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
            if vector is not None and model and record.embedding_model == model:
                matrix[row] = vector
                has_vector[row] = True
            for term in set(tokenize(record.content)):
                postings.setdefault(key_hash(term), []).append(row)
        offsets = np.zeros(n + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(line) for line in encoded]) if encoded else []
        id_hashes = np.array([key_hash(r.id) for r in records], dtype=np.uint64)
        text_hashes = np.array([key_hash(normalise_text(r.content)) for r in records], dtype=np.uint64)
        term_keys = np.array(sorted(postings), dtype=np.uint64)
        term_lists = [postings[int(k)] for k in term_keys]
        arrays = {
            "offsets": offsets, "vectors": matrix, "has_vector": has_vector,
            **_sorted_pairs("ids", "id_rows", id_hashes), **_sorted_pairs("texts", "text_rows", text_hashes),
            "terms": term_keys,
            "term_starts": np.concatenate([[0], np.cumsum([len(rows) for rows in term_lists])]).astype(np.int64),
            "term_rows": np.array([row for rows in term_lists for row in rows], dtype=np.int32),
        }
        _write_file(directory / f"{gen}.records.jsonl", b"".join(encoded))
        for name, array in arrays.items():
            with open(os.open(directory / f"{gen}.{name}.npy", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
                np.save(file, array)
                file.flush()
                os.fsync(file.fileno())
        fsync_dir(directory)
        position = LogPosition.of(log_path, offset)
        manifest = {"format": FORMAT, "gen": gen, "rows": n, "lines": lines, "model": model, "log": position.__dict__}
        atomic_write_bytes(directory / "manifest.json", json.dumps(manifest).encode(), 0o600)
        for stale in directory.iterdir():  # other processes keep what they mapped; nothing reads by name later
            if stale.name != "manifest.json" and not stale.name.startswith(gen + "."):
                stale.unlink(missing_ok=True)
        return cls(directory, manifest)


def _sorted_pairs(keys: str, rows: str, hashes: np.ndarray) -> dict[str, np.ndarray]:
    import numpy as np

    order = np.argsort(hashes, kind="stable")
    return {keys: hashes[order], rows: order.astype(np.int32)}


def _write_file(path: Path, data: bytes) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
