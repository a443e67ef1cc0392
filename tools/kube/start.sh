#!/usr/bin/env bash
# Starts the real control plane on loopback: etcd, kube-apiserver (TLS, Node+RBAC authorization, NodeRestriction,
# service-account signing keys, a static admin token), kube-controller-manager and kube-scheduler, all under
# $KUBELET_TS_CLUSTER_ROOT (default /tmp/kubelet-ts-cluster). Builds the binaries first when they are not cached
# (tools/kube/build.sh). Each component is waited for: the API server's /readyz, the controller-manager's and
# scheduler's leader leases, and the `default` service account's token.
#
# Prints KEY=value lines on stdout (also written to $CLUSTER_ROOT/env); messages go to stderr. Idempotent: a
# component that already runs is left alone. Stop it all with tools/kube/stop.sh.
set -euo pipefail

TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/kube/lib.sh
. "$TOOLS_DIR/kube/lib.sh"

kts_require_root "apt-get, containerd and the Go kubelet need it"
kube_init_paths
bash "$TOOLS_DIR/kube/build.sh" >/dev/null
kts_ensure_packages etcd-server openssl curl
mkdir -p "$CLUSTER_ROOT/pki"
chmod 700 "$CLUSTER_ROOT/pki"
pki="$CLUSTER_ROOT/pki"
started=$(date +%s)
# Alpha gates the e2e suites need, on every control-plane component (the kubelet takes its own --feature-gates):
# GenericEphemeralVolume (1.19 alpha) for `volumes[].ephemeral`: the API server keeps the field, the
# controller-manager's ephemeral-volume controller makes the pod's PVC, the scheduler's volume binding waits for it.
feature_gates=${KUBELET_TS_FEATURE_GATES:-GenericEphemeralVolume=true}

# ---- PKI: cluster CA, API server serving certificate, component client certificates, service-account keys
if [ ! -f "$pki/ca.crt" ]; then
  openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 3650 -sha256 \
    -subj "/CN=kubelet-ts-cluster-ca" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null \
    || kts_die "creating the cluster CA failed"
  chmod 600 "$pki/ca.key"
fi
kube_issue_cert apiserver "/CN=kube-apiserver" serverAuth \
  "IP:127.0.0.1,IP:$KUBE_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
kube_issue_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
kube_issue_cert controller-manager "/CN=system:kube-controller-manager" clientAuth
kube_issue_cert scheduler "/CN=system:kube-scheduler" clientAuth
if [ ! -f "$pki/sa.key" ]; then
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null && openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null \
    || kts_die "creating the service-account key pair failed"
  chmod 600 "$pki/sa.key"
fi
if [ ! -f "$pki/tokens.csv" ]; then
  ( umask 077; echo "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'),kubelet-ts-admin,kubelet-ts-admin,\"system:masters\"" > "$pki/tokens.csv" )
fi
admin_token=$(cut -d, -f1 "$pki/tokens.csv")
kube_write_kubeconfig "$CLUSTER_ROOT/admin.kubeconfig" kubelet-ts-admin token "$admin_token"
kube_write_kubeconfig "$CLUSTER_ROOT/controller-manager.kubeconfig" system:kube-controller-manager cert "$pki/controller-manager.crt" "$pki/controller-manager.key"
kube_write_kubeconfig "$CLUSTER_ROOT/scheduler.kubeconfig" system:kube-scheduler cert "$pki/scheduler.crt" "$pki/scheduler.key"

running() { kube_pid_alive "$(cat "$CLUSTER_ROOT/$1.pid" 2>/dev/null || true)"; }
# When each component's leader lease must have been renewed (by this script's start, or by a restart of it).
declare -A lease_since=([kube-controller-manager]=$started [kube-scheduler]=$started)
# Starts a component unless it already runs with exactly this command line; one started by an older start.sh or
# with other flags (e.g. other feature gates) is stopped and started again with these.
ensure_component() {
  local name=$1; shift
  if running "$name"; then
    printf '%s\0' "$@" | cmp -s - "$CLUSTER_ROOT/$name.cmd" && return 0
    kts_log "$name runs with another command line than this start.sh gives it; restarting it"
    kube_stop_component "$name"
    # the old process may have renewed its lease within this second
    lease_since[$name]=$(( $(date +%s) + 1 ))
  fi
  kube_start_component "$name" "$@"
}
api() { curl -sf --cacert "$pki/ca.crt" -H "Authorization: Bearer $admin_token" "https://127.0.0.1:$KUBE_APISERVER_PORT$1"; }

