#!/usr/bin/env bash
# checkov over deploy/terraform, with the commented skip list in deploy/terraform/.checkov.yaml.
# checkov has ~100 dependencies, so it lives in its own venv in the user's cache (made once, ~35 s;
# a run takes ~5 s). It runs offline: the config turns its platform downloads off.
set -euo pipefail
cd "$(dirname "$0")/.."

CHECKOV_VERSION=3.3.30
venv="${XDG_CACHE_HOME:-$HOME/.cache}/picoora-checkov-$CHECKOV_VERSION"
start=$SECONDS
if [ ! -x "$venv/bin/checkov" ]; then
  echo "check-deploy.sh: installing checkov $CHECKOV_VERSION into $venv (once)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "checkov==$CHECKOV_VERSION"
fi
"$venv/bin/checkov" --directory deploy/terraform --config-file deploy/terraform/.checkov.yaml
echo "check-deploy.sh: checkov passed in $((SECONDS - start)) s"
