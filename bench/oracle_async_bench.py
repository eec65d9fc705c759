"""Benchmark the Oracle backend's native async path against the executor fallback, over the test fake.

Many coroutines on one event loop each read a state key, the way a gateway serving many chats would.
``native``: ``AsyncStore`` awaits the state family's native form (``oracle/unit_of_work.py``: the database's
own loop, no thread per call). ``executor``: the same store with its native path hidden, so every call takes a
worker thread and blocks it for the whole round trip. The fake database (tests/oracle/fake_db.py) adds ``--latency`` ms
per statement to stand in for the network; nothing here talks to a real Oracle.

    .venv/bin/python bench/oracle_async_bench.py [--calls 400] [--latency 2] [--workers 4] [--pool 4]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from picoora.store.aio import AsyncStore  # noqa: E402
from picoora.store.oracle import open_oracle_store  # noqa: E402
from tests.oracle.conftest import oracle_config, set_up_schema  # noqa: E402
from tests.oracle.fake_db import FakeOracle  # noqa: E402


class _BlockingState:
    """The state family with its native async path hidden (plain methods): AsyncStore runs them in its executor."""

    def __init__(self, state):
        self._state = state

    def get(self, key):
        return self._state.get(key)

    def set(self, key, value):
        return self._state.set(key, value)

    def all(self):
        return self._state.all()

    def delete(self, key):
        return self._state.delete(key)


class _Blocking:
    def __init__(self, store):
        self.state = _BlockingState(store.state)


async def _reads(astore: AsyncStore, calls: int) -> tuple[float, int]:
    most_threads = threading.active_count()
    started = time.perf_counter()

    async def one() -> None:
        nonlocal most_threads
        assert await astore.state.get("k") == "v"
        most_threads = max(most_threads, threading.active_count())

    await asyncio.gather(*(one() for _ in range(calls)))
    return time.perf_counter() - started, most_threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--latency", type=float, default=2.0, help="ms per statement in the fake")
    parser.add_argument("--workers", type=int, default=4, help="AsyncStore executor threads")
    parser.add_argument("--pool", type=int, default=4, help="oracle.pool_max")
    args = parser.parse_args()

    fake = FakeOracle()
    config = oracle_config(pool_max=args.pool)
    set_up_schema(fake, config)
    store = open_oracle_store(config, pool_factory=fake.pool_factory)
    store.state.set("k", "v")
    fake.delay["state_get"] = args.latency / 1000.0
    try:
        print(f"{args.calls} concurrent state.get calls, {args.latency:g} ms per statement, "
              f"pool {args.pool}, executor {args.workers} threads")
        for label, target in (("native", store), ("executor", _Blocking(store))):
            astore = AsyncStore(target, workers=args.workers)
            try:
                seconds, threads = asyncio.run(_reads(astore, args.calls))
            finally:
                astore.close()
            print(f"  {label:9s} {seconds * 1000:8.1f} ms  {args.calls / seconds:8.0f} calls/s  "
                  f"threads alive at most: {threads}")
    finally:
        store.close()


if __name__ == "__main__":
    main()
