"""Benchmark what each chat channel costs the gateway: start-up time and memory, against the fakes.

Starts a fake Ollama, a fake Telegram Bot API, a fake Discord (gateway websocket + REST) and a fake Slack
(Socket Mode + Web API) in this process, then for each set of channels runs ``picoora gateway --port 0``
as a child ``--runs`` times and prints, as medians:

- start-up: from spawning the child to its last start-up line (which waits for every enabled channel to
  say whether it is connected, so the channel's connect is included);
- the child's RSS (``VmRSS``) once started and idle, and its peak (``VmHWM``).

``--libs PYTHON`` also measures, in that interpreter (one where discord.py, slack_sdk and slack_bolt are
installed; picoora does not depend on them), what importing each client library costs against the
websockets + httpx the channels use: the numbers behind the choice in docs/architecture.md.

    .venv/bin/python bench/channels_bench.py [--runs 3] [--libs /path/to/other/python]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.discord_server import FakeDiscord  # noqa: E402
from tests.fakes.ollama_server import FakeOllama  # noqa: E402
from tests.fakes.slack_server import FakeSlack  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402

TELEGRAM, DISCORD = "123456:TEST-token-value-abcdef", "ODk5.fake-discord-token.value"
BOT, APP = "xoxb-fake-bot-token-1234", "xapp-1-fake-app-token-5678"
SETS = [("telegram",), ("telegram", "discord"), ("telegram", "slack"), ("telegram", "discord", "slack")]

LIBRARIES = {
    "httpx (the gateway imports it anyway)": "httpx",
    "+ websockets (what the channels use)": "httpx,websockets.asyncio.client",
    "+ discord.py": "httpx,discord",
    "+ slack_sdk Socket Mode (aiohttp) + async Web API":
        "httpx,slack_sdk.socket_mode.aiohttp,slack_sdk.web.async_client",
    "+ slack_bolt (async app)": "httpx,slack_bolt.async_app",
}
_IMPORT = """
import resource, sys, time
started = time.perf_counter()
for name in sys.argv[1].split(","):
    __import__(name)
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def config(home: Path, names: tuple[str, ...], fakes: dict) -> None:
    channels = {
        "telegram": {"token": TELEGRAM, "api_base": fakes["telegram"].url},
        "discord": {"token": DISCORD, "api_base": fakes["discord"].url},
        "slack": {"token": BOT, "app_token": APP, "api_base": fakes["slack"].url},
    }
    data = {"agents": {"defaults": {"model": "qwen3:latest"}},
            "providers": {"ollama": {"api_base": fakes["ollama"].url, "max_retries": 0}},
            "memory": {"embedder": "none"}, "gateway": {"token": "bench-token-0123456789abcdef"},
            "channels": {name: {**channels[name], "enabled": True, "allow_from": ["*"]} for name in names}}
    (home / "workspace").mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps(data))


def memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def one_start(home: Path) -> tuple[float, float, float, str]:
    env = {**os.environ, "PICOORA_HOME": str(home), "NO_COLOR": "1"}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "picoora", "gateway", "--port", "0"], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    channels = ""
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.strip().startswith("channels:"):
                channels = line.strip()
            if line.startswith("Stop with"):
                break
        else:
            raise RuntimeError(f"the gateway exited ({child.wait()}) before it started")
        took = time.perf_counter() - started
        time.sleep(0.5)  # idle: the channels' first requests are answered
        return took, memory_kb(child.pid, "VmRSS") / 1024, memory_kb(child.pid, "VmHWM") / 1024, channels
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait(30)


def gateway_costs(runs: int) -> None:
    with FakeOllama(models=("qwen3:latest",)) as ollama, FakeTelegram(TELEGRAM) as telegram, \
            FakeDiscord(DISCORD, heartbeat_ms=41250) as discord, FakeSlack(BOT, APP) as slack:
        fakes = {"ollama": ollama, "telegram": telegram, "discord": discord, "slack": slack}
        print(f"gateway start-up and memory, median of {runs} runs:")
        baseline = None
        for names in SETS:
            with tempfile.TemporaryDirectory() as tmp:
                config(Path(tmp), names, fakes)
                results = [one_start(Path(tmp)) for _ in range(runs)]
            took = statistics.median(r[0] for r in results)
            rss = statistics.median(r[1] for r in results)
            peak = statistics.median(r[2] for r in results)
            baseline = baseline or (took, rss)
            print(f"  {' + '.join(names):28s} start-up {took:5.2f} s ({took - baseline[0]:+.2f})  "
                  f"RSS {rss:6.1f} MB ({rss - baseline[1]:+.1f})  peak {peak:6.1f} MB   [{results[-1][3]}]")


def library_costs(python: str, runs: int) -> None:
    print(f"importing each client library in {python}, median of {runs} runs:")
    for label, modules in LIBRARIES.items():
        samples = []
        for _ in range(runs):
            done = subprocess.run([python, "-c", _IMPORT, modules], capture_output=True, text=True)
            if done.returncode:
                print(f"  {label:52s} not installed there")
                break
            seconds, max_rss_kb = done.stdout.split()
            samples.append((float(seconds), float(max_rss_kb) / 1024))
        if samples:
            print(f"  {label:52s} {statistics.median(s[0] for s in samples) * 1000:6.0f} ms  "
                  f"max RSS {statistics.median(s[1] for s in samples):5.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--libs", default="", help="a Python with discord.py, slack_sdk and slack_bolt installed")
    args = parser.parse_args()
    if args.libs:
        library_costs(args.libs, max(args.runs, 5))
    gateway_costs(args.runs)


if __name__ == "__main__":
    main()
