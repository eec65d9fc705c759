"""Benchmark the gateway: many chats at once against a model that takes a fixed time per call.

Starts a fake Ollama in a child process (each chat call sleeps ``--model-ms``, 200 ms by default) and
``picoora gateway`` as a child process, warms it up with one round, then sends ``--chats``
concurrent ``POST /v1/chat`` requests on distinct sessions, ``--rounds`` times. It prints:

- the wall time of each round (all chats answered);
- the gateway's overhead per turn: the request's time inside the gateway minus the turn's own time,
  both from the answer's ``Server-Timing`` header (``app`` and ``turn``): parsing, auth, validation,
  the task, waiting for the event loop;
- the client's wait beyond the gateway's time (``app``): the network, uvicorn's HTTP parsing and this
  benchmark's own client and fake model, which share one Python process;
- the rest of each turn beyond the model: the turn's time minus the time the fake model spent on
  that turn's request (matched by its unique message): the agent and the store, under this concurrency;
- the gateway's RSS (``VmRSS`` of the child) when idle after start-up and after the rounds.

    .venv/bin/python bench/gateway_bench.py [--chats 50] [--rounds 3] [--model-ms 200] [--embedder none|minilm]
        [--door chat|openai]

``--door openai`` sends each turn through ``POST /v1/chat/completions`` (a conversation of three messages)
instead of ``POST /v1/chat``.

Targets (issue 8): all 50 chats answered in under 1 s; overhead p50 under 10 ms; RSS under 120 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from tests.fakes.ollama_server import FakeOllama, Reply  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"
PREFIX = ["-m", "picoora"]
WALL_TARGET_S, OVERHEAD_TARGET_MS, RSS_TARGET_MB = 1.0, 10.0, 120


class TimedOllama(FakeOllama):
    """Records how long each chat request spent inside the fake, keyed by its last user message."""

    def __init__(self, **kwargs):
        super().__init__(responder=lambda body: Reply(content="A short answer from the fake model."), **kwargs)
        self.spent: dict[str, float] = {}
        self._server.socket.listen(256)  # http.server's backlog of 5 drops connections when 50 arrive at once

    def _chat(self, exchange):  # noqa: ANN001 - the fake's Exchange
        started = time.perf_counter()
        super()._chat(exchange)
        text = next(m["content"] for m in reversed(exchange.body["messages"]) if m["role"] == "user")
        with self._lock:
            self.spent[text] = time.perf_counter() - started


def serve_fake(delay: float, urls: multiprocessing.Queue, stop: multiprocessing.Event,
               spent: multiprocessing.Queue) -> None:
    """The fake model in a process of its own, so its 50 threads do not share a GIL with the client."""
    with TimedOllama(delay=delay) as fake:
        urls.put(fake.url)
        stop.wait()
        spent.put(dict(fake.spent))


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024


def start_gateway(home: Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PICOORA_HOME": str(home)}
    process = subprocess.Popen([sys.executable, *PREFIX, "gateway", "--port", "0"], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, text=True)
    for line in process.stdout:
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            threading.Thread(target=process.stdout.read, daemon=True).start()  # keep the pipe drained
            return process, found.group(1)
    raise SystemExit(f"the gateway did not start (exit {process.wait()})")


Timed = tuple[str, float, float, float]  # message, client wait, gateway's time (app), the turn's time (s)


def timings(header: str) -> dict[str, float]:
    """``app;dur=12.5, turn;dur=10.1`` -> {"app": 0.0125, "turn": 0.0101}"""
    return {name.strip(): float(dur) / 1000 for name, dur in re.findall(r"(\w+);dur=([\d.]+)", header)}


def chat_request(door: str, round_no: int, n: int, text: str) -> tuple[str, dict]:
    if door == "openai":
        return "/v1/chat/completions", {"model": "picoora", "messages": [
            {"role": "user", "content": f"chat {n} starts"}, {"role": "assistant", "content": "Go on."},
            {"role": "user", "content": text}]}
    return "/v1/chat", {"session_id": f"bench-{round_no}-{n}", "text": text}


def answered(door: str, body: dict) -> bool:
    if door == "openai":
        return body["choices"][0]["finish_reason"] == "stop"
    return body["stop_reason"] == "answer"


async def one_round(client: httpx.AsyncClient, chats: int, round_no: int, door: str) -> tuple[float, list[Timed]]:
    async def chat(n: int) -> Timed:
        text = f"round {round_no} chat {n}: hello"
        path, body = chat_request(door, round_no, n, text)
        started = time.perf_counter()
        response = await client.post(path, json=body)
        took = time.perf_counter() - started
        if response.status_code != 200 or not answered(door, response.json()):
            raise SystemExit(f"chat {n} failed: {response.status_code} {response.text}")
        spent = timings(response.headers["server-timing"])
        return text, took, spent["app"], spent["turn"]

    started = time.perf_counter()
    results = await asyncio.gather(*(chat(n) for n in range(chats)))
    return time.perf_counter() - started, results


async def run_rounds(url: str, chats: int, rounds: int, door: str) -> list[tuple[float, list[Timed]]]:
    """A warm-up round (connections opened, first turns paid), then the measured rounds, on one client."""
    limits = httpx.Limits(max_connections=chats, max_keepalive_connections=chats)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60,
                                 limits=limits) as client:
        await one_round(client, chats, 0, door)
        return [await one_round(client, chats, round_no, door) for round_no in range(1, rounds + 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-ms", type=float, default=200)
    parser.add_argument("--embedder", choices=("none", "minilm"), default="none")
    parser.add_argument("--door", choices=("chat", "openai"), default="chat")
    args = parser.parse_args()

    home = Path(tempfile.mkdtemp(prefix="picoora-gw-bench-"))
    urls, spent_times, stop = multiprocessing.Queue(), multiprocessing.Queue(), multiprocessing.Event()
    model = multiprocessing.Process(target=serve_fake, args=(args.model_ms / 1000, urls, stop, spent_times),
                                    daemon=True)
    model.start()
    (home / "config.json").write_text(json.dumps({
        "providers": {"ollama": {"api_base": urls.get(timeout=30), "max_retries": 0}},
        "memory": {"embedder": args.embedder},
        "gateway": {"token": TOKEN},
    }))
    process, url = start_gateway(home)
    try:
        time.sleep(0.5)
        idle = rss_mb(process.pid)
        measured = asyncio.run(run_rounds(url, args.chats, args.rounds, args.door))
        after = rss_mb(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
        stop.set()
    spent = spent_times.get(timeout=30)
    model.join(10)

    walls, overheads, outside, beyond_model = [], [], [], []
    for wall, results in measured:
        walls.append(wall)
        overheads += [(app - turn) * 1000 for _, _, app, turn in results]
        outside += [(took - app) * 1000 for _, took, app, _ in results]
        beyond_model += [(turn - spent[text]) * 1000 for text, _, _, turn in results]

    def p50_p95(values: list[float]) -> str:
        values = sorted(values)
        return f"p50 {statistics.median(values):.1f} ms, p95 {values[int(0.95 * (len(values) - 1))]:.1f} ms"

    print(f"{args.chats} concurrent chats x {args.rounds} rounds, fake model {args.model_ms:g} ms per call, "
          f"embedder {args.embedder}, through {'/v1/chat/completions' if args.door == 'openai' else '/v1/chat'}")
    print(f"  wall time per round: {', '.join(f'{w:.3f}' for w in walls)} s "
          f"(median {statistics.median(walls):.3f} s; target < {WALL_TARGET_S:g} s)")
    print(f"  gateway overhead per turn (gateway's time - the turn's): {p50_p95(overheads)} "
          f"(target p50 < {OVERHEAD_TARGET_MS:g} ms)")
    print(f"  client's wait beyond the gateway's time (network, HTTP parsing, this client): {p50_p95(outside)}")
    print(f"  rest of the turn beyond the model (agent + store): {p50_p95(beyond_model)}")
    print(f"  gateway RSS: idle {idle:.0f} MB, after {(args.rounds + 1) * args.chats} turns {after:.0f} MB "
          f"(target < {RSS_TARGET_MB} MB)")
    print(f"  gateway exit code after SIGTERM: {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
