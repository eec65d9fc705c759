"""The Store contract: behaviour every backend promises, written once and run against each backend.

A backend's test module subclasses ``StoreContract`` and provides three fixtures:
  store           an empty store whose embedder is deterministic (tests/fakes/hash_embedder.py for files);
                  for this suite, texts that share words are similar and a near-identical text is a duplicate
  reopen          a callable returning a new store over the same location (to test persistence, and to act
                  as a second writer with its own view)
  degraded_store  an empty store with no working embedder (recall must fall back to keywords)
Only what the Store protocol promises is tested here: no file paths, no SQL.
"""

from __future__ import annotations

import threading
from datetime import date, datetime, timedelta, timezone

import pytest

from picoora.messages import Image, Message, ToolCall
from picoora.store.base import PROMPT_NAMES, MemoryRecord, Provenance, Session


def _tool_turn(city: str) -> list[Message]:
    """A user question, a tool call, its result and the answer: the shapes a session must round-trip."""
    call = ToolCall(id=f"call_{city}", name="weather", arguments={"city": city, "days": 2, "units": ["c"]})
    return [
        Message(role="user", content=f"Weather in {city}?"),
        Message(role="assistant", content="", tool_calls=[call], reasoning="I should call the weather tool."),
        Message(role="tool", content='{"temp": 21}', tool_call_id=call.id, name="weather"),
        Message(role="assistant", content=f"It is 21 degrees in {city}."),
    ]


def _user(text: str) -> Message:
    return Message(role="user", content=text)


