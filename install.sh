#!/usr/bin/env bash
# Install picoora for the current user, without sudo:  curl -fsSL <repository>/install.sh | bash
# Everything lives in one function called on the last line, so a download cut short runs nothing.
set -euo pipefail

DEFAULT_SOURCE="https://github.com/picoora/picoora/archive/refs/heads/main.tar.gz"

usage() {
  cat <<'EOF'
Usage: install.sh [--from PATH] [--no-onboard]
       install.sh --uninstall [--purge]

Installs picoora into its own virtual environment ($PICOORA_HOME/venv, with uv when it is installed,
else python3 -m venv + pip), links the `picoora` command into ~/.local/bin and runs
`picoora onboard --non-interactive`. Run it again to upgrade: config, workspace and memories are kept.
Needs Python 3.10 or newer; never uses sudo.

Options:
  --from PATH    install from a local checkout (a folder with pyproject.toml) or a wheel (.whl)
                 instead of the project's repository
  --no-onboard   do not run `picoora onboard` (no config or workspace is written)
  --uninstall    remove the program and its link; config and data stay
  --purge        with --uninstall: also delete $PICOORA_HOME (config, workspace, memories)
  -h, --help     this text

Environment (defaults in brackets):
  PICOORA_HOME       picoora's home: config, workspace, store and the venv [~/.picoora]
  PICOORA_BIN_DIR    where the `picoora` link goes [~/.local/bin]
  PICOORA_SOURCE     what pip installs when --from is not given [the repository's main branch]
  PICOORA_INSTALLER  uv or pip, to choose instead of "uv when present" [auto]
  PYTHON             the Python to build the venv with [the newest python3.1x >= 3.10 on PATH]

Curl: pass options after `bash -s --`, e.g.  curl -fsSL .../install.sh | bash -s -- --uninstall
EOF
}

say() { printf '%s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
usage_error() { printf 'install.sh: %s (see: install.sh --help)\n' "$*" >&2; exit 2; }

# The first interpreter that is Python >= 3.10: $PYTHON when set, else the newest on PATH.
find_python() {
  local candidate
  for candidate in ${PYTHON:+"$PYTHON"} python3.14 python3.13 python3.12 python3.11 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
    [ -z "${PYTHON:-}" ] || [ "$candidate" != "$PYTHON" ] || die "PYTHON=$PYTHON is not Python 3.10 or newer"
  done
  # printf, a builtin: this must work with a PATH that holds no tools at all.
  printf '%s\n' "install.sh: picoora needs Python 3.10 or newer, and none is on PATH. Get one, then run this again:" \
    "  Debian/Ubuntu:             sudo apt install python3 python3-venv" \
    "  Fedora/Oracle Linux/RHEL:  sudo dnf install python3.11" \
    "  macOS (Homebrew):          brew install python@3.12" \
    "  or set PYTHON=/path/to/python3.x" >&2
  exit 1
}

choose_installer() {
  case "${PICOORA_INSTALLER:-auto}" in
    uv) command -v uv >/dev/null 2>&1 || die "PICOORA_INSTALLER=uv, but uv is not on PATH"; echo uv ;;
    pip) echo pip ;;
    auto) if command -v uv >/dev/null 2>&1; then echo uv; else echo pip; fi ;;
    *) die "PICOORA_INSTALLER must be uv or pip (got: $PICOORA_INSTALLER)" ;;
  esac
}

# A usable venv is kept (a re-run upgrades in place); one whose Python is gone is made anew.
# Only the program lives in it, so rebuilding it never touches config or data.
prepare_venv() {
  local python="$1" installer="$2"
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c '' >/dev/null 2>&1; then
    if [ "$installer" = uv ] || "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
      return 0
    fi
  fi
  [ ! -e "$VENV" ] || { say "Rebuilding the virtual environment $VENV (it no longer works)."; rm -rf "$VENV"; }
  say "Creating the virtual environment $VENV ($("$python" -V 2>&1))..."
  if [ "$installer" = uv ]; then
    uv venv --quiet --python "$python" "$VENV" || die "uv could not create $VENV"
  elif ! "$python" -m venv "$VENV" >/dev/null 2>&1; then
    rm -rf "$VENV"
    die "$python cannot create virtual environments. Install the venv module (Debian/Ubuntu: sudo apt install python3-venv) or uv, then run this again."
  fi
}

