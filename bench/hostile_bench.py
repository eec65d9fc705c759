"""Benchmark what the safety work costs and what hostile input now costs.

- ``exec`` latency of a trivial command, sandboxed (bubblewrap) and unsandboxed (``sh -c``);
- the bubblewrap probe ``picoora`` runs once per process;
- HTML to text on 2 MB of ``<a<a<a...`` (quadratic in ``html.parser``) and on an ordinary page;
- a two-layer gzip bomb (1 KiB on the wire, 200 MiB inside) through ``BoundedDecoder``: time and
  peak traced memory;
- the event loop on hostile text (target: never blocked more than 50 ms): ``web_fetch`` of 2 MB of
  look-alike-marker bait (many ``<`` each before a long run of spaces) and ``web_search`` of a 2 MB
  DuckDuckGo answer of ``<a<a...``, both through the real tools against local servers, while a ticker
  on the same loop records its longest stall; the marker pattern before this work on 50 KB of the bait,
  for comparison;
- exec's limits with the defaults: time until a fork bomb, a 2 GiB allocation and a disk fill are
  stopped (sandboxed);
- a real gateway under attack: a 1 MB DOCX zip bomb uploaded and a fork bomb run by the model through
  exec, while a client polls ``/health`` every 20 ms: the gateway process's peak RSS (``VmHWM``, the bench
  and its fake servers share the process, so the line before the attacks is the baseline) and ``/health``'s
  p50/p99 during the attacks.

    .venv/bin/python bench/hostile_bench.py [--runs 30] [--only loop|limits|gateway]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import re
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from picoora.config import WebSearchConfig  # noqa: E402
from picoora.tools.base import ToolContext  # noqa: E402
from picoora.tools.html_text import html_to_text  # noqa: E402
from picoora.tools.os_sandbox import Mounts, bwrap_argv, clean_env, probe  # noqa: E402
from picoora.tools.registry import ToolRegistry  # noqa: E402
from picoora.tools.shell import Exec, run_shell  # noqa: E402
from picoora.tools.web import BoundedDecoder, WebFetch  # noqa: E402
from picoora.tools.web_search import WebSearch  # noqa: E402
from tests.fakes import search_server  # noqa: E402
from tests.fakes._http import Exchange  # noqa: E402
from tests.fakes.web_page_server import WebPageServer  # noqa: E402

STALL_TARGET_MS = 50
ATTACK_ROUNDS = 5  # each attack, one after the other, while /health is polled
# Many "<", each before a long run of whitespace: quadratic for the marker pattern before this work.
MARKER_BAIT = ("<" + " " * 5000) * 400  # 2 MB
OLD_MARKER_PATTERN = re.compile(r"<(\s*/?\s*untrusted[\s_-]*content)", re.IGNORECASE)  # before, for comparison


def _ms(samples: list[float]) -> str:
    return (f"median {statistics.median(samples) * 1000:7.1f} ms   "
            f"p90 {sorted(samples)[int(len(samples) * 0.9)] * 1000:7.1f} ms")


def bench_exec(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp).resolve()
        sandboxed = bwrap_argv(["true"], workspace, Mounts(workspace, (), writable_system=False), network=False,
                               tmp_bytes=64 * 1024 * 1024)

        async def once(argv: list[str]) -> float:
            started = time.perf_counter()
            await run_shell(argv, workspace, clean_env(workspace), 10, 1000)
            return time.perf_counter() - started

        for label, argv in (("exec unsandboxed (sh -c true)", ["sh", "-c", "true"]),
                            ("exec sandboxed (bwrap ... true)", sandboxed)):
            if label.startswith("exec sandboxed") and not probe().available:
                print(f"{label:<36} skipped: {probe().reason}")
                continue
            samples = [asyncio.run(once(argv)) for _ in range(runs)]
            print(f"{label:<36} {_ms(samples)}")


def bench_probe() -> None:
    probe.cache_clear()
    started = time.perf_counter()
    support = probe()
    print(f"{'bubblewrap probe (once per process)':<36} {(time.perf_counter() - started) * 1000:7.1f} ms "
          f"({'ok' if support.available else support.reason})")


def bench_html() -> None:
    quadratic = "<a" * 1_000_000
    page = ("<html><head><title>T</title></head><body>"
            + "<p>Some <b>text</b> and a <a href='/x'>link</a>.</p>" * 20_000 + "</body></html>")
    for label, text in (("html_to_text 2 MB of '<a'", quadratic),
                        (f"html_to_text {len(page) // 1000} KB page", page)):
        started = time.perf_counter()
        html_to_text(text)
        print(f"{label:<36} {(time.perf_counter() - started) * 1000:7.1f} ms")


def bench_bomb() -> None:
    bomb = gzip.compress(gzip.compress(b"\0" * (200 * 1024 * 1024), compresslevel=9), compresslevel=9)
    tracemalloc.start()
    started = time.perf_counter()
    decoder = BoundedDecoder("gzip, gzip", 2_000_000)
    body = bytearray()
    for start in range(0, len(bomb), 4096):
        body += decoder.feed(bomb[start : start + 4096])
        if decoder.exceeded:
            break
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{'gzip bomb (' + str(len(bomb)) + ' B -> 200 MiB)':<36} {elapsed * 1000:7.1f} ms, "
          f"kept {len(body)} B, peak {peak / 1e6:.1f} MB")


class _PlainTextServer(WebPageServer):
    """A page served as text/plain, so the bait reaches the marker scan as it is (HTML would fold it)."""

    def route(self, exchange: Exchange) -> None:
        data = self.page.encode()
        exchange._start(200, "text/plain; charset=utf-8", None)
        exchange._handler.send_header("Content-Length", str(len(data)))
        exchange._handler.end_headers()
        exchange._handler.wfile.write(data)


async def _with_ticker(work) -> tuple[float, float]:  # noqa: ANN001 (a coroutine)
    """(seconds ``work`` took, the longest stall of a 1 ms ticker on the same loop meanwhile)."""
    longest = 0.0
    running = True

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last - 0.001)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    await work
    elapsed = time.perf_counter() - started
    running = False
    await task
    return elapsed, longest


def _stall_line(label: str, elapsed: float, stall: float) -> str:
    verdict = "ok" if stall * 1000 <= STALL_TARGET_MS else f"OVER the {STALL_TARGET_MS} ms target"
    return f"{label:<44} {elapsed * 1000:8.1f} ms, loop stalled at most {stall * 1000:6.1f} ms ({verdict})"


def bench_event_loop() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ctx = ToolContext(workspace=Path(tmp), store=None,
                          settings={"web_fetch": {"allow_hosts": ["127.0.0.1"], "max_chars": 2_000_000}})
        with _PlainTextServer(status=200, page="warm-up: the first call of a process pays its imports") as server:
            asyncio.run(WebFetch().run(WebFetch.Args(url=server.url), ctx))
        with _PlainTextServer(status=200, page=MARKER_BAIT) as server:
            elapsed, stall = asyncio.run(_with_ticker(WebFetch().run(WebFetch.Args(url=server.url), ctx)))
        print(_stall_line("web_fetch of 2 MB of marker bait", elapsed, stall))
        with search_server.FakeSearch() as fake:
            tool = WebSearch(WebSearchConfig(provider="duckduckgo", url=f"{fake.url}/ddg"))
            asyncio.run(tool.run(tool.Args(query="warm-up"), ctx))
            search_server.PAGE = b"<a" * 1_000_000
            elapsed, stall = asyncio.run(_with_ticker(tool.run(tool.Args(query="x"), ctx)))
        print(_stall_line("web_search of a 2 MB '<a<a...' answer", elapsed, stall))
    started = time.perf_counter()
    OLD_MARKER_PATTERN.sub(r"&lt;\1", MARKER_BAIT[:50_000])
    print(f"{'marker pattern before, 50 KB of the bait':<44} {(time.perf_counter() - started) * 1000:8.1f} ms "
          "(on the event loop)")


def bench_limits() -> None:
    if not probe().available:
        print(f"{'exec limits':<44} skipped: {probe().reason}")
        return
    attacks = {
        "fork bomb (python os.fork loop)":
            "python3 -c 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass'",
        "2 GiB allocation": "python3 -c 'x = bytearray(2 * 1024 ** 3)'",
        "disk fill (2 MB files)": "i=0; while true; do head -c 2000000 /dev/zero > f$i; i=$((i+1)); done",
    }
    registry = ToolRegistry()
    registry.register(Exec())
    for label, command in attacks.items():
        with tempfile.TemporaryDirectory() as tmp:
            ctx = ToolContext(workspace=Path(tmp), store=None)
            started = time.perf_counter()
            result = asyncio.run(registry.execute("exec", {"command": command}, ctx))
            elapsed = time.perf_counter() - started
        why = next((line for line in result.content.splitlines() if "limit" in line), result.content[:80])
        print(f"{'stopped: ' + label:<44} {elapsed * 1000:8.1f} ms  {why[:110]}")


def _peak_rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]) / 1024


def bench_gateway_under_attack() -> None:
    import os
    import threading

    import httpx

    from tests.fakes.gateway_kit import TOKEN, RunningGateway, gateway_config
    from tests.fakes.ollama_server import FakeOllama, Reply

    fork_bomb = "python3 -c 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass'"

    def respond(body: dict) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(content=body["messages"][-1]["content"][:200])
        return Reply(tool_calls=[("exec", {"command": fork_bomb})])

    from tests.helpers.documents import docx_bomb

    bomb = docx_bomb(640)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PICOORA_HOME"] = tmp
        with FakeOllama(responder=respond) as fake:
            config = gateway_config(Path(tmp), fake.url, max_body_bytes=2 * 1024 * 1024)
            with RunningGateway(config) as gw:
                headers = {"Authorization": f"Bearer {TOKEN}"}
                httpx.get(gw.url + "/health", timeout=10)
                before = _peak_rss_mb()
                latencies: list[float] = []
                attacking = threading.Event()
                attacking.set()

                def poll() -> None:
                    with httpx.Client(base_url=gw.url, timeout=30) as http:
                        while attacking.is_set():
                            started = time.perf_counter()
                            http.get("/health")
                            latencies.append(time.perf_counter() - started)
                            time.sleep(0.02)

                poller = threading.Thread(target=poll)
                poller.start()
                with httpx.Client(base_url=gw.url, headers=headers, timeout=120) as http:
                    for round_ in range(ATTACK_ROUNDS):
                        refused_doc = http.post("/v1/docs", files={"file": ("report.docx", bomb)}).text
                        answer = http.post("/v1/chat", json={"session_id": f"attack{round_}", "text": "go"}).json()
                attacking.clear()
                poller.join()
                after = _peak_rss_mb()
    doc_line = refused_doc.split("refused: ", 1)[-1].split('"')[0]
    ordered = sorted(latencies)
    print(f"{'gateway peak RSS before the attacks':<44} {before:8.1f} MB")
    print(f"{'gateway peak RSS after them':<44} {after:8.1f} MB  (+{after - before:.1f} MB)")
    print(f"{'DOCX bomb (' + str(len(bomb) // 1024) + f' KB -> 640 MB) x{ATTACK_ROUNDS}':<44} refused: {doc_line[:80]}")
    print(f"{f'fork bomb through exec x{ATTACK_ROUNDS}':<44} {answer.get('text', answer)[:90]!s}")
    print(f"{'/health during the attacks':<44} {len(ordered)} requests, p50 "
          f"{ordered[len(ordered) // 2] * 1000:.1f} ms, p99 {ordered[int(len(ordered) * 0.99)] * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--only", choices=("loop", "limits", "gateway"), help="run one part only")
    args = parser.parse_args()
    if args.only is None:
        bench_probe()
        bench_exec(args.runs)
        bench_html()
        bench_bomb()
    if args.only in (None, "loop"):
        bench_event_loop()
    if args.only in (None, "limits"):
        bench_limits()
    if args.only in (None, "gateway"):
        bench_gateway_under_attack()


if __name__ == "__main__":
    main()
