"""Limits of one exec call (issue 21): before them one call ran 1,000 processes, allocated 1 GiB and
wrote 400 MB in a second. Each attack runs through the real CLI and a scripted model, as root and as
uid 65534, with small limits so the tests stay quick; the model must be told which limit ended it.
"""

from __future__ import annotations

import os
import subprocess
from contextlib import nullcontext
from pathlib import Path

import pytest

from tests.exec_support import run_attacks, user_home
from tests.tools_support import require_sandbox

pytestmark = pytest.mark.slow  # real sandboxed processes: `pytest -m slow` (.ci/run) runs it

SMALL = {"max_processes": 40, "max_memory_mb": 256, "max_file_mb": 5, "max_disk_mb": 40, "timeout_seconds": 30}
# Python, not shell: the text guard refuses the classic `:(){ :|:& };:` before the sandbox sees it.
FORK_BOMB = "python3 -c 'import os\nwhile True:\n    try: os.fork()\n    except OSError: pass' # bomb-{tag}"


def _home(tmp_path: Path, who: str):  # noqa: ANN202 (a context manager like user_home)
    if who == "user":
        return user_home()
    home = tmp_path / "picoora-home"
    home.mkdir(exist_ok=True)
    return nullcontext((home, None))


@pytest.fixture(params=["root", "user"] if os.geteuid() == 0 else ["self"])
def who(request):
    return request.param


def _run(tmp_path, monkeypatch, who, commands, tools=None, **exec_settings):
    require_sandbox()
    with _home(tmp_path, who) as (home, as_user):
        monkeypatch.setenv("PICOORA_HOME", str(home))
        results, _ = run_attacks(home, commands, as_user=as_user, exec={**SMALL, **exec_settings}, **(tools or {}))
        workspace = home / "workspace"
        sizes = {p.name: p.stat().st_size for p in workspace.iterdir() if p.is_file()}
        return results, sizes


def test_a_fork_bomb_is_stopped_and_the_model_told_why(tmp_path, monkeypatch, who):
    tag = f"{os.getpid()}-{who}"
    command = FORK_BOMB.format(tag=tag)
    results, _ = _run(tmp_path, monkeypatch, who, [command])
    assert "Command stopped: it reached the process limit (40 processes at once" in results[command]
    assert "tools.exec.max_processes" in results[command]
    left = subprocess.run(["pgrep", "-f", f"bomb-{tag}"], capture_output=True, text=True).stdout.split()
    assert left == []


def test_a_2_gib_allocation_fails_and_the_model_is_told_the_memory_limit(tmp_path, monkeypatch, who):
    command = "python3 -c 'x = bytearray(2 * 1024 ** 3); print(len(x))'"
    results, _ = _run(tmp_path, monkeypatch, who, [command])
    assert "MemoryError" in results[command] and "2147483648" not in results[command]
    assert "memory limit (256 MiB per process; tools.exec.max_memory_mb raises it)" in results[command]


def test_one_file_stops_at_the_file_size_limit_and_a_setting_raises_it(tmp_path, monkeypatch, who):
    command = "head -c 8000000 /dev/zero > big.bin; echo done"
    results, sizes = _run(tmp_path, monkeypatch, who, [command])
    assert sizes["big.bin"] == 5 * 1024 * 1024
    assert "a file reached the size limit (5 MiB; tools.exec.max_file_mb raises it)" in results[command]
    results, sizes = _run(tmp_path, monkeypatch, who, [command], max_file_mb=10)
    assert sizes["big.bin"] == 8_000_000 and "Limit:" not in results[command]


def test_a_disk_fill_of_small_files_is_stopped(tmp_path, monkeypatch, who):
    command = "i=0; while [ $i -lt 200 ]; do head -c 2000000 /dev/zero > fill$i; i=$((i+1)); done; echo finished"
    results, sizes = _run(tmp_path, monkeypatch, who, [command])
    assert "Command stopped: it filled the workspace past exec's disk limit (40 MiB in all" in results[command]
    assert "finished" not in results[command]
    assert sum(sizes.values()) < 200 * 2_000_000 / 2  # stopped well before the end


def test_tmp_is_bounded_too(tmp_path, monkeypatch, who):
    """/tmp is a tmpfs, memory: without a size it could take half the machine's."""
    command = "head -c 60000000 /dev/zero > /tmp/fill; ls -l /tmp/fill | awk '{print $5}'"
    results, _ = _run(tmp_path, monkeypatch, who, [command], max_file_mb=100)
    assert int(results[command].split()[0]) <= 40 * 1024 * 1024


def test_four_processes_together_are_held_to_the_memory_limit(tmp_path, monkeypatch, who):
    """RLIMIT_AS is per process: 4 processes held 3.7 GB under "1024 MB". A cgroup counts them together."""
    from picoora.tools.exec_cgroup import usable_controllers

    if who == "user" or "memory" not in usable_controllers():
        pytest.skip("needs a memory cgroup the gateway may create (a root gateway); `picoora status` says so")
    hog = "python3 -c 'import time; b = b\"x\" * (120 << 20); time.sleep(4); print(\"held\")'"
    command = f"for i in 1 2 3 4; do {hog} & done; wait; echo all-ended"
    results, _ = _run(tmp_path, monkeypatch, who, [command])
    assert "Command stopped: it reached the memory limit (256 MiB for it and every process it started" \
        in results[command]
    assert "held" not in results[command] and "all-ended" not in results[command]


