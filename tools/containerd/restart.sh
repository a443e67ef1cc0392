#!/usr/bin/env bash
# Restart only the containerd daemon of the kubelet-ts root (shims and containers keep
# running), with the same config, and wait until it and its CRI plugin are ready again.
# Used by reconnection tests.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kts_init_paths
kts_require_root
[ -f "$CONF" ] || kts_die "no config at $CONF: run tools/containerd/start.sh first"
T0=$(date +%s%N)
if kts_daemon_pid >/dev/null; then
  kts_stop_daemon
else
  kts_log "containerd was not running; starting it"
fi
kts_start_daemon
kts_log "restarted in $(( ($(date +%s%N) - T0) / 1000000 )) ms"
