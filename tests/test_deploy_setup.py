"""The VM's set-up script, run for real in a folder: cloud-init's files written where cloud-init
writes them (under SETUP_ROOT), stand-ins on PATH for what only the VM has (dnf, podman, oci,
systemctl, firewall-cmd, ollama, runuser) that record every command line, and a picoora tarball
whose install.sh makes a stand-in ``picoora`` that prints the unit with picoora.gateway.systemd.

It shows the order and the data flow (the token from the Vault lands in config.json only, the unit
installed is the one printed); it cannot show that Oracle Linux, Ollama or the database behave.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from picoora.gateway.systemd import unit_text
from tests.test_deploy import SAMPLE_SETTINGS, render_cloud_init

pytestmark = pytest.mark.slow  # deploy scripts run for real: `pytest -m slow` (.ci/run) runs it

TOKEN = "tok3nFromTheVaultNeverPrinted0123456789abcd"
ADB_ADMIN = "Adb_Adm1n_Passw0rd#x"
ADB_USER = "PadbUserPassw0rdFromTheVault9"
ADB_SETTINGS = {**SAMPLE_SETTINGS, "database_mode": "adb", "adb_admin_secret": "ocid1.vaultsecret.oc1..adbadmin",
                "adb_user_secret": "ocid1.vaultsecret.oc1..adbuser"}
ONNX_URL = "https://models.example.invalid/all_MiniLM_L12_v2_augmented.zip"

STUBS = {
    # name: body after the line that records the call
    "dnf": "", "semanage": "", "restorecon": "", "systemctl": "", "firewall-cmd": "", "chown": "", "ollama": "",
    "getent": 'echo "opc:x:1000:1000::$FAKE_HOME:/bin/bash"',
    "runuser": 'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"',
    "podman": '[ "$1 $2" != "container exists" ] || exit 1',
    # -o FILE URL: the picoora tarball for .../archive/REF.tar.gz, an empty file otherwise.
    "curl": 'out=""; url=""; while [ "$#" -gt 0 ]; do case "$1" in -o) out="$2"; shift ;; '
            '-*) ;; *) url="$1" ;; esac; shift; done\n'
            'case "$url" in *.tar.gz) cp "$FAKE_TARBALL" "$out" ;; *) [ -z "$out" ] || : >"$out" ;; esac',
}

FAKE_INSTALL_SH = """#!/usr/bin/env bash
# Stand-in for install.sh: a "venv" whose python is the test's interpreter, and the picoora link.
set -euo pipefail
echo "install.sh $* PYTHON=$PYTHON" >>"$CALLS"
mkdir -p "$PICOORA_HOME/venv/bin" "$HOME/.local/bin"
printf '#!/bin/sh\nPYTHONPATH="%s" exec "%s" "$@"\n' "$FAKE_MODULES" "$FAKE_PYTHON" >"$PICOORA_HOME/venv/bin/python"
chmod 755 "$PICOORA_HOME/venv/bin/python"
cp "$(dirname "$0")/picoora" "$PICOORA_HOME/venv/bin/picoora"
ln -sfn "$PICOORA_HOME/venv/bin/picoora" "$HOME/.local/bin/picoora"
[ -f "$PICOORA_HOME/config.json" ] || { echo '{}' >"$PICOORA_HOME/config.json"; chmod 600 "$PICOORA_HOME/config.json"; }
"""

# What `picoora gateway --print-systemd-unit` will print once the lead wires it to unit_text.
FAKE_PICOORA = """#!/usr/bin/env bash
echo "picoora $*" >>"$CALLS"
if [ "$*" = "gateway --print-systemd-unit" ]; then
  [ -z "${FAKE_NO_UNIT:-}" ] || { echo "No such option: --print-systemd-unit" >&2; exit 2; }
  exec "$FAKE_PYTHON" -c 'import getpass, os, sys
from picoora.gateway.systemd import unit_text
home = os.environ["PICOORA_HOME"]
sys.stdout.write(unit_text(os.path.join(os.environ["HOME"], ".local/bin/picoora"), home, home + "/config.json", getpass.getuser()))'
fi
"""  # noqa: E501 (the embedded Python stays one statement on one line)

FAKE_SETUP_ORACLE = f"""#!/usr/bin/env bash
ONNX_URL_DEFAULT='{ONNX_URL}'
echo "setup-oracle.sh ORACLE_IMAGE=$ORACLE_IMAGE PICOORA=$PICOORA PICOORA_HOME=$PICOORA_HOME" >>"$CALLS"
"""

# The Vault: prints the base64 of FAKE_SECRETS[--secret-id], as `oci ... --raw-output` does.
FAKE_OCI = """import base64, json, os, sys
with open(os.environ["CALLS"], "a") as calls:
    calls.write("oci " + " ".join(sys.argv[1:]) + "\\n")
