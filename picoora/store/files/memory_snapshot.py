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
  row_terms.npy / row_term_starts.npy           each row's term hashes (CSR), reused by the next rewrite
Rewriting after the log's tail grew starts from the loaded generation: runs of unchanged rows are copied
(record bytes, vectors, hashes, terms), so only changed records are encoded and only new memories tokenised.
Arrays are .npy files opened with ``mmap_mode="r"``: pages are read when a query touches them. A scan of
the whole vector matrix (``similarities``) larger than ``MAPPED_SCAN_BYTES`` reads it instead, chunk by
chunk, into one small buffer: at 100,000 memories the 150 MB matrix would otherwise all count in the
process's RSS after one query. Copying
from the page cache costs ~8 ms per 100,000 rows; dropping the mapped pages after each chunk instead
(``MADV_DONTNEED``) made the next scan fault them all back in, ~170 ms.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import mmap
import os
import uuid
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from picoora.atomic import atomic_write_bytes, ensure_dir, fsync_dir
from picoora.store.base import MemoryRecord
from picoora.store.files.dedup_prefilter import Projection
from picoora.store.files.memory_ops import add_op
from picoora.store.keywords import tokenize
from picoora.store.ranking import normalise_text

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

FORMAT = 2  # 2: per-row term hashes (row_terms), so a rewrite tokenises only new rows
TAIL_CHECK_BYTES = 4096
SCAN_ROWS = 2048  # rows of the vector matrix a scan reads at once (3 MB at 384 dimensions)
# A matrix up to this size is scanned through its map (~22,000 memories): a gateway re-reads it at every
# recall, and the copy would cost it ~14 % of its time at 10,000 memories for 15 MB of RSS saved.
MAPPED_SCAN_BYTES = 32 << 20
_ARRAYS = ("offsets", "vectors", "has_vector", "ids", "id_rows", "texts", "text_rows", "terms", "term_starts",
           "term_rows", "row_terms", "row_term_starts")


def snapshot_dir(log_path: Path) -> Path:
    return log_path.with_name(log_path.stem + ".index")


