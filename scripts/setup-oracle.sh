#!/usr/bin/env bash
# Start Oracle AI Database Free in a container and make picoora use it. See --help.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: PICO_ORACLE_PASSWORD=... scripts/setup-oracle.sh

Starts Oracle AI Database Free in a container (docker or podman, whichever works), waits until it is
ready, creates the database user picoora with the grants it needs (including CREATE MINING MODEL),
downloads Oracle's augmented all_MiniLM_L12_v2 ONNX embedding model, writes the oracle section of
picoora's config.json and runs `picoora setup-oracle --onnx-file ...`. Safe to run again: what exists
is reused (container, data volume, user, downloaded model, schema).

The picoora database user's password comes from PICO_ORACLE_PASSWORD (never from an argument, which
would show in the process list and your shell history). Without it, the password in config.json is
used: a "${VAR}" reference there is read from that environment variable and left in the file as it is.
Without either, a random one is generated and stored in config.json (readable by you only). The
database's own SYS password is random and never needed: administration goes through the container's
operating-system login.

Environment (defaults in brackets):
  PICO_ORACLE_PASSWORD   the picoora user's password
  PICOORA_HOME           picoora's home [~/.picoora]; config.json lives there
  ORACLE_IMAGE           container image [gvenzl/oracle-free:latest]
  ORACLE_CONTAINER       container name [picoora-oracle]
  ORACLE_VOLUME          data volume [picoora-oracle-data]
  ORACLE_PORT            host port, bound to 127.0.0.1 only [1521]
  ORACLE_USER            database user [picoora]
  ORACLE_READY_TIMEOUT   seconds to wait for the database [600]
  ONNX_URL               where to download the model zip [Oracle's public Object Storage link]
  PICOORA                how to run picoora [picoora, else python3 -m picoora]

Exit status: 0 ready (setup-oracle warnings included), non-zero with a message otherwise.
EOF
}

ONNX_URL_DEFAULT='https://adwc4pm.objectstorage.us-ashburn-1.oci.customer-oci.com/p/TtH6hL2y25EypZ0-rrczRZ1aXp7v1ONbRBfCiT-BDBN8WLKQ3lgyW6RxCfIFLdA6/n/adwc4pm/b/OML-ai-models/o/all_MiniLM_L12_v2_augmented.zip'
IMAGE="${ORACLE_IMAGE:-gvenzl/oracle-free:latest}"
NAME="${ORACLE_CONTAINER:-picoora-oracle}"
VOLUME="${ORACLE_VOLUME:-picoora-oracle-data}"
PORT="${ORACLE_PORT:-1521}"
DB_USER="${ORACLE_USER:-picoora}"
READY_TIMEOUT="${ORACLE_READY_TIMEOUT:-600}"
ONNX_URL="${ONNX_URL:-$ONNX_URL_DEFAULT}"
HOME_DIR="${PICOORA_HOME:-$HOME/.picoora}"
CONFIG="$HOME_DIR/config.json"
MODEL_DIR="$HOME_DIR/models"
MODEL_FILE="$MODEL_DIR/all_MiniLM_L12_v2.onnx"

say() { printf '%s\n' "$*"; }
die() { printf 'setup-oracle.sh: %s\n' "$*" >&2; exit 1; }

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") ;;
  -*) usage >&2; exit 2 ;;
  *) die "the password is not taken as an argument (the process list and shell history would show it): set PICO_ORACLE_PASSWORD" ;;
esac
[[ "$DB_USER" =~ ^[A-Za-z][A-Za-z0-9_]{0,29}$ ]] || die "ORACLE_USER must be a plain identifier"

command -v python3 >/dev/null 2>&1 || die "python3 is needed"

# ---- the password: environment, config (a ${VAR} reference resolved), or a new random one ----------

config_password() {  # the stored value, exactly as written (maybe a ${VAR} reference)
  [ -f "$CONFIG" ] || return 0
  python3 - "$CONFIG" <<'PY'
import json, sys
try:
    print(json.load(open(sys.argv[1], encoding="utf-8")).get("oracle", {}).get("password", ""))
except (OSError, ValueError):
    pass
PY
}

