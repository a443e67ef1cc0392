# shellcheck shell=bash
# Shared helpers for tools/containerd/{start,stop,restart}.sh. Source it; do not run it.
# Human-readable messages go to stderr; start.sh keeps stdout for the KEY=value env lines.

KTS_TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/lib/common.sh
. "$KTS_TOOLS_DIR/lib/common.sh"

# Paths, all under one root so that stop.sh can remove everything.
kts_init_paths() {
  ROOT=$(kts_safe_root "${KUBELET_TS_CONTAINERD_ROOT:-/tmp/kubelet-ts-containerd}" KUBELET_TS_CONTAINERD_ROOT "containerd root") || exit 1
  SOCK="$ROOT/containerd.sock"
  TTRPC_SOCK="$ROOT/containerd.sock.ttrpc"
  DEBUG_SOCK="$ROOT/debug.sock"
  CONF="$ROOT/config.toml"
  LOG="$ROOT/containerd.log"
  PIDFILE="$ROOT/containerd.pid"
  ENV_FILE="$ROOT/env"
  MARKER="$ROOT/.kubelet-ts-containerd"
  DATA_ROOT="$ROOT/root"
  STATE="$ROOT/state"
  RUNC_ROOT="$STATE/runc"          # runc --root is $RUNC_ROOT/<namespace>
  CRUN_ROOT="$STATE/crun"          # crun --root is $CRUN_ROOT/<namespace> (the `crun` runtime handler)
  CNI_CONF_DIR="$ROOT/cni/net.d"
  CNI_BIN_DIR=${KUBELET_TS_CNI_BIN_DIR:-/usr/lib/cni}
  CNI_IPAM_DIR="$ROOT/cni/ipam"
  CNI_NETWORK_NAME=kubelet-ts
  CNI_BRIDGE=${KUBELET_TS_CNI_BRIDGE:-kts-cni0}
  POD_CIDR=${KUBELET_TS_POD_CIDR:-10.88.0.0/16}
  IMAGES_DIR=${KUBELET_TS_IMAGES_DIR:-$ROOT/images}
  # unix socket paths are limited to 107 bytes
  [ ${#TTRPC_SOCK} -lt 100 ] || kts_die "root path too long for unix sockets: $ROOT"
}

# Is PID a containerd process using our config?
kts_is_our_containerd() {
  local pid=$1 cmd
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || return 1
  case "$cmd" in
    *containerd*--config\ "$CONF"*) return 0 ;;
  esac
  return 1
}

# Print the pid of our running containerd daemon (pid file first, then a /proc scan for
# a containerd whose command line names our config file). Returns 1 when none runs.
kts_daemon_pid() {
  local pid
  if [ -f "$PIDFILE" ]; then
    pid=$(cat "$PIDFILE" 2>/dev/null || true)
    if kts_is_our_containerd "$pid"; then echo "$pid"; return 0; fi
  fi
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = containerd ] || continue
    if kts_is_our_containerd "$pid"; then echo "$pid"; return 0; fi
  done
  return 1
}

kts_ctr() { ctr --address "$SOCK" "$@"; }

kts_is_ready() {
  [ -S "$SOCK" ] || return 1
  timeout 5 ctr --address "$SOCK" version >/dev/null 2>&1 || return 1
  timeout 5 ctr --address "$SOCK" plugins ls 2>/dev/null | grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$'
}

# Start containerd detached (own session, stdio to the log) and wait for readiness.
kts_start_daemon() {
  [ -f "$CONF" ] || kts_die "missing $CONF (run start.sh)"
  kts_log "starting containerd (config $CONF, log $LOG)"
  echo "---- $(date -u +%Y-%m-%dT%H:%M:%SZ) starting containerd" >> "$LOG"
  setsid containerd --config "$CONF" </dev/null >>"$LOG" 2>&1 &
  local pid=$!
  if ! kts_is_our_containerd "$pid"; then
    sleep 0.2
    pid=$(kts_daemon_pid) || { tail -n 30 "$LOG" >&2; kts_die "containerd exited at once (log above)"; }
  fi
  echo "$pid" > "$PIDFILE"
  kts_wait_ready "$pid" "${KUBELET_TS_CONTAINERD_TIMEOUT:-30}"
}

kts_wait_ready() {
  local pid=$1 timeout=$2 start now
  start=$(date +%s%N)
  while :; do
    if kts_is_ready; then
      now=$(date +%s%N)
      kts_log "containerd ready (pid $pid) after $(( (now - start) / 1000000 )) ms"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$LOG" >&2
      kts_die "containerd (pid $pid) died during startup; log above, full log $LOG"
    fi
    now=$(date +%s%N)
    if [ $(( (now - start) / 1000000000 )) -ge "$timeout" ]; then
      tail -n 40 "$LOG" >&2
      if timeout 5 ctr --address "$SOCK" plugins ls >/dev/null 2>&1; then
        ctr --address "$SOCK" plugins ls 2>/dev/null | grep -E 'cri|error' >&2 || true
        kts_die "containerd answers but its CRI plugin is not ok after ${timeout}s (see above and $LOG)"
      fi
      kts_die "containerd not ready after ${timeout}s (log above, full log $LOG)"
    fi
    sleep 0.1
  done
}

# Stop the containerd daemon only (shims and containers keep running): SIGTERM, wait, SIGKILL.
kts_stop_daemon() {
  local pid i
  pid=$(kts_daemon_pid) || { rm -f "$PIDFILE"; return 0; }
  kts_log "stopping containerd (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    # a zombie child of ours counts as gone
    [ "$(awk '/^State:/{print $2}' "/proc/$pid/status" 2>/dev/null)" = Z ] && break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null && [ "$(awk '/^State:/{print $2}' "/proc/$pid/status" 2>/dev/null)" != Z ]; then
    kts_log "containerd did not exit after 10 s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$PIDFILE"
}