def key_hash(text: str) -> int:
    """A stable 64-bit hash (Python's ``hash`` changes between processes)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


_term_hash = functools.lru_cache(maxsize=1 << 16)(key_hash)  # a vocabulary repeats: hash each word once


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
        # Plain ndarray views of the maps (each keeps its map alive): every index into an np.memmap makes
        # another memmap and runs its __array_finalize__, 6 % of a gateway's CPU when ranking candidates.
        maps = {name: np.load(directory / f"{gen}.{name}.npy", mmap_mode="r") for name in _ARRAYS}
        self._arrays = {name: np.asarray(array) for name, array in maps.items()}
        # Scans read the matrix through a descriptor of their own, open while the snapshot is: a newer
        # generation removes this one's files, and what is open (the maps, this) still reads them.
        self._vector_fd = os.open(directory / f"{gen}.vectors.npy", os.O_RDONLY | os.O_CLOEXEC)
        weakref.finalize(self, os.close, self._vector_fd)
        self._vector_offset = int(getattr(maps["vectors"], "offset", 0))  # the .npy header's length
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
            and a["row_term_starts"].shape == (n + 1,) and int(a["row_term_starts"][-1]) == a["row_terms"].shape[0]
        )
        if not ok:
            raise ValueError("arrays of different lengths")

    @property
    def vectors(self) -> np.ndarray:
        return self._arrays["vectors"]

    @property
    def has_vector(self) -> np.ndarray:
        return self._arrays["has_vector"]

    @functools.cached_property
    def vector_rows(self) -> int:
        """How many rows have a vector (the arrays never change: counted once, not at every search)."""
        return int(self.has_vector.sum())

    def vector_rows_among(self, rows: list[int]) -> int:
        return int(self.has_vector[rows].sum()) if rows else 0

    def similarities(self, queries: np.ndarray) -> np.ndarray:
        """``vectors @ queries.T``: float32, by row, for one query (dim,) or several (k, dim), read ``SCAN_ROWS``
        rows at a time into one buffer rather than through the map (unless the matrix is small)."""
        import numpy as np

        if self.vectors.nbytes <= MAPPED_SCAN_BYTES:
            return self.vectors @ queries.T
        dim = self.vectors.shape[1]
        out = np.empty((self.rows, *queries.shape[:-1]), dtype=np.float32)
        buffer = np.empty((min(SCAN_ROWS, self.rows), dim), dtype=np.float32)
        for start in range(0, self.rows, SCAN_ROWS):
            chunk = buffer[: min(SCAN_ROWS, self.rows - start)]
            self._read_rows(start, chunk)
            np.matmul(chunk, queries.T, out=out[start : start + len(chunk)])
        return out

    @functools.cached_property
    def _projection(self) -> Projection:
        """The rows for ``near_rows`` (64 floats a row, made by one scan on the first batched duplicate check)."""
        import numpy as np

        def read(start: int, end: int) -> np.ndarray:
            block = np.empty((end - start, self.vectors.shape[1]), dtype=np.float32)
            self._read_rows(start, block)
            return block

        return Projection(self.rows, self.vectors.shape[1], read, self.has_vector)

    def near_rows(self, queries: np.ndarray, min_similarity: float) -> list[np.ndarray]:
        """For each of ``queries`` (k, dim), the rows with a vector whose cosine to it may reach
        ``min_similarity``: every such row, and a few more (``dedup_prefilter``)."""
        return self._projection.near(queries, min_similarity)

    def _read_rows(self, start: int, into: np.ndarray) -> None:
        view = into.data.cast("B")
        position, done = self._vector_offset + start * into.shape[1] * into.itemsize, 0
        while done < len(view):
            got = os.preadv(self._vector_fd, [view[done:]], position + done)
            if got == 0:
                raise ValueError("the snapshot's vector file ends before its last row")
            done += got

    def record(self, row: int) -> MemoryRecord:
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
        return [int(r) for r in self._lookup("texts", "text_rows", key)
                if normalise_text(self.record(int(r)).content) == key]

    def term_rows(self, term: str) -> np.ndarray:
        import numpy as np

        terms = self._arrays["terms"]
        h = np.uint64(key_hash(term))
        at = int(np.searchsorted(terms, h))
        if at == len(terms) or terms[at] != h:
            return np.zeros(0, dtype=np.int32)
        starts = self._arrays["term_starts"]
        return self._arrays["term_rows"][int(starts[at]) : int(starts[at + 1])]

    def row_hashes(self, keys: str, rows: str) -> np.ndarray:
        """The hash of each row's id or text, by row (the sorted pair inverted)."""
        import numpy as np

        order = np.asarray(self._arrays[rows])
        if len(order) and (order.min() < 0 or order.max() >= self.rows):
            raise ValueError(f"the snapshot's {rows} are out of range")
        out = np.zeros(self.rows, dtype=np.uint64)
        out[order] = self._arrays[keys]
        return out

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
        cls, log_path: Path, offset: int, rows: Iterable[range | ChangedRow | NewRow], model: str | None, lines: int,
        base: Snapshot | None = None,
    ) -> Snapshot:
        """Write a generation folding the log up to ``offset``, then switch the manifest to it and remove
        older generations. ``rows`` in order: runs of ``base`` rows kept as they are, ``base`` rows whose record
        changed, and memories encoded now (with their vector of any model, or None: only ``model``'s go into
        the matrix, as in the log's fold). Callers hold the workspace lock."""
        directory = snapshot_dir(log_path)
        ensure_dir(directory)
        gen = uuid.uuid4().hex[:12]
        columns = _Columns(base, model)
        for piece in rows:
            columns.take(piece)
        with _private_file(directory / f"{gen}.records.jsonl") as file:
            file.writelines(columns.records)
        columns.write_vectors(directory / f"{gen}.vectors.npy")
        for name, array in columns.arrays().items():
            _write_array(directory / f"{gen}.{name}.npy", array)
        fsync_dir(directory)
        position = LogPosition.of(log_path, offset)
        manifest = {"format": FORMAT, "gen": gen, "rows": columns.rows, "lines": lines, "model": model,
                    "log": position.__dict__}
        atomic_write_bytes(directory / "manifest.json", json.dumps(manifest).encode(), 0o600)
        for stale in directory.iterdir():  # other processes keep what they mapped; nothing reads by name later
            if stale.name != "manifest.json" and not stale.name.startswith(gen + "."):
                stale.unlink(missing_ok=True)
        return cls(directory, manifest)


@dataclass(frozen=True)
class NewRow:
    """A memory encoded and tokenised now: one from the log's tail, or every memory on a full rebuild."""

    record: MemoryRecord
    vector: np.ndarray | None  # the log's vector (any model's), None without one


