# shellcheck shell=bash
# Sourced by the Oracle scripts: container_runtime prints the first of docker and podman whose engine
# answers (nothing when none does). Not executable on its own.
container_runtime() {
  local candidate
  for candidate in docker podman; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" info >/dev/null 2>&1; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
}
