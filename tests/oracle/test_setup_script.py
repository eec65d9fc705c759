"""scripts/setup-oracle.sh run for real against stand-ins: a ``docker`` on PATH that plays the container
runtime (recording every call), a ``picoora`` that records how it was called, and the model zip served
over HTTP on 127.0.0.1. Checks: what it runs, the config it writes, that the password never appears in a
command line or in the output, and that a second run reuses everything."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli_support import REPO

SCRIPT = REPO / "scripts" / "setup-oracle.sh"
PASSWORD = "Very-Secret-Pw-42"

FAKE_DOCKER = r"""#!/usr/bin/env bash
# A container runtime stand-in: state in $FAKE_STATE, every call logged (one line of arguments).
state="$FAKE_STATE"
printf '%s\n' "$*" >>"$state/argv.log"
case "$1" in
  info) exit 0 ;;
  container)  # container inspect [-f FORMAT] NAME
    [ -e "$state/created" ] || exit 1
    if [ "$3" = "-f" ]; then [ -e "$state/running" ] && echo true || echo false; fi
    exit 0 ;;
  run) touch "$state/created" "$state/running"; echo 0123abcd ;;
  start) touch "$state/running" ;;
  exec)
    if [ "$2" = "-i" ]; then  # sqlplus reading SQL on stdin
      cat >>"$state/sql.txt"
      if [ -e "$state/user" ]; then  # SQL*Plus shows the failing statement, password included
        echo "CREATE USER picoora IDENTIFIED BY \"$(cat "$state/pw")\""
        echo "ORA-01920: user name 'PICOORA' conflicts with another user or role name"
      fi
      if [ -e "$state/sqlfail" ]; then echo "ORA-01031: insufficient privileges"; exit 1; fi
      touch "$state/user"
    fi ;;
