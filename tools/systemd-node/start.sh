#!/usr/bin/env bash
# Boot a real systemd (Debian's systemd 252, the host's own /usr) in a container with systemd-nspawn, as a node
# for kubelet-ts: its cgroup-namespace root is a kts- cgroup of ours in every hierarchy, the v1 controllers are
# handed to it read-write, it gets a veth to the host and a relay to the API server on the host's loopback, and
# containerd runs inside as a systemd service with SystemdCgroup = true and the offline test images.
# Prints KEY=value env lines on stdout (also written to $ROOT/env). Idempotent; no stdin needed.
# Then tools/systemd-node/join.sh writes kubeadm's files and starts the kubelet inside.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$KTS_TOOLS_DIR/images/images.env"
kts_sd_init_paths
kts_require_root "systemd-nspawn, cgroups and network interfaces need it"

T0=$(date +%s%N)
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
run() { "$@" || kts_die "command failed (exit $?): $*"; }

# ---- packages --------------------------------------------------------------------------
kts_ensure_packages systemd systemd-container dbus-daemon containerd runc containernetworking-plugins \
  busybox-static gcc libc6-dev iptables iproute2 util-linux tar gzip
for b in systemd-nspawn nsenter containerd ctr runc ip node; do
  command -v "$b" >/dev/null 2>&1 || kts_die "'$b' not found on PATH after installing packages"
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] && [ -x /usr/lib/cni/portmap ] \
  || kts_die "CNI plugins missing in /usr/lib/cni (Debian: containernetworking-plugins)"
[ -f /lib/systemd/system/containerd.service ] || kts_die "/lib/systemd/system/containerd.service missing (Debian's containerd package)"
for h in $KTS_SD_HIERARCHIES; do
  [ -d "/sys/fs/cgroup/$h" ] || kts_die "/sys/fs/cgroup/$h is not mounted: this script expects the hybrid v1 layout of this machine kind"
done

# ---- the system bus ----
kts_sd_ensure_system_bus

write_files() {
  mkdir -p "$ROOT" "$CNI_CONF_DIR" "$BIN_DIR" "$(dirname "$CONTAINERD_CONF")"
  chmod 0711 "$ROOT"
  : > "$MARKER"
  # containerd as kubeadm's documentation sets it up for the systemd driver: the default config with
  # SystemdCgroup = true for runc (false with KUBELET_TS_SYSTEMD_NODE_CGROUP_DRIVER=cgroupfs). Plus what this machine kind needs (see tools/containerd/README.md):
  # restrict_oom_score_adj (no CAP_SYS_RESOURCE), the offline pause image, Debian's CNI plugin dir.
  cat > "$CONTAINERD_CONF" <<TOML
# written by tools/systemd-node/start.sh; bound read-only at /etc/containerd/config.toml inside the node
version = 2
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = $SYSTEMD_CGROUP
TOML
  cat > "$CNI_CONF_DIR/10-kts-sd.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "kts-sd",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": { "type": "host-local", "ranges": [[{ "subnet": "$POD_CIDR" }]], "routes": [{ "dst": "0.0.0.0/0" }] }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
CNI
  # /usr/local/bin inside the node: the kubelet where kubeadm's documentation installs it without a package
  # manager (the unit files then say /usr/local/bin/kubelet); the built bundle of this repository.
  cat > "$BIN_DIR/kubelet" <<SH
#!/bin/sh
# kubelet-ts (written by tools/systemd-node/start.sh)
exec $KTS_REPO_DIR/apps/kubelet/dist/kubelet.mjs "\$@"
SH
  chmod 0755 "$BIN_DIR/kubelet"
}

# ---- cgroups: the container's root in every hierarchy is ours -----------------------------
make_cgroups() {
  local h dir
  for h in $KTS_SD_HIERARCHIES; do
    dir="/sys/fs/cgroup/$h/$CGROUP"
    [ -d "$dir" ] || run mkdir "$dir"
  done
  # a new cpuset cgroup starts with no CPUs and no memory nodes: copy its parent's
  local cs=/sys/fs/cgroup/cpuset
  [ -n "$(tr -d '[:space:]' < "$cs/$CGROUP/cpuset.cpus")" ] || run sh -c "cat $cs/cpuset.cpus > $cs/$CGROUP/cpuset.cpus"
  [ -n "$(tr -d '[:space:]' < "$cs/$CGROUP/cpuset.mems")" ] || run sh -c "cat $cs/cpuset.mems > $cs/$CGROUP/cpuset.mems"
}