resolve_source() {
  local from="$1"
  if [ -z "$from" ]; then
    printf '%s\n' "${PICOORA_SOURCE:-$DEFAULT_SOURCE}"
  elif [ -d "$from" ]; then
    [ -f "$from/pyproject.toml" ] || die "--from $from: not a picoora checkout (no pyproject.toml in it)"
    (cd "$from" && pwd)
  elif [ -f "$from" ]; then
    case "$from" in *.whl) ;; *) die "--from $from: give a checkout folder or a .whl file" ;; esac
    printf '%s/%s\n' "$(cd "$(dirname "$from")" && pwd)" "$(basename "$from")"
  else
    die "--from $from: no such file or folder"
  fi
}

# The full product: picoora with every optional part (the `all` extra), named the way pip and uv take it
# for a folder or wheel (PATH[all]) and for a URL (picoora[all] @ URL).
with_all_extras() {
  case "$1" in
    *://*) printf 'picoora[all] @ %s\n' "$1" ;;
    *) printf '%s[all]\n' "$1" ;;
  esac
}

# Dependencies are upgraded as needed; picoora itself is always reinstalled from the source, since a
# re-run of the same version (a branch, a checkout) must still bring the new code. pip and uv print
# what they fetch as they go (a first install downloads a few hundred MB).
install_package() {
  local installer="$1" source="$2" upgrading="$3" full
  full="$(with_all_extras "$source")"
  if [ "$upgrading" = yes ]; then say "Upgrading picoora from $source..."; else say "Installing picoora from $source..."; fi
  if [ "$installer" = uv ]; then
    uv pip install --python "$VENV/bin/python" --upgrade --reinstall-package picoora "$full" </dev/null
  else
    "$VENV/bin/python" -m pip install --progress-bar on --disable-pip-version-check --upgrade "$full" </dev/null \
      && { [ "$upgrading" = no ] \
        || "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$source" </dev/null; }
  fi || die "installing picoora from $source failed (see the lines above); your config and data are untouched"
  "$VENV/bin/picoora" --version >/dev/null 2>&1 || die "picoora was installed into $VENV but does not run"
}

# The link is ours when it points into our venv; anything else at that path is the user's.
link_is_ours() {
  [ -L "$LINK" ] && [ "$(readlink "$LINK")" = "$VENV/bin/picoora" ]
}

# Checked before installing anything: a file of the user's at that path is never replaced.
check_link_free() {
  if [ -e "$LINK" ] && [ ! -L "$LINK" ]; then
    die "$LINK exists and is not a link; move it away and run this again"
  fi
}

link_command() {
  mkdir -p "$BIN_DIR"
  ln -sfn "$VENV/bin/picoora" "$LINK"
  say "Linked $LINK -> $VENV/bin/picoora"
}

on_path() {
  case ":$PATH:" in *":$BIN_DIR:"*) return 0 ;; *) return 1 ;; esac
}

# Is Ollama up at the configured address, with the configured model? Prints the one command to run next.
print_next_step() {
  local picoora="picoora"
  on_path || picoora="$LINK"
  PICOORA_HOME="$HOME_DIR" "$VENV/bin/python" - "$picoora" <<'PY' || true
import sys

from picoora.config import ConfigError, load_config
from picoora.llm.base import LLMError
from picoora.llm.ollama_admin import list_models, native_base

picoora = sys.argv[1]
try:
    config = load_config()
except ConfigError as err:
    sys.exit(f"\n{err}\nFix it, then: {picoora} status")
defaults = config.agents.defaults
if defaults.provider != "ollama":
    print(f"\nNext: {picoora} agent -m \"Hello!\"   (provider {defaults.provider}; check it with: {picoora} status)")
    sys.exit()
base = native_base(config.providers.ollama.api_base)
try:
    names = {m.name for m in list_models(base)}
except LLMError:
    print(f"\nOllama does not answer at {base}. Next:\n"
          "  curl -fsSL https://ollama.com/install.sh | sh   (or see https://ollama.com/download)\n"
          f"  ollama pull {defaults.model} && {picoora} agent -m \"Hello!\"")
    sys.exit()
if defaults.model in names or f"{defaults.model}:latest" in names:
    print(f"\nOllama answers at {base} with {defaults.model}. Next: {picoora} agent -m \"Hello!\"")
else:
    print(f"\nOllama answers at {base}, but {defaults.model} is not pulled. Next:\n"
          f"  ollama pull {defaults.model} && {picoora} agent -m \"Hello!\"")
PY
}

