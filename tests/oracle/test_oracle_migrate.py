"""``picoora migrate`` onto the Oracle backend (the recording fake): prompts reach PICO_PROMPTS, sessions,
notes, memories (embedded in the database) and jobs go through the store, and a rerun adds nothing twice."""

from __future__ import annotations

from contextlib import contextmanager

from picoora.config import load_config, save_config
from picoora.migrate import migrate_home
from picoora.scheduler.jobs import JobBook
from tests.go_home import build_go_home
from tests.oracle.conftest import oracle_config


def test_a_go_home_lands_in_the_oracle_tables_once(tmp_path, open_store, isolated_home):
    go = build_go_home(tmp_path / "user")
    config_path = isolated_home / "config.json"
    save_config(oracle_config(), config_path)  # picoora's own config names Oracle: that edit stays

    @contextmanager
    def oracle(config):
        yield open_store()

    first = migrate_home(go, config_path=config_path, open_store=oracle)
    assert [i.name for s in first.sections for i in s.items if i.outcome == "kept"] == ["oracle.enabled"]
    assert load_config(config_path).oracle.enabled
    assert first.count("done") >= 12
    store = open_store()
    assert store.backend == "oracle"
    assert store.prompts.get("IDENTITY.md").content.endswith("\n\n# Identity\n\nYou are Claw, Ana's assistant.\n")
    assert [m.role for m in store.sessions.load("cli:default").messages] == ["user", "assistant", "tool", "assistant"]
    assert len(store.transcripts.read("telegram:123456789")) == 2
    assert {n.day.isoformat() for n in store.notes.recent(days=400)} >= {"2026-11-01", "2026-11-02"}
    memories = store.memories.list()
    assert len(memories) == 3 and all(m.embedding_model for m in memories)
    assert {m.provenance.how for m in memories} == {"imported"}  # where they came from, as `memory list` shows
    assert len(JobBook(store).jobs()) == 3

    second = migrate_home(go, config_path=config_path, open_store=oracle)
    assert second.count("done") == 0
    assert len(store.memories.list()) == 3 and len(JobBook(store).jobs()) == 3
    assert len(store.transcripts.read("cli:default")) == 4