@dataclass(frozen=True)
class ChangedRow:
    """A snapshot row whose record changed (access, importance): its text and vector are the row's."""

    row: int
    record: MemoryRecord


class _Columns:
    """A new generation's rows, gathered piece by piece: kept rows are copied from ``base``'s arrays and
    records file run by run, so only changed records are encoded and only new memories hashed and tokenised."""

    def __init__(self, base: Snapshot | None, model: str | None):
        import numpy as np

        self.base = base
        self.model = model
        self.rows = 0
        self.records: list[bytes] = []  # records.jsonl, in pieces
        self._lengths: list[Any] = []  # their byte lengths, row after row (arrays for runs, ints for single rows)
        self._term_counts: list[Any] = []  # the same for the rows' term hashes
        self._terms: list[np.ndarray] = []  # the term hashes, row after row
        self._new_terms: list[int] = []  # of the new rows since the last base run, not yet in ``_terms``
        self._runs: list[tuple[int, int, int]] = []  # (new row, base start, base stop): copied from base
        self._new: list[tuple[int, NewRow]] = []
        self._has_vector = np.zeros(0, dtype=bool)
        if base is not None:  # read often, one element at a time: faster in memory than through the map
            self._base_offsets = np.array(base._arrays["offsets"])
            self._base_term_starts = np.array(base._arrays["row_term_starts"])
            for starts in (self._base_offsets, self._base_term_starts):  # copied slices must be where they say
                if starts[0] != 0 or np.any(starts[1:] < starts[:-1]):
                    raise ValueError("the snapshot's offsets are not in order")

    def take(self, piece: range | ChangedRow | NewRow) -> None:
        if isinstance(piece, NewRow):
            self._add_line(_encode(piece.record))
            terms = sorted({_term_hash(term) for term in tokenize(piece.record.content)})
            self._new_terms.extend(terms)
            self._term_counts.append(len(terms))
            self._new.append((self.rows, piece))
            self.rows += 1
            return
        start, stop = (piece.row, piece.row + 1) if isinstance(piece, ChangedRow) else (piece.start, piece.stop)
        if stop <= start:
            return
        if self.base is None:
            raise ValueError("snapshot rows to keep, but no snapshot to keep them from")
        offsets, term_starts = self._base_offsets, self._base_term_starts
        if isinstance(piece, ChangedRow):
            self._add_line(_encode(piece.record))
        else:
            self.records.append(self.base._records[int(offsets[start]) : int(offsets[stop])])
            self._lengths.append(offsets[start + 1 : stop + 1] - offsets[start:stop])
        self._flush_new_terms()
        self._terms.append(self.base._arrays["row_terms"][int(term_starts[start]) : int(term_starts[stop])])
        self._term_counts.append(term_starts[start + 1 : stop + 1] - term_starts[start:stop])
        self._runs.append((self.rows, start, stop))
        self.rows += stop - start

    def _add_line(self, line: bytes) -> None:
        self.records.append(line)
        self._lengths.append(len(line))

    def _flush_new_terms(self) -> None:
        import numpy as np

        if self._new_terms:
            self._terms.append(np.array(self._new_terms, dtype=np.uint64))
            self._new_terms = []

    def write_vectors(self, path: Path) -> None:
        """The vector matrix, the bulk of a generation: written row range by row range from the old map and
        the new vectors, never assembled in memory."""
        import heapq

        import numpy as np

        base = self.base
        wanted = [(row, new.vector) for row, new in self._new
                  if new.vector is not None and self.model and new.record.embedding_model == self.model]
        self._has_vector = np.zeros(self.rows, dtype=bool)
        if self.model and base is not None:  # (rows are only kept from a snapshot: ``take``)
            for row, start, stop in self._runs:
                self._has_vector[row : row + stop - start] = base.has_vector[start:stop]
        kept = base if base is not None and self._has_vector.any() else None  # the snapshot vectors are copied from
        # As a fold of the log: the dimension of the vectors there are (none: no column).
        dim = kept.vectors.shape[1] if kept is not None else len(wanted[0][1]) if wanted else 0
        for row, _ in wanted:
            self._has_vector[row] = True
        row_bytes = 4 * dim
        with _private_file(path) as file:
            header = {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")), "fortran_order": False,
                      "shape": (self.rows, dim)}
            np.lib.format.write_array_header_1_0(file, header)
            written = 0  # rows so far; rows nothing is written for (no vector of ours) are zeros
            pieces: Iterator[tuple[int, int, int] | tuple[int, np.ndarray]] = heapq.merge(
                self._runs if kept is not None else [], wanted, key=lambda piece: piece[0])
            for piece in pieces:
                file.write(bytes(row_bytes * (piece[0] - written)))
                if kept is not None and len(piece) == 3:  # a run of kept rows (there are none without ``kept``)
                    row, start, stop = piece
                    # .data, the array's own buffer: numpy's stubs declare an array one only from Python 3.12
                    file.write(np.ascontiguousarray(kept.vectors[start:stop]).data)
                    written = row + stop - start
                else:
                    vector = np.asarray(piece[1], dtype="<f4")
                    if vector.shape != (dim,):
                        raise ValueError(f"a {vector.shape} vector in a snapshot of {dim} dimensions")
                    file.write(vector.tobytes())
                    written = piece[0] + 1
            file.write(bytes(row_bytes * (self.rows - written)))

    def arrays(self) -> dict[str, np.ndarray]:
        """The other arrays (after ``write_vectors``, which decides ``has_vector``)."""
        import numpy as np

        self._flush_new_terms()
        n, base = self.rows, self.base
        id_hashes = np.zeros(n, dtype=np.uint64)
        text_hashes = np.zeros(n, dtype=np.uint64)
        if self._runs and base is not None:  # (rows are only kept from a snapshot: ``take``)
            base_ids, base_texts = base.row_hashes("ids", "id_rows"), base.row_hashes("texts", "text_rows")
            for row, start, stop in self._runs:
                id_hashes[row : row + stop - start] = base_ids[start:stop]
                text_hashes[row : row + stop - start] = base_texts[start:stop]
        for row, new in self._new:
            id_hashes[row] = key_hash(new.record.id)
            text_hashes[row] = key_hash(normalise_text(new.record.content))
        offsets = _starts(self._lengths, n)
        row_term_starts = _starts(self._term_counts, n)
        row_terms = np.concatenate(self._terms) if self._terms else np.zeros(0, dtype=np.uint64)
        return {
            "offsets": offsets, "has_vector": self._has_vector,
            **_sorted_pairs("ids", "id_rows", id_hashes), **_sorted_pairs("texts", "text_rows", text_hashes),
            **_postings(row_terms, row_term_starts), "row_terms": row_terms, "row_term_starts": row_term_starts,
        }


