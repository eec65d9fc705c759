"""What is pushed into a turn unasked, what counts as the same memory, and that looking is not using.

The push rule runs against the real bundled MiniLM (its bundled background vectors included); the
dedup and touch rules against the deterministic hash embedder, through the real FileStore.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from picoora.store import ranking
from picoora.store.anchors import MINILM_VECTORS_PATH, background_texts
from picoora.store.base import MemoryRecord
from picoora.store.embedder import MiniLMEmbedder
from picoora.store.files import FileStore, file_memories
from picoora.store.files.memory_index import MemoryIndex
from tests.cli_support import run_cli, write_config
from tests.fakes._http import closed_port_url
from tests.fakes.hash_embedder import HashEmbedder

pytestmark = pytest.mark.slow  # quality measurements with the real embedder: `pytest -m slow` (.ci/run) runs it

DATA = Path(__file__).parent / "data"
PAIRS = [json.loads(line) for line in (DATA / "recall_pairs.jsonl").read_text().splitlines()]
OFFTOPIC = (DATA / "recall_offtopic.txt").read_text().splitlines()


@pytest.fixture(scope="module")
def minilm_index():
    embedder = MiniLMEmbedder()
    facts = list(dict.fromkeys(p["fact"] for p in PAIRS))
    index = MemoryIndex(embedder)
    for i, (fact, vector) in enumerate(zip(facts, embedder.embed(facts), strict=True)):
        index.add(MemoryRecord(id=f"m{i}", content=fact, embedding_model=embedder.model_id), vector)
    return index


def test_greetings_and_trivia_push_nothing_but_stay_searchable(minilm_index):
    for query in ("hi there", "Who painted the Mona Lisa?", "thanks, that's all"):
        assert minilm_index.search(query, 8, confident_only=True).matches == [], query
    # The recall tool still gets weaker matches when the model asks for them.
    assert minilm_index.search("hi there", 8).matches


def test_push_rule_meets_its_measured_precision(minilm_index):
    # bench/precision_bench.py measures these as silence 0.88 and recall@5 0.96; the test keeps a margin.
    silent = sum(not minilm_index.search(q, 5, confident_only=True).matches for q in OFFTOPIC) / len(OFFTOPIC)
    found = sum(
        p["fact"] in [m.memory.content for m in minilm_index.search(p["question"], 5, confident_only=True).matches]
        for p in PAIRS
    ) / len(PAIRS)
    print(f"off-topic silence {silent:.3f}, pushed recall@5 {found:.3f}")
    assert silent >= 0.85
    assert found >= 0.93


def test_memories_are_ordered_by_what_is_specific_to_the_question(minilm_index):
    # By plain cosine "Our dog Pixel is a four-year-old border collie" (0.387) beats the answer (0.381): it
    # is about the dog in general. Without the background direction the answer ranks first.
    question = "When is the dog due for vaccinations?"
    matches = minilm_index.search(question, 5).matches
    assert matches[0].memory.content == "Pixel needs his rabies shot renewed every November"
    # What is shown and what the floor and the push rule use is still the plain cosine.
    query = minilm_index.embedder.embed([question])[0]
    stored = minilm_index.embedder.embed([m.memory.content for m in matches])
    assert [m.similarity for m in matches] == pytest.approx(list(stored @ query), abs=1e-5)
    plain_first = max(matches, key=lambda m: m.similarity)
    assert plain_first.memory.content == "Our dog Pixel is a four-year-old border collie"


def test_ranking_recall_at_1_meets_its_measured_value(minilm_index):
    # bench/precision_bench.py: recall@1 0.857 with the shift (0.836 without) over pairs and codes; pairs
    # alone 0.831. The test keeps a margin.
    first = sum(minilm_index.search(p["question"], 1).matches[0].memory.content == p["fact"] for p in PAIRS)
    print(f"recall@1 on the paraphrased pairs {first / len(PAIRS):.3f}")
    assert first / len(PAIRS) >= 0.82


def test_an_exact_code_is_pushed_even_below_the_anchors():
    # A bare code embeds like nothing in particular; holding it exactly is the evidence.
    assert ranking.should_push(0.05, 1.0, 1.0, 0.4, ranking.MINILM_PUSH)
    assert not ranking.should_push(0.05, 1.0, 0.0, 0.4, ranking.MINILM_PUSH)


def test_bundled_background_vectors_match_the_model():
    fresh = MiniLMEmbedder().embed(background_texts())
    bundled = np.load(MINILM_VECTORS_PATH)
    assert bundled.shape == fresh.shape
    assert float((bundled * fresh).sum(axis=1).min()) > 0.9999  # else: bench/precision_bench.py --write-anchors


def test_keyword_only_matches_are_pushed_only_when_strong():
    weak = ranking.should_push(None, 0.4, 0.0, None, ranking.MINILM_PUSH)
    strong = ranking.should_push(None, 0.8, 0.0, None, ranking.MINILM_PUSH)
    assert (weak, strong) == (False, True)


# ---- dedup: near-duplicates that differ in a number, name, date or code are different facts -----------


@pytest.fixture
def store(tmp_path):
    store = FileStore(tmp_path / "ws", embedder=HashEmbedder())
    yield store
    store.close()


@pytest.mark.parametrize(
    "first, second",
    [
        ("parallel A fact 1", "parallel A fact 2"),
        ("The office door code is 4711#", "The office door code is 5822#"),
        ("Anna's birthday is the 3rd of March", "Elena's birthday is the 3rd of March"),
        ("The flight leaves on 2 August", "The flight leaves on 3 August"),
        ("Ticket ORA-00942 broke the nightly report", "Ticket ORA-00955 broke the nightly report"),
    ],
)
def test_facts_differing_in_an_identifier_are_both_kept(store, first, second):
    one, two = store.memories.add(first), store.memories.add(second)
    assert one.created and two.created, (first, second)
    assert {m.content for m in store.memories.list()} == {first, second}


def test_a_repeat_is_still_one_memory(store):
    first = store.memories.add("The office door code is 4711#", importance=0.5)
    again = store.memories.add("the office door code is 4711#.", importance=0.9)
    assert not again.created and again.memory.id == first.memory.id
    assert store.memories.get(first.memory.id).importance == 0.9


def test_a_near_duplicate_with_the_same_identifiers_is_one_memory():
    # Vectors 0.97 apart and the same codes: the same fact reworded (case and punctuation, say).
    assert ranking.is_same_fact("Door code 4711#, office", "Office door code 4711#", 0.97, 0.95)
    assert not ranking.is_same_fact("Door code 4711#, office", "Office door code 5822#", 0.97, 0.95)
    assert not ranking.is_same_fact("Door code 4711#, office", "Office door code 4711#", 0.90, 0.95)


# ---- reading does not change what it reads --------------------------------------------------------


def test_recall_without_touch_leaves_access_counts(store):
    record = store.memories.add("The boat is moored at pier seven").memory
    store.memories.recall("boat moored pier", limit=1, touch=False)
    assert store.memories.get(record.id).access_count == 0
    store.memories.recall("boat moored pier", limit=1)
    assert store.memories.get(record.id).access_count == 1


def test_memory_search_and_inspector_do_not_count_as_access(isolated_home):
    write_config(isolated_home, ollama_url=closed_port_url(), embedder="none")
    assert run_cli("memory", "add", "The staging server is called kestrel-7", home=isolated_home).returncode == 0
    for args in (("memory", "search", "staging server kestrel-7"), ("oracle-inspect", "memories", "-s", "kestrel-7")):
        result = run_cli(*args, home=isolated_home)
        assert result.returncode == 0, result.stderr
        assert "kestrel-7" in result.stdout
    listed = json.loads(run_cli("memory", "list", "--json", home=isolated_home).stdout)
    assert listed[0]["access_count"] == 0


def test_agent_pushes_no_memory_into_hi_there_but_does_for_a_real_question(isolated_home):
    from tests.fakes.ollama_server import FakeOllama, Reply

    with FakeOllama(responder=lambda body: Reply(content="ok")) as fake:
        write_config(isolated_home, ollama_url=fake.url, embedder="minilm")
        for fact in ("I live in Lisbon", "My sister Anna is a paediatric nurse in Gdansk"):
            assert run_cli("memory", "add", fact, home=isolated_home).returncode == 0
        for message in ("hi there", "Which city do I live in?"):
            result = run_cli("agent", "-m", message, home=isolated_home)
            assert result.returncode == 0, result.stderr
    greeting, question = (request["messages"][0]["content"] for request in fake.requests)
    assert "Recalled memories" not in greeting and "Lisbon" not in greeting
    assert "I live in Lisbon" in question.split("Recalled memories", 1)[1]


def test_the_snapshot_orders_memories_as_the_in_memory_index_does(tmp_path, minilm_index, monkeypatch):
    embedder = minilm_index.embedder
    facts = [record.content for record, _ in minilm_index.items()]
    with closing(FileStore(tmp_path / "ws", embedder=embedder)) as store:
        for fact in facts:
            store.memories.add(fact)
    with closing(FileStore(tmp_path / "ws", embedder=embedder)) as store:
        store.memories.list()  # the first open after writes folds the log and writes the snapshot
    monkeypatch.setattr(file_memories, "_fold", lambda ops: pytest.fail("the log was replayed"))
    with closing(FileStore(tmp_path / "ws", embedder=embedder)) as store:  # reopened: answered from the snapshot
        for question in ("When is the dog due for vaccinations?", "Where do we usually go out to eat?"):
            from_snapshot = [m.memory.content for m in store.memories.recall(question, 5, touch=False).matches]
            in_memory = [m.memory.content for m in minilm_index.search(question, 5).matches]
            assert from_snapshot == in_memory, question


def test_a_changed_fact_is_recalled_with_its_new_value_only(tmp_path):
    # bench/supersession_bench.py: the new value first for 0.971 / 0.917 of the changing pairs (tuned / held-out
    # set), the old one gone for 0.941 / 0.833; without supersession 0.29 / 0.17 and never gone.
    rows = [json.loads(line) for name in ("supersession_pairs.jsonl", "supersession_heldout.jsonl")
            for line in (DATA / name).read_text().splitlines()]
    changing = [r for r in rows if r["supersedes"]]
    embedder = MiniLMEmbedder()
    first = gone = 0
    for n, row in enumerate(changing):
        with closing(FileStore(tmp_path / str(n), embedder=embedder)) as store:
            store.memories.add(row["old"])
            store.memories.add(row["new"])
            found = [m.memory.content for m in store.memories.recall(row["question"], 5, touch=False).matches]
        first += bool(found) and found[0] == row["new"]
        gone += row["old"] not in found
    print(f"new value first {first / len(changing):.3f}, old value gone {gone / len(changing):.3f}")
    assert first / len(changing) >= 0.9 and gone / len(changing) >= 0.85
