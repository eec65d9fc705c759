"""The supersession rules (store/supersession.py) on their two sets and on the cases that must never merge;
through a store in test_memory_truth_doors.py and the store contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from picoora.store.base import MemoryRecord
from picoora.store.supersession import (
    candidate_query,
    claim,
    restated_among,
    restates,
    superseded_among,
    supersedes,
)

DATA = Path(__file__).parent / "data"


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


@pytest.mark.parametrize(("name", "least_recall"), [("supersession_pairs.jsonl", 0.9),
                                                   ("supersession_heldout.jsonl", 0.8)])
def test_the_rules_never_merge_look_alikes_and_catch_most_changes(name, least_recall):
    rows = _rows(name)  # measured recall 0.941 (the set the rules were written on) and 0.833 (held out)
    wrong = [r for r in rows if not r["supersedes"] and supersedes(r["new"], r["old"])]
    assert wrong == []
    changing = [r for r in rows if r["supersedes"]]
    assert sum(supersedes(r["new"], r["old"]) for r in changing) / len(changing) >= least_recall


def test_a_fact_is_split_into_subject_verb_and_value():
    parsed = claim("The new door code is now 9981 since Monday.")
    assert parsed is not None and parsed.subject == {"door", "code"} and parsed.value == ("9981",)
    assert claim("Prefers tea over coffee") is None  # no verb the rules know: nothing to compare
    assert candidate_query("The door code is 4421") == "code door"
    assert candidate_query("I live in Berlin") == "I live in Berlin"  # a pronoun subject searches the whole fact


def test_only_current_memories_are_superseded_and_never_by_themselves():
    old = MemoryRecord(id="a", content="The door code is 4421")
    gone = MemoryRecord(id="b", content="The door code is 1111", superseded_by="a")
    same = MemoryRecord(id="c", content="The door code is 9981")
    assert superseded_among("The door code is 9981", [old, gone, same]) == [old]


def test_the_same_fact_in_other_words_is_a_restatement_not_a_change():
    assert restates("My door code is 4421.", "The user's door code is 4421")
    assert supersedes("My door code is now 9981", "The user's door code is 4421")
    assert not restates("The front door code is 4421", "The door code is 4421")
    assert restated_among("My door code is 4421", [MemoryRecord(id="a", content="The door code is 4421",
                                                                superseded_by="b")]) is None  # only current ones


def test_a_longer_verb_phrase_beats_the_bare_verb_it_starts_with():
    """"is living in" and "is called" begin with "is": read as "is", "Anna is living in Rome" stated a new
    value of what Anna *is* and hid "Anna is a doctor"."""
    assert claim("Anna is living in Rome") == claim("Anna lives in Rome")
    assert claim("My dog is called Rex").kind == "named"
    assert not supersedes("Anna is living in Rome", "Anna is a doctor")
    assert not supersedes("My dog is called Rex", "My dog is a beagle")
    assert supersedes("Anna is living in Rome", "Anna lives in Paris")
    assert supersedes("I am living in Rome", "I live in Paris")


@pytest.mark.parametrize(("new", "old", "superseded"), [
    # a pronoun's "is" supersedes only a number with a number (an age), in either order
    ("I am 35", "I am 34", True),
    ("I am 35", "I am a teacher", False),
    ("I am a teacher", "I am 35", False),
    # values naming which thing they are for: the same thing (its numbers aside) is a new value ...
    ("My locker is 4 for the blue bag", "My locker is 3 for the blue bag", True),
    ("My key is 14 for locker 4", "My key is 12 for locker 3", True),
    # ... two things each with its number are two facts, and one without a number is a plain change
    ("My locker is 4 for the red bag", "My locker is 3 for the blue bag", False),
    ("My locker is 4 for the red bag", "My locker is for the blue bag", True),
    ("My locker is 4 for the red bag", "My locker is 3", True),  # only one says which thing
])
def test_each_value_rule_on_one_example(new, old, superseded):
    """The rules the data sets above measure in bulk, one explicit pair each."""
    assert supersedes(new, old) is superseded


@pytest.mark.parametrize(("text", "same_as"), [
    ("I’m 34", "I am 34"),  # a typographic apostrophe, a contraction
    ("They're 12", "They are 12"),
    ("The user is 34", "I am 34"),  # what the model writes for what the person says
    ("The user lives in Berlin", "I live in Berlin"),
    ("The user's door code is 4421", "My door code is 4421"),
    ("Anna's phone is 0151", "Anna phone is 0151"),  # a possessive is its noun
    ("I moved to Munich", "I live in Munich"),  # a person moving states where they live ...
])
def test_each_reading_rule_on_one_example(text, same_as):
    assert claim(text) is not None and claim(text) == claim(same_as)


def test_a_thing_that_moved_is_not_a_person_moving_and_half_a_fact_is_none():
    assert claim("The meeting moved to Thursday").kind == "is"  # ... a meeting moving, its new day
    assert supersedes("The meeting moved to Thursday", "The meeting is on Tuesday")
    assert supersedes("I moved to Munich", "I live in Berlin")
    assert claim("is 5") is None and claim("The door code is") is None  # no subject, no value


def test_a_restatement_among_current_candidates_is_found():
    current = MemoryRecord(id="a", content="The user's door code is 4421")
    other = MemoryRecord(id="b", content="The gate code is 1234")
    assert restated_among("My door code is 4421", [other, current]) is current
