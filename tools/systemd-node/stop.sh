#!/usr/bin/env bash
# Tear down what tools/systemd-node/start.sh made: power the node off (systemd stops the kubelet, containerd and
# every pod's scope), kill what is left in our cgroups, remove those cgroups bottom-up, the host relay, the veth,
# and ROOT. Idempotent. Touches nothing it did not make: only cgroups named $CGROUP (kts-...), the interface
# ve-<machine> and ROOT (which carries start.sh's marker file).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kts_sd_init_paths
kts_require_root

T0=$(date +%s%N)
failed=0

# 1. power off: systemd inside stops its units in order; wait for nspawn to exit
if nspawn=$(kts_sd_nspawn_pid); then
  if pid=$(kts_sd_inner_pid); then
    kts_log "powering off $MACHINE (systemd pid $pid)"
    kts_sd_in "$pid" systemctl poweroff --no-block >/dev/null 2>&1 || kill -RTMIN+4 "$pid" 2>/dev/null || true
  fi
  for _ in $(seq 1 300); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$nspawn" 2>/dev/null; then
    kts_log "$MACHINE did not power off within 30 s; SIGTERM to systemd-nspawn (pid $nspawn)"
    kill -TERM "$nspawn" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.1; done
  fi
  if kill -0 "$nspawn" 2>/dev/null; then
    kts_log "SIGKILL to systemd-nspawn (pid $nspawn)"
    kill -KILL "$nspawn" 2>/dev/null || true
  fi
fi
rm -f "$NSPAWN_PIDFILE"

# 2. the host relay
if rp=$(kts_sd_relay_pid); then kill -TERM "$rp" 2>/dev/null || true; fi
rm -f "$RELAY_PIDFILE"

# 3. processes still in our cgroups (nothing should be, after a clean poweroff), then the cgroups, deepest first
kts_sd_remove_cgroups "$CGROUP" $KTS_SD_HIERARCHIES || failed=1

# 4. the host end of the veth (it goes with the container's network namespace; check)
if ip link show "$VETH" >/dev/null 2>&1; then
  ip link delete "$VETH" 2>/dev/null || { kts_log "error: could not delete $VETH"; failed=1; }
fi

# 5. ROOT (only ours: it carries the marker); nothing is mounted under it on the host
if [ -d "$ROOT" ]; then
  if [ -f "$MARKER" ]; then
    if awk -v root="$ROOT" '{ if ($5 == root || index($5, root "/") == 1) found = 1 } END { exit !found }' /proc/self/mountinfo; then
      kts_log "error: mounts left under $ROOT; kept it"; failed=1
    else
      rm -rf --one-file-system "$ROOT" || { kts_log "error: could not remove $ROOT"; failed=1; }
    fi
  else
    kts_log "$ROOT has no marker from start.sh; left in place"
  fi
fi
[ $failed = 0 ] || kts_die "could not clean up completely (see above)"
kts_log "stopped and removed $MACHINE in $(( ($(date +%s%N) - T0) / 1000000 )) ms"
