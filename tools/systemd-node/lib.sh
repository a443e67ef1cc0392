# shellcheck shell=bash
# Shared helpers for tools/systemd-node/{start,stop,join}.sh. Source it; do not run it.
# Human-readable messages go to stderr; start.sh keeps stdout for the KEY=value env lines.

KTS_TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The repository, bound into the node at the same path (the kubelet wrapper and the tests run its code from there),
# wherever it is checked out.
KTS_REPO_DIR=$(cd "$KTS_TOOLS_DIR/.." && pwd)
# shellcheck source=tools/lib/common.sh
. "$KTS_TOOLS_DIR/lib/common.sh"

# Every v1 hierarchy this machine kind mounts (cpu and cpuacct are separate mounts here), name=systemd's at
# /sys/fs/cgroup/systemd, and the cgroup2 mount at /sys/fs/cgroup/unified.
KTS_SD_HIERARCHIES="memory cpu cpuacct cpuset pids blkio devices freezer systemd unified"
# The v1 controller hierarchies nspawn mounts read-only inside (name=systemd and unified are rw already).
KTS_SD_CONTROLLERS="memory cpu cpuacct cpuset pids blkio devices freezer"

kts_sd_init_paths() {
  ROOT=$(kts_safe_root "${KUBELET_TS_SYSTEMD_NODE_ROOT:-/tmp/kubelet-ts-systemd-node}" KUBELET_TS_SYSTEMD_NODE_ROOT "systemd node root") || exit 1
  MACHINE=${KUBELET_TS_SYSTEMD_NODE_MACHINE:-kts-sd-node}
  # nspawn names the host end of --network-veth "ve-<machine>" when that fits in an interface name (15 bytes).
  case "$MACHINE" in
    *[!a-z0-9-]*|-*|'') kts_die "KUBELET_TS_SYSTEMD_NODE_MACHINE must be lowercase letters, digits and '-' (got '$MACHINE')" ;;
  esac
  [ ${#MACHINE} -le 12 ] || kts_die "KUBELET_TS_SYSTEMD_NODE_MACHINE '$MACHINE' is longer than 12 characters (the host veth ve-<machine> must fit 15)"
  VETH="ve-$MACHINE"
  # The cgroup the container is booted in, in every hierarchy: its cgroup-namespace root inside.
  CGROUP=${KUBELET_TS_SYSTEMD_NODE_CGROUP:-kts-systemd-node}
  case "$CGROUP" in kts-*) ;; *) kts_die "KUBELET_TS_SYSTEMD_NODE_CGROUP must start with kts- (got '$CGROUP')" ;; esac
  # A /30 between the host (ve-<machine>) and the node (host0).
  HOST_IP=${KUBELET_TS_SYSTEMD_NODE_HOST_IP:-10.99.0.1}
  NODE_IP=${KUBELET_TS_SYSTEMD_NODE_IP:-10.99.0.2}
  NET_PREFIX=30
  POD_CIDR=${KUBELET_TS_SYSTEMD_NODE_POD_CIDR:-10.89.0.0/16}
  CNI_BRIDGE=${KUBELET_TS_SYSTEMD_NODE_CNI_BRIDGE:-kts-sd0}
  # The cgroup driver of the node's containerd (SystemdCgroup) and, by default, of the kubelet join.sh sets up.
  CGROUP_DRIVER=${KUBELET_TS_SYSTEMD_NODE_CGROUP_DRIVER:-systemd}
  case "$CGROUP_DRIVER" in
    systemd) SYSTEMD_CGROUP=true ;;
    cgroupfs) SYSTEMD_CGROUP=false ;;
    *) kts_die "KUBELET_TS_SYSTEMD_NODE_CGROUP_DRIVER must be systemd or cgroupfs (got '$CGROUP_DRIVER')" ;;
  esac
  APISERVER_PORT=${KUBELET_TS_APISERVER_PORT:-6443}
  LOG="$ROOT/nspawn.log"
  NSPAWN_PIDFILE="$ROOT/nspawn.pid"
  RELAY_PIDFILE="$ROOT/relay.pid"
  RELAY_LOG="$ROOT/relay.log"
  APISERVER_SOCK="$ROOT/apiserver.sock"
  CONTAINERD_CONF="$ROOT/containerd/config.toml"
  CNI_CONF_DIR="$ROOT/cni/net.d"
  BIN_DIR="$ROOT/bin"
  # built once per machine (tools/images/build-images.sh skips an up-to-date build), outside ROOT
  IMAGES_DIR=${KUBELET_TS_IMAGES_DIR:-/var/cache/kubelet-ts/systemd-node-images}
  ENV_FILE="$ROOT/env"
  MARKER="$ROOT/.kubelet-ts-systemd-node"
  # inside the node
  INNER_CONTAINERD_SOCK=/run/containerd/containerd.sock
}