boot() {
  : > "$LOG"
  local cgroup_paths="" h
  for h in $KTS_SD_HIERARCHIES; do cgroup_paths="$cgroup_paths /sys/fs/cgroup/$h/$CGROUP/cgroup.procs"; done
  # The launcher moves itself into our cgroups, then becomes systemd-nspawn: the container never starts in a
  # cgroup of the machine's (our own memory cgroup belongs to the machine).
  # --volatile=yes: the host's /usr read-only, everything else a tmpfs; --keep-unit --register=no: no machined;
  # systemd.mask: units that must not run in the node (the host's etcd, networkd and resolved).
  kts_sd_launch_in "$cgroup_paths" \
    systemd-nspawn -D / --volatile=yes --register=no --keep-unit --console=passive -M "$MACHINE" \
      --private-network --network-veth --resolv-conf=copy-host --timezone=off \
      --system-call-filter=@keyring \
      --bind="$KTS_REPO_DIR" --bind="$ROOT" --bind-ro=/etc/alternatives --bind-ro="$BIN_DIR:/usr/local/bin" \
      --bind-ro="$CONTAINERD_CONF:/etc/containerd/config.toml" --bind-ro="$CNI_CONF_DIR:/etc/cni/net.d" \
      -b systemd.firstboot=off systemd.mask=etcd.service systemd.mask=systemd-networkd.service \
      systemd.mask=systemd-networkd-wait-online.service systemd.mask=systemd-resolved.service \
    </dev/null >>"$LOG" 2>&1 &
  echo $! > "$NSPAWN_PIDFILE"
  kts_sd_wait_for_systemd
}


# nspawn mounts the v1 controller hierarchies read-only (the container may not manage them); hand them to the
# systemd inside (they are rooted at our kts- cgroup) and make it re-probe them, so it manages memory, cpu, pids.
controllers_rw() {
  local pid=$1
  kts_sd_controllers_rw "$pid"
  # systemd now manages the controllers: a transient unit gets its limits in the v1 files
  local probe=kts-cgroup-probe
  kts_sd_in "$pid" systemd-run --quiet --unit="$probe" --slice=ktsprobe.slice -p MemoryLimit=100M -p CPUShares=512 sleep 30 \
    || kts_die "inside $MACHINE: systemd-run of a probe unit failed"
  local mem cpu
  mem=$(cat "/sys/fs/cgroup/memory/$CGROUP/ktsprobe.slice/$probe.service/memory.limit_in_bytes" 2>/dev/null || echo missing)
  cpu=$(cat "/sys/fs/cgroup/cpu/$CGROUP/ktsprobe.slice/$probe.service/cpu.shares" 2>/dev/null || echo missing)
  kts_sd_in "$pid" systemctl stop "$probe.service" ktsprobe.slice >/dev/null 2>&1 || true
  [ "$mem" = 104857600 ] && [ "$cpu" = 512 ] \
    || kts_die "systemd in $MACHINE does not manage the v1 controllers: probe unit memory.limit_in_bytes=$mem (want 104857600) cpu.shares=$cpu (want 512)"
}

