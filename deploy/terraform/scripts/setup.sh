#!/usr/bin/env bash
# picoora's first-boot set-up on the Oracle Linux 9 VM, run by cloud-init as root (safe to run again):
# Ollama and the model, picoora (install.sh), the database (Oracle AI Database Free in podman, or the
# Autonomous Database), the gateway token, and the systemd unit `picoora gateway` prints.
# Settings: /opt/picoora-setup/setup.env (no secrets). Secrets: the Vault, read with the instance
# principal, kept in shell variables and written only into config.json (0600, the user's).
# Log: /var/log/picoora-setup.log (root only); no secret is ever printed.
# SETUP_ROOT (empty on the VM) prefixes every system path, so tests/test_deploy_setup.py can run the
# whole script in a folder with stand-ins for dnf, podman, oci, systemctl and friends.
set -euo pipefail
umask 077
export PATH="$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # ollama goes to /usr/local/bin

ROOT="${SETUP_ROOT:-}"
SETUP_DIR="$ROOT/opt/picoora-setup"
LOG="$ROOT/var/log/picoora-setup.log"
RUN_AS=opc
ORACLE_IMAGE=docker.io/gvenzl/oracle-free:latest  # fully qualified: podman cannot ask which registry
UNIT="$ROOT/etc/systemd/system/picoora-gateway.service"

touch "$LOG"
chmod 600 "$LOG"
exec >>"$LOG" 2>&1

step() { printf '\n== %s  %s\n' "$(date -u '+%F %T')" "$*"; }
die() { printf '\nFAILED: %s\nFix it and run again: sudo bash %s/setup.sh\n' "$*" "$SETUP_DIR"; exit 1; }
trap 'die "line $LINENO: $BASH_COMMAND (exit $?)"' ERR

# ---- settings: KEY=value lines, read as data (never sourced) ------------------------------------
declare -A SETTING
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    '' | '#'*) ;;
    *=*) SETTING["${line%%=*}"]="${line#*=}" ;;
  esac
done <"$SETUP_DIR/setup.env"
setting() { printf '%s' "${SETTING[$1]-}"; }

USER_HOME="$(getent passwd "$RUN_AS" | cut -d: -f6)"
[ -n "$USER_HOME" ] || die "no user $RUN_AS on this machine"
PICOORA_HOME="$USER_HOME/.picoora"
PICOORA="$USER_HOME/.local/bin/picoora"
VENV_PYTHON="$PICOORA_HOME/venv/bin/python"
SRC="$SETUP_DIR/src"

# A command as the user, with picoora's home. runuser keeps the environment, which is how secrets
# reach a command: never on a command line, which every local process can read in /proc.
as_user() {
  runuser -u "$RUN_AS" -- env HOME="$USER_HOME" PICOORA_HOME="$PICOORA_HOME" PATH="$USER_HOME/.local/bin:/usr/bin:/bin" "$@"
}

retry() {  # retry TIMES SECONDS COMMAND...: for the network and for IAM, which take time to settle
  local times="$1" pause="$2" n=1
  shift 2
  until "$@"; do
    [ "$n" -lt "$times" ] || return 1
    n=$((n + 1))
    sleep "$pause"
  done
}

# ---- 1. packages --------------------------------------------------------------------------------
step "Installing packages (Python 3.11, podman, bubblewrap for the exec sandbox, SELinux tools)"
dnf -y -q install python3.11 podman bubblewrap tar gzip policycoreutils-python-utils
if [ ! -x "$SETUP_DIR/oci/bin/oci" ]; then
  python3.11 -m venv "$SETUP_DIR/oci"
  retry 3 10 "$SETUP_DIR/oci/bin/pip" install --quiet oci-cli
fi

# ---- 2. secrets from the Vault ------------------------------------------------------------------
# The dynamic group and policy are created after the instance, so the first minutes may say "not
# authorized": keep asking for up to 15 minutes.
read_secret() {  # read_secret OCID VARIABLE: the decoded secret into VARIABLE, never onto stdout
  local encoded
  encoded="$(retry 90 10 "$SETUP_DIR/oci/bin/oci" secrets secret-bundle get --auth instance_principal \
    --secret-id "$1" --query 'data."secret-bundle-content".content' --raw-output 2>/dev/null)" \
    || die "could not read secret $1 from the Vault (is the policy picoora-* in place?)"
  printf -v "$2" '%s' "$(printf '%s' "$encoded" | base64 -d)"
}
step "Reading the gateway token from the Vault"
GATEWAY_TOKEN=""
read_secret "$(setting gateway_token_secret)" GATEWAY_TOKEN
[ -n "$GATEWAY_TOKEN" ] || die "the gateway token in the Vault is empty"

