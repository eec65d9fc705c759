"""The file backend's turn traces: lookups through the index, rotation, crashes, and an index that
disagrees with its log (it is rebuilt, and a wrong trace is never returned)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from picoora import atomic
from picoora.store.base import TurnTrace
from picoora.store.files import FileStore, trace_log

REPO = Path(__file__).resolve().parent.parent
SESSIONS = ("web:a", "telegram:7", "cli:default")


def _trace(n: int, session: str | None = None) -> TurnTrace:
    return TurnTrace(f"t{n:05d}", session or SESSIONS[n % 3], model="m", stop_reason="answer")


@pytest.fixture
def workspace(tmp_path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def store(workspace):
    store = FileStore(workspace)
    yield store
    store.close()


def _traces_dir(workspace: Path) -> Path:
    return workspace / ".picoora" / "traces"


def _kept(workspace: Path) -> list[dict]:
    """Every trace line of every generation on disk, oldest first."""
    traces = trace_log.TraceLog(_traces_dir(workspace))
    return [r for n in range(trace_log.KEEP_OLD, -1, -1) for r in atomic.read_jsonl(traces.generation(n).log_path)]


def _assert_answers_match_the_logs(workspace: Path, asked: list[str]) -> None:
    """Lookups on a fresh store say what the logs on disk say: by id, last overall, last per session."""
    records = _kept(workspace)
    by_id = {r["turn_id"]: r for r in records}
    fresh = FileStore(workspace)
    try:
        last = fresh.traces.last()
        assert (last and last.turn_id) == (records[-1]["turn_id"] if records else None)
        for session in [*sorted({r["session_key"] for r in records} - set(SESSIONS)), *SESSIONS]:
            mine = [r["turn_id"] for r in records if r["session_key"] == session]
            found = fresh.traces.last(session)
            assert (found and found.turn_id) == (mine[-1] if mine else None), session
        for turn_id in asked:
            found = fresh.traces.get(turn_id)
            assert (found and found.to_json()) == by_id.get(turn_id), turn_id
    finally:
        fresh.close()


def test_lookups_read_the_index_not_the_log(store, workspace, monkeypatch):
    for n in range(300):
        store.traces.append(_trace(n))

    def no_scan(*args, **kwargs):
        raise AssertionError("a lookup walked the log")

    monkeypatch.setattr(trace_log, "_traces", no_scan)  # what a rebuild or a catch-up would walk
    fresh = FileStore(workspace)
    assert fresh.traces.get("t00007").session_key == SESSIONS[1]
    assert fresh.traces.last().turn_id == "t00299"
    assert fresh.traces.last("telegram:7").turn_id == "t00298"
    assert fresh.traces.get("t99999") is None and fresh.traces.last("nobody") is None
    fresh.close()


def test_rotation_keeps_a_few_generations_and_finds_traces_in_them(store, workspace, monkeypatch):
    monkeypatch.setattr(trace_log, "ROTATE_BYTES", 3000)
    line = max(len(atomic.encode_jsonl([_trace(n).to_json()])) for n in range(3))
    store.traces.append(_trace(0, "rare:one"))
    for n in range(1, 200):
        store.traces.append(_trace(n))
        if n == 190:
            store.traces.append(_trace(9000, "rare:two"))
    names = sorted(p.name for p in _traces_dir(workspace).iterdir())
    assert names == ["turns.1.idx", "turns.1.jsonl", "turns.2.idx", "turns.2.jsonl", "turns.idx", "turns.jsonl"]
    for number in range(trace_log.KEEP_OLD + 1):
        assert store.traces.log.generation(number).size() < 3000 + line
    kept = [r["turn_id"] for r in _kept(workspace)]
    assert kept[-1] == "t00199" and len(kept) < 199 and "t09000" in kept  # the oldest have rolled off
    oldest_kept = kept[0]
    assert store.traces.get(oldest_kept).turn_id == oldest_kept  # found in turns.2.jsonl
    assert store.traces.get("t00001") is None and store.traces.last("rare:one") is None
    assert store.traces.last("rare:two").turn_id == "t09000"
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(200)] + ["t09000"])


def test_a_generation_also_rotates_when_its_index_is_half_full(store, workspace, monkeypatch):
    monkeypatch.setattr(trace_log, "SLOTS", 16)  # two keys a trace: every 4 traces with new sessions
    for n in range(14):
        store.traces.append(_trace(n, f"s{n}"))
    assert {p.name for p in _traces_dir(workspace).glob("*.jsonl")} == {"turns.jsonl", "turns.1.jsonl", "turns.2.jsonl"}
    assert [store.traces.get(f"t{n:05d}") is not None for n in range(14)] == [False] * 4 + [True] * 10
    assert store.traces.last("s5").turn_id == "t00005" and store.traces.last("s3") is None


def test_a_torn_last_line_is_skipped_then_cut_by_the_next_append(store, workspace):
    for n in range(3):
        store.traces.append(_trace(n))
    log_path = _traces_dir(workspace) / "turns.jsonl"
    with open(log_path, "ab") as handle:
        handle.write(b'{"turn_id": "t00003", "session_key": "web:a", "xyz')  # a kill -9 mid-write
    _assert_answers_match_the_logs(workspace, ["t00000", "t00002", "t00003"])
    store.traces.append(_trace(4))
    assert b"xyz" not in log_path.read_bytes()
    assert store.traces.last().turn_id == "t00004" and store.traces.get("t00003") is None
    _assert_answers_match_the_logs(workspace, ["t00000", "t00003", "t00004"])


def test_an_append_whose_index_update_was_lost_is_indexed_by_the_next_lookup(store, workspace):
    for n in range(5):
        store.traces.append(_trace(n))
    # What a process killed between the two steps of an append leaves: the line, not its index entry.
    atomic.append_jsonl(_traces_dir(workspace) / "turns.jsonl", [_trace(5, "web:a").to_json()], durable=False)
    assert store.traces.get("t00005").session_key == "web:a"
    assert store.traces.last().turn_id == "t00005" and store.traces.last("web:a").turn_id == "t00005"
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(6)])


def _rewrite_in_place(log_path: Path) -> None:
    data = log_path.read_bytes()
    last = data.rindex(b'"web:a"')  # the newest line moves to a session the index never saw
    with open(log_path, "r+b") as handle:  # same inode, same size, every line where it was
        handle.seek(last)
        handle.write(b'"web:b"')


def _point_turns_at_the_first_line(index_path: Path) -> None:
    turns = {trace_log.turn_key(f"t{n:05d}") for n in range(1, 40)}
    data = bytearray(index_path.read_bytes())
    for at in range(128, len(data), 16):  # each turn's slot now points at another turn's (valid) line
        if int.from_bytes(data[at:at + 8], "little") in turns:
            data[at + 8:at + 16] = bytes(8)
    index_path.write_bytes(bytes(data))


def _point_into_lines(index_path: Path) -> None:
    data = bytearray(index_path.read_bytes())
    for at in range(128, len(data), 16):  # every slot now points one byte into its line
        if any(data[at:at + 8]):
            data[at + 8:at + 16] = (int.from_bytes(data[at + 8:at + 16], "little") + 1).to_bytes(8, "little")
    index_path.write_bytes(bytes(data))


def _cut_log(log_path: Path) -> None:
    os.truncate(log_path, log_path.stat().st_size // 2)


def _replace_log(log_path: Path) -> None:
    records = atomic.read_jsonl(log_path)
    atomic.atomic_write_bytes(log_path, atomic.encode_jsonl(records[::2]))  # a new inode, fewer lines


def _tear_header(index_path: Path) -> None:
    with open(index_path, "r+b") as handle:
        handle.write(b"\xff" * 20)


INDEX_DAMAGE = (_point_turns_at_the_first_line, _point_into_lines, _tear_header)


@pytest.mark.parametrize("damage", [_rewrite_in_place, _cut_log, _replace_log, *INDEX_DAMAGE])
def test_an_index_that_disagrees_with_its_log_is_rebuilt(store, workspace, damage, caplog):
    for n in range(40):
        store.traces.append(_trace(n))
    traces = _traces_dir(workspace)
    damage(traces / ("turns.idx" if damage in INDEX_DAMAGE else "turns.jsonl"))
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(40)])
    assert "rebuilding" in caplog.text
    store.traces.append(_trace(40))
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(41)])


def test_an_index_of_an_earlier_boot_is_rebuilt(store, workspace, monkeypatch):
    for n in range(5):
        store.traces.append(_trace(n))
    index = _traces_dir(workspace) / "turns.idx"
    before = index.stat().st_ino
    monkeypatch.setattr(trace_log, "_boot", lambda: b"another boot....")  # a power cut may have kept half its pages
    assert store.traces.get("t00003").turn_id == "t00003"
    assert index.stat().st_ino != before  # written anew (and renamed into place)
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(5)])


def test_after_a_reboot_only_the_current_generation_is_indexed_again(store, workspace, monkeypatch):
    monkeypatch.setattr(trace_log, "ROTATE_BYTES", 1000)
    for n in range(12):
        store.traces.append(_trace(n))
    traces = _traces_dir(workspace)
    inodes = {name: (traces / name).stat().st_ino for name in ("turns.idx", "turns.1.idx", "turns.2.idx")}
    monkeypatch.setattr(trace_log, "_boot", lambda: b"another boot....")
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(12)])
    now = {name: (traces / name).stat().st_ino for name in inodes}
    assert now["turns.idx"] != inodes["turns.idx"]  # rebuilt: its pages may not all have reached the disk
    assert (now["turns.1.idx"], now["turns.2.idx"]) == (inodes["turns.1.idx"], inodes["turns.2.idx"])  # sealed


def test_an_append_leaves_a_big_rebuild_to_the_next_lookup(store, workspace, monkeypatch):
    for n in range(20):
        store.traces.append(_trace(n))
    index = _traces_dir(workspace) / "turns.idx"
    before = index.stat().st_ino
    monkeypatch.setattr(trace_log, "_boot", lambda: b"another boot....")
    monkeypatch.setattr(trace_log, "_CATCH_UP_BYTES", 1000)  # the log is bigger: a turn must not read it all
    store.traces.append(_trace(20))
    assert index.stat().st_ino == before
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(21)])
    assert index.stat().st_ino != before


def test_an_index_moved_beside_another_log_is_not_trusted(store, workspace, monkeypatch):
    monkeypatch.setattr(trace_log, "ROTATE_BYTES", 800)
    for n in range(20):
        store.traces.append(_trace(n))
    traces = _traces_dir(workspace)
    shutil.copy(traces / "turns.1.idx", traces / "turns.idx")  # a crash half-way through a rotation, say
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(20)])


def test_a_big_log_from_before_the_index_is_indexed_once_and_rotated_unread(store, workspace, monkeypatch):
    monkeypatch.setattr(trace_log, "ROTATE_BYTES", 2000)
    monkeypatch.setattr(trace_log, "SLOTS", 16)  # the rebuild sizes its table for what it finds
    old = _traces_dir(workspace) / "turns.jsonl"
    atomic.append_jsonl(old, [_trace(n).to_json() for n in range(100)], durable=False)
    assert store.traces.get("t00042").turn_id == "t00042" and store.traces.last().turn_id == "t00099"
    store.traces.append(_trace(100))
    assert store.traces.log.generation(1).size() > 2000  # moved aside whole
    assert store.traces.get("t00042").turn_id == "t00042" and store.traces.last().turn_id == "t00100"
    _assert_answers_match_the_logs(workspace, [f"t{n:05d}" for n in range(101)])


def test_a_line_that_is_not_a_trace_is_skipped(store, workspace):
    store.traces.append(_trace(0))
    atomic.append_jsonl(_traces_dir(workspace) / "turns.jsonl", [{"turn_id": "t00001", "session_key": "web:a",
                                                                  "from_a_newer_version": True}], durable=False)
    assert store.traces.last().turn_id == "t00000" and store.traces.get("t00001") is None
    assert store.traces.last("web:a").turn_id == "t00000"
    store.traces.append(_trace(2))
    assert store.traces.last().turn_id == "t00002"


def test_two_processes_appending_at_once_lose_no_trace(workspace):
    count = 60  # 30 KB of traces: the writers rotate every 8 KB, so rotations happen while both write
    writer = [sys.executable, "-m", "tests.helpers.store_writer", "traces", str(workspace)]
    procs = [subprocess.Popen([*writer, tag, str(count)], cwd=REPO, stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                              text=True) for tag in "AB"]
    for proc in procs:
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        assert proc.stdout.readline().strip() == "done"
        assert proc.wait(timeout=60) == 0
    assert (_traces_dir(workspace) / "turns.2.jsonl").exists()
    records = _kept(workspace)
    ids = [r["turn_id"] for r in records]
    assert len(ids) == len(set(ids)) and {"A-59", "B-59"} <= set(ids)
    for tag in "AB":  # each writer's traces in its own order, the newest ones all kept
        mine = [i for i in ids if i.startswith(tag)]
        assert mine == [f"{tag}-{n}" for n in range(count - len(mine), count)]
    fresh = FileStore(workspace)
    try:
        assert all(fresh.traces.get(turn_id).turn_id == turn_id for turn_id in ids)
        assert fresh.traces.last().turn_id == ids[-1]
        assert fresh.traces.last("race:A").turn_id == "A-59" and fresh.traces.last("race:B").turn_id == "B-59"
    finally:
        fresh.close()