def _starts(lengths: list[Any], n: int) -> np.ndarray:
    """Where each of ``n`` rows starts (and the end), from their lengths given as ints and arrays."""
    import numpy as np

    out = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.concatenate([np.atleast_1d(part) for part in lengths]), out=out[1:])
    return out


def _encode(record: MemoryRecord) -> bytes:
    op = add_op(record, None)
    op["model"] = record.embedding_model  # kept without the vector: says which model the log's vector is
    return json.dumps(op, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _postings(row_terms: np.ndarray, row_term_starts: np.ndarray) -> dict[str, np.ndarray]:
    """Each term hash's rows, ascending, from the per-row lists: one stable sort, no loop over terms."""
    import numpy as np

    rows = np.repeat(np.arange(len(row_term_starts) - 1, dtype=np.int32), np.diff(row_term_starts))
    order = np.argsort(row_terms, kind="stable")  # rows come in ascending order, so each term's stay so
    sorted_terms = row_terms[order]
    terms, starts = np.unique(sorted_terms, return_index=True)
    return {
        "terms": terms,
        "term_starts": np.append(starts, len(sorted_terms)).astype(np.int64),
        "term_rows": rows[order],
    }


def _sorted_pairs(keys: str, rows: str, hashes: np.ndarray) -> dict[str, np.ndarray]:
    import numpy as np

    order = np.argsort(hashes, kind="stable")
    return {keys: hashes[order], rows: order.astype(np.int32)}


@contextmanager
def _private_file(path: Path) -> Iterator[BinaryIO]:
    """A new file only this user may read, on disk once the block ends (the manifest may then name it)."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
        yield file
        file.flush()
        os.fsync(file.fileno())


def _write_array(path: Path, array: np.ndarray) -> None:
    import numpy as np

    with _private_file(path) as file:
        np.save(file, array)
