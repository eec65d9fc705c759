#!/usr/bin/env bash
# Build the Resource Manager stack zip behind the README's "Deploy to Oracle Cloud" button:
#   deploy/build-stack-zip.sh [OUT]     (default: dist/picoora-oci-stack.zip)
# The zip holds the Terraform files, the cloud-init template, the VM set-up script and schema.yaml
# at its top level, as Resource Manager expects. Publish it as a release asset named like OUT.
set -euo pipefail

case "${1:-}" in
  -h | --help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/dist/picoora-oci-stack.zip}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
mkdir -p "$(dirname "$out")"

cd "$repo/deploy/terraform"
files=(*.tf cloud-init.yaml.tftpl schema.yaml scripts/setup.sh)
for file in "${files[@]}"; do
  [ -f "$file" ] || { echo "build-stack-zip.sh: missing deploy/terraform/$file" >&2; exit 1; }
done
# Same bytes for the same sources: fixed timestamps and modes, sorted names.
python3 - "$out" "${files[@]}" <<'PY'
import os, sys, zipfile
out, names = sys.argv[1], sorted(sys.argv[2:])
tmp = out + ".part"
with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
    for name in names:
        info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = (0o755 if name.endswith(".sh") else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        with open(name, "rb") as handle:
            archive.writestr(info, handle.read())
os.replace(tmp, out)
PY
echo "Wrote $out (${#files[@]} files)"