secret = json.loads(os.environ["FAKE_SECRETS"]).get(sys.argv[sys.argv.index("--secret-id") + 1])
sys.exit(1) if secret is None else print(base64.b64encode(secret.encode()).decode())
"""

# python-oracledb against the Autonomous Database: records who connected where and the SQL it ran; its
# users (FAKE_ORACLE_USERS, a file several VMs share) refuse a second CREATE USER (ORA-01920) and an
# ALTER to the password the user has (ORA-28007), as ADB's default profile does.
FAKE_ORACLEDB = """import json, os, re

class _Error:
    def __init__(self, code):
        self.code = code

class DatabaseError(Exception):
    pass

def _users():
    path = os.environ["FAKE_ORACLE_USERS"]
    return json.load(open(path)) if os.path.exists(path) else {}

def _save(users):
    json.dump(users, open(os.environ["FAKE_ORACLE_USERS"], "w"))

class _Connection:
    def __init__(self, record):
        self.record = record
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        with open(os.environ["FAKE_ORACLE_LOG"], "a") as log:
            log.write(json.dumps(self.record) + "\\n")
    def cursor(self):
        return self
    def execute(self, sql):
        self.record["sql"].append(sql)
        users = _users()
        made = re.match(r'(CREATE|ALTER) USER (\\w+)(?: IDENTIFIED BY "([^"]+)")?', sql)
        if made:
            verb, name, password = made.groups()
            if verb == "CREATE" and name in users:
                raise DatabaseError(_Error(1920))
            if verb == "ALTER" and password is not None and users.get(name) == password:
                raise DatabaseError(_Error(28007))
            if password is not None:
                users[name] = password
                _save(users)

def connect(user, password, dsn, **options):
    return _Connection({"user": user, "password": password, "dsn": dsn, "sql": []})
