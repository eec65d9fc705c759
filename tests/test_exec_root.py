"""The exec sandbox under root and as a user: what broke when the gateway ran as root (issue 21).

As root, bubblewrap kept every capability (``CapEff 000001fffeffffff``): one exec call unmounted its
covers and read the config, remounted ``/`` read-write and wrote the host, and read ``/etc/shadow``.
Each attack runs through the real CLI and a scripted model, once as root and once as uid 65534.
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from pathlib import Path

import pytest

from tests.cli_support import run_cli, write_config
from tests.exec_support import SECRET, run_attacks, user_home
from tests.tools_support import require_sandbox

pytestmark = pytest.mark.slow  # real sandboxed processes: `pytest -m slow` (.ci/run) runs it


def _root_home(tmp_path: Path):  # noqa: ANN202 (a context manager like user_home)
    if os.geteuid() != 0:
        pytest.skip("the root case needs a test run as root")
    home = tmp_path / "picoora-home"
    home.mkdir(exist_ok=True)
    return nullcontext((home, None))


@pytest.mark.parametrize("who", ["root", "user"])
def test_exec_holds_no_capability_and_cannot_undo_its_covers(tmp_path, monkeypatch, who):
    require_sandbox()
    with _root_home(tmp_path) if who == "root" else user_home() as (home, as_user):
        monkeypatch.setenv("PICOORA_HOME", str(home))
        config = home / "config.json"
        private = home / "workspace" / ".picoora"
        marker = Path("/etc") / f"picoora-owned-{os.getpid()}-{who}"
        commands = [
            "grep CapEff /proc/self/status",
            "head -c 5 /etc/shadow; echo rc=$?",
            f"umount {home}; umount {private}; umount -l {config}; cat {config}; echo end",
            f"mount -o remount,rw /; touch {marker}; echo rc=$?",
            "echo 3 > /proc/sys/vm/drop_caches; echo rc=$?",
            "ls -A /root 2>/dev/null | wc -l",
        ]
        results, done = run_attacks(home, commands, as_user=as_user)
        everything = "\n".join(results.values()) + done.stdout + done.stderr
        assert "CapEff:\t0000000000000000" in results[commands[0]]
        assert "root:" not in results[commands[1]] and "rc=1" in results[commands[1]]
        assert SECRET not in everything and results[commands[2]].startswith("end")
        assert not marker.exists()
        assert "rc=2" in results[commands[4]]  # read-only: bwrap left /proc/sys writable for root
        assert results[commands[5]].split()[0] == "0"
        assert json.loads(config.read_text())["providers"]["openai"]["api_key"] == SECRET


def test_root_only_host_files_are_covered_and_world_readable_ones_kept(tmp_path):
    """As root, uid 0 owns /etc/shadow whatever its capabilities: the root-only files are covered."""
    require_sandbox()
    with _root_home(tmp_path) as (home, _):
        commands = ["cat /etc/shadow /etc/gshadow 2>/dev/null | grep -c '^root:'; head -1 /etc/passwd"]
        results, _ = run_attacks(home, commands)
    lines = results[commands[0]].split()
    assert lines[0] == "0"  # nothing of shadow or gshadow
    assert lines[1].startswith("root:x:0:0")  # what every user may read is still there


@pytest.mark.parametrize("who", ["root", "user"])
def test_status_says_what_exec_can_reach(tmp_path, monkeypatch, who):
    require_sandbox()
    with _root_home(tmp_path) if who == "root" else user_home() as (home, as_user):
        monkeypatch.setenv("PICOORA_HOME", str(home))
        path = write_config(home, ollama_url="http://127.0.0.1:9")
        if as_user is not None:
            os.chown(path, 65534, 65534)
        out = run_cli("status", home=home, extra_env={"HOME": str(home)}, preexec_fn=as_user).stdout
    line = " ".join(out.split("Exec:", 1)[1].split())
    assert "sandboxed by bubblewrap" in line and "writes only the workspace" in line
    if who == "root":
        assert "the gateway runs as root, commands as uid 65534 (nobody) with no capabilities" in line
    else:
        assert "running as uid 65534: no capabilities" in line
    assert "at most 256 processes, 1024 MiB memory, 100 MiB per file, 512 MiB of workspace" in line
    from picoora.tools.exec_cgroup import enforcement

    # Which of those limits hold for the whole tree: a user's gateway makes no cgroup.
    expected = enforcement() if who == "root" else "memory per process only (the gateway is not root: no cgroup"
    assert expected.split(";")[0] in line