# The pid of our systemd-nspawn (pid file, checked against its command line). Returns 1 when none runs.
kts_sd_nspawn_pid() {
  local pid cmd
  [ -f "$NSPAWN_PIDFILE" ] || return 1
  pid=$(cat "$NSPAWN_PIDFILE" 2>/dev/null || true)
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || return 1
  case "$cmd" in
    *systemd-nspawn*" -M $MACHINE "*) [ "$(awk '/^State:/{print $2}' "/proc/$pid/status" 2>/dev/null)" != Z ] && echo "$pid" && return 0 ;;
  esac
  return 1
}

# The pid (on the host) of the systemd that nspawn booted: nspawn's child. Returns 1 when there is none yet.
kts_sd_inner_pid() {
  local nspawn child
  nspawn=$(kts_sd_nspawn_pid) || return 1
  for child in $(cat "/proc/$nspawn/task/$nspawn/children" 2>/dev/null); do
    if [ "$(cat "/proc/$child/comm" 2>/dev/null)" = systemd ]; then echo "$child"; return 0; fi
  done
  return 1
}

# Run a command inside the node (all its namespaces). The process stays in the caller's cgroups.
kts_sd_in() {
  local pid=$1; shift
  nsenter -t "$pid" -a "$@"
}

kts_sd_relay_pid() {
  local pid
  [ -f "$RELAY_PIDFILE" ] || return 1
  pid=$(cat "$RELAY_PIDFILE" 2>/dev/null || true)
  [ -n "$pid" ] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--listen unix:$APISERVER_SOCK" && echo "$pid"
}

# The host's system bus, which systemd-nspawn talks to (without it, and without --keep-unit, it refuses to start).
# Only a `dbus-daemon --system` counts: the private buses of the D-Bus tests (dbus-daemon --config-file=...) may run
# at the same time and must not be taken for it.
kts_sd_ensure_system_bus() {
  if [ -S /run/dbus/system_bus_socket ] && pgrep -f '^dbus-daemon --system' >/dev/null; then return 0; fi
  mkdir -p /run/dbus
  if ! pgrep -f '^dbus-daemon --system' >/dev/null; then
    rm -f /run/dbus/pid /run/dbus/system_bus_socket
    dbus-daemon --system --fork || kts_die "dbus-daemon --system --fork failed"
  fi
}

