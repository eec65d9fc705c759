#!/usr/bin/env bash
# The first live run, in one command: Oracle AI Database Free in a throw-away container, then picoora's
# live tier against it. See --help.
set -euo pipefail
SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  cat <<'EOF'
Usage: scripts/oracle-live-check.sh [--keep] [--require]

Starts gvenzl/oracle-free in a throw-away container (docker or podman) with an application user, waits
until that user can log in, fetches Oracle's augmented all_MiniLM_L12_v2 ONNX model (once; cached), and
runs the live tier (pytest -m oracle tests/oracle/test_live.py): the store contract, setup-oracle end to
end, and the checks of issue 11 on a real database: TIMESTAMP precision, 1000-character and non-ASCII
keys, multibyte embedding text, a pasted paragraph in keyword recall, an 8 KB prompt and a 100 KB tool
result in CLOBs, None into VECTOR, the missing-model error code, and EXPLAIN PLAN showing the vector
index on 2000 rows after a rebuild; and the fleet checks of issue 25: leases on the database clock, two
holders of a session row with a timeout (ORA-30006), a multi-byte value in a MERGE, a 2,000-message
import, the vector index's INDEX_SUBTYPE, an index build (ONLINE where taken) during inserts, and a text
index marked unusable (the scan answers, the rebuilt index is used again). Then prints the calibration
grid of automatic recall's push rule for the in-database model (bench/oracle_calibrate.py: the line to
paste into ranking.ORACLE_PUSH).

Without a container engine the check is skipped (exit 0, a SKIPPED line); --require (or
PICO_TEST_ORACLE_REQUIRED=1) makes that, and every skipped live test, a failure. --keep leaves the
container running for inspection (it is removed otherwise).

Environment (defaults in brackets):
  ORACLE_IMAGE            [gvenzl/oracle-free:latest]   (not a "slim" tag: Oracle Text is needed)
  ORACLE_CONTAINER        [picoora-live-check]
  ORACLE_PORT             host port, bound to 127.0.0.1 [1522]
  ORACLE_READY_TIMEOUT    seconds [900]
  PICO_TEST_ORACLE_PASSWORD  the application user's password [random]
  PICO_TEST_ORACLE_ONNX_FILE an all_MiniLM_L12_v2.onnx already on disk [~/.picoora/models/...]
  ONNX_URL                where to download the model zip [Oracle's public Object Storage link]
  PYTHON                  the interpreter with picoora and its test extra [.venv/bin/python]
EOF
}

KEEP=0
REQUIRE="${PICO_TEST_ORACLE_REQUIRED:-0}"
for arg in "$@"; do
  case "$arg" in
    -h|--help) usage; exit 0 ;;
    --keep) KEEP=1 ;;
    --require) REQUIRE=1 ;;
    *) usage >&2; exit 2 ;;
  esac
done

cd "$SCRIPTS_DIR/.."
ONNX_URL_DEFAULT='https://adwc4pm.objectstorage.us-ashburn-1.oci.customer-oci.com/p/TtH6hL2y25EypZ0-rrczRZ1aXp7v1ONbRBfCiT-BDBN8WLKQ3lgyW6RxCfIFLdA6/n/adwc4pm/b/OML-ai-models/o/all_MiniLM_L12_v2_augmented.zip'
IMAGE="${ORACLE_IMAGE:-gvenzl/oracle-free:latest}"
NAME="${ORACLE_CONTAINER:-picoora-live-check}"
PORT="${ORACLE_PORT:-1522}"
READY_TIMEOUT="${ORACLE_READY_TIMEOUT:-900}"
ONNX_URL="${ONNX_URL:-$ONNX_URL_DEFAULT}"
PYTHON="${PYTHON:-.venv/bin/python}"
MODEL_FILE="${PICO_TEST_ORACLE_ONNX_FILE:-$HOME/.picoora/models/all_MiniLM_L12_v2.onnx}"
APP_USER=picoora_live

say() { printf '%s\n' "$*"; }
die() { printf 'oracle-live-check.sh: %s\n' "$*" >&2; exit 1; }
skip() {
  if [ "$REQUIRE" = 1 ]; then die "$1 (--require: a skip is a failure)"; fi
  say "SKIPPED: $1"
  exit 0
}