def test_dev_shm_is_a_sized_tmpfs(tmp_path, monkeypatch, who):
    """bwrap's /dev/shm was a folder of its unsized /dev tmpfs: 1.2 GB of memory in one call."""
    command = ("i=0; while [ $i -lt 40 ]; do head -c 4000000 /dev/zero > /dev/shm/f$i 2>/dev/null || break; "
               "i=$((i+1)); done; du -sk /dev/shm | cut -f1; echo x > /dev/fill && echo dev-writable")
    results, _ = _run(tmp_path, monkeypatch, who, [command], max_memory_mb=1024)
    assert int(results[command].split()[0]) <= 64 * 1024
    assert "dev-writable" not in results[command]  # /dev itself is an unsized tmpfs: read-only


def test_space_reserved_without_writing_counts_against_the_disk_limit(tmp_path, monkeypatch, who):
    """fallocate reserves blocks no write counter sees: 800 MB stayed on disk against a 512 MB limit."""
    command = "i=0; while [ $i -lt 30 ]; do fallocate -l 4M r$i; i=$((i+1)); done; sleep 5; echo survived"
    results, _ = _run(tmp_path, monkeypatch, who, [command])
    assert "Command stopped: it filled the workspace past exec's disk limit (40 MiB in all" in results[command]
    assert "survived" not in results[command]


def test_roots_pids_cgroups_are_removed_also_those_a_killed_process_left(tmp_path):
    from picoora.tools.exec_cgroup import CGROUP_PREFIX, hierarchies
    from picoora.tools.shell import Exec
    from tests.tools_support import call, make_ctx

    require_sandbox()
    found = hierarchies().get("pids") if os.geteuid() == 0 else None
    if found is None:
        pytest.skip("needs root and a writable pids cgroup hierarchy")
    point = found.point
    orphan = point / f"{CGROUP_PREFIX}4999999-dead"  # above any pid_max: its process is surely gone
    orphan.mkdir()
    result = call(Exec(), make_ctx(tmp_path), command="echo ran")
    assert result.content.startswith("ran")
    assert not orphan.exists()
    assert not list(point.glob(f"{CGROUP_PREFIX}{os.getpid()}-*"))


def test_another_program_writing_meanwhile_does_not_stop_a_command(tmp_path):
    """The watchdog sees the filesystem's free space fall; the command's own writes decide whose it was."""
    import threading

    from picoora.tools.shell import Exec
    from tests.tools_support import call, make_ctx

    require_sandbox()
    ctx = make_ctx(tmp_path, settings={"exec": {"max_disk_mb": 20, "timeout_seconds": 30}})
    started = threading.Event()

    def other_program() -> None:
        with open(tmp_path / "other.bin", "wb") as handle:
            started.set()
            for _ in range(60):
                handle.write(b"\0" * 1_000_000)
                handle.flush()
                os.fsync(handle.fileno())

    writer = threading.Thread(target=other_program)
    writer.start()
    started.wait()
    try:
        result = call(Exec(), ctx, command="sleep 1; echo survived")
    finally:
        writer.join()
    assert (tmp_path / "other.bin").stat().st_size == 60_000_000
    assert result.content.startswith("survived") and not result.is_error


def test_the_disk_limit_holds_for_the_workspace_across_calls(tmp_path, monkeypatch, who):
    """Files stay across calls: three calls of 495 MB each passed a 512 MB limit counted per call."""
    fill = "i=0; while [ $i -lt 4 ]; do head -c 4000000 /dev/zero > {tag}$i; i=$((i+1)); done; echo wrote-{tag}"
    commands = [fill.format(tag=tag) for tag in ("a", "b", "c")] + ["echo still-runs"]
    results, sizes = _run(tmp_path, monkeypatch, who, commands, {"max_parallel_calls_per_turn": 1})
    assert "wrote-a" in results[commands[0]] and "wrote-b" in results[commands[1]]
    assert "Command stopped: it filled the workspace past exec's disk limit (40 MiB in all" in results[commands[2]]
    assert "Command not run: the workspace already takes" in results[commands[3]]
    assert "still-runs" not in results[commands[3]]


def test_a_burst_of_reservations_between_two_polls_is_caught_when_the_command_ends(tmp_path, monkeypatch, who):
    """8 parallel fallocate of 99 MB reserved 793 MB against 512 MiB and the call ended with exit code 0."""
    command = "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do fallocate -l 4M burst$i & done; wait; echo reserved"
    results, _ = _run(tmp_path, monkeypatch, who, [command])
    assert "Command stopped: it filled the workspace past exec's disk limit (40 MiB in all" in results[command]
    assert "Exit code: 0" not in results[command]
