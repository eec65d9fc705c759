"""Benchmark ``picoora migrate`` on a year-old Go home: dry run, the real run, and the rerun that finds
everything already there.

The home is the test one (``tests/go_home.py``, the Go version's documented formats) grown to a heavy user's:
``--sessions`` session files of ``--messages`` messages each, a daily note for each of ``--days`` days, a
MEMORY.md of ``--memories`` bullets (embedded by the bundled MiniLM as they are imported) and ``--jobs`` cron
jobs. Each run is ``python -m picoora migrate`` as a child process, timed around it (wall clock); peak RSS is
the largest of the children so far (``RUSAGE_CHILDREN``).

    .venv/bin/python bench/migrate_bench.py [--sessions 200] [--messages 20] [--days 365] [--memories 300] [--jobs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.go_home import HOUR_MS, build_go_home, cron_job, session_file  # noqa: E402


def grow(root: Path, sessions: int, messages: int, days: int, memories: int, jobs: int) -> None:
    ws = root / "workspace"
    for n in range(sessions):
        turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i} of chat {n}: " + "word " * 30}
                 for i in range(messages)]
        (ws / "sessions" / f"telegram_{1000 + n}.json").write_text(json.dumps(session_file(f"telegram:{1000 + n}",
                                                                                             turns)))
    start = date(2025, 11, 1)
    for d in range(days):
        day = start + timedelta(days=d)
        folder = ws / "memory" / day.strftime("%Y%m")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{day:%Y%m%d}.md").write_text(f"# {day.isoformat()}\n\nNote {d}: sailed, sanded, planned.\n")
    bullets = "\n".join(f"- Fact {i}: Ana's item number {i} is kept in locker {i % 17}." for i in range(memories))
    (ws / "memory" / "MEMORY.md").write_text(f"# Long-term Memory\n\n## Facts\n\n{bullets}\n")
    store = json.loads((ws / "cron" / "jobs.json").read_text())
    store["jobs"] += [cron_job(f"{i:016x}", f"Job {i}", {"kind": "every", "everyMs": (i + 1) * HOUR_MS},
                               {"message": f"Check item {i}", "deliver": i % 2 == 0}) for i in range(jobs)]
    (ws / "cron" / "jobs.json").write_text(json.dumps(store))


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "picoora", "migrate", *args], env=env, cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = child.communicate()
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"migrate {' '.join(args)} failed:\n{out}\n{err}")
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=30)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        user = Path(tmp) / "user"
        user.mkdir()
        grow(build_go_home(user), opts.sessions, opts.messages, opts.days, opts.memories, opts.jobs)
        env = {**os.environ, "HOME": str(user), "PICOORA_HOME": str(Path(tmp) / "picoora"), "NO_COLOR": "1"}
        print(f"Go home: {opts.sessions + 2} sessions x ~{opts.messages} messages, {opts.days + 2} daily notes, "
              f"{opts.memories + 3} MEMORY.md items, {opts.jobs + 5} cron jobs")
        for label, args in (("dry run", ["--dry-run"]), ("migrate", []), ("again", [])):
            wall, rss, out = timed(args, env)
            migrated = sum(line.startswith("  migrated: ") for line in out.splitlines())
            unchanged = sum(line.startswith("  unchanged: ") for line in out.splitlines())
            print(f"{label:<8} {wall:6.2f} s  peak RSS (children so far) {rss:5.0f} MB  "
                  f"{migrated} items migrated, {unchanged} unchanged")


if __name__ == "__main__":
    main()