STORED="$(config_password)"
REFERENCE=""
if [[ "$STORED" =~ ^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$ ]]; then
  REFERENCE="${BASH_REMATCH[1]}"
fi
PASSWORD="${PICO_ORACLE_PASSWORD:-}"
if [ -z "$PASSWORD" ] && [ -n "$REFERENCE" ]; then
  PASSWORD="${!REFERENCE:-}"
  [ -n "$PASSWORD" ] || die "config.json's oracle.password refers to \${$REFERENCE}, which is not set: export $REFERENCE=..."
elif [ -z "$PASSWORD" ]; then
  PASSWORD="$STORED"
fi
GENERATED=""
if [ -z "$PASSWORD" ]; then  # said once it is stored (step 4): a run that stops before then stored nothing
  PASSWORD="$(python3 -c 'import secrets; print("Pico" + secrets.token_urlsafe(18).replace("-", "x").replace("_", "y") + "9")')"
  GENERATED=1
fi
case "$PASSWORD" in
  *'"'*|*$'\n'*) die "the password must not contain double quotes or newlines" ;;
esac
[ "${#PASSWORD}" -ge 12 ] || die "use a password of at least 12 characters"

mask() {  # print stdin with the password replaced (in the shell: it never goes on a command line)
  local text
  text="$(cat)"
  printf '%s\n' "${text//"$PASSWORD"/***}"
}

# ---- tools -------------------------------------------------------------------------------------

RUNTIME=""  # inline, not sourced: this script is also downloaded and run on its own (README)
for candidate in docker podman; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" info >/dev/null 2>&1; then
    RUNTIME="$candidate"
    break
  fi
done
[ -n "$RUNTIME" ] || die "neither docker nor podman is installed and running (start the engine, or install podman)"
if [ -n "${PICOORA:-}" ]; then
  read -r -a PICO_CMD <<<"$PICOORA"
elif command -v picoora >/dev/null 2>&1; then
  PICO_CMD=(picoora)
else
  PICO_CMD=(python3 -m picoora)
fi

# ---- 1. the container ---------------------------------------------------------------------------

if "$RUNTIME" container inspect "$NAME" >/dev/null 2>&1; then
  if [ "$("$RUNTIME" container inspect -f '{{.State.Running}}' "$NAME")" != "true" ]; then
    say "Starting the existing container $NAME..."
    "$RUNTIME" start "$NAME" >/dev/null
  else
    say "Container $NAME is running."
  fi
else
  say "Starting $IMAGE as $NAME on 127.0.0.1:$PORT (the first start takes a few minutes)..."
  "$RUNTIME" run -d --name "$NAME" -p "127.0.0.1:$PORT:1521" \
    -e ORACLE_RANDOM_PASSWORD=yes -e ORACLE_CHARACTERSET=AL32UTF8 \
    -v "$VOLUME:/opt/oracle/oradata" "$IMAGE" >/dev/null
fi

say "Waiting for the database to be ready (up to ${READY_TIMEOUT}s)..."
waited=0
until "$RUNTIME" exec "$NAME" healthcheck.sh >/dev/null 2>&1; do
  if [ "$waited" -ge "$READY_TIMEOUT" ]; then
    die "the database was not ready after ${READY_TIMEOUT}s; see: $RUNTIME logs $NAME"
  fi
  sleep 5
  waited=$((waited + 5))
done
say "Database is ready."

# ---- 2. the picoora user (as SYSDBA through the container's OS login; SQL on stdin, output masked) --

sql_output="$("$RUNTIME" exec -i "$NAME" sqlplus -s / as sysdba 2>&1 <<SQL | mask
WHENEVER SQLERROR CONTINUE
SET FEEDBACK OFF ECHO OFF VERIFY OFF DEFINE OFF
ALTER SESSION SET CONTAINER = FREEPDB1;
CREATE USER $DB_USER IDENTIFIED BY "$PASSWORD" DEFAULT TABLESPACE users QUOTA UNLIMITED ON users;
WHENEVER SQLERROR EXIT FAILURE
ALTER USER $DB_USER IDENTIFIED BY "$PASSWORD" ACCOUNT UNLOCK;
GRANT DB_DEVELOPER_ROLE, CREATE MINING MODEL TO $DB_USER;
EXIT
SQL
)" || die "creating database user $DB_USER failed: $sql_output"
if printf '%s' "$sql_output" | grep -q 'ORA-' && ! printf '%s' "$sql_output" | grep -q 'ORA-01920'; then
  die "creating database user $DB_USER failed: $sql_output"
