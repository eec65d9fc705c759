"""Crash-safe file primitives: atomic document replace and durable JSON Lines appends.

Documents are written to a temporary file in the same directory, fsynced, renamed over the target,
and then the directory is fsynced so the rename itself survives a power cut. Logs are JSON Lines:
one complete record per line, appended in a single ``write`` and fsynced. A process killed in the
middle of an append can leave a torn last line; readers skip it, and the next append (made under
the workspace lock, so no live writer can own that fragment) cuts it off before writing.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".tmp"
_TAIL_CHUNK = 64 * 1024


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_dir(directory: Path) -> None:
    """mkdir -p, fsyncing each parent whose listing changed so the new directory is durable."""
    if directory.is_dir():
        return
    ensure_dir(directory.parent)
    try:
        directory.mkdir()
    except FileExistsError:
        return
    fsync_dir(directory.parent)


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    ensure_dir(path.parent)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def atomic_write_json(path: Path, document: Any, mode: int = 0o644) -> None:
    atomic_write_text(path, json.dumps(document, ensure_ascii=False, indent=2) + "\n", mode)


def remove_durably(path: Path) -> bool:
    """Delete a file and fsync its directory; False when it was not there."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    fsync_dir(path.parent)
    return True


def remove_stale_temp_files(directory: Path) -> int:
    """Delete leftovers of interrupted atomic writes. Call only while holding the workspace lock:
    every writer holds it, so no temporary file in ``directory`` can belong to a live write."""
    removed = 0
    if not directory.is_dir():
        return 0
    for candidate in directory.glob(f".*{TEMP_SUFFIX}"):
        try:
            candidate.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    return removed


def encode_jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode("utf-8")


def append_jsonl(path: Path, records: list[dict[str, Any]], *, durable: bool = True) -> int:
    """Append records as one write; returns the file size afterwards. Caller holds the workspace lock.

    ``durable=False`` skips the fsync, for records whose loss in a power cut is harmless.
    """
    ensure_dir(path.parent)
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        end = _cut_torn_tail(fd)
        data = encode_jsonl(records)
        written = os.pwrite(fd, data, end)
        if written != len(data):  # a short write on a regular file means the disk is full
            os.ftruncate(fd, end)
            raise OSError(f"short write to {path}: {written} of {len(data)} bytes (is the disk full?)")
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)
    return end + len(data)


def _cut_torn_tail(fd: int) -> int:
    """Return where the next line starts, cutting off a torn last line left by a killed writer.

    A last line without its newline that still parses (a file a person edited) only gets the newline.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    start = _last_line_start(fd, size)
    fragment = os.pread(fd, size - start, start)
    if _parse_line(fragment) is not None:
        os.pwrite(fd, b"\n", size)
        return size + 1
    log.warning("cutting a torn last line (%d bytes) left by an interrupted write", size - start)
    os.ftruncate(fd, start)
    return start


def _last_line_start(fd: int, size: int) -> int:
    """Offset just after the last newline before ``size`` (0 if there is none)."""
    position = size
    while position > 0:
        step = min(_TAIL_CHUNK, position)
        position -= step
        chunk = os.pread(fd, step, position)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return position + newline + 1
    return 0


def _parse_line(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return None
    return record if isinstance(record, dict) else None


class JsonlReader:
    """Iterates the records of a JSON Lines file from ``offset``, streaming (a long log is never held whole).

    Afterwards ``offset`` is just past the last line consumed, so a later reader can resume there. A final
    fragment with no newline is a write in progress or a torn line: it is not consumed, unless it parses
    (a hand-edited file without the final newline). A bad line in the middle is skipped with a warning
    rather than making the whole log unreadable. A missing file has no records.
    """

    def __init__(self, path: Path, offset: int = 0):
        self.path = path
        self.offset = offset

    def __iter__(self) -> Iterator[dict[str, Any]]:
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            return
        with handle:
            handle.seek(self.offset)
            for line in handle:
                complete = line.endswith(b"\n")
                record = _parse_line(line) if line.strip() else None
                if complete or record is not None:
                    self.offset += len(line)
                if record is not None:
                    yield record
                elif complete and line.strip():
                    log.warning("%s: a line that is not valid JSON was skipped", self.path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return list(JsonlReader(path))


def last_jsonl_record(path: Path) -> dict[str, Any] | None:
    """The last complete, valid record of a log, read from the end (cheap on long transcripts)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        end = os.fstat(fd).st_size
        while end > 0:
            start = _last_line_start(fd, end)
            line = os.pread(fd, end - start, start)
            record = _parse_line(line) if line.strip() else None
            if record is not None:
                return record
            end = max(start - 1, 0)  # step over the newline that ends the previous line
        return None
    finally:
        os.close(fd)


def read_json(path: Path) -> Any | None:
    """A JSON document, or None when the file does not exist. Invalid JSON raises ValueError."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return json.loads(data)