# ---- 3. Ollama and the model --------------------------------------------------------------------
step "Installing Ollama and pulling $(setting ollama_model)"
if ! command -v ollama >/dev/null 2>&1; then
  retry 3 10 curl -fsSL -o "$SETUP_DIR/ollama-install.sh" https://ollama.com/install.sh
  sh "$SETUP_DIR/ollama-install.sh"
fi
systemctl enable --now ollama
retry 30 2 curl -fsS -o /dev/null http://127.0.0.1:11434/api/version || die "Ollama does not answer on 127.0.0.1:11434"
retry 3 30 ollama pull "$(setting ollama_model)" || die "ollama pull $(setting ollama_model) failed"

# ---- 4. picoora, with the project's own installer -----------------------------------------------
step "Installing picoora from $(setting picoora_repository) ($(setting picoora_ref))"
rm -rf "$SRC"
mkdir -p "$SRC"
retry 3 10 curl -fsSL -o "$SETUP_DIR/picoora.tar.gz" "$(setting picoora_repository)/archive/$(setting picoora_ref).tar.gz"
tar -xzf "$SETUP_DIR/picoora.tar.gz" -C "$SRC" --strip-components=1
chown -R "$RUN_AS:" "$SRC"
as_user env PYTHON=python3.11 bash "$SRC/install.sh" --from "$SRC"
as_user "$PICOORA" onboard --non-interactive --model "$(setting ollama_model)" </dev/null
# systemd may only start programs labelled as such: the venv lives in a home folder.
semanage fcontext -a -t bin_t "$PICOORA_HOME/venv/bin(/.*)?" 2>/dev/null \
  || semanage fcontext -m -t bin_t "$PICOORA_HOME/venv/bin(/.*)?"
restorecon -R "$PICOORA_HOME/venv/bin"

# Merge into one section of config.json, as the user, with picoora's own crash-safe writer (0600).
# From the environment: SECTION, VALUES (a JSON object) and FROM_ENV ({"key": "VARIABLE"}: values
# taken from those variables, so secrets and free text need no JSON quoting in the shell).
config_set() {
  as_user "$VENV_PYTHON" - "$PICOORA_HOME/config.json" <<'PY'
import json, os, sys
from pathlib import Path
from picoora.atomic import atomic_write_bytes
path = Path(sys.argv[1])
data = json.loads(path.read_text(encoding="utf-8"))
values = json.loads(os.environ["VALUES"])
values.update({key: os.environ[variable] for key, variable in json.loads(os.environ.get("FROM_ENV", "{}")).items()})
data.setdefault(os.environ["SECTION"], {}).update(values)
atomic_write_bytes(path, (json.dumps(data, indent=2) + "\n").encode(), mode=0o600)
PY
}

# ---- 5. the database ----------------------------------------------------------------------------
if [ "$(setting database_mode)" = adb ]; then
  step "Preparing the Autonomous Database (user picoora, TLS without a wallet)"
  ADB_ADMIN_PASSWORD=""
  read_secret "$(setting adb_admin_secret)" ADB_ADMIN_PASSWORD
  # The picoora user's password is the stack's (one for every gateway VM), from the Vault.
  DB_PASSWORD=""
  read_secret "$(setting adb_user_secret)" DB_PASSWORD
  [ -n "$DB_PASSWORD" ] || die "the picoora database password in the Vault is empty"
  ADMIN_PASSWORD="$ADB_ADMIN_PASSWORD" DB_PASSWORD="$DB_PASSWORD" DSN="$(setting adb_dsn)" "$VENV_PYTHON" - <<'PY'
import os
import oracledb

ALREADY_A_USER, SAME_PASSWORD = 1920, 28007  # ORA-01920: made by an earlier run or another gateway VM

def code(exc):
    return getattr(exc.args[0], "code", None) if exc.args else None

password = os.environ["DB_PASSWORD"]  # letters and digits only (terraform): safe inside the quotes
with oracledb.connect(user="ADMIN", password=os.environ["ADMIN_PASSWORD"], dsn=os.environ["DSN"], tcp_connect_timeout=20) as conn:
    cursor = conn.cursor()
    # DDL takes no binds; the password is quoted as an identifier.
    try:
        cursor.execute(f'CREATE USER picoora IDENTIFIED BY "{password}" QUOTA UNLIMITED ON data')
    except oracledb.DatabaseError as exc:
        if code(exc) != ALREADY_A_USER:
            raise
        try:  # the stack's password (an older stack made one per VM), unlocked
            cursor.execute(f'ALTER USER picoora IDENTIFIED BY "{password}" ACCOUNT UNLOCK')
        except oracledb.DatabaseError as again:
            if code(again) != SAME_PASSWORD:  # it has this password already: the profile refuses "reuse"
                raise
            cursor.execute("ALTER USER picoora ACCOUNT UNLOCK")
    cursor.execute("GRANT DB_DEVELOPER_ROLE, CREATE MINING MODEL TO picoora")
