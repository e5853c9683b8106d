# shellcheck shell=bash
# Sourced by the scripts that need root (setup, demo, test). As root they simply go on; otherwise
# they run themselves again through sudo. A fresh Debian/Ubuntu machine used as root has no sudo
# (scripts/setup installs it), so sudo is only ever asked for when it is needed.
# Usage, at the top of a bash script:  source "$(dirname "$0")/lib/as-root.sh"; as_root "$@"

as_root() {
  ((EUID == 0)) && return 0
  local me=${0##*/}
  if ! command -v sudo >/dev/null 2>&1; then
    echo "$me: needs root (network namespaces, apt) and sudo is not installed: run it as root" >&2
    exit 2
  fi
  # sudo resets the environment: keep the caller's PATH (node may be on it only, e.g. from nvm) with
  # root's sbin directories after it (a user's PATH lacks them: runuser, sshd), ibfleet's own
  # variables and the ones that shape output. sudo itself says who asked (SUDO_USER).
  local path=$PATH dir
  for dir in /usr/local/sbin /usr/sbin /sbin; do
    case ":$path:" in *":$dir:"*) ;; *) path=$path:$dir ;; esac
  done
  local keep=("PATH=$path")
  local name
  for name in $(compgen -e); do
    case $name in IBFLEET_* | CI | NO_COLOR | FORCE_COLOR | TERM | COLUMNS | LINES) keep+=("$name=${!name}") ;; esac
  done
  echo "$me: not root; running it through sudo" >&2
  exec sudo -- env "${keep[@]}" bash "$(realpath "$0")" "$@"
}
