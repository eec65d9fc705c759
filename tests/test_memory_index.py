"""MemoryIndex and its ranking rules, with a table embedder whose cosines the test chooses."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from picoora.store import ranking
from picoora.store.base import MemoryRecord
from picoora.store.embedder import EmbedderUnavailable
from picoora.store.files.memory_index import MemoryIndex
from picoora.store.keywords import KeywordIndex, code_terms, tokenize

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)


def angle(degrees: float, axis: int = 0) -> list[float]:
    """A unit vector at ``degrees`` from axis ``axis`` in the plane of (axis, axis+1): cosine = cos(degrees)."""
    v = [0.0] * 6
    v[axis] = math.cos(math.radians(degrees))
    v[axis + 1] = math.sin(math.radians(degrees))
    return v


UNRELATED = [0.0] * 5 + [1.0]


class TableEmbedder:
    model_id = "table-v1"
    dim = 6
    similarity_floor = 0.3

    def __init__(self, table: dict[str, list[float]]):
        self.table = table
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        # Texts the table does not know point along the last axis: unrelated to every vector of the tests.
        return np.array([self.table.get(t, UNRELATED) for t in texts], dtype=np.float32)


class DownEmbedder(TableEmbedder):
    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        raise EmbedderUnavailable("Ollama is not reachable at http://127.0.0.1:9: start it with `ollama serve`")


def record(memory_id: str, content: str, **fields) -> MemoryRecord:
    fields.setdefault("created_at", NOW)
    return MemoryRecord(id=memory_id, content=content, **fields)


def build(table: dict[str, list[float]], memories: dict[str, MemoryRecord], **options) -> MemoryIndex:
    embedder = TableEmbedder(table)
    index = MemoryIndex(embedder, **options)
    for rec in memories.values():
        rec.embedding_model = embedder.model_id
        index.add(rec, index.embed([rec.content])[0])
    return index


def ids(result) -> list[str]:
    return [m.memory.id for m in result.matches]


# ---------------------------------------------------------------------------- keywords


def test_tokenizer_keeps_codes_numbers_and_names_whole():
    terms = tokenize("Kraków's ORA-00955 on A7-4421, plate KR 7Y42L, vpn.example.net and 3.14 for Kowalski's team")
    for whole in ("ora-00955", "a7-4421", "7y42l", "vpn.example.net", "3.14", "krakow", "kowalski"):
        assert whole in terms
    assert {"ora", "00955", "a7", "4421"} <= set(terms)  # parts of a code find it too
    assert "on" not in terms and "for" not in terms  # stopwords


def test_ascii_words_fold_as_the_unicode_path_folds_them():
    import unicodedata

    from picoora.store.keywords import _fold

    for text in ("".join(map(chr, range(32, 127))), "MiXeD-Case_42", "ORA-00955", "Kowalski's"):
        slow = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))
        assert _fold(text) == slow
    assert _fold("Kraków") == "krakow" and _fold("STRASSE") == _fold("Straße")


def test_code_terms_are_only_what_is_written_like_a_code_or_name():
    assert code_terms("Who leads engineering for billing?") == []
    codes = code_terms("What did Kowalski say about ORA-01408 and MOB?")
    assert codes == ["kowalski", "ora-01408", "ora", "01408", "mob"]
    assert code_terms("Where is my ID?") == []  # two-letter capitals are mostly ordinary words


def test_keyword_index_scores_shares_and_forgets_removed_memories():
    index = KeywordIndex()
    index.add("a", "Error ORA-00955 in the billing job")
    index.add("b", "Error ORA-01408 in the billing job")
    index.add("c", "The cat sleeps on the sofa")
    exact = index.scores(tokenize("ORA-00955"), length_weight=0.0)
    assert exact["a"] == pytest.approx(1.0) and exact.get("b", 0) < 0.5 and "c" not in exact
    assert 0.8 < index.scores(tokenize("ORA-00955"))["a"] < 1.0  # BM25: longer than average, a little less
    index.remove("a")
    assert "a" not in index.scores(tokenize("ORA-00955")) and len(index) == 2
    keywords, codes = index.match("billing ORA-01408")
    assert keywords["b"] > 0.8  # every term, in a memory longer than average
    assert 0.5 < codes["b"] < 1.0  # "billing" is part of the query but not a code


# ---------------------------------------------------------------------------- ranking


def test_floor_drops_weak_matches_and_min_similarity_overrides_it():
    table = {"q": angle(0), "near": angle(40), "far": angle(80)}  # cos 0.77 and 0.17
    memories = {"near": record("near", "near"), "far": record("far", "far")}
    assert ids(build(table, memories).search("q", 5, now=NOW)) == ["near"]
    assert ids(build(table, memories, min_similarity=0.1).search("q", 5, now=NOW)) == ["near", "far"]
    result = build(table, memories).search("q", 5, now=NOW)
    assert result.matches[0].similarity == pytest.approx(math.cos(math.radians(40)), abs=1e-5)
    assert 0.0 <= result.matches[0].score <= 1.0 and not result.degraded and result.note is None


def test_scores_are_ranking_final_score():
    table = {"q ORA-7": angle(0), "a ORA-7": angle(30), "b": angle(50)}
    memories = {
        "a": record("a", "a ORA-7", importance=0.9, accessed_at=NOW - timedelta(days=3)),
        "b": record("b", "b", importance=0.2, created_at=NOW - timedelta(days=40)),
    }
    index = build(table, memories)
    keyword, code = index._keywords.match("q ORA-7")
    for match in index.search("q ORA-7", 5, now=NOW).matches:
        m = match.memory
        kw, cm = keyword.get(m.id, 0.0), code.get(m.id, 0.0)
        expected = ranking.final_score(match.similarity, kw, cm, m.importance, m.created_at, m.accessed_at, NOW)
        assert match.score == pytest.approx(expected, abs=1e-6)


def test_importance_then_recency_break_ties_but_never_beat_clearer_relevance():
    same = angle(20)
    table = {"q": angle(0), "low": same, "high": same, "old": same, "clearly better": angle(5)}
    memories = {
        "low": record("low", "low", importance=0.3),
        "high": record("high", "high", importance=0.9),
        "old": record("old", "old", importance=0.9, created_at=NOW - timedelta(days=300)),
        "best": record("best", "clearly better", importance=0.0, created_at=NOW - timedelta(days=900)),
    }
    # cos 5 deg vs 20 deg differ by 0.06, more than MAX_ADJUSTMENT: relevance wins despite no importance
    assert math.cos(math.radians(5)) - math.cos(math.radians(20)) > ranking.MAX_ADJUSTMENT
    assert ids(build(table, memories).search("q", 5, now=NOW)) == ["best", "high", "old", "low"]


def test_exact_code_outranks_a_look_alike_but_ordinary_words_do_not_boost():
    table = {
        "ORA-01408": angle(0),
        "Create index failed: ORA-01408 column list already indexed": angle(42),
        "Create table failed: ORA-00955 name already used": angle(40),
        "who handles billing": angle(0, axis=2),
        "Sven leads the payments team": angle(30, axis=2),
        "The billing migration is project Falcon": angle(35, axis=2),
    }
    memories = {t: record(t, t) for t in list(table)[1:3] + list(table)[4:]}
    index = build(table, memories)
    assert index.search("ORA-01408", 1, now=NOW).matches[0].memory.content.startswith("Create index")
    # "billing" matches only the second memory, but it is an ordinary word: cosine decides
    assert index.search("who handles billing", 1, now=NOW).matches[0].memory.content.startswith("Sven")


def test_an_exact_code_is_returned_even_below_the_floor():
    table = {"A7-4421": angle(0), "My employee number is A7-4421": angle(85), "unrelated": angle(86)}
    index = build(table, {k: record(k, k) for k in list(table)[1:]})
    result = index.search("A7-4421", 5, now=NOW)
    assert [m.memory.content for m in result.matches] == ["My employee number is A7-4421"]
    assert result.matches[0].similarity < index.floor


# ---------------------------------------------------------------------------- dedup


def test_find_duplicate_by_normalised_text_and_by_vector():
    table = {
        "My favourite language is Go.": angle(0),
        "I love Go more than any other language": angle(10),  # cos 0.985
        "Go is fine I guess": angle(25),  # cos 0.906
    }
    index = build(table, {"go": record("go", "My favourite language is Go.")})
    assert index.find_duplicate("  my favourite   LANGUAGE is go ", None).id == "go"
    assert index.find_duplicate("x", np.array(angle(10), dtype=np.float32)).id == "go"
    assert index.find_duplicate("x", np.array(angle(25), dtype=np.float32)) is None
    assert index.find_duplicate("something else", None) is None


def test_find_duplicate_ignores_memories_without_a_vector():
    index = MemoryIndex(TableEmbedder({}))
    index.add(record("a", "stored while the embedder was down"), None)
    assert index.find_duplicate("other text", np.array(angle(0), dtype=np.float32)) is None


# ---------------------------------------------------------------------------- degraded / model ids


def test_no_embedder_recalls_by_keywords_and_says_so():
    index = MemoryIndex(None)
    assert index.model_id is None and index.embed(["x"]) is None
    index.add(record("go", "My favourite language is Go"), None)
    index.add(record("tea", "Green tea in the afternoon"), None)
    result = index.search("favourite language", 5, now=NOW)
    assert ids(result) == ["go"] and result.matches[0].similarity is None
    assert result.degraded and 'memory.embedder is "none"' in result.note


def test_failing_embedder_degrades_with_its_reason_and_is_not_retried_at_once():
    embedder = DownEmbedder({})
    index = MemoryIndex(embedder)
    assert index.embed(["Pixel is our border collie"]) is None
    index.add(record("dog", "Pixel is our border collie"), None)
    result = index.search("border collie", 5, now=NOW)
    assert ids(result) == ["dog"]
    assert result.degraded and "ollama serve" in result.note and "keywords only" in result.note
    assert embedder.calls == 1  # the search did not pay another failed call during the cool-down


def test_vectors_from_another_model_are_never_compared():
    embedder = TableEmbedder({"q": angle(0), "fresh": angle(10), "Tomasz Kowalski is my manager": angle(0)})
    index = MemoryIndex(embedder)
    index.add(record("fresh", "fresh", embedding_model="table-v1"), np.array(angle(10), dtype=np.float32))
    # a vector made by another model, identical to the query's: comparing it would rank it first
    same_as_query = np.array(angle(0), dtype=np.float32)
    index.add(record("old", "Tomasz Kowalski is my manager", embedding_model="other-model"), same_as_query)
    result = index.search("q", 5, now=NOW)
    assert ids(result) == ["fresh"]
    assert not result.degraded and "picoora memory reindex" in result.note and "1 of 2" in result.note
    by_name = index.search("Kowalski", 5, now=NOW)  # still reachable through the keyword lane
    assert "old" in ids(by_name) and by_name.matches[ids(by_name).index("old")].similarity is None


# ---------------------------------------------------------------------------- changes


def test_remove_keeps_every_other_row_findable():
    table = {f"memory {i}": angle(0, axis=i % 5) for i in range(5)}
    table.update({f"q{i}": angle(0, axis=i % 5) for i in range(5)})
    memories = {f"m{i}": record(f"m{i}", f"memory {i}") for i in range(5)}
    index = build(table, memories)
    index.remove("m1")
    index.remove("m1")  # unknown id: nothing happens
    assert len(index) == 4
    for i in (0, 2, 3, 4):
        assert ids(index.search(f"q{i}", 1, now=NOW)) == [f"m{i}"]
    assert "m1" not in ids(index.search("memory 1", 5, now=NOW))
    assert index.find_duplicate("memory 1", None) is None


def test_update_changes_ranking_and_a_new_text_drops_the_vector():
    same = angle(20)
    table = {"q": angle(0), "a": same, "b": same}
    index = build(table, {"a": record("a", "a", importance=0.9), "b": record("b", "b", importance=0.1)})
    assert ids(index.search("q", 5, now=NOW)) == ["a", "b"]
    index.update(record("b", "b", importance=1.0, embedding_model="table-v1"))
    assert ids(index.search("q", 5, now=NOW)) == ["b", "a"]
    index.update(record("a", "Leo is allergic to peanuts", embedding_model="table-v1"))
    assert ids(index.search("q", 5, now=NOW)) == ["b"]  # its old vector no longer describes it
    assert ids(index.search("peanuts allergic", 5, now=NOW)) == ["a"]
    with pytest.raises(KeyError):
        index.update(record("missing", "x"))


def test_index_grows_past_its_first_allocation():
    table = {"q": angle(0)}
    memories = {}
    for i in range(150):
        table[f"fact {i}"] = angle(60 - (i % 50) * 0.1 if i != 137 else 1)
        memories[f"m{i}"] = record(f"m{i}", f"fact {i}")
    index = build(table, memories)
    assert len(index) == 150
    assert ids(index.search("q", 3, now=NOW))[0] == "m137"
