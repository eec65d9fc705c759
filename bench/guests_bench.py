"""Benchmark what guests cost a gateway: RSS after 1 and after N different strangers each sent one message.

``picoora gateway`` runs as a child process with Telegram on a fake Bot API (in this process) admitting
everyone (``allow_from: ["*"]``, so each sender is a guest with a store of their own) and the bundled
embedder (each guest's turn embeds its message for the automatic recall). The fake model answers at once.
It prints the gateway's RSS (``VmRSS``) idle, after the first guest and after all of them.

    .venv/bin/python bench/guests_bench.py [--guests 50]

Target (issue 18): N = 50 guests within +20 MB of one guest.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.gateway_bench import TOKEN, rss_mb, start_gateway  # noqa: E402
from tests.fakes.ollama_server import FakeOllama, Reply  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402

BOT = "777777:guests-BENCH-token"
TARGET_MB = 20


def wait_answered(telegram: FakeTelegram, users: range, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not all(telegram.texts(user) for user in users):
        if time.monotonic() > deadline:
            raise SystemExit(f"only {sum(bool(telegram.texts(u)) for u in users)} of {len(users)} guests answered")
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guests", type=int, default=50)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="picoora-guests-bench-"))
    with FakeOllama(responder=lambda body: Reply(content="Hello, guest.")) as ollama, FakeTelegram(BOT) as telegram:
        (home / "config.json").write_text(json.dumps({
            "providers": {"ollama": {"api_base": ollama.url, "max_retries": 0}},
            "memory": {"embedder": "minilm"},
            "gateway": {"token": TOKEN},
            "channels": {"telegram": {"enabled": True, "token": BOT, "allow_from": ["*"], "api_base": telegram.url}},
        }))
        process, _ = start_gateway(home)
        try:
            time.sleep(1.0)
            idle = rss_mb(process.pid)
            first = 1000
            telegram.push(first, "hello, I am a guest: what can you do?")
            wait_answered(telegram, range(first, first + 1))
            time.sleep(0.5)
            one = rss_mb(process.pid)
            rest = range(first + 1, first + args.guests)
            for user in rest:
                telegram.push(user, f"hello from guest {user}: what can you do?")
            wait_answered(telegram, rest)
            time.sleep(0.5)
            many = rss_mb(process.pid)
        finally:
            process.send_signal(signal.SIGTERM)
            code = process.wait(30)
    print("gateway RSS with guests (bundled embedder, Telegram on a fake Bot API, allow_from [\"*\"]):")
    print(f"  idle {idle:.0f} MB; after 1 guest {one:.0f} MB; after {args.guests} guests {many:.0f} MB "
          f"(+{many - one:.0f} MB over one guest; target within +{TARGET_MB} MB)")
    print(f"  gateway exit code after SIGTERM: {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