esac
"""

FAKE_PICOORA = r"""#!/usr/bin/env bash
printf '%s\n' "$*" >>"$FAKE_STATE/picoora.log"
if [ "$1" = onboard ]; then mkdir -p "$PICOORA_HOME"; echo '{"agents": {}}' >"$PICOORA_HOME/config.json"; exit 0; fi
exit "${FAKE_SETUP_EXIT:-0}"
"""


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        return


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def model_url(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("all_MiniLM_L12_v2_augmented/README", "readme")
        archive.writestr("all_MiniLM_L12_v2_augmented/all_MiniLM_L12_v2.onnx", b"onnx-bytes" * 50)
    (served / "model.zip").write_bytes(buffer.getvalue())
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/model.zip"
    server.shutdown()


@pytest.fixture
def env(tmp_path, model_url):
    bin_dir, state, home = tmp_path / "bin", tmp_path / "state", tmp_path / "home"
    for directory in (bin_dir, state):
        directory.mkdir()
    _executable(bin_dir / "docker", FAKE_DOCKER)
    picoora = _executable(bin_dir / "picoora-stub", FAKE_PICOORA)
    (state / "pw").write_text(PASSWORD)
    python_dir = str(Path(sys.executable).parent)
    return {
        "PATH": f"{bin_dir}:{python_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "FAKE_STATE": str(state),
        "PICOORA_HOME": str(home), "PICOORA": str(picoora), "ONNX_URL": model_url, "ORACLE_READY_TIMEOUT": "10",
    }


def _run(env: dict, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], env={**env, **extra}, capture_output=True, text=True,
                          timeout=60)


def test_first_and_second_run(env, tmp_path):
    state, home = Path(env["FAKE_STATE"]), Path(env["PICOORA_HOME"])
    first = _run(env, PICO_ORACLE_PASSWORD=PASSWORD)
    assert first.returncode == 0, first.stderr + first.stdout
    argv = (state / "argv.log").read_text()
    assert "run -d --name picoora-oracle -p 127.0.0.1:1521:1521 -e ORACLE_RANDOM_PASSWORD=yes" in argv
    assert "exec picoora-oracle healthcheck.sh" in argv and "exec -i picoora-oracle sqlplus -s / as sysdba" in argv
    sql = (state / "sql.txt").read_text()
    assert f'CREATE USER picoora IDENTIFIED BY "{PASSWORD}"' in sql  # on stdin only
    assert "GRANT DB_DEVELOPER_ROLE, CREATE MINING MODEL TO picoora;" in sql
    config = home / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text())["oracle"] == {
        "enabled": True, "mode": "freepdb", "host": "localhost", "port": 1521, "service": "FREEPDB1",
        "user": "picoora", "password": PASSWORD}
    model = home / "models" / "all_MiniLM_L12_v2.onnx"
    assert model.read_bytes() == b"onnx-bytes" * 50
    calls = (state / "picoora.log").read_text().splitlines()
    assert calls == ["onboard --non-interactive", f"setup-oracle --onnx-file {model}"]

    os.remove(state / "running")  # the container was stopped meanwhile
    model_mtime = model.stat().st_mtime_ns
    second = _run(env, FAKE_SETUP_EXIT="3")  # no password given: the one in config.json is reused
    assert second.returncode == 0, second.stderr + second.stdout
    assert "start picoora-oracle" in (state / "argv.log").read_text()
    assert (state / "argv.log").read_text().count("run -d") == 1
    assert "ONNX model already downloaded" in second.stdout and model.stat().st_mtime_ns == model_mtime
    assert (state / "sql.txt").read_text().count(f'IDENTIFIED BY "{PASSWORD}"') == 4  # create + alter, twice
    assert (state / "picoora.log").read_text().count("onboard") == 1

    for text in (first.stdout, first.stderr, second.stdout, second.stderr, (state / "argv.log").read_text(),
                 (state / "picoora.log").read_text()):
        assert PASSWORD not in text


def test_the_script_runs_on_its_own_as_the_readme_downloads_it(env, tmp_path):
    alone = tmp_path / "download" / "setup-oracle.sh"
    alone.parent.mkdir()
    shutil.copy(SCRIPT, alone)  # curl -fsSLO .../setup-oracle.sh: no other file beside it
    result = subprocess.run(["bash", str(alone)], env={**env, "PICO_ORACLE_PASSWORD": PASSWORD},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr + result.stdout


def test_sqlplus_errors_are_shown_masked(env):
    state = Path(env["FAKE_STATE"])
    (state / "user").touch()  # the user exists: our stand-in echoes the CREATE line, then ORA-01920
    (state / "sqlfail").touch()  # ... and then a real failure
    result = _run(env, PICO_ORACLE_PASSWORD=PASSWORD)
    assert result.returncode == 1 and "creating database user picoora failed" in result.stderr
    assert 'IDENTIFIED BY "***"' in result.stderr and "ORA-01031" in result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    assert not (state / "picoora.log").exists()  # stopped before touching picoora


def test_a_generated_password_is_said_to_be_stored_only_once_it_is(env):
    from tests.fakes._http import closed_port_url

    stopped = _run(env, ONNX_URL=closed_port_url() + "/model.zip")  # no password anywhere; the download fails
    assert stopped.returncode == 1 and "download failed" in stopped.stderr
    assert "Generated" not in stopped.stdout + stopped.stderr and "stored" not in stopped.stdout
    config = Path(env["PICOORA_HOME"]) / "config.json"
    assert not config.exists()
    done = _run(env)
    assert done.returncode == 0, done.stderr + done.stdout
    stored = json.loads(config.read_text())["oracle"]["password"]
    assert len(stored) >= 12 and f'IDENTIFIED BY "{stored}"' in (Path(env["FAKE_STATE"]) / "sql.txt").read_text()
    assert f"Generated a password for database user picoora and stored it in {config}" in done.stdout
    assert stored not in done.stdout + done.stderr


def test_a_failing_setup_oracle_fails_the_script(env):
    result = _run(env, PICO_ORACLE_PASSWORD=PASSWORD, FAKE_SETUP_EXIT="1")
    assert result.returncode == 1 and "picoora setup-oracle failed (exit 1)" in result.stderr


def test_refusals(env):
    assert _run(env, "--help").stdout.startswith("Usage: PICO_ORACLE_PASSWORD=... scripts/setup-oracle.sh")
    assert _run(env, "--bogus").returncode == 2
    argument = _run(env, PASSWORD)  # a password on the command line is visible to every user of the machine
    assert argument.returncode == 1 and "not taken as an argument" in argument.stderr
    assert PASSWORD not in argument.stdout + argument.stderr
    assert not (Path(env["FAKE_STATE"]) / "argv.log").exists()  # refused before anything ran
    short = _run(env, PICO_ORACLE_PASSWORD="short")
    assert short.returncode == 1 and "at least 12 characters" in short.stderr
    no_runtime = _run(env, PICO_ORACLE_PASSWORD=PASSWORD, PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    if shutil.which("podman", path="/usr/bin:/bin") is None and not _engine_answers():
        assert no_runtime.returncode == 1 and "neither docker nor podman" in no_runtime.stderr


def _config_with_reference(env: dict) -> Path:
    home = Path(env["PICOORA_HOME"])
    home.mkdir()
    (home / "config.json").write_text(json.dumps({"oracle": {"password": "${MY_DB_PASSWORD}", "pool_max": 3}}))
    return home / "config.json"


def test_a_password_reference_in_config_is_resolved_and_kept(env):
    config = _config_with_reference(env)
    result = _run(env, MY_DB_PASSWORD=PASSWORD)
    assert result.returncode == 0, result.stderr + result.stdout
    sql = (Path(env["FAKE_STATE"]) / "sql.txt").read_text()
    assert f'IDENTIFIED BY "{PASSWORD}"' in sql and "${MY_DB_PASSWORD}" not in sql
    oracle = json.loads(config.read_text())["oracle"]
    assert oracle["password"] == "${MY_DB_PASSWORD}" and oracle["pool_max"] == 3 and oracle["enabled"] is True
    assert PASSWORD not in config.read_text() + result.stdout + result.stderr


def test_an_unset_password_reference_stops_with_what_to_export(env):
    config = _config_with_reference(env)
    result = _run(env)
    assert result.returncode == 1 and "refers to ${MY_DB_PASSWORD}, which is not set" in result.stderr
    assert json.loads(config.read_text())["oracle"]["password"] == "${MY_DB_PASSWORD}"
    assert not (Path(env["FAKE_STATE"]) / "sql.txt").exists()


def _engine_answers() -> bool:
    docker = shutil.which("docker", path="/usr/bin:/bin")
    return bool(docker) and subprocess.run([docker, "info"], capture_output=True).returncode == 0


@pytest.mark.skipif(shutil.which("shellcheck") is None,
                    reason="shellcheck is not installed (apt-get install shellcheck)")
def test_shellcheck_clean():
    result = subprocess.run(["shellcheck", "-x", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
