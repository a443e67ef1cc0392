#!/usr/bin/env bash
# Stop the kubelet-ts containerd and remove everything it left: the daemon (SIGTERM, wait,
# SIGKILL), runc containers of this root, containerd-shim processes bound to our socket,
# any process still running inside a rootfs under ROOT, shim sockets, CNI iptables rules of
# our sandboxes, every mount under ROOT (rootfs, shm, netns), the CNI bridge when unused,
# and finally ROOT itself. Exits non-zero if any process or mount is left behind.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kts_init_paths
kts_require_root
T0=$(date +%s%N)

if [ ! -e "$ROOT" ]; then
  kts_log "$ROOT does not exist; nothing to stop"
  exit 0
fi
if [ ! -e "$MARKER" ] && [ ! -f "$CONF" ]; then
  kts_die "refusing to clean $ROOT: it is not a kubelet-ts containerd root (no $MARKER)"
fi

pids_all() { ls /proc | grep -E '^[0-9]+$' || true; }
cmdline_of() { tr '\0' '\n' < "/proc/$1/cmdline" 2>/dev/null || true; }

# 1. the daemon
kts_stop_daemon
kts_log "daemon stopped after $(( ($(date +%s%N) - T0) / 1000000 )) ms"

# 2. runc containers: our runc root, plus any runc root under /run/containerd/runc whose
#    containers have their bundle under ROOT (containers started by `ctr run`).
runc_roots=()
for d in "$RUNC_ROOT"/* /run/containerd/runc/*; do
  [ -d "$d" ] && runc_roots+=("$d")
done
for rr in "${runc_roots[@]+"${runc_roots[@]}"}"; do
  # table columns: ID PID STATUS BUNDLE CREATED OWNER
  ids=$(runc --root "$rr" list 2>/dev/null | awk -v root="$ROOT/" 'NR > 1 && index($4, root) == 1 { print $1 }') || true
  for id in $ids; do
    runc --root "$rr" kill "$id" KILL >/dev/null 2>&1 || true
  done
  for id in $ids; do
    runc --root "$rr" delete --force "$id" >/dev/null 2>&1 || kts_log "warning: runc delete $id failed"
  done
  [ -n "$ids" ] && kts_log "removed $(echo "$ids" | wc -w) runc container(s) from $rr"
done

# 2b. crun containers (the `crun` runtime handler): same table, under our crun root.
if command -v crun >/dev/null 2>&1; then
  for cr in "$CRUN_ROOT"/*; do
    [ -d "$cr" ] || continue
    ids=$(crun --root "$cr" list 2>/dev/null | awk -v root="$ROOT/" 'NR > 1 && index($4, root) == 1 { print $1 }') || true
    for id in $ids; do crun --root "$cr" kill "$id" KILL >/dev/null 2>&1 || true; done
    for id in $ids; do crun --root "$cr" delete --force "$id" >/dev/null 2>&1 || kts_log "warning: crun delete $id failed"; done
    [ -n "$ids" ] && kts_log "removed $(echo "$ids" | wc -w) crun container(s) from $cr"
  done
fi

# 3. shims bound to our containerd socket
shim_pids=()
for pid in $(pids_all); do
  case "$(cat "/proc/$pid/comm" 2>/dev/null || true)" in containerd-shim*) ;; *) continue ;; esac
  if cmdline_of "$pid" | grep -qxF "$SOCK"; then shim_pids+=("$pid"); fi
done
if [ ${#shim_pids[@]} -gt 0 ]; then
  # their containers are gone already and the shims wait for a Shutdown call from the
  # daemon that will never come: SIGKILL is the only way out
  kts_log "killing ${#shim_pids[@]} shim(s): ${shim_pids[*]}"
  kill -KILL "${shim_pids[@]}" 2>/dev/null || true
  for _ in $(seq 1 20); do
    alive=0
    for pid in "${shim_pids[@]}"; do
      [ -d "/proc/$pid" ] && [ "$(awk '/^State:/{print $2}' "/proc/$pid/status" 2>/dev/null)" != Z ] && alive=1
    done
    [ $alive = 0 ] && break
    sleep 0.05
  done
fi

# 4. any process still rooted in a container rootfs under ROOT
kill_leftovers() {
  local sig=$1 found=() pid r
  for pid in $(pids_all); do
    [ "$pid" = $$ ] && continue
    r=$(readlink "/proc/$pid/root" 2>/dev/null || true)
    if [ "${r#"$ROOT"/}" != "$r" ]; then
      found+=("$pid")
    fi
  done
  [ ${#found[@]} -eq 0 ] && return 1
  kts_log "killing leftover processes (SIG$sig): ${found[*]}"
  kill "-$sig" "${found[@]}" 2>/dev/null || true
  return 0
}
for _ in 1 2 3 4 5; do
  kill_leftovers KILL || break
  sleep 0.2
done

# 5. shim sockets live in /run/containerd/s/<hash>; each task bundle records its address
for f in "$STATE"/io.containerd.runtime.v2.task/*/*/address; do
  [ -f "$f" ] || continue
  a=$(cat "$f" 2>/dev/null || true); a=${a#unix://}
  case "$a" in /run/containerd/s/*) rm -f "$a" ;; esac
done

# 6. CNI iptables rules and chains of our sandboxes (comments carry `id: "<sandbox id>"`)
if command -v iptables >/dev/null 2>&1 && [ -d "$STATE/io.containerd.grpc.v1.cri/sandboxes" ]; then
  for id in $(ls "$STATE/io.containerd.grpc.v1.cri/sandboxes" 2>/dev/null); do
    for table in nat filter; do
      rules=$(iptables -w -t "$table" -S 2>/dev/null | grep -F "id: \\\"$id\\\"" | grep '^-A ' || true)
      [ -n "$rules" ] || continue
      chains=$(grep -oE -- '-j CNI-[A-Za-z0-9-]+' <<< "$rules" | awk '{print $2}' | grep -vE '^CNI-HOSTPORT-' | sort -u || true)
      while IFS= read -r rule; do
        eval "iptables -w -t $table -D ${rule#-A }" 2>/dev/null || true
      done <<< "$rules"
      for c in $chains; do
        iptables -w -t "$table" -F "$c" 2>/dev/null || true
        iptables -w -t "$table" -X "$c" 2>/dev/null || true
      done
    done
  done
fi

# 7. unmount everything under ROOT, deepest first
mounts_under_root() {
  awk -v root="$ROOT" '{ m = $5; gsub(/\\040/, " ", m); if (m == root || index(m, root "/") == 1) print m }' /proc/self/mountinfo | sort -r | uniq
}
for _ in $(seq 1 10); do
  m=$(mounts_under_root)
  [ -n "$m" ] || break
  while IFS= read -r mp; do
    umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
  done <<< "$m"
done

# 8. the CNI bridge (name taken from the conflist start.sh wrote), once nothing is attached
conflist="$CNI_CONF_DIR/10-kubelet-ts.conflist"
if [ -f "$conflist" ]; then
  b=$(sed -n 's/^ *"bridge": *"\([^"]*\)".*/\1/p' "$conflist" | head -n 1)
  [ -n "$b" ] && CNI_BRIDGE=$b
fi
if command -v ip >/dev/null 2>&1 && ip link show "$CNI_BRIDGE" >/dev/null 2>&1; then
  for _ in $(seq 1 20); do
    [ -z "$(ip -o link show master "$CNI_BRIDGE" 2>/dev/null)" ] && break
    sleep 0.1
  done
  if [ -z "$(ip -o link show master "$CNI_BRIDGE" 2>/dev/null)" ]; then
    ip link delete "$CNI_BRIDGE" 2>/dev/null || kts_log "warning: could not delete bridge $CNI_BRIDGE"
  else
    kts_log "warning: bridge $CNI_BRIDGE still has ports (another root using it?); left in place"
  fi
fi

# 9. the CRI plugin's default cgroup parent (/k8s.io in every cgroupfs hierarchy) when empty;
#    rmdir fails harmlessly while another containerd still has containers there
for cg in /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io; do
  [ -d "$cg" ] && rmdir "$cg" 2>/dev/null || true
done

# 10. verify and remove ROOT
left_mounts=$(mounts_under_root)
left_procs=()
for pid in $(pids_all); do
  [ "$pid" = $$ ] && continue
  r=$(readlink "/proc/$pid/root" 2>/dev/null || true)
  if [ "${r#"$ROOT"/}" != "$r" ]; then left_procs+=("$pid"); continue; fi
  case "$(cat "/proc/$pid/comm" 2>/dev/null || true)" in
    containerd*) cmdline_of "$pid" | grep -qF "$ROOT" && left_procs+=("$pid") ;;
  esac
done
if [ -n "$left_mounts" ] || [ ${#left_procs[@]} -gt 0 ]; then
  [ -n "$left_mounts" ] && kts_log "mounts left under $ROOT:" && echo "$left_mounts" >&2
  [ ${#left_procs[@]} -gt 0 ] && kts_log "processes left: ${left_procs[*]}"
  kts_die "could not clean up completely; $ROOT kept"
fi
rm -rf --one-file-system "$ROOT" || kts_die "could not remove $ROOT"
kts_log "stopped and removed $ROOT in $(( ($(date +%s%N) - T0) / 1000000 )) ms"
