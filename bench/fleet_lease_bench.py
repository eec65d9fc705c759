"""What a session lease costs a turn: one node vs three on one database, over the test fake.

Each "turn" is what the gateway's ``_run`` does around the model call: take the session's lease
(``duties.session_turn``: one UPDATE, or an INSERT the first time), run the turn body (here: append one
message to the session, the turn's own store write), release the lease (one DELETE). The same turns run
without the lease for the baseline; the difference per turn is the lease overhead. Sessions are spread
over the nodes round-robin, each node its own store (its own Database, pool and event loop), as separate
gateways. The fake is not a database: ``--latency`` ms per statement stands in for the network, and the
numbers are about the lease's round trips, not Oracle's speed (target: under 5 ms per turn at 0 latency).

    .venv/bin/python bench/fleet_lease_bench.py [--turns 300] [--sessions 50] [--latency 0]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from picoora.gateway.runtime.duties import session_turn  # noqa: E402
from picoora.messages import Message  # noqa: E402
from picoora.store.aio import AsyncStore  # noqa: E402
from picoora.store.oracle import open_oracle_store  # noqa: E402
from tests.oracle.conftest import oracle_config, set_up_schema  # noqa: E402
from tests.oracle.fake_db import FakeOracle, database_loop  # noqa: E402


async def _turns(stores: list, turns: int, sessions: int, leased: bool, sequential: bool = False) -> float:
    astores = [AsyncStore(store) for store in stores]
    in_order = [{f"chat:{s}": asyncio.Lock() for s in range(sessions)} for _ in stores]  # each node's turn service

    async def turn(n: int) -> None:
        node, session = n % len(stores), f"chat:{n % sessions}"
        lease = session_turn(stores[node].leases, session, f"node{node}") if leased else contextlib.nullcontext()
        async with in_order[node][session], lease:
            await astores[node].sessions.append(session, [Message(role="user", content=f"turn {n}")])

    started = time.perf_counter()
    if sequential:  # one turn at a time: the lease's added latency per turn
        for n in range(turns):
            await turn(n)
    else:
        await asyncio.gather(*(turn(n) for n in range(turns)))
    elapsed = time.perf_counter() - started
    for astore in astores:
        astore.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.0, help="ms per statement (the network)")
    args = parser.parse_args()
    database_loop()
    print(f"{args.turns} turns over {args.sessions} sessions, {args.latency:g} ms per statement (fake database)")
    for nodes in (1, 3):
        fake = FakeOracle()
        config = oracle_config(pool_max=8)
        set_up_schema(fake, config)
        if args.latency:
            for name in ("lease_renew", "lease_take", "lease_release", "session_lock", "session_insert",
                         "session_update"):
                fake.delay[name] = args.latency / 1000
        stores = [open_oracle_store(config, pool_factory=fake.pool_factory) for _ in range(nodes)]
        try:
            plain = asyncio.run(_turns(stores, args.turns, args.sessions, leased=False))
            leased = asyncio.run(_turns(stores, args.turns, args.sessions, leased=True))
            alone = asyncio.run(_turns(stores, args.turns, args.sessions, leased=False, sequential=True))
            alone_leased = asyncio.run(_turns(stores, args.turns, args.sessions, leased=True, sequential=True))
        finally:
            for store in stores:
                store.close()
        label = f"{nodes} node{'s' if nodes > 1 else ' '}"
        print(f"  {label}  concurrent: {args.turns / plain:6.0f} turns/s without the lease, "
              f"{args.turns / leased:6.0f} with it "
              f"({(leased - plain) / args.turns * 1000:5.2f} ms of wall time a turn)")
        print(f"  {label}  one at a time: the lease adds {(alone_leased - alone) / args.turns * 1000:5.2f} ms to "
              "each turn")


if __name__ == "__main__":
    main()
