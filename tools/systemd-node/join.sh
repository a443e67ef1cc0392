#!/usr/bin/env bash
# Join the node booted by tools/systemd-node/start.sh to the control plane of tools/kube as `kubeadm join` leaves a
# node: kubeadm 1.20's files (the canonical copies in apps/kubelet/test/fixtures/kubeadm-v1.20) with this cluster's CA,
# API server and a bootstrap token, then `systemctl enable --now kubelet` inside.
#   join.sh --token <id>.<secret> [--extra-args "<kubelet flags for /etc/default/kubelet>"]
# The files written inside the node:
#   /etc/systemd/system/kubelet.service, /etc/systemd/system/kubelet.service.d/10-kubeadm.conf
#       kubeadm's deb packaging, with /usr/bin/kubelet -> /usr/local/bin/kubelet, as kubeadm's install
#       documentation does for a kubelet installed without a package manager (/usr is the host's, read-only)
#   /var/lib/kubelet/config.yaml        kubeadm's, with cgroupDriver from KUBELET_TS_SYSTEMD_NODE_CGROUP_DRIVER
#   /var/lib/kubelet/kubeadm-flags.env  kubeadm's for containerd
#   /etc/kubernetes/bootstrap-kubelet.conf, /etc/kubernetes/pki/ca.crt
#   /etc/default/kubelet                KUBELET_EXTRA_ARGS: --node-ip=<the node's veth address> and --extra-args
# Idempotent: rewrites the files and restarts the kubelet. `join.sh --reset` stops the kubelet and removes the
# files and the kubelet's state (as `kubeadm reset` does), leaving the node booted.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
kts_sd_init_paths
kts_require_root

token="" extra="" reset=0
while [ $# -gt 0 ]; do
  case "$1" in
    --token) token=${2:-}; shift 2 ;;
    --extra-args) extra=${2:-}; shift 2 ;;
    --reset) reset=1; shift ;;
    *) kts_die "unknown argument '$1' (usage: join.sh --token <id>.<secret> [--extra-args FLAGS] | join.sh --reset)" ;;
  esac
done

pid=$(kts_sd_inner_pid) || kts_die "no node booted: run tools/systemd-node/start.sh first"
inside() { kts_sd_in "$pid" "$@"; }
node_root="/proc/$pid/root"

if [ $reset = 1 ]; then
  inside systemctl disable --now --quiet kubelet.service 2>/dev/null || true
  inside systemctl reset-failed kubelet.service 2>/dev/null || true
  # what the kubelet mounted under its root dir (volumes) is in the node's mount namespace
  inside sh -c 'grep -o " /var/lib/kubelet/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done' || true
  inside rm -rf /var/lib/kubelet /etc/kubernetes /etc/default/kubelet /etc/systemd/system/kubelet.service /etc/systemd/system/kubelet.service.d
  inside systemctl daemon-reload
  kts_log "kubelet stopped and kubeadm's files removed from $MACHINE"
  exit 0
fi

[[ "$token" =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || kts_die "--token must be a bootstrap token <id>.<secret> ([a-z0-9]{6}.[a-z0-9]{16}), got '$token'"
cluster_root=${KUBELET_TS_CLUSTER_ROOT:-/tmp/kubelet-ts-cluster}
[ -f "$cluster_root/env" ] || kts_die "the control plane is not running ($cluster_root/env missing): run tools/kube/start.sh"
ca=$(sed -n 's/^KUBE_CA_FILE=//p' "$cluster_root/env")
[ -f "$ca" ] || kts_die "the cluster CA '$ca' (KUBE_CA_FILE in $cluster_root/env) does not exist"
fixtures="$KTS_REPO_DIR/apps/kubelet/test/fixtures/kubeadm-v1.20"
for f in lib/systemd/system/kubelet.service etc/systemd/system/kubelet.service.d/10-kubeadm.conf var/lib/kubelet/config.yaml \
  var/lib/kubelet/kubeadm-flags.env etc/kubernetes/bootstrap-kubelet.conf; do
  [ -f "$fixtures/$f" ] || kts_die "kubeadm fixture $fixtures/$f missing"
done

# write FILE MODE < content: a file inside the node (through /proc/<pid>/root; its /etc and /var are tmpfs)
write() {
  local file=$1 mode=$2
  mkdir -p "$node_root$(dirname "$file")"
  cat > "$node_root$file.tmp" && chmod "$mode" "$node_root$file.tmp" && mv -f "$node_root$file.tmp" "$node_root$file" \
    || kts_die "could not write $file inside $MACHINE"
}
sed 's:/usr/bin/kubelet:/usr/local/bin/kubelet:g' "$fixtures/lib/systemd/system/kubelet.service" | write /etc/systemd/system/kubelet.service 0644
sed 's:/usr/bin/kubelet:/usr/local/bin/kubelet:g' "$fixtures/etc/systemd/system/kubelet.service.d/10-kubeadm.conf" \
  | write /etc/systemd/system/kubelet.service.d/10-kubeadm.conf 0644
grep -q '^cgroupDriver: ' "$fixtures/var/lib/kubelet/config.yaml" || kts_die "no cgroupDriver line in $fixtures/var/lib/kubelet/config.yaml"
sed "s/^cgroupDriver: .*/cgroupDriver: $CGROUP_DRIVER/" "$fixtures/var/lib/kubelet/config.yaml" | write /var/lib/kubelet/config.yaml 0644
write /var/lib/kubelet/kubeadm-flags.env 0644 < "$fixtures/var/lib/kubelet/kubeadm-flags.env"
write /etc/kubernetes/pki/ca.crt 0644 < "$ca"
ca_data=$(base64 -w0 < "$ca")
sed -e "s|^\(    certificate-authority-data: \).*|\1$ca_data|" -e "s|^\(    server: \).*|\1https://127.0.0.1:$APISERVER_PORT|" \
  -e "s|^\(    token: \).*|\1$token|" "$fixtures/etc/kubernetes/bootstrap-kubelet.conf" | write /etc/kubernetes/bootstrap-kubelet.conf 0600
grep -qF "$token" "$node_root/etc/kubernetes/bootstrap-kubelet.conf" || kts_die "the token did not land in bootstrap-kubelet.conf (fixture layout changed?)"
printf 'KUBELET_EXTRA_ARGS="%s"\n' "--node-ip=$NODE_IP${extra:+ $extra}" | write /etc/default/kubelet 0644
mkdir -p "$node_root/etc/kubernetes/manifests"

inside systemctl daemon-reload || kts_die "inside $MACHINE: systemctl daemon-reload failed"
inside systemctl enable --quiet kubelet.service || kts_die "inside $MACHINE: systemctl enable kubelet failed"
inside systemctl restart kubelet.service || { inside journalctl -u kubelet --no-pager -n 40 >&2 || true; kts_die "inside $MACHINE: systemctl restart kubelet failed (journal above)"; }
kts_log "kubelet started in $MACHINE (journal: nsenter -t $pid -a journalctl -u kubelet)"
