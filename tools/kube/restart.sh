#!/usr/bin/env bash
# Restarts one control-plane component with the command line it was started with:
#   tools/kube/restart.sh kube-apiserver [DOWN_SECONDS] [--kill]
# DOWN_SECONDS (default 0) keeps it stopped that long first. For the kube-apiserver it waits for /readyz again.
# --kill: SIGKILL (a crash) instead of SIGTERM and a graceful stop.
set -euo pipefail

TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/kube/lib.sh
. "$TOOLS_DIR/kube/lib.sh"
kube_init_paths
name=${1:-}
case "$name" in
  etcd|kube-apiserver|kube-controller-manager|kube-scheduler) ;;
  *) kts_die "usage: $0 etcd|kube-apiserver|kube-controller-manager|kube-scheduler [DOWN_SECONDS] (got '$name')" ;;
esac
[ -f "$CLUSTER_ROOT/$name.cmd" ] || kts_die "$name was never started here (no $CLUSTER_ROOT/$name.cmd): run tools/kube/start.sh"
mapfile -d '' cmd < "$CLUSTER_ROOT/$name.cmd"
if [ "${3:-}" = --kill ] && pid=$(cat "$CLUSTER_ROOT/$name.pid" 2>/dev/null); then
  kts_log "killing $name (pid $pid) with SIGKILL"
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
fi
kube_stop_component "$name"
sleep "${2:-0}"
kube_start_component "$name" "${cmd[@]}"
if [ "$name" = kube-apiserver ]; then
  token=$(cut -d, -f1 "$CLUSTER_ROOT/pki/tokens.csv")
  kube_wait_for kube-apiserver "kube-apiserver /readyz" 120 \
    curl -sf --cacert "$CLUSTER_ROOT/pki/ca.crt" -H "Authorization: Bearer $token" "https://127.0.0.1:$KUBE_APISERVER_PORT/readyz"
fi