"""


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def _tarball(path: Path) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, text in (("install.sh", FAKE_INSTALL_SH), ("picoora", FAKE_PICOORA),
                           ("scripts/setup-oracle.sh", FAKE_SETUP_ORACLE)):
            data = text.encode()
            info = tarfile.TarInfo(f"picoora-main/{name}")
            info.size, info.mode = len(data), 0o755
            archive.addfile(info, io.BytesIO(data))


class VM:
    def __init__(self, base: Path, settings: dict[str, str]):
        self.root, self.home, self.calls = base / "root", base / "home" / "opc", base / "calls.log"
        for folder in ("var/log", "etc/systemd/system"):
            (self.root / folder).mkdir(parents=True)
        self.home.mkdir(parents=True)
        for entry in yaml.safe_load(render_cloud_init(settings))["write_files"]:  # what cloud-init writes
            target = self.root / entry["path"].lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(entry["content"])
            target.chmod(int(entry["permissions"], 8))
        bin_dir = base / "bin"
        for name, body in STUBS.items():
            _executable(bin_dir / name, f'#!/usr/bin/env bash\necho "{name} $*" >>"$CALLS"\n{body}\n')
        _executable(self.root / "opt/picoora-setup/oci/bin/oci", f"#!{sys.executable}\n{FAKE_OCI}")
        (base / "modules").mkdir()
        (base / "modules" / "oracledb.py").write_text(FAKE_ORACLEDB)
        self.oracle_log = base / "oracle.log"
        secrets = {settings["gateway_token_secret"]: TOKEN, settings["adb_admin_secret"] or "-": ADB_ADMIN,
                   settings["adb_user_secret"] or "--": ADB_USER}
        _tarball(base / "picoora.tar.gz")
        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SETUP_ROOT": str(self.root),
                    "CALLS": str(self.calls), "FAKE_HOME": str(self.home), "FAKE_PYTHON": sys.executable,
                    "FAKE_TARBALL": str(base / "picoora.tar.gz"), "FAKE_SECRETS": json.dumps(secrets),
                    "FAKE_MODULES": str(base / "modules"), "FAKE_ORACLE_LOG": str(self.oracle_log),
                    "FAKE_ORACLE_USERS": str(base / "adb-users.json")}

    def run(self, **extra: str) -> subprocess.CompletedProcess[str]:
        script = self.root / "opt/picoora-setup/setup.sh"
        return subprocess.run(["bash", str(script)], env={**self.env, **extra}, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)

    @property
    def log(self) -> str:
        return (self.root / "var/log/picoora-setup.log").read_text()

    @property
    def unit(self) -> Path:
        return self.root / "etc/systemd/system/picoora-gateway.service"

    @property
    def config(self) -> dict:
        return json.loads((self.home / ".picoora" / "config.json").read_text())

    def called(self) -> list[str]:
        return self.calls.read_text().splitlines()


def test_setup_installs_everything_and_the_token_lands_only_in_config(tmp_path):
    vm = VM(tmp_path, SAMPLE_SETTINGS)
    done = vm.run()
    assert done.returncode == 0, vm.log
    assert done.stdout == done.stderr == ""  # everything goes to the log
    assert vm.log.rstrip().endswith("picoora is ready")
    assert stat.S_IMODE((vm.root / "var/log/picoora-setup.log").stat().st_mode) == 0o600

    home = vm.home / ".picoora"
    expected_unit = unit_text(str(vm.home / ".local/bin/picoora"), str(home), str(home / "config.json"),
                              __import__("getpass").getuser())
    assert vm.unit.read_text() == expected_unit  # exactly what the gateway printed
    assert stat.S_IMODE(vm.unit.stat().st_mode) == 0o644
    drop_in = (vm.root / "etc/systemd/system/picoora-gateway.service.d/10-picoora-deploy.conf").read_text()
    assert "After=ollama.service podman-restart.service" in drop_in

    assert vm.config["gateway"] == {"host": "0.0.0.0", "port": 18790, "token": TOKEN}
    assert stat.S_IMODE((home / "config.json").stat().st_mode) == 0o600

    calls = vm.called()
    for expected in ("ollama pull qwen3:4b", "picoora onboard --non-interactive --model qwen3:4b",
                     f"install.sh --from {vm.root}/opt/picoora-setup/src PYTHON=python3.11",
                     "firewall-cmd -q --permanent --add-port=18790/tcp",
                     "systemctl enable podman-restart.service", "systemctl enable picoora-gateway.service",
                     "systemctl restart picoora-gateway.service", "picoora gateway --print-systemd-unit"):
        assert expected in calls, expected
    podman_run = next(c for c in calls if c.startswith("podman run"))
    assert "--restart=always" in podman_run and "-p 127.0.0.1:1521:1521" in podman_run
    assert any(c.startswith("setup-oracle.sh ORACLE_IMAGE=docker.io/gvenzl/oracle-free") for c in calls)
    assert calls.index("ollama pull qwen3:4b") < calls.index("picoora gateway --print-systemd-unit")

    # The secret was on no command line, in no log and in no file but config.json.
    assert TOKEN not in vm.calls.read_text()
    holders = [p for p in tmp_path.rglob("*")
               if p.is_file() and not p.is_symlink() and TOKEN.encode() in p.read_bytes()]
    assert holders == [home / "config.json"]


def test_a_gateway_kept_on_the_vm_opens_no_port(tmp_path):
    vm = VM(tmp_path, {**SAMPLE_SETTINGS, "gateway_exposed": "no", "gateway_port": "18800"})
    assert vm.run().returncode == 0, vm.log
    assert vm.config["gateway"]["host"] == "127.0.0.1" and vm.config["gateway"]["port"] == 18800
    assert not [c for c in vm.called() if c.startswith("firewall-cmd")]


def test_a_picoora_without_the_unit_command_fails_clearly_and_installs_no_unit(tmp_path):
    vm = VM(tmp_path, SAMPLE_SETTINGS)
    done = vm.run(FAKE_NO_UNIT="1")
    assert done.returncode != 0
    assert "FAILED: this picoora cannot print its gateway unit yet" in vm.log
    assert not vm.unit.exists() and not Path(f"{vm.unit}.new").exists()
    assert TOKEN not in vm.log


def test_a_rerun_keeps_going_and_changes_nothing_it_should_keep(tmp_path):
    vm = VM(tmp_path, SAMPLE_SETTINGS)
    assert vm.run().returncode == 0, vm.log
    first_unit, first_config = vm.unit.read_text(), vm.config
    assert vm.run().returncode == 0, vm.log
    assert vm.unit.read_text() == first_unit and vm.config == first_config
    assert vm.log.count("picoora is ready") == 2


@pytest.mark.parametrize("key, trick", [("ollama_model", "$(touch {marker})"), ("picoora_ref", "`touch {marker}`"),
                                        ("adb_dsn", "x; touch {marker}")])
def test_settings_are_data_never_code(tmp_path, key, trick):
    """setup.env is read line by line into strings, never sourced: a value cannot run anything."""
    marker = tmp_path / "pwned"
    vm = VM(tmp_path, {**SAMPLE_SETTINGS, key: trick.format(marker=marker)})
    vm.run()
    assert not marker.exists()
    assert "Installing packages" in vm.log


def test_autonomous_database_path_creates_its_user_and_keeps_every_password_out_of_sight(tmp_path):
    vm = VM(tmp_path, ADB_SETTINGS)
    done = vm.run()
    assert done.returncode == 0, vm.log
    [session] = [json.loads(line) for line in vm.oracle_log.read_text().splitlines()]
    assert (session["user"], session["password"], session["dsn"]) == ("ADMIN", ADB_ADMIN, ADB_SETTINGS["adb_dsn"])
    oracle = vm.config["oracle"]
    assert {k: oracle[k] for k in ("enabled", "mode", "user", "dsn", "required")} == {
        "enabled": True, "mode": "dsn", "user": "picoora", "dsn": ADB_SETTINGS["adb_dsn"], "required": False}
    assert oracle["password"] == ADB_USER  # the stack's, from the Vault: every gateway VM has the same
    assert session["sql"] == [f'CREATE USER picoora IDENTIFIED BY "{ADB_USER}" QUOTA UNLIMITED ON data',
                              "GRANT DB_DEVELOPER_ROLE, CREATE MINING MODEL TO picoora"]
    calls = vm.called()
    assert f"picoora setup-oracle --onnx-url {ONNX_URL}" in calls
    assert not [c for c in calls if c.startswith(("podman", "setup-oracle.sh"))]
    # Neither password, nor the token, is on a command line, in the log or in a file but config.json
    # (the fake database's own records aside).
    for secret in (ADB_ADMIN, ADB_USER, TOKEN):
        assert secret not in vm.calls.read_text() and secret not in vm.log
        holders = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()
                   and p not in (vm.oracle_log, tmp_path / "adb-users.json") and secret.encode() in p.read_bytes()]
        assert holders == ([] if secret == ADB_ADMIN else [vm.home / ".picoora" / "config.json"]), secret


def test_gateways_of_a_fleet_share_the_database_user_and_never_fall_back_to_files(tmp_path):
    settings = {**ADB_SETTINGS, "database_required": "yes"}
    first, second = VM(tmp_path / "vm1", settings), VM(tmp_path / "vm2", settings)
    second.env["FAKE_ORACLE_USERS"] = first.env["FAKE_ORACLE_USERS"]  # one Autonomous Database
    assert first.run().returncode == 0, first.log
    assert second.run().returncode == 0, second.log
    [session] = [json.loads(line) for line in second.oracle_log.read_text().splitlines()]
    assert session["sql"] == [  # the user exists (ORA-01920) with this password (ORA-28007): unlocked, kept
        f'CREATE USER picoora IDENTIFIED BY "{ADB_USER}" QUOTA UNLIMITED ON data',
        f'ALTER USER picoora IDENTIFIED BY "{ADB_USER}" ACCOUNT UNLOCK', "ALTER USER picoora ACCOUNT UNLOCK",
        "GRANT DB_DEVELOPER_ROLE, CREATE MINING MODEL TO picoora"]
    for vm in (first, second):
        assert vm.config["oracle"]["password"] == ADB_USER and vm.config["oracle"]["required"] is True
        assert vm.config["gateway"]["host"] == "0.0.0.0"  # the load balancer reaches it


def test_an_older_stacks_user_gets_the_shared_password(tmp_path):
    vm = VM(tmp_path, ADB_SETTINGS)
    (tmp_path / "adb-users.json").write_text(json.dumps({"picoora": "MadeOnTheVmBefore123"}))
    assert vm.run().returncode == 0, vm.log
    [session] = [json.loads(line) for line in vm.oracle_log.read_text().splitlines()]
    assert f'ALTER USER picoora IDENTIFIED BY "{ADB_USER}" ACCOUNT UNLOCK' in session["sql"]
    assert json.loads((tmp_path / "adb-users.json").read_text()) == {"picoora": ADB_USER}