print("Database user picoora is ready.")
PY
  unset ADB_ADMIN_PASSWORD
  # Several gateways on one database: a gateway that loses it waits for it (503) rather than fall back
  # to files on its own VM, which would split the data.
  required=false
  [ "$(setting database_required)" != yes ] || required=true
  SECTION=oracle DB_PASSWORD="$DB_PASSWORD" DSN="$(setting adb_dsn)" \
    VALUES="{\"enabled\": true, \"mode\": \"dsn\", \"user\": \"picoora\", \"required\": $required}" \
    FROM_ENV='{"password": "DB_PASSWORD", "dsn": "DSN"}' config_set
  unset DB_PASSWORD
  # The database fetches the embedding model itself, from the address scripts/setup-oracle.sh uses.
  onnx_url="$(sed -n "s/^ONNX_URL_DEFAULT='\(.*\)'$/\1/p" "$SRC/scripts/setup-oracle.sh")"
  status=0
  as_user "$PICOORA" setup-oracle --onnx-url "$onnx_url" || status=$?
  [ "$status" = 0 ] || [ "$status" = 3 ] || die "picoora setup-oracle failed (exit $status)"
else
  step "Starting Oracle AI Database Free in podman (restarted at boot)"
  # Same name, volume and port as scripts/setup-oracle.sh, which then finds it running; created
  # here only to add --restart=always, which podman-restart.service honours after a reboot.
  if ! podman container exists picoora-oracle; then
    retry 3 30 podman pull -q "$ORACLE_IMAGE"
    podman run -d --name picoora-oracle --restart=always -p 127.0.0.1:1521:1521 \
      -e ORACLE_RANDOM_PASSWORD=yes -e ORACLE_CHARACTERSET=AL32UTF8 \
      -v picoora-oracle-data:/opt/oracle/oradata "$ORACLE_IMAGE" >/dev/null
  fi
  systemctl enable podman-restart.service
  # The script generates the picoora user's password and keeps it in config.json only.
  PICOORA_HOME="$PICOORA_HOME" PICOORA="$PICOORA" ORACLE_IMAGE="$ORACLE_IMAGE" bash "$SRC/scripts/setup-oracle.sh"
  chown -R "$RUN_AS:" "$PICOORA_HOME"
fi

# ---- 6. the gateway: token, address, and the unit it prints --------------------------------------
step "Configuring the gateway"
host=127.0.0.1
if [ "$(setting gateway_exposed)" = yes ]; then
  host=0.0.0.0
  if command -v firewall-cmd >/dev/null 2>&1; then  # Oracle Linux images run firewalld
    firewall-cmd -q --permanent --add-port="$(setting gateway_port)/tcp"
    firewall-cmd -q --reload
  fi
fi
SECTION=gateway GATEWAY_TOKEN="$GATEWAY_TOKEN" VALUES="{\"host\": \"$host\", \"port\": $(setting gateway_port)}" \
  FROM_ENV='{"token": "GATEWAY_TOKEN"}' config_set
unset GATEWAY_TOKEN

step "Installing the systemd unit that picoora gateway --print-systemd-unit prints"
if ! as_user "$PICOORA" gateway --print-systemd-unit >"$UNIT.new"; then
  rm -f "$UNIT.new"
  die "this picoora cannot print its gateway unit yet (picoora gateway --print-systemd-unit failed)"
fi
[ -s "$UNIT.new" ] || die "picoora gateway --print-systemd-unit printed nothing"
chmod 644 "$UNIT.new"
mv "$UNIT.new" "$UNIT"
# Start after the model server and the database container (a drop-in: the unit stays as printed).
mkdir -p "$UNIT.d"
printf '[Unit]\nWants=ollama.service\nAfter=ollama.service podman-restart.service\n' >"$UNIT.d/10-picoora-deploy.conf"
chmod 644 "$UNIT.d/10-picoora-deploy.conf"
systemctl daemon-reload
systemctl enable picoora-gateway.service
systemctl restart picoora-gateway.service
retry 30 2 curl -fsS -o /dev/null "http://127.0.0.1:$(setting gateway_port)/health" \
  || die "the gateway does not answer /health (see: journalctl -u picoora-gateway)"

step "picoora is ready"
touch "$SETUP_DIR/done"
