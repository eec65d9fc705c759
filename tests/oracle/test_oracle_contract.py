"""The Store contract suite against OracleStore over the recording fake connection."""

from __future__ import annotations

import pytest

from tests.oracle.fake_db import FakeOracle
from tests.store_contract import StoreContract


class TestOracleStoreContract(StoreContract):
    @pytest.fixture
    def store(self, open_store):
        return open_store()

    @pytest.fixture
    def reopen(self, open_store):
        return open_store

    @pytest.fixture
    def degraded_store(self, open_store, fake: FakeOracle):
        fake.models.clear()  # the ONNX model is gone: VECTOR_EMBEDDING fails with ORA-40284
        return open_store(require_model=False)
