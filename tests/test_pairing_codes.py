"""Pairing codes are deleted once spent (approved or refused), and old empty tombstones read as no code."""

from __future__ import annotations

import pytest

from picoora.identities import PAIR_PREFIX, Pairing, Sender
from picoora.store.files import FileStore


@pytest.fixture
def store(tmp_path):
    store = FileStore(tmp_path)
    yield store
    store.close()


def test_a_spent_code_leaves_no_key_behind(store):
    pairing = Pairing(store)
    first, _ = pairing.request(Sender("telegram", "8", "sam"))
    second, _ = pairing.request(Sender("telegram", "9"))
    assert pairing.approve(first.code.lower(), "sam").name == "sam"
    assert pairing.refuse(second.code).sender_id == "9"
    assert not [key for key in store.state.all() if key.startswith(PAIR_PREFIX)]
    with pytest.raises(KeyError, match="no pairing code"):
        pairing.approve(first.code)


def test_an_old_empty_tombstone_is_no_code(store):
    store.state.set(PAIR_PREFIX + "ABCD2345", "")  # how a spent code was kept before the store could delete
    pairing = Pairing(store)
    assert pairing.pending() == []
    with pytest.raises(KeyError, match="no pairing code"):
        pairing.approve("abcd2345")
