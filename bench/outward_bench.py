"""Benchmark what the outward filter (``picoora/outward.py``) costs a streamed turn: every event a turn
emits is scrubbed of the config's secrets before any front door sees it, tokens included.

It times ``Outward.event`` on token events (a few words each, as models stream) and on a 20 KB final
answer, with 0, 4 and 16 secrets of 32 characters (each secret adds its JSON, URL and base64 forms to one
alternation), and ``fit_prompts`` on an 800 KB ``SOUL.md`` beside two small files.

    .venv/bin/python bench/outward_bench.py [--events 20000]

Target, with 4 secrets: under 20 us per token event (a 500-token answer costs under 10 ms of event loop)
and under 1 ms for a 20 KB answer (``Scrubber`` tests a long text form by form before its alternation).
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from picoora.agent.events import FinalAnswer, TokenEvent  # noqa: E402
from picoora.agent.prompt_files import fit_prompts  # noqa: E402
from picoora.outward import Outward  # noqa: E402
from picoora.store.base import Prompt  # noqa: E402


def per_event_us(outward: Outward, event: object, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        outward.event(event)  # type: ignore[arg-type]
    return (time.perf_counter() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    token = TokenEvent("telegram:42", "the answer is ", turn_id="t1")
    result = FinalAnswer("telegram:42", "some long answer " * 1200, turn_id="t1")
    for count in (0, 4, 16):
        outward = Outward([secrets.token_urlsafe(24) for _ in range(count)])
        outward.event(token)  # the pattern for this set of secrets is built once, on first use
        print(f"{count:>2} secrets: token event {per_event_us(outward, token, args.events):6.2f} us, "
              f"20 KB answer {per_event_us(outward, result, max(args.events // 100, 10)):8.1f} us")
    prompts = [Prompt("IDENTITY.md", "I am Pico."), Prompt("SOUL.md", "Be kind. " * 90_000),
               Prompt("USER.md", "Ana, in Lisbon.")]
    started = time.perf_counter()
    for _ in range(100):
        fit_prompts(prompts, 16384)
    print(f"fit_prompts, 800 KB SOUL.md: {(time.perf_counter() - started) / 100 * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
