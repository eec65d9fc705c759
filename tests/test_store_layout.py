"""The file backend's layout: private files under .picoora/, and the one-time move of older workspaces."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import date

import pytest

from picoora.messages import Message
from picoora.store import layout as layout_module
from picoora.store.files import FileStore
from picoora.store.layout import FileLayout

KEY = "cli:default"


def _old_workspace(ws):
    """A workspace as the previous version left it."""
    (ws / "sessions").mkdir(parents=True)
    (ws / "sessions" / "cli_default.json").write_text(json.dumps(
        {"key": KEY, "summary": "earlier", "messages": [{"role": "user", "content": "hi"}]}))
    (ws / "transcripts").mkdir()
    (ws / "transcripts" / "cli_default.jsonl").write_text(json.dumps(
        {"seq": 1, "session_key": KEY, "created_at": None, "message": {"role": "user", "content": "hi"}}) + "\n")
    (ws / "state").mkdir()
    (ws / "state" / "state.json").write_text('{"last_channel": "cli"}')
    (ws / "memory" / "202601").mkdir(parents=True)
    (ws / "memory" / "202601" / "20260105.md").write_text("# 2026-01-05\n\nA note.")
    (ws / "memory" / "memories.jsonl").write_text(json.dumps(
        {"op": "add", "id": "m1", "content": "likes tea", "importance": 0.5, "category": "general",
         "created_at": "2026-01-05T10:00:00+00:00"}) + "\n")
    (ws / "traces").mkdir()
    (ws / "traces" / "turns.jsonl").write_text('{"turn_id": "t1"}\n')
    (ws / "USER.md").write_text("Ana")
    (ws / ".picoora.lock").write_text("")


def _check_everything_readable(store: FileStore) -> None:
    session = store.sessions.load(KEY)
    assert session.summary == "earlier" and [m.content for m in session.messages] == ["hi"]
    assert [e.message.content for e in store.transcripts.read(KEY)] == ["hi"]
    assert store.state.get("last_channel") == "cli"
    assert [r.content for r in store.memories.list()] == ["likes tea"]
    assert store.prompts.get("USER.md").content == "Ana"


def test_an_old_workspace_moves_once_and_loses_nothing(tmp_path):
    ws = tmp_path / "ws"
    _old_workspace(ws)
    store = FileStore(ws)
    try:
        _check_everything_readable(store)
        store.transcripts.append(KEY, [Message(role="assistant", content="hello")])
    finally:
        store.close()
    for old in ("sessions", "transcripts", "state", "traces", "memory/memories.jsonl", ".picoora.lock"):
        assert not (ws / old).exists(), old
    layout = FileLayout(ws)
    assert (layout.traces / "turns.jsonl").read_text() == '{"turn_id": "t1"}\n'
    assert layout.memory_log.is_file() and (layout.transcripts / "cli_default.jsonl").is_file()
    # What people read stays where they expect it.
    assert (ws / "memory" / "202601" / "20260105.md").read_text().endswith("A note.")
    assert (ws / "USER.md").read_text() == "Ana"
    reopened = FileStore(ws)
    try:
        assert [e.seq for e in reopened.transcripts.read(KEY)] == [1, 2]
    finally:
        reopened.close()


def test_a_crash_half_way_through_the_move_is_finished_by_the_next_open(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    _old_workspace(ws)
    real_rename = os.rename
    calls = {"n": 0}

    def crash_on_third(src, dst):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("power cut")
        real_rename(src, dst)

    monkeypatch.setattr(layout_module.os, "rename", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        FileStore(ws)
    monkeypatch.setattr(layout_module.os, "rename", real_rename)
    assert (ws / "state").exists() and FileLayout(ws).sessions.exists()  # half old, half new
    store = FileStore(ws)
    try:
        _check_everything_readable(store)
    finally:
        store.close()
    assert not (ws / "state").exists()


def test_once_on_this_layout_old_layout_paths_are_never_moved_in_again(tmp_path):
    """Issue 21: the model (exec writes the workspace) planted a session and an "the owner authorises every
    exec" memory at the old paths, and the next start moved them into the store. Now only the first open
    may migrate; afterwards old-layout files, even with the old lock file beside them, stay where they are."""
    ws = tmp_path / "ws"
    store = FileStore(ws)
    store.sessions.append("new:one", [Message(role="user", content="new")])
    store.close()
    _old_workspace(ws)  # everything an old workspace has, its lock file included, written after the fact
    store = FileStore(ws)
    try:
        assert {s.key for s in store.sessions.list()} == {"new:one"}
        assert store.memories.list() == [] and store.state.get("last_channel") is None
    finally:
        store.close()
    assert (ws / "sessions" / "cli_default.json").exists() and (ws / "memory" / "memories.jsonl").exists()
    assert (ws / ".picoora" / "layout").exists()


def test_a_workspace_never_opened_on_this_layout_moves_without_the_old_lock_file(tmp_path):
    """The Go version's workspaces have ``sessions/`` at the top and no ``.picoora.lock``: their first open
    is proof enough (nothing of this layout is there yet)."""
    ws = tmp_path / "ws"
    _old_workspace(ws)
    (ws / ".picoora.lock").unlink()
    store = FileStore(ws)
    try:
        _check_everything_readable(store)
    finally:
        store.close()
    assert not (ws / "sessions").exists() and (ws / ".picoora" / "layout").exists()


def test_the_file_tools_refuse_the_old_layouts_store_paths(tmp_path):
    from picoora.config import Config
    from picoora.tools import default_registry
    from picoora.tools.base import ToolContext

    ws = tmp_path / "ws"
    store = FileStore(ws)
    registry = default_registry(Config())
    ctx = ToolContext(workspace=ws, store=store, session_key="cli:default")
    try:
        for path in ("sessions/cli_default.json", "transcripts/x.jsonl", "state/state.json", "traces/turns.jsonl",
                     "memory/memories.jsonl", ".picoora.lock", "./sessions/../sessions/a.json"):
            result = asyncio.run(registry.execute("write_file", {"path": path, "content": "{}"}, ctx))
            assert result.is_error and "access denied" in result.content, (path, result.content)
        note = asyncio.run(registry.execute("write_file", {"path": "memory/202601/20260105.md", "content": "ok"}, ctx))
        assert not note.is_error  # daily notes stay the user's to edit
    finally:
        store.close()
    assert not (ws / "sessions").exists() and not (ws / ".picoora.lock").exists()


def test_the_layout_is_the_one_place_paths_come_from(tmp_path):
    layout = FileLayout(tmp_path)
    private = tmp_path / ".picoora"
    for path in (layout.lock, layout.sessions, layout.transcripts, layout.state, layout.memory_log, layout.traces):
        assert path.is_relative_to(private)
    assert layout.memory_log.parent == layout.memory  # an index kept beside the log lives here too
    assert not layout.notes.is_relative_to(private) and not layout.prompt_path("USER.md").is_relative_to(private)
    assert layout.note_path(date(2026, 3, 7)) == tmp_path / "memory" / "202603" / "20260307.md"


def test_corrupt_transcript_lines_are_skipped_and_never_stop_the_next_append(tmp_path, caplog):
    store = FileStore(tmp_path / "ws")
    try:
        store.transcripts.append(KEY, [Message(role="user", content="one")])
        path = FileLayout(tmp_path / "ws").transcripts / "cli_default.jsonl"
        with open(path, "a") as fh:
            fh.write('not json at all\n{"seq": "oops", "message": 1}\n{"unrelated": true}\n')
        assert store.transcripts.append(KEY, [Message(role="assistant", content="two")]) == [2]
        entries = store.transcripts.read(KEY)
        assert [(e.seq, e.message.content) for e in entries] == [(1, "one"), (2, "two")]
    finally:
        store.close()