# ---- etcd
if ! running etcd; then
  kube_start_component etcd /usr/bin/etcd --name kubelet-ts --data-dir "$CLUSTER_ROOT/etcd" \
    --listen-client-urls "http://127.0.0.1:$KUBE_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$KUBE_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$KUBE_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$KUBE_ETCD_PEER_PORT" \
    --initial-cluster "kubelet-ts=http://127.0.0.1:$KUBE_ETCD_PEER_PORT" --listen-metrics-urls "" --log-level warn
fi
kube_wait_for etcd "etcd healthy" 30 curl -sf "http://127.0.0.1:$KUBE_ETCD_PORT/health"

# ---- kube-apiserver
apiserver_args=(
  --etcd-servers="http://127.0.0.1:$KUBE_ETCD_PORT"
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$KUBE_APISERVER_PORT" --insecure-port=0
  --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key"
  --client-ca-file="$pki/ca.crt" --token-auth-file="$pki/tokens.csv"
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --enable-bootstrap-token-auth=true
  --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key"
  --service-account-issuer=https://kubernetes.default.svc.cluster.local --api-audiences=https://kubernetes.default.svc.cluster.local
  --service-cluster-ip-range="$KUBE_SERVICE_CIDR" --allow-privileged=true
  --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key"
  --kubelet-preferred-address-types=InternalIP,Hostname
  --feature-gates="$feature_gates"
  --profiling=false --v=1
)
ensure_component kube-apiserver "$KUBE_BIN_DIR/kube-apiserver" "${apiserver_args[@]}"
kube_wait_for kube-apiserver "kube-apiserver /readyz" 120 api /readyz

# ---- kube-controller-manager and kube-scheduler
common_args=(--bind-address=127.0.0.1 --port=0 --leader-elect=true --leader-elect-resource-lock=leases --feature-gates="$feature_gates" --profiling=false --v=1)
ensure_component kube-controller-manager --supervised "$KUBE_BIN_DIR/kube-controller-manager" "${common_args[@]}" \
  --kubeconfig="$CLUSTER_ROOT/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$CLUSTER_ROOT/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$CLUSTER_ROOT/controller-manager.kubeconfig" \
  --secure-port="$KUBE_CONTROLLER_MANAGER_PORT" --use-service-account-credentials=true \
  --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
  --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
  `# v1.20's signer backdates notBefore 5 min and ends at notBefore + duration: 7m30s leaves 2m30s of real life,` \
  `# rotated at 70-90% (15 s to 105 s after issue), so the e2e suite sees a renewal and the old certificate expire.` \
  --cluster-signing-duration="${KUBELET_TS_CLUSTER_SIGNING_DURATION:-7m30s}" \
  --controllers='*,bootstrapsigner,tokencleaner' \
  --node-monitor-period=2s --node-monitor-grace-period="${KUBELET_TS_NODE_MONITOR_GRACE_PERIOD:-20s}"
ensure_component kube-scheduler --supervised "$KUBE_BIN_DIR/kube-scheduler" "${common_args[@]}" \
  --kubeconfig="$CLUSTER_ROOT/scheduler.kubeconfig" \
  --authentication-kubeconfig="$CLUSTER_ROOT/scheduler.kubeconfig" \
  --authorization-kubeconfig="$CLUSTER_ROOT/scheduler.kubeconfig" \
  --secure-port="$KUBE_SCHEDULER_PORT"
# A leader lease renewed since this script started (a lease left in etcd by an earlier run does not count).
lease_renewed() {
  local renew
  renew=$(api "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/$1" | sed -n 's/.*"renewTime": *"\([^"]*\)".*/\1/p')
  [ -n "$renew" ] && [ "$(date -d "$renew" +%s)" -ge "${lease_since[$1]}" ]
}
kube_wait_for kube-controller-manager "kube-controller-manager's leader lease" 60 lease_renewed kube-controller-manager
kube_wait_for kube-scheduler "kube-scheduler's leader lease" 60 lease_renewed kube-scheduler
default_token() { api /api/v1/namespaces/default/serviceaccounts/default | grep -q '"name": *"default-token-'; }
kube_wait_for kube-controller-manager "the default service account's token" 60 default_token

cat > "$CLUSTER_ROOT/env" <<EOF
KUBE_CLUSTER_ROOT=$CLUSTER_ROOT
KUBE_BIN_DIR=$KUBE_BIN_DIR
KUBECTL=$KUBE_BIN_DIR/kubectl
KUBECONFIG=$CLUSTER_ROOT/admin.kubeconfig
KUBE_APISERVER=https://127.0.0.1:$KUBE_APISERVER_PORT
KUBE_CA_FILE=$pki/ca.crt
KUBE_VERSION=$("$KUBE_BIN_DIR/kube-apiserver" --version | awk '{print $2}')
EOF
kts_log "control plane ready in $(( $(date +%s) - started )) s (env in $CLUSTER_ROOT/env)"
cat "$CLUSTER_ROOT/env"