fi
say "Database user $DB_USER is ready (grants: DB_DEVELOPER_ROLE, CREATE MINING MODEL)."

# ---- 3. the ONNX embedding model ----------------------------------------------------------------

if [ -s "$MODEL_FILE" ]; then
  say "ONNX model already downloaded: $MODEL_FILE"
else
  mkdir -p "$MODEL_DIR"
  zip_file="$(mktemp "$MODEL_DIR/model.XXXXXX.zip")"
  trap 'rm -f "$zip_file"' EXIT
  say "Downloading Oracle's augmented all_MiniLM_L12_v2 model (~117 MB)..."
  if command -v curl >/dev/null 2>&1; then
    curl -fL --retry 3 --progress-bar -o "$zip_file" "$ONNX_URL" || die "download failed: $ONNX_URL (set ONNX_URL to another copy)"
  else
    python3 - "$ONNX_URL" "$zip_file" <<'PY' || die "download failed: $ONNX_URL (set ONNX_URL to another copy)"
import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as response, open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(response, out)
PY
  fi
  python3 - "$zip_file" "$MODEL_FILE" <<'PY' || die "the download is not a zip holding an .onnx model"
import os, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as archive:
    name = next(n for n in archive.namelist() if n.endswith(".onnx"))
    with archive.open(name) as src, open(sys.argv[2] + ".part", "wb") as out:
        shutil.copyfileobj(src, out)
os.replace(sys.argv[2] + ".part", sys.argv[2])
PY
  rm -f "$zip_file"
  say "ONNX model saved: $MODEL_FILE"
fi

# ---- 4. picoora's config (snake_case keys, 0600, written atomically) -----------------------------

[ -f "$CONFIG" ] || PICOORA_HOME="$HOME_DIR" "${PICO_CMD[@]}" onboard --non-interactive >/dev/null \
  || die "could not create $CONFIG with: ${PICO_CMD[*]} onboard --non-interactive"
PICO_SETUP_PASSWORD="$PASSWORD" PICO_SETUP_KEEP_REFERENCE="$REFERENCE" python3 - "$CONFIG" "$PORT" "$DB_USER" <<'PY' || die "could not update $CONFIG"
import json, os, sys, tempfile
path, port, user = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(path, encoding="utf-8") as handle:
    data = json.load(handle)
oracle = data.setdefault("oracle", {})
oracle.update({"enabled": True, "mode": "freepdb", "host": "localhost", "port": port, "service": "FREEPDB1",
               "user": user})
if not os.environ["PICO_SETUP_KEEP_REFERENCE"]:  # a ${VAR} reference stays a reference
    oracle["password"] = os.environ["PICO_SETUP_PASSWORD"]
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".config.json.")
with os.fdopen(fd, "w", encoding="utf-8") as out:
    os.fchmod(out.fileno(), 0o600)
    json.dump(data, out, indent=2)
    out.write("\n")
os.replace(tmp, path)
PY
say "Config updated: $CONFIG (oracle.enabled = true, user $DB_USER)."
if [ -n "$GENERATED" ]; then
  say "Generated a password for database user $DB_USER and stored it in $CONFIG (oracle.password, readable by you only)."
fi

# ---- 5. schema, model, self-test, indexes, prompts ------------------------------------------------

status=0
PICOORA_HOME="$HOME_DIR" "${PICO_CMD[@]}" setup-oracle --onnx-file "$MODEL_FILE" || status=$?
case "$status" in
  0|3) ;;  # 3: ready, with warnings printed above
  *) die "picoora setup-oracle failed (exit $status); fix the ✗ line above and run this script again" ;;
esac

cat <<EOF

Try it:
  ${PICO_CMD[*]} agent -m "Remember that my favourite database is Oracle"
  ${PICO_CMD[*]} oracle-inspect
  ${PICO_CMD[*]} oracle-inspect memories -s "database"
Files you used before? ${PICO_CMD[*]} setup-oracle --import-files
EOF
