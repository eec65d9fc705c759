"""Benchmark what the safety work costs and what hostile input now costs.

- ``exec`` latency of a trivial command, sandboxed (bubblewrap) and unsandboxed (``sh -c``);
- the bubblewrap probe ``picoora`` runs once per process;
- HTML to text on 2 MB of ``<a<a<a...`` (quadratic in ``html.parser``) and on an ordinary page;
- a two-layer gzip bomb (1 KiB on the wire, 200 MiB inside) through ``BoundedDecoder``: time and
  peak traced memory.

    .venv/bin/python bench/hostile_bench.py [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from picoora.tools.html_text import html_to_text  # noqa: E402
from picoora.tools.os_sandbox import Mounts, bwrap_argv, clean_env, probe  # noqa: E402
from picoora.tools.shell import run_shell  # noqa: E402
from picoora.tools.web import BoundedDecoder  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    bench_probe()
    bench_exec(args.runs)
    bench_html()
    bench_bomb()


if __name__ == "__main__":
    main()
