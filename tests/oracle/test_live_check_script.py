"""scripts/oracle-live-check.sh run for real against stand-ins: a ``docker`` that records its calls and a
``python`` that records how the live tier would be started. Without an engine it skips cleanly."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import REPO
from tests.oracle.test_setup_script import _engine_answers, _executable

SCRIPT = REPO / "scripts" / "oracle-live-check.sh"
PASSWORD = "Live-Check-Secret-77"

FAKE_DOCKER = r"""#!/usr/bin/env bash
printf '%s\n' "$*" >>"$FAKE_STATE/docker.log"
case "$1" in
  info) exit 0 ;;
  run) printf '%s\n' "${APP_USER_PASSWORD:-}" >"$FAKE_STATE/container-password" ;;
esac
"""

FAKE_PYTHON = r"""#!/usr/bin/env bash
printf '%s\n' "$*" >>"$FAKE_STATE/python.log"
{ echo "--- $*"; env | grep '^PICO_TEST_ORACLE_' | sort; } >>"$FAKE_STATE/python.env"
cat >/dev/null
"""


@pytest.fixture
def env(tmp_path):
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    _executable(bin_dir / "docker", FAKE_DOCKER)
    model = tmp_path / "model.onnx"
    model.write_bytes(b"onnx")
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "FAKE_STATE": str(state),
            "PYTHON": str(_executable(bin_dir / "python-stub", FAKE_PYTHON)),
            "PICO_TEST_ORACLE_ONNX_FILE": str(model)}


def _run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


def test_it_starts_a_container_waits_for_the_user_and_runs_the_live_tier(env):
    state = Path(env["FAKE_STATE"])
    result = _run({**env, "PICO_TEST_ORACLE_PASSWORD": PASSWORD})
    assert result.returncode == 0, result.stderr + result.stdout
    docker = (state / "docker.log").read_text()
    assert ("run -d --name picoora-live-check -p 127.0.0.1:1522:1521 -e ORACLE_RANDOM_PASSWORD=yes "
            "-e APP_USER=picoora_live -e APP_USER_PASSWORD gvenzl/oracle-free:latest") in docker
    assert (state / "container-password").read_text().strip() == PASSWORD  # handed over by name, in the env
    assert docker.rstrip().endswith("rm -f picoora-live-check")  # thrown away afterwards
    calls = (state / "python.log").read_text().splitlines()
    assert calls[0] == "- 900" and calls[-2] == "-m pytest -m oracle tests/oracle/test_live.py -ra"
    assert calls[-1] == "bench/oracle_calibrate.py"  # then the push calibration, with the same settings
    runs = (state / "python.env").read_text().split("--- ")
    pytest_env, calibration_env = runs[-2].splitlines(), runs[-1].splitlines()
    assert "PICO_TEST_ORACLE_DSN=localhost:1522/FREEPDB1" in calibration_env
    assert pytest_env[0].startswith("-m pytest") and "PICO_TEST_ORACLE_REQUIRED=1" in pytest_env
    assert "PICO_TEST_ORACLE_DSN=localhost:1522/FREEPDB1" in pytest_env
    for text in (docker, "\n".join(calls), result.stdout, result.stderr):
        assert PASSWORD not in text


def test_without_an_engine_it_skips_cleanly_unless_required(env):
    if _engine_answers():
        pytest.skip("a container engine answers on this machine")
    no_engine = {**env, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    skipped = _run(no_engine)
    assert skipped.returncode == 0 and skipped.stdout.startswith("SKIPPED: no container engine")
    required = _run(no_engine, "--require")
    assert required.returncode == 1 and "a skip is a failure" in required.stderr


def test_keep_leaves_the_container_and_bad_arguments_are_refused(env):
    kept = _run({**env, "PICO_TEST_ORACLE_PASSWORD": PASSWORD}, "--keep")
    assert kept.returncode == 0 and "left running (--keep)" in kept.stdout
    assert not (Path(env["FAKE_STATE"]) / "docker.log").read_text().rstrip().endswith("rm -f picoora-live-check")
    assert _run(env, "--bogus").returncode == 2
    assert _run(env, "--help").stdout.startswith("Usage: scripts/oracle-live-check.sh")


@pytest.mark.skipif(shutil.which("shellcheck") is None,
                    reason="shellcheck is not installed (apt-get install shellcheck)")
def test_shellcheck_clean():
    result = subprocess.run(["shellcheck", "-x", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
