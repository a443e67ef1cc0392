#!/usr/bin/env bash
# Start a private containerd (with its CRI plugin) for kubelet-ts tests, under one root dir:
#   $KUBELET_TS_CONTAINERD_ROOT (default /tmp/kubelet-ts-containerd)
# Installs missing Debian packages, writes config + CNI conflist, starts containerd in the
# background, waits for the CRI plugin, builds and imports the offline busybox and pause
# images, then prints KEY=value env lines on stdout (also written to $ROOT/env).
# Idempotent: when our containerd already runs it only ensures the images and prints the env.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$KTS_TOOLS_DIR/images/images.env"

kts_init_paths
kts_require_root

T0=$(date +%s%N)
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# ---- packages --------------------------------------------------------------------------
kts_ensure_packages containerd runc crun containernetworking-plugins busybox-static gcc libc6-dev iptables iproute2 tar gzip
for b in containerd ctr runc crun; do
  command -v "$b" >/dev/null 2>&1 || kts_die "'$b' not found on PATH after installing packages"
done
for p in bridge host-local portmap loopback; do
  [ -x "$CNI_BIN_DIR/$p" ] || kts_die "CNI plugin $CNI_BIN_DIR/$p missing (Debian: containernetworking-plugins)"
done

write_config() {
  mkdir -p "$ROOT" "$DATA_ROOT" "$STATE" "$CNI_CONF_DIR" "$CNI_IPAM_DIR" "$ROOT/opt"
  chmod 0711 "$ROOT"
  : > "$MARKER"
  local edits
  edits=$(cat <<EDITS
	root	"$DATA_ROOT"
	state	"$STATE"
	disabled_plugins	["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
grpc	address	"$SOCK"
ttrpc	address	"$TTRPC_SOCK"
debug	address	"$DEBUG_SOCK"
plugins."io.containerd.grpc.v1.cri"	sandbox_image	"$PAUSE_IMAGE"
plugins."io.containerd.grpc.v1.cri"	restrict_oom_score_adj	true
plugins."io.containerd.grpc.v1.cri"	netns_mounts_under_state_dir	true
plugins."io.containerd.grpc.v1.cri".cni	bin_dir	"$CNI_BIN_DIR"
plugins."io.containerd.grpc.v1.cri".cni	conf_dir	"$CNI_CONF_DIR"
plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options	SystemdCgroup	false
plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options	Root	"$RUNC_ROOT"
plugins."io.containerd.internal.v1.opt"	path	"$ROOT/opt"
EDITS
)
  containerd config default > "$CONF.default" || kts_die "'containerd config default' failed"
  # Section-aware TOML edit: replace KEY's value in [SECTION]; fail if any edit finds no line.
  if ! EDITS="$edits" awk -F'\t' '
    BEGIN {
      n = split(ENVIRON["EDITS"], lines, "\n")
      for (i = 1; i <= n; i++) { if (lines[i] == "") continue; split(lines[i], f, "\t"); val[f[1] SUBSEP f[2]] = f[3]; todo[f[1] SUBSEP f[2]] = 1 }
      section = ""
    }
    {
      line = $0
      if (match(line, /^[ \t]*\[.*\][ \t]*$/)) { s = line; sub(/^[ \t]*\[/, "", s); sub(/\][ \t]*$/, "", s); section = s; print line; next }
      if (match(line, /^[ \t]*[A-Za-z_]+[ \t]*=/)) {
        k = line; sub(/^[ \t]*/, "", k); sub(/[ \t]*=.*$/, "", k)
        if ((section SUBSEP k) in val) {
          indent = line; sub(/[^ \t].*$/, "", indent)
          print indent k " = " val[section SUBSEP k]; delete todo[section SUBSEP k]; next
        }
      }
      print line
    }
    END { bad = 0; for (x in todo) { split(x, p, SUBSEP); print "config edit not applied: [" p[1] "] " p[2] > "/dev/stderr"; bad = 1 } exit bad }
  ' "$CONF.default" > "$CONF.tmp"; then
    kts_die "could not rewrite 'containerd config default' (unexpected containerd version?)"
  fi
  # A second CRI runtime handler, `crun` (a RuntimeClass with handler: crun selects it): the same runc v2 shim
  # driving Debian's crun, with its own state root ($CRUN_ROOT/<namespace>) under ROOT.
  # crun (1.8) refuses a hybrid cgroup host whose cgroup2 mount has controllers ("cgroups in hybrid mode not
  # supported, drop all controllers from cgroupv2"), as this machine kind has (v1 hierarchies, hugetlb on the
  # unified mount). There it runs through a wrapper, in a private mount namespace without the cgroup2 mount, so
  # it drives the v1 hierarchies as runc does; the host's mounts are untouched.
  local crun_bin; crun_bin=$(command -v crun)
  if [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ] && [ -n "$(tr -d '[:space:]' < /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
    mkdir -p "$ROOT/bin"
    cat > "$ROOT/bin/crun" <<WRAPPER
#!/bin/sh
# crun without the hybrid cgroup2 mount (written by tools/containerd/start.sh)
exec unshare --mount --propagation private sh -c 'umount -l /sys/fs/cgroup/unified 2>/dev/null; exec $crun_bin "\$@"' crun "\$@"
WRAPPER
    chmod 0755 "$ROOT/bin/crun"
    crun_bin="$ROOT/bin/crun"
  fi
  cat >> "$CONF.tmp" <<CRUN

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
    BinaryName = "$crun_bin"
    Root = "$CRUN_ROOT"
    SystemdCgroup = false
CRUN
  mv -f "$CONF.tmp" "$CONF"
  rm -f "$CONF.default"

  cat > "$CNI_CONF_DIR/10-kubelet-ts.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK_NAME",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$CNI_IPAM_DIR",
        "ranges": [[{ "subnet": "$POD_CIDR" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
CNI
}

ensure_images() {
  local t; t=$(date +%s%N)
  "$KTS_TOOLS_DIR/images/build-images.sh" "$IMAGES_DIR" || kts_die "building images failed"
  kts_log "images built/checked in $(ms_since "$t") ms"
  t=$(date +%s%N)
  local img
  for img in busybox pause; do
    kts_ctr -n k8s.io images import "$IMAGES_DIR/$img.tar" >/dev/null 2>"$ROOT/import.err" \
      || { cat "$ROOT/import.err" >&2; kts_die "ctr images import $IMAGES_DIR/$img.tar failed"; }
  done
  rm -f "$ROOT/import.err"
  local listed; listed=$(kts_ctr -n k8s.io images ls -q)
  for img in "$BUSYBOX_IMAGE" "$PAUSE_IMAGE"; do
    grep -qxF "$img" <<< "$listed" || kts_die "image $img not listed in namespace k8s.io after import"
  done
  kts_log "images imported in $(ms_since "$t") ms: $BUSYBOX_IMAGE $PAUSE_IMAGE"
}

write_env() {
  local env
  env=$(cat <<ENV
CONTAINERD_ENDPOINT=unix://$SOCK
CONTAINERD_SOCKET=$SOCK
CONTAINERD_ROOT=$ROOT
CONTAINERD_NAMESPACE=k8s.io
CONTAINERD_POD_CIDR=$POD_CIDR
BUSYBOX_IMAGE=$BUSYBOX_IMAGE
PAUSE_IMAGE=$PAUSE_IMAGE
ENV
)
  printf '%s\n' "$env" > "$ENV_FILE.tmp" && mv -f "$ENV_FILE.tmp" "$ENV_FILE"
  printf '%s\n' "$env"
}

if pid=$(kts_daemon_pid) && kts_is_ready; then
  kts_log "containerd already running (pid $pid, socket $SOCK)"
elif [ -S "$SOCK" ] && kts_is_ready; then
  kts_log "warning: something answers on $SOCK without a matching containerd pid; reusing it"
else
  if pid=$(kts_daemon_pid); then
    # running but not ready (still starting, or CRI broken): wait for it rather than start a second one
    kts_wait_ready "$pid" "${KUBELET_TS_CONTAINERD_TIMEOUT:-30}"
  else
    write_config
    kts_start_daemon
  fi
fi
ensure_images
write_env
kts_log "done in $(ms_since "$T0") ms; env written to $ENV_FILE"