class StoreContract:
    # ---- memories ------------------------------------------------------------------------------

    def test_add_memory_returns_the_stored_record(self, store):
        result = store.memories.add("The user's cat is called Miso", importance=0.9, category="fact")
        assert result.created is True
        record = result.memory
        assert record.id and record.content == "The user's cat is called Miso"
        assert (record.importance, record.category) == (0.9, "fact")
        assert record.created_at is not None and record.embedding_model
        assert store.memories.get(record.id) == record
        assert store.memories.get("no-such-id") is None

    def test_add_memory_rejects_empty_text_and_bad_importance(self, store):
        with pytest.raises(ValueError):
            store.memories.add("   ")
        with pytest.raises(ValueError):
            store.memories.add("valid text", importance=1.5)
        assert store.memories.list() == []

    def test_recall_ranks_the_matching_memory_first(self, store):
        cat = store.memories.add("The cat sleeps on the blue sofa").memory
        store.memories.add("Quarterly taxes are due in April")
        store.memories.add("The office printer needs toner")
        result = store.memories.recall("where does the cat sleep", limit=3)
        assert result.degraded is False
        assert result.matches and result.matches[0].memory.id == cat.id
        scores = [match.score for match in result.matches]
        assert scores == sorted(scores, reverse=True)
        assert all(0.0 <= score <= 1.0 for score in scores)

    def test_recall_honours_the_limit(self, store):
        for n in range(6):
            store.memories.add(f"project note number {n} about the garden shed {n * 7}")
        assert len(store.memories.recall("garden shed project note", limit=2).matches) == 2

    def test_recall_records_access(self, store, reopen):
        record = store.memories.add("The wifi password is on the fridge").memory
        assert record.access_count == 0
        matches = store.memories.recall("wifi password", limit=1).matches
        assert matches[0].memory.id == record.id and matches[0].memory.access_count == 1
        store.memories.recall("wifi password fridge", limit=1)
        again = reopen().memories.get(record.id)
        assert again.access_count == 2 and again.accessed_at is not None

    def test_list_memories_newest_first_with_limit(self, store):
        ids = [store.memories.add(f"distinct fact {word}").memory.id for word in ("alpha", "bravo", "charlie")]
        assert [m.id for m in store.memories.list()] == ids[::-1]
        assert [m.id for m in store.memories.list(limit=2)] == ids[:0:-1]

    def test_forget_removes_a_memory_everywhere(self, store, reopen):
        keep = store.memories.add("The dentist appointment is on Friday").memory
        gone = store.memories.add("The spare key is under the flower pot").memory
        assert store.memories.forget(gone.id) is True
        assert store.memories.forget(gone.id) is False
        assert store.memories.get(gone.id) is None
        assert all(m.memory.id != gone.id for m in store.memories.recall("spare key flower pot").matches)
        assert [m.id for m in reopen().memories.list()] == [keep.id]

    def test_near_identical_memory_is_not_stored_twice(self, store):
        first = store.memories.add("My favourite colour is green", importance=0.5)
        second = store.memories.add("my favourite colour is GREEN.", importance=0.5)
        assert second.created is False
        assert second.memory.id == first.memory.id
        assert len(store.memories.list()) == 1

    def test_repeating_a_memory_with_higher_importance_raises_it(self, store, reopen):
        first = store.memories.add("Allergic to peanuts", importance=0.4).memory
        again = store.memories.add("allergic to peanuts", importance=0.95)
        assert again.created is False and again.memory.importance == 0.95
        lower = store.memories.add("Allergic to peanuts", importance=0.1)
        assert lower.memory.importance == 0.95
        assert reopen().memories.get(first.id).importance == 0.95

    def test_a_new_value_supersedes_the_old_one_which_is_kept_but_never_recalled(self, store, reopen):
        old = store.memories.add("The door code is 4421").memory
        new = store.memories.add("The door code is now 9981")
        assert new.created and [m.id for m in new.replaced] == [old.id]
        assert new.replaced[0].superseded_by == new.memory.id
        for view in (store, reopen()):
            assert [m.memory.id for m in view.memories.recall("door code", 5, touch=False).matches] == [new.memory.id]
            assert view.memories.get(old.id).superseded_by == new.memory.id
            assert {m.id for m in view.memories.list()} == {old.id, new.memory.id}  # kept, with the link
            assert not view.memories.get(old.id).is_current() and view.memories.get(new.memory.id).is_current()

    def test_a_fact_restated_in_other_words_is_not_stored_twice(self, store):
        first = store.memories.add("The user's door code is 4421", importance=0.5).memory
        again = store.memories.add("My door code is 4421.", importance=0.9)
        assert (again.created, again.memory.id, again.replaced) == (False, first.id, [])
        assert store.memories.get(first.id).importance == 0.9  # as a repeat in the same words raises it
        assert [m.id for m in store.memories.list()] == [first.id]

    def test_look_alike_facts_about_different_things_are_both_kept(self, store):
        blue = store.memories.add("The blue bag is in locker 3").memory
        red = store.memories.add("The red bag is in locker 4")
        assert red.replaced == [] and store.memories.get(blue.id).is_current()
        assert ({m.memory.id for m in store.memories.recall("bag locker", 5, touch=False).matches}
                == {blue.id, red.memory.id})

    def test_an_old_value_told_again_is_current_again(self, store):
        store.memories.add("The door code is 4421")
        changed = store.memories.add("The door code is 9981").memory
        back = store.memories.add("The door code is 4421")
        assert back.created and [m.id for m in back.replaced] == [changed.id]
        found = store.memories.recall("door code", 5, touch=False).matches
        assert [m.memory.content for m in found] == ["The door code is 4421"]

    def test_an_expired_memory_is_listed_but_not_recalled(self, store, reopen):
        now = datetime.now().astimezone()
        gone = store.memories.add("Parking permit for the visitor car", expires_at=now - timedelta(minutes=1)).memory
        kept = store.memories.add("Parking spot for the visitor car is 12", expires_at=now + timedelta(days=3)).memory
        for view in (store, reopen()):
            assert ([m.memory.id for m in view.memories.recall("visitor car parking", 5, touch=False).matches]
                    == [kept.id])
            assert {m.id for m in view.memories.list()} == {gone.id, kept.id}
            assert abs((view.memories.get(kept.id).expires_at - kept.expires_at).total_seconds()) < 0.001
            assert view.memories.get(gone.id).status() == "expired"

    def test_provenance_is_kept_and_unknown_when_not_given(self, store, reopen):
        told = Provenance(how="told", person="ana", session="telegram:42", turn_id="a1b2c3")
        mine = store.memories.add("Ana's bike is the green one", provenance=told).memory
        plain = store.memories.add("The shed is behind the house").memory
        assert mine.provenance == told and reopen().memories.get(mine.id).provenance == told
        assert reopen().memories.get(plain.id).provenance == Provenance() and plain.provenance.how == "unknown"
        with pytest.raises(ValueError):
            store.memories.add("too long a turn", provenance=Provenance(how="told", turn_id="x" * 65))

    def test_import_keeps_ids_and_fields_and_skips_what_exists(self, store, reopen):
        created = datetime(2025, 3, 1, 12, 30).astimezone()
        records = [
            MemoryRecord(id="imp001", content="Imported fact about sailing boats", importance=0.8,
                         category="hobby", created_at=created, access_count=3),
            MemoryRecord(id="imp002", content="Imported fact about mountain huts", importance=0.3, category="travel"),
        ]
        assert store.memories.import_records(records) == 2
        stored = reopen().memories.get("imp001")
        assert (stored.content, stored.importance, stored.category) == (records[0].content, 0.8, "hobby")
        assert stored.created_at == created and stored.access_count == 3
        assert store.memories.get("imp002").created_at is not None
        assert store.memories.import_records(records) == 0  # importing the same export twice adds nothing
        assert (store.memories.import_records([MemoryRecord(id="other", content="imported fact about SAILING boats")])
                == 0)
        assert store.memories.recall("sailing boats", limit=1).matches[0].memory.id == "imp001"

    def test_import_gives_a_record_without_an_id_a_fresh_one(self, store):
        assert store.memories.import_records([MemoryRecord(id="", content="An imported fact with no id")]) == 1
        [stored] = store.memories.list()
        assert stored.id and stored.content == "An imported fact with no id"
        assert store.memories.import_records([MemoryRecord(id="", content="An imported fact with no id")]) == 0

    def test_reindex_re_embeds_every_memory(self, store, reopen):
        ids = [store.memories.add(f"reindex me {word} please").memory.id for word in ("one", "two", "three")]
        store.memories.forget(ids[0])
        assert store.memories.reindex() == 2
        again = reopen()
        assert {m.id for m in again.memories.list()} == set(ids[1:])
        assert all(m.embedding_model for m in again.memories.list())
        assert (again.memories.recall("reindex me two please", limit=1).matches[0].memory.content
                == "reindex me two please")

    def test_memories_persist(self, store, reopen):
        record = store.memories.add("The car is a green Volvo", importance=0.6, category="fact").memory
        again = reopen()
        assert again.memories.get(record.id) == record
        assert again.memories.recall("green volvo car", limit=1).matches[0].memory.id == record.id

    def test_recall_without_embedder_falls_back_to_keywords(self, degraded_store):
        record = degraded_store.memories.add("Passport number is X1234567").memory
        degraded_store.memories.add("The bakery opens at seven")
        assert record.embedding_model is None
        result = degraded_store.memories.recall("what is my passport number", limit=3)
        assert result.degraded is True and result.note
        assert result.matches[0].memory.id == record.id
        assert result.matches[0].similarity is None

    # ---- daily notes ---------------------------------------------------------------------------

    def test_daily_note_appends_within_a_day(self, store, reopen):
        store.notes.append("Met Ana for coffee.")
        note = store.notes.append("Fixed the bike.")
        assert note.day == date.today()
        assert note.content.index("Met Ana for coffee.") < note.content.index("Fixed the bike.")
        assert reopen().notes.recent(1) == [note]

    def test_recent_daily_notes_window_newest_first(self, store):
        today = date.today()
        for back in (0, 1, 3, 9):
            store.notes.append(f"entry from {back} days ago", day=today - timedelta(days=back))
        store.notes.append("entry from tomorrow", day=today + timedelta(days=1))
        recent = store.notes.recent(4)
        assert [n.day for n in recent] == [today, today - timedelta(days=1), today - timedelta(days=3)]
        assert "entry from 3 days ago" in recent[2].content
        assert [n.day for n in store.notes.recent(2)] == [today, today - timedelta(days=1)]
        assert store.notes.recent(0) == []

    # ---- sessions ------------------------------------------------------------------------------

    def test_missing_session_loads_empty(self, store):
        session = store.sessions.load("cli:nobody")
        assert (session.key, session.messages, session.summary) == ("cli:nobody", [], "")

    def test_session_round_trips_tool_calls(self, store, reopen):
        turn = _tool_turn("Lisbon")
        store.sessions.append("cli:default", turn[:2])
        store.sessions.append("cli:default", turn[2:])
        session = reopen().sessions.load("cli:default")
        assert session.messages == turn
        assert session.created_at is not None and session.created_at <= session.updated_at

    def test_cancelled_messages_keep_their_mark_in_sessions_and_transcripts(self, store, reopen):
        call = ToolCall(id="call_c", name="exec", arguments={"command": "sleep 60"})
        cancelled = [
            Message(role="user", content="run the long command", cancelled=True),
            Message(role="assistant", content="", tool_calls=[call], cancelled=True),
            Message(role="tool", content="done", tool_call_id=call.id, name="exec", cancelled=True),
        ]
        store.sessions.append("cli:default", [*cancelled, _user("something else")])
        store.transcripts.append("cli:default", [*cancelled, _user("something else")])
        other = reopen()
        assert [m.cancelled for m in other.sessions.load("cli:default").messages] == [True, True, True, False]
        assert other.sessions.load("cli:default").messages == [*cancelled, _user("something else")]
        assert [e.message for e in other.transcripts.read("cli:default")] == [*cancelled, _user("something else")]
        assert [m.cancelled for s in other.sessions.list() for m in s.messages] == [True, True, True, False]

    def test_a_pictures_reference_is_kept_and_its_bytes_never_are(self, store, reopen):
        sent = Message(role="user", content="what is this?",
                       images=[Image("cat.jpg", "image/jpeg", "inbox/cat.jpg", b"\xff\xd8\xff" * 1000)])
        store.sessions.append("telegram:7", [sent])
        store.transcripts.append("telegram:7", [sent])
        other = reopen()
        for kept in (other.sessions.load("telegram:7").messages[0], other.transcripts.read("telegram:7")[0].message):
            assert [(i.name, i.mime, i.path, i.data) for i in kept.images] == [("cat.jpg", "image/jpeg",
                                                                                "inbox/cat.jpg", None)]
            assert kept.text_with_notes() == "[image: inbox/cat.jpg]\nwhat is this?"

    def test_compaction_drops_oldest_and_sets_summary(self, store):
        store.sessions.append("s", _tool_turn("Oslo") + _tool_turn("Rome"))
        assert store.sessions.compact("s", "Asked about the weather in Oslo.", _tool_turn("Oslo"))
        store.sessions.append("s", [_user("and Paris?")])
        session = store.sessions.load("s")
        assert session.summary == "Asked about the weather in Oslo."
        assert session.messages == _tool_turn("Rome") + [_user("and Paris?")]

    def test_compaction_keeps_messages_another_writer_appended(self, store, reopen):
        store.sessions.append("shared", [_user(f"old {n}") for n in range(4)])
        stale_view = store.sessions.load("shared")
        reopen().sessions.append("shared", [_user("arrived meanwhile")])
        assert store.sessions.compact("shared", "summary of old", stale_view.messages[:3])
        assert [m.content for m in store.sessions.load("shared").messages] == ["old 3", "arrived meanwhile"]

    def test_concurrent_compactions_fold_by_identity_and_lose_nothing(self, store, reopen):
        store.sessions.append("c", [_user(f"turn {n}") for n in range(6)])
        first_view, second_view = store.sessions.load("c"), reopen().sessions.load("c")
        assert store.sessions.compact("c", "summary A", first_view.messages[:4])
        # The second compaction saw the same messages; they are gone already, so it changes nothing.
        assert not reopen().sessions.compact("c", "summary B", second_view.messages[:2])
        session = store.sessions.load("c")
        assert (session.summary, [m.content for m in session.messages]) == ("summary A", ["turn 4", "turn 5"])

    def test_set_summary_keeps_the_messages(self, store):
        store.sessions.append("s", [_user("hi")])
        store.sessions.set_summary("s", "greeted")
        assert (store.sessions.load("s").summary, store.sessions.load("s").messages) == ("greeted", [_user("hi")])

    def test_reset_clears_the_session_but_not_its_transcript(self, store):
        store.sessions.append("telegram:42", [_user("hello")])
        store.transcripts.append("telegram:42", [_user("hello")])
        store.sessions.set_summary("telegram:42", "greeting")
        store.sessions.reset("telegram:42")
        session = store.sessions.load("telegram:42")
        assert (session.messages, session.summary) == ([], "")
        assert "telegram:42" not in [s.key for s in store.sessions.list()]
        assert [e.message for e in store.transcripts.read("telegram:42")] == [_user("hello")]
        assert store.transcripts.keys() == ["telegram:42"]

    def test_a_restored_session_replaces_the_old_one_and_keeps_its_own_times(self, store, reopen):
        store.sessions.append("telegram:42", [_user("picoora's own")])
        created = datetime(2025, 3, 1, 8, 0, tzinfo=timezone.utc)
        updated = datetime(2025, 3, 2, 9, 30, tzinfo=timezone.utc)
        store.sessions.restore(Session("telegram:42", [_user("from Go")], "went well", created, updated))
        restored = reopen().sessions.load("telegram:42")
        assert (restored.messages, restored.summary) == ([_user("from Go")], "went well")
        assert (restored.created_at, restored.updated_at) == (created, updated)
        store.sessions.append("telegram:42", [_user("later")])  # a later turn moves only the update time
        later = reopen().sessions.load("telegram:42")
        assert later.created_at == created and later.updated_at > updated

    def test_transcript_keys_sorted_with_odd_keys(self, store, reopen):
        keys = ["web:a b/../ü?*", "cli:default", "slack:C01/1700.12", "x" * 300]
        for key in keys:
            store.transcripts.append(key, [_user("hi")])
        assert reopen().transcripts.keys() == sorted(keys)

    def test_list_sessions_with_odd_keys_most_recent_first(self, store, reopen):
        keys = ["cli:default", "slack:C01/1700.12", "web:a b/../ü?*", "a_b", "a:b"]
        for key in keys:
            store.sessions.append(key, [_user(f"hi from {key}")])
        listed = reopen().sessions.list()
        assert [s.key for s in listed] == keys[::-1]
        assert all(s.messages == [_user(f"hi from {s.key}")] for s in listed)

    def test_concurrent_session_appends_lose_nothing(self, store):
        def writer(name: str) -> None:
            for n in range(15):
                store.sessions.append("busy", [_user(f"{name}-{n}")])

        threads = [threading.Thread(target=writer, args=(f"t{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        contents = [m.content for m in store.sessions.load("busy").messages]
        assert sorted(contents) == sorted(f"t{i}-{n}" for i in range(4) for n in range(15))
        for i in range(4):  # each writer's messages stay in its order
            mine = [c for c in contents if c.startswith(f"t{i}-")]
            assert mine == [f"t{i}-{n}" for n in range(15)]

    # ---- transcripts ---------------------------------------------------------------------------

    def test_transcript_numbers_messages_in_order(self, store, reopen):
        turn = _tool_turn("Bern")
        assert store.transcripts.append("cli:default", turn[:3]) == [1, 2, 3]
        assert reopen().transcripts.append("cli:default", turn[3:]) == [4]
        entries = store.transcripts.read("cli:default")
        assert [e.seq for e in entries] == [1, 2, 3, 4]
        assert [e.message for e in entries] == turn
        assert all(e.session_key == "cli:default" and e.created_at is not None for e in entries)
        assert [e.seq for e in store.transcripts.read("cli:default", limit=2)] == [3, 4]
        assert store.transcripts.read("cli:other") == []
        assert store.transcripts.append("cli:other", [_user("x")]) == [1]

    def test_transcript_is_never_rewritten_by_compaction(self, store):
        turn = _tool_turn("Graz") + _tool_turn("Linz")
        store.sessions.append("s", turn)
        store.transcripts.append("s", turn)
        store.sessions.compact("s", "weather talk", turn[:6])
        assert len(store.sessions.load("s").messages) == 2
        assert [e.message for e in store.transcripts.read("s")] == turn

    def test_concurrent_transcript_appends_get_unique_seqs(self, store):
        results: list[list[int]] = []

        def writer(name: str) -> None:
            for n in range(10):
                results.append(store.transcripts.append("busy", [_user(f"{name}-{n}a"), _user(f"{name}-{n}b")]))

        threads = [threading.Thread(target=writer, args=(f"t{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(seq for seqs in results for seq in seqs) == list(range(1, 81))
        assert all(seqs[1] == seqs[0] + 1 for seqs in results)  # one call's messages stay together
        assert [e.seq for e in store.transcripts.read("busy")] == list(range(1, 81))

    # ---- state, config, meta -------------------------------------------------------------------

    @pytest.mark.parametrize("family", ["state", "config", "meta"])
    def test_key_value_families(self, store, reopen, family):
        values = getattr(store, family)
        get, put, everything = values.get, values.set, values.all
        assert get("last_channel") is None and everything() == {}
        put("last_channel", "telegram:42")
        put("note", 'multi\nline "quoted" ü')
        put("last_channel", "cli:default")
        assert get("last_channel") == "cli:default"
        expected = {"last_channel": "cli:default", "note": 'multi\nline "quoted" ü'}
        assert getattr(reopen(), family).all() == expected

    def test_delete_state_removes_the_key_and_says_whether_it_was_there(self, store, reopen):
        store.state.set("cron.job.1", "{}")
        store.state.set("keep", "v")
        store.config.set("cron.job.1", "config")
        assert store.state.delete("cron.job.1") is True
        assert store.state.get("cron.job.1") is None and store.state.delete("cron.job.1") is False
        assert store.state.delete("never-set") is False
        again = reopen()
        assert again.state.all() == {"keep": "v"} and again.config.get("cron.job.1") == "config"
        store.state.set("cron.job.1", "back")  # a deleted key can be set again
        assert again.state.get("cron.job.1") == "back"

    def test_key_value_families_are_separate(self, store):
        store.state.set("k", "state")
        store.config.set("k", "config")
        store.meta.set("k", "meta")
        assert (store.state.get("k"), store.config.get("k"), store.meta.get("k")) == ("state", "config", "meta")

    # ---- prompts -------------------------------------------------------------------------------

    def test_prompts_come_in_system_prompt_order(self, store, reopen):
        assert store.prompts.list() == []
        for name in ("USER.md", "AGENTS.md", "IDENTITY.md", "AGENT.md", "SOUL.md"):
            store.prompts.set(name, f"# {name}\ncontent of {name}\n")
        assert [p.name for p in reopen().prompts.list()] == list(PROMPT_NAMES)
        assert store.prompts.get("SOUL.md").content == "# SOUL.md\ncontent of SOUL.md\n"

    def test_set_prompt_replaces_and_missing_prompts_are_skipped(self, store):
        store.prompts.set("USER.md", "old")
        store.prompts.set("USER.md", "The user is called Ana.")
        store.prompts.set("IDENTITY.md", "I am picoora.")
        assert [(p.name, p.content) for p in store.prompts.list()] == [
            ("IDENTITY.md", "I am picoora."),
            ("USER.md", "The user is called Ana."),
        ]
        assert store.prompts.get("SOUL.md") is None

    # ---- stats ---------------------------------------------------------------------------------

    def test_stats_count_every_family(self, store):
        empty = store.stats()
        assert empty.backend == store.backend and empty.location
        assert (empty.memories, empty.sessions, empty.transcript_entries, empty.daily_notes) == (0, 0, 0, 0)
        store.memories.add("stat fact one")
        store.memories.add("stat fact two about something else")
        store.notes.append("note")
        store.notes.append("older note", day=date.today() - timedelta(days=2))
        store.sessions.append("a", [_user("x")])
        store.sessions.append("b", [_user("y")])
        store.transcripts.append("a", _tool_turn("Kyiv"))
        store.state.set("s1", "1")
        store.config.set("c1", "1")
        store.config.set("c2", "2")
        store.prompts.set("SOUL.md", "soul")
        stats = store.stats()
        counts = (stats.memories, stats.daily_notes, stats.sessions, stats.transcript_entries)
        assert counts == (2, 2, 2, 4)
        assert (stats.state_keys, stats.config_keys, stats.prompts) == (1, 2, 1)

    def test_store_satisfies_the_protocol(self, store):
        from picoora.store.protocol import Store

        assert isinstance(store, Store)
        assert isinstance(store.sessions.load("x"), Session)

    # ---- what the front doors ask for (no backend checks anywhere above the store) ---------------

    def test_traces_round_trip_and_the_last_is_per_session(self, store, reopen):
        from picoora.store.base import RecalledMemory, ToolCallTrace, TurnTrace

        first = TurnTrace("t1", "web:a", started_at=datetime.now().astimezone(), provider="ollama", model="m",
                          prompt_tokens=10, completion_tokens=3, model_calls=1, first_token_ms=12.5, latency_ms=40.0,
                          recalled=[RecalledMemory("m1", 0.61, 0.55, "a fact", "told by ana in web:a (turn t0)")],
                          tool_calls=[ToolCallTrace("c1", "recall", {"query": "x"}, 3.2, True, "Found 1")],
                          stop_reason="answer")
        store.traces.append(first)
        store.traces.append(TurnTrace("t2", "web:b", stop_reason="error", error="model down"))
        again = reopen()
        assert again.traces.get("t1").to_json() == first.to_json()
        assert again.traces.last().turn_id == "t2"
        assert again.traces.last("web:a").turn_id == "t1"
        assert again.traces.last("nobody") is None and again.traces.get("nope") is None

    def test_traces_are_found_by_id_and_last_among_many(self, store, reopen):
        from picoora.store.base import TurnTrace

        sessions = ["web:a", "telegram:7", "cli:default", "openai:x"]
        for n in range(120):
            store.traces.append(TurnTrace(f"turn{n:04d}", sessions[n % 4 if n < 100 else 0], model=f"m{n}"))
        again = reopen()
        picked = (0, 1, 57, 99, 119)
        assert [again.traces.get(f"turn{n:04d}").model for n in picked] == [f"m{n}" for n in picked]
        assert again.traces.last().turn_id == "turn0119"
        assert [again.traces.last(key).turn_id for key in sessions] == ["turn0119", "turn0097", "turn0098", "turn0099"]
        assert again.traces.get("turn0120") is None and again.traces.last("web:b") is None

    def test_traces_of_two_writers_are_all_found(self, store, reopen):
        from picoora.store.base import TurnTrace

        other = reopen()  # a second writer with its own view (another process, on files)
        for n in range(20):
            (store if n % 2 else other).traces.append(TurnTrace(f"two{n}", f"web:{n % 2}"))
        for reader in (store, other):
            assert all(reader.traces.get(f"two{n}").session_key == f"web:{n % 2}" for n in range(20))
            assert reader.traces.last().turn_id == "two19"
            assert (reader.traces.last("web:0").turn_id, reader.traces.last("web:1").turn_id) == ("two18", "two19")

    def test_whole_tool_outputs_round_trip_by_handle_only(self, store, reopen):
        from picoora.store.base import ToolOutput

        handle = "out_" + "A1b2_-" * 4
        content = "".join(f"line {n}: café ✓ {'x' * 40}\n" for n in range(4000))  # ~220k chars, multi-byte
        store.tool_outputs.save(ToolOutput(handle, "web:a", "turn1", "exec", content))
        kept = reopen().tool_outputs.get(handle)
        assert (kept.handle, kept.session_key, kept.turn_id, kept.tool, kept.content) == (
            handle, "web:a", "turn1", "exec", content)
        assert kept.created_at is not None
        for other in ("out_" + "A1b2_-" * 3 + "A1b2_x", "../../config", "out_", handle + "x", handle.upper()):
            assert store.tool_outputs.get(other) is None

    def test_recall_without_touch_leaves_access_counts(self, store):
        memory = store.memories.add("The spare key is under the blue flowerpot").memory
        store.memories.recall("spare key flowerpot", touch=False)
        assert store.memories.get(memory.id).access_count == 0
        store.memories.recall("spare key flowerpot")
        assert store.memories.get(memory.id).access_count == 1

    def test_vector_status_names_the_embedder_and_counts_missing_vectors(self, store):
        store.memories.add("a memory with a vector")
        status = store.memories.vector_status()
        assert status.embedder and status.where and status.missing == 0

    def test_daily_notes_are_listed_newest_first_without_loading_all(self, store):
        store.notes.append("old entry about the garden", day=date.today() - timedelta(days=40))
        store.notes.append("today: fixed the bike")
        rows = store.notes.list(1)
        assert [r.day for r in rows] == [date.today()] and "bike" in rows[0].content
        assert [r.day for r in store.notes.list(10)] == [date.today(), date.today() - timedelta(days=40)]
        found = store.notes.search("garden", 5)
        assert found and "garden" in found[0][0].content

    def test_recent_transcript_entries_span_sessions_newest_first(self, store):
        store.transcripts.append("a", [_user("first")])
        store.transcripts.append("b", [_user("second")])
        assert [e.message.content for e in store.transcripts.recent(5)] == ["second", "first"]

    def test_ping_and_details_answer(self, store):
        store.ping()
        assert store.details() is not None and isinstance(store.display_name, str)
