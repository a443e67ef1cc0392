#!/usr/bin/env bash
# A bare systemd node: Debian's systemd 252 booted with systemd-nspawn (the host's /usr, --volatile=yes), with no
# network, no containerd and no kubelet: only systemd and its system bus, for testing the systemd cgroup driver at
# the library level (packages/container-manager/test/real-systemd.test.ts).
#
#   bare.sh start --unified   systemd on a pure cgroup2 hierarchy (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1), rooted in
#                             our /sys/fs/cgroup/unified/kts-systemd-v2 (machine kts-sd-v2)
#   bare.sh start --hybrid    systemd in the host's hybrid layout (v1 controllers + name=systemd + an empty cgroup2),
#                             rooted in our kts-systemd-v1 of every hierarchy, the v1 controllers handed to it
#                             read-write as tools/systemd-node/start.sh does (machine kts-sd-v1)
#   bare.sh stop --unified|--hybrid
#
# Separate machine names, root dirs and cgroups from start.sh's node (kts-sd-node), so both can run at once.
# start prints KEY=value env lines on stdout (also written to $ROOT/env); human messages go to stderr. Idempotent.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { kts_die "usage: $(basename "$0") start|stop --unified|--hybrid"; }
[ $# -eq 2 ] || usage
ACTION=$1
case "$2" in
  --unified) MODE=unified; SUFFIX=v2 ;;
  --hybrid) MODE=hybrid; SUFFIX=v1 ;;
  *) usage ;;
esac
case "$ACTION" in start|stop) ;; *) usage ;; esac
kts_require_root "systemd-nspawn and cgroups need it"

ROOT=$(kts_safe_root "${KUBELET_TS_SYSTEMD_BARE_ROOT:-/tmp/kubelet-ts-systemd-bare}-$SUFFIX" KUBELET_TS_SYSTEMD_BARE_ROOT "bare systemd node root") || exit 1
MACHINE=kts-sd-$SUFFIX
CGROUP=${KUBELET_TS_SYSTEMD_BARE_CGROUP:-kts-systemd}-$SUFFIX
case "$CGROUP" in kts-*) ;; *) kts_die "KUBELET_TS_SYSTEMD_BARE_CGROUP must start with kts- (got '$CGROUP')" ;; esac
LOG="$ROOT/nspawn.log"
NSPAWN_PIDFILE="$ROOT/nspawn.pid"
ENV_FILE="$ROOT/env"
MARKER="$ROOT/.kubelet-ts-systemd-bare"
# unified: only the cgroup2 mount (the container's cgroups) and name=systemd (nspawn on a hybrid host finds its own
# cgroup there: it must not be the machine's root). hybrid: every hierarchy, as start.sh.
if [ "$MODE" = unified ]; then HIERARCHIES="unified systemd"; else HIERARCHIES=$KTS_SD_HIERARCHIES; fi
T0=$(date +%s%N)
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

stop() {
  local nspawn pid h dir failed=0
  if nspawn=$(kts_sd_nspawn_pid); then
    if pid=$(kts_sd_inner_pid); then
      kts_sd_in "$pid" systemctl poweroff --no-block >/dev/null 2>&1 || kill -RTMIN+4 "$pid" 2>/dev/null || true
    fi
    for _ in $(seq 1 200); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$nspawn" 2>/dev/null; then
      kts_log "$MACHINE did not power off within 20 s; SIGKILL to systemd-nspawn (pid $nspawn)"
      kill -KILL "$nspawn" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
  rm -f "$NSPAWN_PIDFILE"
  kts_sd_remove_cgroups "$CGROUP" $HIERARCHIES || failed=1
  if [ -d "$ROOT" ]; then
    if [ -f "$MARKER" ]; then rm -rf --one-file-system "$ROOT" || { kts_log "error: could not remove $ROOT"; failed=1; }
    else kts_log "$ROOT has no marker from bare.sh; left in place"; fi
  fi
  [ $failed = 0 ] || kts_die "could not clean up $MACHINE completely (see above)"
  kts_log "stopped and removed $MACHINE in $(ms_since "$T0") ms"
}

if [ "$ACTION" = stop ]; then stop; exit 0; fi

kts_ensure_packages systemd systemd-container dbus-daemon util-linux
for b in systemd-nspawn nsenter; do command -v "$b" >/dev/null 2>&1 || kts_die "'$b' not found on PATH after installing packages"; done
for h in $HIERARCHIES; do
  [ -d "/sys/fs/cgroup/$h" ] || kts_die "/sys/fs/cgroup/$h is not mounted: this script expects the hybrid v1 layout of this machine kind"
done
kts_sd_ensure_system_bus

