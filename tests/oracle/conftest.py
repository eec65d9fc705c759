"""Fixtures for the Oracle backend tests: a fake schema already set up, and stores opened over it."""

from __future__ import annotations

import asyncio
import functools

import pytest

from picoora.config import Config
from picoora.store.oracle import open_database, open_oracle_store
from picoora.store.oracle.schema import migrate
from tests.oracle.fake_db import FakeOracle


def oracle_config(**oracle: object) -> Config:
    config = Config()
    config.oracle = config.oracle.model_copy(update={"enabled": True, "password": "s3cret-Pw", **oracle})
    # The fake embeds with tests/fakes/hash_embedder.py; use its calibrated floor, as the file contract does.
    config.memory = config.memory.model_copy(update={"min_similarity": 0.1})
    return config


def scenario(test):
    """An async test body run on a fresh event loop (the suite has no asyncio plugin)."""
    @functools.wraps(test)
    def runner(*args, **kwargs):
        asyncio.run(test(*args, **kwargs))
    return runner


def set_up_schema(fake: FakeOracle, config: Config) -> None:
    db = open_database(config, pool_factory=fake.pool_factory)
    try:
        db.probe(lambda tx: migrate(tx, db.model))
    finally:
        db.close()


@pytest.fixture
def fake() -> FakeOracle:
    return FakeOracle()


@pytest.fixture
def config() -> Config:
    return oracle_config()


@pytest.fixture
def open_store(fake, config):
    """Opens stores over ``fake`` (schema created first) and closes them all at the end of the test."""
    opened = []
    set_up_schema(fake, config)

    def opener(**kwargs):
        store = open_oracle_store(kwargs.pop("config", config), pool_factory=fake.pool_factory, **kwargs)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()