do_install() {
  local from="$1" onboard="$2" python installer source upgrading
  python="$(find_python)"
  installer="$(choose_installer)"
  source="$(resolve_source "$from")"
  check_link_free
  mkdir -p "$HOME_DIR"
  chmod 700 "$HOME_DIR"
  prepare_venv "$python" "$installer"
  upgrading=no
  [ ! -x "$VENV/bin/picoora" ] || upgrading=yes
  install_package "$installer" "$source" "$upgrading"
  link_command
  on_path || say "Note: $BIN_DIR is not on your PATH. Add it:  echo 'export PATH=\"$BIN_DIR:\$PATH\"' >> ~/.bashrc"
  if [ "$onboard" = yes ]; then
    local onboarded=0  # 1: set up, but Ollama or the model is missing (the next step says what to do)
    PICOORA_HOME="$HOME_DIR" "$VENV/bin/picoora" onboard --non-interactive </dev/null || onboarded=$?
    [ "$onboarded" -le 1 ] \
      || die "picoora is installed, but \`picoora onboard --non-interactive\` failed (see above)"
  fi
  say "picoora $("$VENV/bin/picoora" --version | head -n 1 | sed 's/^picoora //') is installed."
  [ "$onboard" = no ] || print_next_step
}

do_uninstall() {
  local purge="$1"
  if link_is_ours; then
    rm -f "$LINK"
    say "Removed $LINK"
  fi
  if [ -e "$VENV" ]; then
    rm -rf "$VENV"
    say "Removed $VENV"
  fi
  if [ "$purge" = no ]; then
    [ ! -d "$HOME_DIR" ] || say "Kept your config and data in $HOME_DIR (delete them with: install.sh --uninstall --purge)"
    return 0
  fi
  [ -d "$HOME_DIR" ] || { say "Nothing to purge: $HOME_DIR does not exist."; return 0; }
  local real_home real_user_home
  real_home="$(cd "$HOME_DIR" && pwd -P)"
  real_user_home="$(cd "$HOME" && pwd -P)"
  # A PICOORA_HOME pointed at the wrong folder must not cost the user that folder.
  if [ "$real_home" = / ] || [ "$real_home" = "$real_user_home" ]; then
    die "refusing to delete $HOME_DIR: it is / or your home folder"
  fi
  if [ -n "$(ls -A "$HOME_DIR")" ] && [ ! -e "$HOME_DIR/config.json" ] && [ ! -d "$HOME_DIR/workspace" ]; then
    die "refusing to delete $HOME_DIR: it holds neither config.json nor workspace/, so it may not be picoora's"
  fi
  rm -rf "$HOME_DIR"
  say "Deleted $HOME_DIR (config, workspace, memories)."
}

main() {
  local from="" action=install purge=no onboard=yes
  while [ "$#" -gt 0 ]; do
    case "$1" in
      -h|--help) usage; exit 0 ;;
      --from)
        if [ "$#" -lt 2 ] || [ -z "$2" ]; then usage_error "--from needs a path"; fi
        from="$2"
        shift ;;
      --from=*) from="${1#--from=}"; [ -n "$from" ] || usage_error "--from needs a path" ;;
      --uninstall) action=uninstall ;;
      --purge) purge=yes ;;
      --no-onboard) onboard=no ;;
      *) usage_error "unknown option: $1" ;;
    esac
    shift
  done
  [ "$purge" = no ] || [ "$action" = uninstall ] || usage_error "--purge goes with --uninstall"
  [ "$action" = install ] || [ -z "$from" ] || usage_error "--from goes with installing, not --uninstall"
  [ -n "${HOME:-}" ] || die "HOME is not set"

  HOME_DIR="${PICOORA_HOME:-$HOME/.picoora}"
  case "$HOME_DIR" in /*) ;; *) die "PICOORA_HOME must be an absolute path (got: $HOME_DIR)" ;; esac
  BIN_DIR="${PICOORA_BIN_DIR:-$HOME/.local/bin}"
  case "$BIN_DIR" in /*) ;; *) die "PICOORA_BIN_DIR must be an absolute path (got: $BIN_DIR)" ;; esac
  VENV="$HOME_DIR/venv"
  LINK="$BIN_DIR/picoora"

  if [ "$action" = install ]; then
    do_install "$from" "$onboard"
  else
    do_uninstall "$purge"
  fi
}

main "$@"