# What a Debian node has in /etc and the volatile tmpfs /etc lacks: /etc/hosts (containerd copies it into each
# sandbox) and /etc/os-release (-> ../usr/lib/os-release, as Debian ships it; the node reports its OS image from it).
node_files() {
  local pid=$1 etc="/proc/$1/root/etc"
  [ -f "$etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n' "$NODE_IP" "$MACHINE" > "$etc/hosts" \
    || kts_die "could not write /etc/hosts inside $MACHINE"
  [ -e "$etc/os-release" ] || ln -s ../usr/lib/os-release "$etc/os-release" || kts_die "could not link /etc/os-release inside $MACHINE"
}

# The host end of the veth gets HOST_IP, the node's host0 NODE_IP with a default route to the host.
network() {
  local pid=$1 i
  for i in $(seq 1 50); do ip link show "$VETH" >/dev/null 2>&1 && break; sleep 0.1; done
  ip link show "$VETH" >/dev/null 2>&1 || kts_die "no host interface $VETH (systemd-nspawn --network-veth)"
  run ip addr replace "$HOST_IP/$NET_PREFIX" dev "$VETH"
  run ip link set "$VETH" up
  run nsenter -t "$pid" -n ip addr replace "$NODE_IP/$NET_PREFIX" dev host0
  run nsenter -t "$pid" -n ip link set host0 up
  run nsenter -t "$pid" -n ip link set lo up
  run nsenter -t "$pid" -n ip route replace default via "$HOST_IP"
  return 0
}

# The API server listens on the host's 127.0.0.1 only (its certificate is for 127.0.0.1): the node reaches it at
# its own 127.0.0.1:PORT, a relay (a unit inside) to a unix socket in ROOT, and a host relay from there to the server.
relays() {
  local pid=$1 i
  if ! kts_sd_relay_pid >/dev/null; then
    setsid node "$KTS_TOOLS_DIR/systemd-node/relay.mjs" --listen "unix:$APISERVER_SOCK" --to "tcp:127.0.0.1:$APISERVER_PORT" \
      </dev/null >>"$RELAY_LOG" 2>&1 &
    echo $! > "$RELAY_PIDFILE"
    for i in $(seq 1 50); do [ -S "$APISERVER_SOCK" ] && break; sleep 0.1; done
    [ -S "$APISERVER_SOCK" ] || { cat "$RELAY_LOG" >&2; kts_die "the host relay did not create $APISERVER_SOCK (log above)"; }
  fi
  cat > "/proc/$pid/root/etc/systemd/system/kts-apiserver-relay.service" <<UNIT
[Unit]
Description=kubelet-ts: the API server at 127.0.0.1:$APISERVER_PORT, relayed to the host's (tools/systemd-node)
Before=kubelet.service

[Service]
ExecStart=/usr/bin/node $KTS_TOOLS_DIR/systemd-node/relay.mjs --listen tcp:127.0.0.1:$APISERVER_PORT --to unix:$APISERVER_SOCK
Restart=always
RestartSec=1

[Install]
WantedBy=multi-user.target
UNIT
  run kts_sd_in "$pid" systemctl daemon-reload
  run kts_sd_in "$pid" systemctl enable --now --quiet kts-apiserver-relay.service
  for i in $(seq 1 50); do kts_sd_in "$pid" systemctl is-active --quiet kts-apiserver-relay.service && break; sleep 0.1; done
  kts_sd_in "$pid" systemctl is-active --quiet kts-apiserver-relay.service \
    || { kts_sd_in "$pid" journalctl -u kts-apiserver-relay --no-pager -n 20 >&2 || true; kts_die "kts-apiserver-relay.service is not active inside $MACHINE (journal above)"; }
}

containerd_ready() {
  local pid=$1 sock="/proc/$1/root$INNER_CONTAINERD_SOCK" i
  run kts_sd_in "$pid" systemctl enable --now --quiet containerd.service
  for i in $(seq 1 150); do
    if [ -S "$sock" ] && timeout 5 ctr --address "$sock" plugins ls 2>/dev/null | grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$'; then
      return 0
    fi
    sleep 0.2
  done
  kts_sd_in "$pid" journalctl -u containerd --no-pager -n 40 >&2 || true
  kts_die "containerd inside $MACHINE is not ready with its CRI plugin after 30 s (journal above)"
}

ensure_images() {
  local pid=$1 sock="/proc/$1/root$INNER_CONTAINERD_SOCK" img listed
  "$KTS_TOOLS_DIR/images/build-images.sh" "$IMAGES_DIR" || kts_die "building images failed (tools/images/build-images.sh $IMAGES_DIR)"
  for img in busybox pause; do
    ctr --address "$sock" -n k8s.io images import "$IMAGES_DIR/$img.tar" >/dev/null 2>"$ROOT/import.err" \
      || { cat "$ROOT/import.err" >&2; kts_die "ctr images import $IMAGES_DIR/$img.tar into the node's containerd failed"; }
  done
  rm -f "$ROOT/import.err"
  listed=$(ctr --address "$sock" -n k8s.io images ls -q)
  for img in "$BUSYBOX_IMAGE" "$PAUSE_IMAGE"; do
    grep -qxF "$img" <<< "$listed" || kts_die "image $img not listed in the node's containerd after import"
  done
}

write_env() {
  local pid=$1 nspawn=$2 env
  env=$(cat <<ENV
SYSTEMD_NODE_ROOT=$ROOT
SYSTEMD_NODE_MACHINE=$MACHINE
SYSTEMD_NODE_NAME=$MACHINE
SYSTEMD_NODE_PID=$pid
SYSTEMD_NODE_NSPAWN_PID=$nspawn
SYSTEMD_NODE_CGROUP=/$CGROUP
SYSTEMD_NODE_IP=$NODE_IP
SYSTEMD_NODE_HOST_IP=$HOST_IP
SYSTEMD_NODE_VETH=$VETH
SYSTEMD_NODE_POD_CIDR=$POD_CIDR
SYSTEMD_NODE_CGROUP_DRIVER=$CGROUP_DRIVER
SYSTEMD_NODE_APISERVER=https://127.0.0.1:$APISERVER_PORT
SYSTEMD_NODE_CONTAINERD_ENDPOINT=unix://$INNER_CONTAINERD_SOCK
SYSTEMD_NODE_CONTAINERD_HOST_SOCKET=/proc/$pid/root$INNER_CONTAINERD_SOCK
BUSYBOX_IMAGE=$BUSYBOX_IMAGE
PAUSE_IMAGE=$PAUSE_IMAGE
ENV
)
  printf '%s\n' "$env" > "$ENV_FILE.tmp" && mv -f "$ENV_FILE.tmp" "$ENV_FILE"
  printf '%s\n' "$env"
}

if pid=$(kts_sd_inner_pid); then
  kts_log "$MACHINE already booted (systemd pid $pid)"
  grep -qE "^[[:space:]]*SystemdCgroup = $SYSTEMD_CGROUP\$" "$CONTAINERD_CONF" 2>/dev/null \
    || kts_die "$MACHINE runs containerd with another cgroup driver than '$CGROUP_DRIVER' ($CONTAINERD_CONF): run tools/systemd-node/stop.sh first"
else
  if [ -e "$ROOT" ] && [ ! -f "$MARKER" ]; then kts_die "$ROOT exists and was not made by this script; choose another KUBELET_TS_SYSTEMD_NODE_ROOT"; fi
  if ip link show "$VETH" >/dev/null 2>&1; then kts_die "$VETH exists but no container of ours runs: run tools/systemd-node/stop.sh first"; fi
  write_files
  make_cgroups
  kts_log "booting systemd in $MACHINE (systemd-nspawn, log $LOG)"
  boot
  pid=$(kts_sd_inner_pid)
fi
nspawn=$(kts_sd_nspawn_pid)
# every hierarchy of the booted systemd must be under our cgroup
bad=$(awk -F: -v cg="/$CGROUP" '{ if ($3 != cg && index($3, cg "/") != 1) print }' "/proc/$pid/cgroup")
[ -z "$bad" ] || kts_die "the node's systemd (pid $pid) is not under /$CGROUP in every hierarchy: $bad"
kts_sd_wait_running "$pid" "${KUBELET_TS_SYSTEMD_NODE_TIMEOUT:-60}"
kts_log "systemd running in $MACHINE after $(ms_since "$T0") ms"
step() { local t; t=$(date +%s%N); "$@"; kts_log "$1: $(ms_since "$t") ms"; }
step controllers_rw "$pid"
step node_files "$pid"
step network "$pid"
step relays "$pid"
step containerd_ready "$pid"
step ensure_images "$pid"
write_env "$pid" "$nspawn"
kts_log "done in $(ms_since "$T0") ms; env written to $ENV_FILE"