# kts_sd_remove_cgroups CGROUP HIERARCHY...: kills what is left in /CGROUP of each hierarchy (5 passes), then removes
# its directories deepest first. Returns 1 (and says which) when one could not be removed.
kts_sd_remove_cgroups() {
  local cgroup=$1 attempt left dir h p failed=0
  shift
  for attempt in 1 2 3 4 5; do
    left=()
    for h in "$@"; do
      dir="/sys/fs/cgroup/$h/$cgroup"
      [ -d "$dir" ] || continue
      while IFS= read -r p; do [ -n "$p" ] && left+=("$p"); done < <(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null)
    done
    [ ${#left[@]} -eq 0 ] && break
    mapfile -t left < <(printf '%s\n' "${left[@]}" | sort -un)
    kts_log "killing processes left in /$cgroup (attempt $attempt): ${left[*]}"
    kill -KILL "${left[@]}" 2>/dev/null || true
    sleep 0.2
  done
  for h in "$@"; do
    dir="/sys/fs/cgroup/$h/$cgroup"
    [ -d "$dir" ] || continue
    for _ in $(seq 1 20); do
      find "$dir" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      [ -d "$dir" ] || break
      sleep 0.1
    done
    if [ -d "$dir" ]; then kts_log "error: could not remove $dir: $(find "$dir" -depth -type d | head -n 3 | tr '\n' ' ')"; failed=1; fi
  done
  return $failed
}

# kts_sd_wait_running PID TIMEOUT: the systemd inside ($MACHINE, booted with its output in $LOG) must reach `running`;
# `degraded` is an error, with the failed units shown.
kts_sd_wait_running() {
  local pid=$1 timeout=$2 start state
  start=$(date +%s)
  while :; do
    state=$(kts_sd_in "$pid" systemctl is-system-running 2>/dev/null || true)
    case "$state" in
      running) return 0 ;;
      degraded)
        kts_sd_in "$pid" systemctl --failed --no-pager >&2 || true
        kts_die "systemd in $MACHINE is degraded (failed units above; journal: nsenter -t $pid -a journalctl -b)" ;;
    esac
    if [ $(( $(date +%s) - start )) -ge "$timeout" ]; then
      kts_sd_in "$pid" systemctl list-jobs --no-pager >&2 || true
      kts_die "systemd in $MACHINE is '$state' after ${timeout}s, not running (pending jobs above)"
    fi
    kts_sd_nspawn_pid >/dev/null || { tail -n 30 "$LOG" >&2; kts_die "the container exited while booting (log above)"; }
    sleep 0.2
  done
}

# kts_sd_launch_in "CGROUP_PROCS_FILES" CMD... &: becomes CMD (in a new session) after moving itself into each of the
# given cgroup.procs files, so the container never starts in a cgroup of the machine's. Call it in the background:
# it execs, so $! is CMD's pid.
kts_sd_launch_in() {
  local procs=$1
  shift
  exec setsid sh -c '
    for f in '"$procs"'; do echo $$ > "$f" || { echo "cannot move the launcher into $f" >&2; exit 1; }; done
    exec "$@"' launcher "$@"
}

# kts_sd_wait_for_systemd: waits up to 10 s for the systemd inside $MACHINE to exist; dies with nspawn's output ($LOG)
# when nspawn exits or no systemd comes.
kts_sd_wait_for_systemd() {
  local i
  for i in $(seq 1 100); do
    kts_sd_inner_pid >/dev/null && return 0
    kts_sd_nspawn_pid >/dev/null || { cat "$LOG" >&2; kts_die "systemd-nspawn exited during start (its output above, $LOG)"; }
    sleep 0.1
  done
  cat "$LOG" >&2
  kts_die "systemd-nspawn started no systemd within 10 s (output above)"
}

# kts_sd_controllers_rw PID: nspawn mounts the v1 controller hierarchies read-only (the container may not manage
# them); hands them to the systemd inside (they are rooted at our kts- cgroup) and makes it probe them again
# (daemon-reexec), so it manages memory, cpu and pids (see README "Why the remount").
kts_sd_controllers_rw() {
  local pid=$1 c changed=0 i
  for c in $KTS_SD_CONTROLLERS; do
    if kts_sd_in "$pid" findmnt -n -o OPTIONS "/sys/fs/cgroup/$c" | grep -qE '(^|,)ro(,|$)'; then
      kts_sd_in "$pid" mount -o remount,bind,rw "/sys/fs/cgroup/$c" || kts_die "inside $MACHINE: mount -o remount,bind,rw /sys/fs/cgroup/$c failed"
      changed=1
    fi
  done
  [ $changed = 1 ] || return 0
  kts_sd_in "$pid" systemctl daemon-reexec || kts_die "inside $MACHINE: systemctl daemon-reexec failed"
  for i in $(seq 1 50); do kts_sd_in "$pid" systemctl is-system-running >/dev/null 2>&1 && return 0; sleep 0.1; done
  kts_die "inside $MACHINE: systemd is not running again 5 s after daemon-reexec"
}
