# shellcheck shell=bash
# Helpers shared by the scripts under tools/ (containerd, kube). Source it; do not run it.
# Human-readable messages go to stderr; scripts keep stdout for KEY=value lines.

export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}"

kts_log() { echo "[$(basename "$0")] $*" >&2; }
kts_die() { echo "[$(basename "$0")] error: $*" >&2; exit 1; }

# A root directory a script may create and later remove whole: absolute and not a system directory.
# Prints it without a trailing slash. kts_safe_root VALUE VARIABLE_NAME WHAT
kts_safe_root() {
  local given=$1 variable=$2 what=$3 root
  case "$given" in
    /*) ;;
    *) kts_die "$variable must be an absolute path (got '$given')" ;;
  esac
  root=${given%/}
  case "$root" in
    ''|/tmp|/var|/run|/usr|/etc|/home|/root) kts_die "refusing to use '$given' as the $what ($variable)" ;;
  esac
  echo "$root"
}

kts_require_root() {
  [ "$(id -u)" = 0 ] || kts_die "must run as root (${1:-apt-get, containerd, runc, mounts and CNI need it})"
}

# Install Debian packages that are missing (idempotent, non-interactive, no stdin needed). The package lists are
# refreshed once per script when something is missing, or when KTS_FORCE_APT_UPDATE=1 (after adding a source).
KTS_APT_UPDATED=""
kts_ensure_packages() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && [ "${KTS_FORCE_APT_UPDATE:-}" != 1 ] && return 0
  command -v apt-get >/dev/null 2>&1 || kts_die "missing packages (${missing[*]}) and no apt-get: install them by hand"
  export DEBIAN_FRONTEND=noninteractive
  if [ -z "$KTS_APT_UPDATED" ]; then
    apt-get update -q -o DPkg::Lock::Timeout=300 </dev/null >&2 || kts_die "apt-get update failed"
    KTS_APT_UPDATED=1
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  kts_log "installing ${missing[*]} (apt-get)"
  # Another script's apt-get may hold the dpkg lock for a while: wait for it rather than fail.
  apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}" </dev/null >&2 || kts_die "apt-get install ${missing[*]} failed"
}
