"""What a person's API token costs: the store lookup alone, and the gateway's overhead per turn with it.

1. ``ApiTokens.person_of`` on a file store whose state holds ``--tokens`` tokens and ``--other-keys`` other
   keys (pairings, channel offsets, ...): a good token, a wrong one with the ``pico_`` prefix (one read, no
   row) and a bearer without it (no read at all).
2. A real gateway (uvicorn on 127.0.0.1, a fake Ollama answering at once): ``--turns`` sequential
   ``POST /v1/chat`` with the gateway token, then with a person's token; the overhead per turn is the
   request's time inside the gateway minus the turn's own (both from ``Server-Timing``: auth, validation,
   the task, the person's lease).

    .venv/bin/python bench/token_lookup_bench.py [--tokens 20] [--other-keys 100] [--turns 200]

Target (issue 19): the gateway's overhead p50 stays under 10 ms, a person's token included.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from picoora.api_tokens import ApiTokens  # noqa: E402
from picoora.config import load_config  # noqa: E402
from picoora.store.files import FileStore  # noqa: E402
from tests.fakes.gateway_kit import TOKEN, RunningGateway  # noqa: E402
from tests.fakes.ollama_server import FakeOllama, Reply  # noqa: E402

OVERHEAD_TARGET_MS = 10.0


def p50_p95(values: list[float], unit: str) -> str:
    values = sorted(values)
    return f"p50 {statistics.median(values):.1f} {unit}, p95 {values[int(0.95 * (len(values) - 1))]:.1f} {unit}"


def lookups(home: Path, tokens: int, other_keys: int, rounds: int = 2000) -> None:
    config = load_config(home / "config.json")
    store = FileStore(home / "bench-workspace")
    try:
        api = ApiTokens(store, config)
        secrets = [api.create("sam")[1] for _ in range(tokens)]
        for n in range(other_keys):
            store.state.set(f"bench.key.{n}", "x" * 40)
        cases = {"a good token": secrets[-1], "a wrong token (pico_ prefix)": "pico_" + "x" * 43,
                 "a bearer without the prefix": "y" * 48}
        print(f"ApiTokens.person_of, file store, state of {tokens} tokens + {other_keys} other keys:")
        for name, secret in cases.items():
            times = []
            for _ in range(rounds):
                started = time.perf_counter()
                api.person_of(secret)
                times.append((time.perf_counter() - started) * 1e6)
            print(f"  {name}: {p50_p95(times, 'us')}")
    finally:
        store.close()


def overheads(gw: RunningGateway, token: str, turns: int) -> list[float]:
    found = []
    with httpx.Client(base_url=gw.url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        for n in range(turns + 10):
            response = client.post("/v1/chat", json={"session_id": f"bench-{n % 5}", "text": f"hello {n}"})
            if response.status_code != 200:
                raise SystemExit(f"turn {n} failed: {response.status_code} {response.text}")
            spent = {k: float(v) for k, v in re.findall(r"(\w+);dur=([\d.]+)", response.headers["server-timing"])}
            if n >= 10:  # the first turns open the person's store and warm the caches
                found.append(spent["app"] - spent["turn"])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--other-keys", type=int, default=100)
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="picoora-token-bench-"))
    os.environ["PICOORA_HOME"] = str(home)
    with FakeOllama(responder=lambda body: Reply(content="A short answer.")) as fake:
        (home / "config.json").write_text(json.dumps({
            "providers": {"ollama": {"api_base": fake.url, "max_retries": 0}}, "memory": {"embedder": "none"},
            "gateway": {"token": TOKEN}, "users": [{"name": "sam"}]}))
        lookups(home, args.tokens, args.other_keys)
        with RunningGateway(load_config(home / "config.json")) as gw:
            person_token = gw.gateway.api_tokens().create("sam")[1]
            owner = overheads(gw, TOKEN, args.turns)
            person = overheads(gw, person_token, args.turns)
    print(f"gateway overhead per turn (gateway's time - the turn's), {args.turns} sequential turns each:")
    print(f"  the gateway token (owner): {p50_p95(owner, 'ms')}")
    print(f"  a person's token:          {p50_p95(person, 'ms')} (target p50 < {OVERHEAD_TARGET_MS:g} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