boot() {
  [ -e "$ROOT" ] && [ ! -f "$MARKER" ] && kts_die "$ROOT exists and was not made by this script; choose another KUBELET_TS_SYSTEMD_BARE_ROOT"
  mkdir -p "$ROOT" && : > "$MARKER" && : > "$LOG"
  local h dir paths=""
  for h in $HIERARCHIES; do
    dir="/sys/fs/cgroup/$h/$CGROUP"
    [ -d "$dir" ] || mkdir "$dir" || kts_die "mkdir $dir failed"
    paths="$paths $dir/cgroup.procs"
  done
  if [ "$MODE" = hybrid ]; then
    local cs=/sys/fs/cgroup/cpuset
    [ -n "$(tr -d '[:space:]' < "$cs/$CGROUP/cpuset.cpus")" ] || cat "$cs/cpuset.cpus" > "$cs/$CGROUP/cpuset.cpus"
    [ -n "$(tr -d '[:space:]' < "$cs/$CGROUP/cpuset.mems")" ] || cat "$cs/cpuset.mems" > "$cs/$CGROUP/cpuset.mems"
  fi
  # unified: SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 mounts a cgroup2 at the container's /sys/fs/cgroup (its cgroup
  # namespace rooted at our cgroup); hybrid: unset, nspawn follows the host's layout.
  local unified_env=(-u SYSTEMD_NSPAWN_UNIFIED_HIERARCHY)
  [ "$MODE" = unified ] && unified_env=(SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1)
  kts_sd_launch_in "$paths" \
    env "${unified_env[@]}" systemd-nspawn -D / --volatile=yes --register=no --keep-unit --console=passive -M "$MACHINE" \
      --private-network --resolv-conf=off --timezone=off --bind="$KTS_REPO_DIR" \
      -b systemd.firstboot=off systemd.mask=etcd.service systemd.mask=containerd.service systemd.mask=kubelet.service \
      systemd.mask=systemd-networkd.service systemd.mask=systemd-networkd-wait-online.service systemd.mask=systemd-resolved.service \
    </dev/null >>"$LOG" 2>&1 &
  echo $! > "$NSPAWN_PIDFILE"
  kts_sd_wait_for_systemd
}


if ! pid=$(kts_sd_inner_pid); then
  kts_log "booting systemd in $MACHINE ($MODE, log $LOG)"
  boot
  pid=$(kts_sd_inner_pid)
fi
nspawn=$(kts_sd_nspawn_pid)
bad=$(awk -F: -v cg="/$CGROUP" -v hs=" $HIERARCHIES " '{
  h = ($2 == "") ? "unified" : ($2 == "name=systemd" ? "systemd" : $2)
  if (index(hs, " " h " ") && $3 != cg && index($3, cg "/") != 1) print }' "/proc/$pid/cgroup")
[ -z "$bad" ] || kts_die "the systemd of $MACHINE (pid $pid) is not under /$CGROUP: $bad"
kts_sd_wait_running "$pid" "${KUBELET_TS_SYSTEMD_NODE_TIMEOUT:-60}"
[ "$MODE" = hybrid ] && kts_sd_controllers_rw "$pid"
# The host directory of the node's cgroup root ("/" inside): where its systemd sits, without /init.scope.
if [ "$MODE" = unified ]; then
  inner=$(awk -F: '$1 == 0 { print $3 }' "/proc/$pid/cgroup"); cg_root="/sys/fs/cgroup/unified${inner%/init.scope}"
  [ -f "/proc/$pid/root/sys/fs/cgroup/cgroup.controllers" ] || kts_die "$MACHINE has no cgroup2 at /sys/fs/cgroup (SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 was not honoured)"
else
  inner=$(awk -F: '$2 == "memory" { print $3 }' "/proc/$pid/cgroup"); cg_root="/sys/fs/cgroup/memory${inner%/init.scope}"
fi
env=$(cat <<ENV
SYSTEMD_BARE_MODE=$MODE
SYSTEMD_BARE_ROOT=$ROOT
SYSTEMD_BARE_MACHINE=$MACHINE
SYSTEMD_BARE_PID=$pid
SYSTEMD_BARE_NSPAWN_PID=$nspawn
SYSTEMD_BARE_CGROUP=/$CGROUP
SYSTEMD_BARE_HOST_CGROUP_ROOT=$cg_root
ENV
)
printf '%s\n' "$env" > "$ENV_FILE.tmp" && mv -f "$ENV_FILE.tmp" "$ENV_FILE"
printf '%s\n' "$env"
kts_log "$MACHINE ($MODE) running in $(ms_since "$T0") ms (systemd pid $pid); env in $ENV_FILE"
