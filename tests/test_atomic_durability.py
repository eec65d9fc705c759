"""Crash safety needs the fsyncs, in the right order: these tests spy on os.fsync and os.replace, so they
fail when a write stops syncing the temporary file before the rename or the directory after it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from picoora import atomic


@pytest.fixture
def journal(monkeypatch):
    """Every fsync (with the path its descriptor names) and every replace, in order."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", str(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


def test_a_document_is_synced_then_renamed_then_its_directory_synced(tmp_path, journal):
    target = tmp_path / "sessions" / "cli_default.json"
    target.parent.mkdir()
    atomic.atomic_write_json(target, {"key": "cli:default"})
    kinds = [kind for kind, _ in journal]
    rename = kinds.index("replace")
    synced_before = [path for kind, path in journal[:rename] if kind == "fsync"]
    assert any(Path(p).name.startswith(".cli_default.json.") for p in synced_before)  # the temporary file
    assert ("fsync", str(target.parent)) in journal[rename + 1:]  # the directory, after the rename
    assert target.read_text().strip().startswith("{")


def test_a_new_directory_is_made_durable_in_its_parent(tmp_path, journal):
    atomic.atomic_write_text(tmp_path / "memory" / "202612" / "20261201.md", "# note")
    synced = [path for kind, path in journal if kind == "fsync"]
    assert str(tmp_path) in synced and str(tmp_path / "memory") in synced


def test_a_log_append_is_synced_and_a_new_log_file_is_recorded_in_its_directory(tmp_path, journal):
    log = tmp_path / "transcripts" / "a.jsonl"
    atomic.append_jsonl(log, [{"seq": 1}])
    assert ("fsync", str(log)) in journal and ("fsync", str(log.parent)) in journal
    journal.clear()
    atomic.append_jsonl(log, [{"seq": 2}])
    assert journal == [("fsync", str(log))]  # an existing file: the data only
    journal.clear()
    atomic.append_jsonl(log, [{"seq": 3}], durable=False)
    assert journal == []
