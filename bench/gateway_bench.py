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
- the gateway's RSS (``VmRSS`` of the child) when idle after start-up and after the rounds;
- the first burst: the warm-up round, the first chats after start (issue 26: 1.63 s for 20 chats of a 0.5 s
  model, against 0.62-0.69 s for every later burst);
- turns per second over the measured rounds (with ``--model-ms 0``, the gateway's own limit);
- with ``--profile FILE``: py-spy samples the gateway during the measured rounds (``pip install py-spy``)
  and the CPU split per turn (embedding, provider, store, agent, HTTP) is printed from its samples.

    .venv/bin/python bench/gateway_bench.py [--chats 50] [--rounds 3] [--model-ms 200] [--embedder none|minilm]
    .venv/bin/python bench/gateway_bench.py --model-ms 0 --memories 10000 --chats 20 --rounds 50   # turns/s
    .venv/bin/python bench/gateway_bench.py --model-ms 500 --chats 20 --rounds 3                   # first burst
    .venv/bin/python bench/gateway_bench.py --door openai     # through /v1/chat/completions, not /v1/chat
    .venv/bin/python bench/gateway_bench.py --door responses  # through /v1/responses

``--door openai`` sends each turn through ``POST /v1/chat/completions`` (a conversation of three messages),
``--door responses`` through ``POST /v1/responses`` (the same conversation as input items, with
instructions). Target (issue 35): the Responses door's overhead per turn within 1 ms of the chat door's.

``--memories N`` seeds N memories (random unit vectors tagged as MiniLM's, bench/scale_bench.py) and implies
``--embedder minilm``. ``--distinct-queries`` (the default) makes every chat's text unique, so each recall
embeds its query; ``--repeat-queries`` sends the same few texts, as a recall of recent questions would.

Targets (issue 8): all 50 chats answered in under 1 s; overhead p50 under 10 ms; RSS under 120 MB.
Targets (issue 26): >= 150 turns/s with memories and an instant model; RSS < 90 MB after 1,000 turns; the first
burst as fast as a later one.
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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from tests.fakes.ollama_server import FakeOllama, Reply  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from scale_bench import QUERIES, seed  # noqa: E402

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


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", status).group(1)) / 1024


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


DOOR_PATHS = {"chat": "/v1/chat", "openai": "/v1/chat/completions", "responses": "/v1/responses"}


def chat_request(door: str, round_no: int, n: int, text: str) -> tuple[str, dict]:
    if door == "responses":
        return DOOR_PATHS[door], {"model": "picoora", "instructions": "Be brief.", "input": [
            {"role": "user", "content": f"chat {n} starts"}, {"role": "assistant", "content": "Go on."},
            {"role": "user", "content": [{"type": "input_text", "text": text}]}]}
    if door == "openai":
        return "/v1/chat/completions", {"model": "picoora", "messages": [
            {"role": "user", "content": f"chat {n} starts"}, {"role": "assistant", "content": "Go on."},
            {"role": "user", "content": text}]}
    return "/v1/chat", {"session_id": f"bench-{round_no}-{n}", "text": text}


def answered(door: str, body: dict) -> bool:
    if door == "responses":
        return body["status"] == "completed"
    if door == "openai":
        return body["choices"][0]["finish_reason"] == "stop"
    return body["stop_reason"] == "answer"


async def one_round(client: httpx.AsyncClient, chats: int, round_no: int,
                    repeat: bool = False, door: str = "chat") -> tuple[float, list[Timed]]:
    async def chat(n: int) -> Timed:
        # Repeated texts are the same few questions exactly (recall embeds the whole text); the fake model's
        # time per text is then the last such request's, which an instant model makes immaterial.
        text = QUERIES[n % len(QUERIES)] if repeat else f"round {round_no} chat {n}: hello"
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


async def run_rounds(url: str, chats: int, rounds: int, repeat: bool, started_profile: Callable[[], None],
                     door: str = "chat") -> tuple[float, list[tuple[float, list[Timed]]]]:
    """The first burst (connections opened, first turns paid), then the measured rounds, on one client."""
    limits = httpx.Limits(max_connections=chats, max_keepalive_connections=chats)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60,
                                 limits=limits) as client:
        first, _ = await one_round(client, chats, 0, repeat, door)
        started_profile()
        return first, [await one_round(client, chats, round_no, repeat, door) for round_no in range(1, rounds + 1)]


def start_profile(pid: int, path: str | None) -> subprocess.Popen | None:
    """py-spy sampling ``pid`` (raw collapsed stacks, idle threads left out) until it is stopped."""
    if path is None:
        return None
    return subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--format", "raw", "--output", path,
                             "--rate", "200", "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profile(spy: subprocess.Popen | None) -> None:
    if spy is not None:
        spy.send_signal(signal.SIGINT)  # py-spy writes what it sampled on SIGINT
        spy.wait(30)


# Where a sample's time goes: the innermost matching frame of its stack decides (checked in this order).
CPU_PARTS = [
    ("embedding", ("embedder.py", "minilm.py", "tokenizers")),
    ("provider", ("picoora/llm/", "/ollama/", "/httpx/", "/httpcore/", "/anyio/", "/h11/")),
    ("store", ("picoora/store/",)),
    ("agent", ("picoora/agent/", "picoora/tools/")),
    ("HTTP and turn service", ("picoora/gateway/", "/uvicorn/", "/starlette/", "/fastapi/", "/pydantic")),
]


def cpu_split(path: str, turns: int) -> str:
    """ms of CPU per turn in each part, from py-spy's collapsed stacks (frame;frame;... count)."""
    parts: dict[str, int] = {}
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        part = "other (event loop, asyncio, interpreter)"
        for frame in reversed(frames):
            found = next((name for name, marks in CPU_PARTS if any(m in frame for m in marks)), None)
            if found is not None:
                part = found
                break
        parts[part] = parts.get(part, 0) + int(count)
    total = sum(parts.values())
    per_turn = {name: samples / 200 * 1000 / turns for name, samples in parts.items()}
    shown = ", ".join(f"{name} {ms:.2f}" for name, ms in sorted(per_turn.items(), key=lambda kv: -kv[1]))
    return f"{total / 200 * 1000 / turns:.2f} ms of sampled CPU per turn: {shown}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-ms", type=float, default=200)
    parser.add_argument("--embedder", choices=("none", "minilm"), default="none")
    parser.add_argument("--door", choices=tuple(DOOR_PATHS), default="chat")
    parser.add_argument("--memories", type=int, default=0, help="seed this many memories (implies minilm)")
    parser.add_argument("--repeat-queries", action="store_true", help="the same few texts, not unique ones")
    parser.add_argument("--profile", metavar="FILE", help="py-spy's raw samples of the measured rounds")
    args = parser.parse_args()
    if args.memories:
        args.embedder = "minilm"

    home = Path(tempfile.mkdtemp(prefix="picoora-gw-bench-"))
    if args.memories:
        seed(home, args.memories)
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
        spy: list[subprocess.Popen | None] = [None]

        def profile() -> None:
            spy[0] = start_profile(process.pid, args.profile)

        first_burst, measured = asyncio.run(run_rounds(url, args.chats, args.rounds, args.repeat_queries, profile,
                                                       args.door))
        stop_profile(spy[0])
        after = rss_mb(process.pid)
        anon, mapped = rss_mb(process.pid, "RssAnon"), rss_mb(process.pid, "RssFile")
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
          f"embedder {args.embedder}, {args.memories:,} memories, "
          f"{'repeated' if args.repeat_queries else 'distinct'} texts, through "
          f"{DOOR_PATHS[args.door]}")
    print(f"  first burst after start: {first_burst:.3f} s")
    print(f"  turns per second over the measured rounds: {args.chats * args.rounds / sum(walls):.1f}")
    print(f"  wall time per round: {', '.join(f'{w:.3f}' for w in walls)} s "
          f"(median {statistics.median(walls):.3f} s; target < {WALL_TARGET_S:g} s)")
    print(f"  gateway overhead per turn (gateway's time - the turn's): {p50_p95(overheads)} "
          f"(target p50 < {OVERHEAD_TARGET_MS:g} ms)")
    print(f"  client's wait beyond the gateway's time (network, HTTP parsing, this client): {p50_p95(outside)}")
    print(f"  rest of the turn beyond the model (agent + store): {p50_p95(beyond_model)}")
    print(f"  gateway RSS: idle {idle:.0f} MB, after {(args.rounds + 1) * args.chats} turns {after:.0f} MB "
          f"(target < {RSS_TARGET_MB} MB; at the end {anon:.0f} MB anonymous, {mapped:.0f} MB of mapped files)")
    print(f"  gateway exit code after SIGTERM: {code}")
    if args.profile:
        print(f"  CPU split: {cpu_split(args.profile, args.chats * args.rounds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
