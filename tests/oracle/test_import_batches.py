"""``--import-files`` of a long transcript: bounded transactions with array inserts, resumable when cut off,
and one import at a time per database (a second one racing it is refused, losing nothing)."""

from __future__ import annotations

from picoora.cli import oracle_cmds
from picoora.messages import Message
from picoora.store.files import FileStore
from picoora.store.transfer import TRANSCRIPT_BATCH, transfer
from tests.fakes.hash_embedder import HashEmbedder
from tests.oracle.fake_db import ora_error

MESSAGES = 2000


def _long_transcript(tmp_path) -> FileStore:
    source = FileStore(tmp_path / "ws", embedder=HashEmbedder())
    source.transcripts.append("telegram:42", [Message(role="user" if n % 2 else "assistant", content=f"message {n}")
                                             for n in range(MESSAGES)])
    return source


def test_a_2000_message_transcript_goes_in_bounded_array_batches(tmp_path, fake, open_store):
    source, target = _long_transcript(tmp_path), open_store()
    fake.executed.clear()
    fake.array_dml.clear()
    progress: list[tuple[int, int]] = []
    report = transfer(source, target, progress=lambda done, total: progress.append((done, total)))
    assert report.copied["transcript entries"] == MESSAGES
    assert progress == [(n, MESSAGES) for n in range(TRANSCRIPT_BATCH, MESSAGES + 1, TRANSCRIPT_BATCH)]
    assert fake.array_dml == [TRANSCRIPT_BATCH] * (MESSAGES // TRANSCRIPT_BATCH)  # one round trip per batch
    assert fake.names().count("transcript_last_seq") == MESSAGES // TRANSCRIPT_BATCH  # one transaction each
    assert [e.message.content for e in target.transcripts.read("telegram:42")] == [f"message {n}"
                                                                                 for n in range(MESSAGES)]
    source.close()


def test_an_import_cut_off_half_way_resumes_after_what_was_copied(tmp_path, fake, open_store):
    source, target = _long_transcript(tmp_path), open_store()
    fake.fail_next["transcript_insert"] = (5 * TRANSCRIPT_BATCH + 3, ora_error(1653, "PICO_TRANSCRIPTS"))
    try:
        transfer(source, target)
    except Exception as exc:  # the tablespace was full in the sixth batch
        assert "ORA-01653" in str(exc)
    else:
        raise AssertionError("the sixth batch should have failed")
    assert len(target.transcripts.read("telegram:42")) == 5 * TRANSCRIPT_BATCH  # whole batches, nothing half
    report = transfer(source, target)  # run again
    assert report.copied["transcript entries"] == MESSAGES - 5 * TRANSCRIPT_BATCH
    assert report.skipped["transcript entries"] == 5 * TRANSCRIPT_BATCH
    assert [e.seq for e in target.transcripts.read("telegram:42")] == list(range(1, MESSAGES + 1))
    source.close()


def test_a_second_import_racing_the_first_is_refused_and_copies_nothing(tmp_path, fake, config, open_store, capsys,
                                                                        monkeypatch):
    import asyncio

    store = open_store()
    assert asyncio.run(store.leases.acquire(oracle_cmds.IMPORT_LEASE, "another-node", 3600))
    monkeypatch.setattr("picoora.store.open_file_store", lambda *a, **k: _long_transcript(tmp_path))
    steps = oracle_cmds._Steps()
    oracle_cmds._import_files(config, store, steps)
    assert steps.warnings == 1 and "another picoora is importing into this database now" in capsys.readouterr().out
    assert store.transcripts.read("telegram:42") == []
    asyncio.run(store.leases.release(oracle_cmds.IMPORT_LEASE, "another-node"))  # the first one finished
    oracle_cmds._import_files(config, store, steps)
    assert len(store.transcripts.read("telegram:42")) == MESSAGES


def test_peoples_file_stores_are_imported_into_their_own_scope(tmp_path, fake, config, open_store, monkeypatch):
    from picoora.config import workspace_path
    from picoora.store.layout import FileLayout
    from picoora.store.scoped import person_agent_id

    monkeypatch.setattr("picoora.store.embedder.shared_embedder", lambda *a, **k: HashEmbedder())
    workspace = workspace_path(config)
    ana = FileStore(FileLayout(workspace).person("ana"), embedder=HashEmbedder())
    ana.memories.add("Ana's locker code is 7311")
    ana.transcripts.append("telegram:7", [Message(role="user", content="hi from ana")])
    ana.close()
    store = open_store()
    oracle_cmds._import_files(config, store, oracle_cmds._Steps())
    ana_id = person_agent_id(config.oracle.agent_id, "ana")
    assert [r["content"] for r in fake.rows("PICO_MEMORIES") if r["agent_id"] == ana_id] == [
        "Ana's locker code is 7311"]
    assert [r["content"] for r in fake.rows("PICO_TRANSCRIPTS") if r["agent_id"] == ana_id] == ["hi from ana"]
    assert not [r for r in fake.rows("PICO_MEMORIES") if r["agent_id"] == config.oracle.agent_id]  # not the owner's
