"""A root gateway runs commands as an unprivileged host uid (issue 36, round three).

uid 0 without capabilities still owns every root-only file, so 0600 files in folders no cover named
(``/var/tmp``, ``/opt``, ``/var/cache``) came back. These run only as root (``.ci/run`` is root).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_support import run_cli
from tests.exec_support import SECRET, run_attacks
from tests.tools_support import require_sandbox

pytestmark = pytest.mark.slow  # real sandboxed processes: `pytest -m slow` (.ci/run) runs it

ROOT_ONLY = "root-only-marker-7f3a"


@pytest.fixture
def root_home(isolated_home) -> Path:
    if os.geteuid() != 0:
        pytest.skip("the gateway runs as root only in a test run as root")
    require_sandbox()
    return isolated_home


@pytest.fixture
def root_only_file() -> Iterator[Path]:
    """A 0600 root file in a world-readable folder that no cover names."""
    folder = Path("/var/tmp") / f"picoora-probe-{os.getpid()}"
    folder.mkdir(mode=0o755)
    marker = folder / "secret.txt"
    marker.write_text(ROOT_ONLY)
    marker.chmod(0o600)
    try:
        yield marker
    finally:
        shutil.rmtree(folder)


def test_a_root_gateways_command_runs_as_nobody_and_reads_no_root_only_file(root_home, root_only_file):
    commands = [f"cat {root_only_file}; echo rc=$?", "id -u; id -G",
                "echo made > made.txt && cat made.txt && ls -ln made.txt", "grep CapEff /proc/self/status"]
    results, done = run_attacks(root_home, commands)
    assert ROOT_ONLY not in "".join(results.values()) + done.stdout
    assert "rc=1" in results[commands[0]]
    assert results[commands[1]].split()[:2] == ["65534", "65534"]
    assert results[commands[2]].startswith("made") and " 65534 65534 " in results[commands[2]]
    assert "CapEff:\t0000000000000000" in results[commands[3]]
    workspace = root_home / "workspace"
    assert workspace.stat().st_uid == 65534  # handed over: commands may write it
    assert (root_home / "config.json").stat().st_uid == 0  # the rest of the home stays root's


def test_a_root_gateway_without_an_unprivileged_user_refuses_exec_and_says_how_to_fix_it(root_home):
    marker = root_home / "workspace" / "ran"
    results, _ = run_attacks(root_home, [f"touch {marker}"], exec={"run_as": "picoora-no-such-user"})
    assert not marker.exists() and 'tool "exec" not found' in "".join(results.values())
    out = run_cli("status", home=root_home, extra_env={"HOME": str(root_home)}).stdout
    line = " ".join(out.split("Exec:", 1)[1].split("\n\n")[0].split())
    assert line.startswith("off: the gateway runs as root and the user tools.exec.run_as names "
                           "('picoora-no-such-user') does not exist; create an unprivileged user")
    assert "useradd --system" in line and "tools.exec.allow_root_commands" in line


def test_root_commands_run_as_root_only_when_the_config_says_so(root_home, root_only_file):
    commands = ["id -u", f"cat {root_only_file}"]
    results, _ = run_attacks(root_home, commands, exec={"allow_root_commands": True})
    assert results[commands[0]].split()[0] == "0"
    assert ROOT_ONLY in results[commands[1]]  # what the setting gives away: why it is off by default
    assert SECRET not in "".join(results.values())


def test_handing_the_workspace_over_skips_files_linked_elsewhere(root_home, root_only_file):
    """A command that ran as root before could link a root file in: its owner would become the exec user."""
    workspace = root_home / "workspace"
    workspace.mkdir()
    os.link(root_only_file, workspace / "linked-in")
    (workspace / "notes.md").write_text("mine")
    run_attacks(root_home, ["true"])
    assert root_only_file.stat().st_uid == 0 and (workspace / "notes.md").stat().st_uid == 65534