RUNTIME="$(for c in docker podman; do command -v "$c" >/dev/null 2>&1 && "$c" info >/dev/null 2>&1 && { echo "$c"; break; }; done || true)"
[ -n "$RUNTIME" ] || skip "no container engine answers (docker or podman); the live tier needs one to run $IMAGE"
[ -x "$PYTHON" ] || command -v "$PYTHON" >/dev/null 2>&1 || die "no $PYTHON: python3 -m venv .venv && .venv/bin/pip install -e '.[test]'"

PASSWORD="${PICO_TEST_ORACLE_PASSWORD:-}"
if [ -z "$PASSWORD" ]; then
  PASSWORD="$("$PYTHON" -c 'import secrets; print("Live" + secrets.token_urlsafe(18).replace("-", "x").replace("_", "y") + "7")')"
fi
export PICO_TEST_ORACLE_PASSWORD="$PASSWORD" APP_USER_PASSWORD="$PASSWORD"  # by name only: never on a command line
export PICO_TEST_ORACLE_DSN="localhost:$PORT/FREEPDB1" PICO_TEST_ORACLE_USER="$APP_USER"

cleanup() {
  if [ "$KEEP" = 1 ]; then
    say "Container $NAME left running (--keep): $RUNTIME rm -f $NAME"
  else
    "$RUNTIME" rm -f "$NAME" >/dev/null 2>&1 || true
  fi
}
"$RUNTIME" rm -f "$NAME" >/dev/null 2>&1 || true
trap cleanup EXIT

# ---- 1. the database, with an application user (DB_DEVELOPER_ROLE includes CREATE MINING MODEL) ----

say "Starting $IMAGE as $NAME on 127.0.0.1:$PORT..."
"$RUNTIME" run -d --name "$NAME" -p "127.0.0.1:$PORT:1521" -e ORACLE_RANDOM_PASSWORD=yes \
  -e APP_USER="$APP_USER" -e APP_USER_PASSWORD "$IMAGE" >/dev/null

# The health check passes once the PDB is open, which can be before the entrypoint has created the
# application user; so wait for the user itself to log in.
say "Waiting until $APP_USER can log in (up to ${READY_TIMEOUT}s; the first start takes minutes)..."
"$PYTHON" - "$READY_TIMEOUT" <<'PY' || die "the database did not accept $APP_USER in time; see: $RUNTIME logs $NAME"
import os, sys, time
import oracledb

deadline = time.monotonic() + float(sys.argv[1])
while True:
    try:
        oracledb.connect(user=os.environ["PICO_TEST_ORACLE_USER"], password=os.environ["PICO_TEST_ORACLE_PASSWORD"],
                         dsn=os.environ["PICO_TEST_ORACLE_DSN"], tcp_connect_timeout=5).close()
        break
    except oracledb.Error as exc:
        if time.monotonic() > deadline:
            print(f"last error: {exc}", file=sys.stderr)
            sys.exit(1)
        time.sleep(5)
PY
say "Database is ready."

# ---- 2. the ONNX model ------------------------------------------------------------------------------

if [ ! -s "$MODEL_FILE" ]; then
  mkdir -p "$(dirname "$MODEL_FILE")"
  say "Downloading Oracle's augmented all_MiniLM_L12_v2 model (~117 MB) to $MODEL_FILE..."
  "$PYTHON" - "$ONNX_URL" "$MODEL_FILE" <<'PY' || die "download failed: $ONNX_URL (set ONNX_URL or PICO_TEST_ORACLE_ONNX_FILE)"
import io, os, shutil, sys, urllib.request, zipfile
url, target = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(url, timeout=120) as response:
    archive = zipfile.ZipFile(io.BytesIO(response.read()))
name = next(n for n in archive.namelist() if n.endswith(".onnx"))
with archive.open(name) as src, open(target + ".part", "wb") as out:
    shutil.copyfileobj(src, out)
os.replace(target + ".part", target)
PY
fi
export PICO_TEST_ORACLE_ONNX_FILE="$MODEL_FILE"

# ---- 3. the live tier -------------------------------------------------------------------------------

say "Running the live tier against $PICO_TEST_ORACLE_DSN..."
PICO_TEST_ORACLE_REQUIRED=1 "$PYTHON" -m pytest -m oracle tests/oracle/test_live.py -ra

# ---- 4. the push calibration of automatic recall on this database (ranking.ORACLE_PUSH) ---------------

say "Measuring automatic recall's push rule on the in-database model (bench/oracle_calibrate.py)..."
"$PYTHON" bench/oracle_calibrate.py
