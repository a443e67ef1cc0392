# shellcheck shell=bash
# Shared helpers for tools/kube/*.sh (the real control plane). Source it; do not run it.
# Messages go to stderr; scripts keep stdout for KEY=value lines.

KUBE_TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tools/lib/common.sh
. "$KUBE_TOOLS_DIR/../lib/common.sh"

# Debian bookworm's kubernetes source package: upstream v1.20.2 under a version that sorts after 1.20.5.
KUBE_SOURCE_VERSION=1.20.5+really1.20.2-1.1+deb12u1
KUBE_WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet cmd/kubectl"
KUBE_BINARIES="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"

kube_init_paths() {
  KUBE_CACHE_DIR=${KUBELET_TS_KUBE_CACHE:-/var/cache/kubelet-ts}/kubernetes-$KUBE_SOURCE_VERSION
  KUBE_BIN_DIR="$KUBE_CACHE_DIR/bin"
  CLUSTER_ROOT=$(kts_safe_root "${KUBELET_TS_CLUSTER_ROOT:-/tmp/kubelet-ts-cluster}" KUBELET_TS_CLUSTER_ROOT "cluster root") || exit 1
}

kube_binaries_present() {
  local b
  for b in $KUBE_BINARIES; do
    [ -x "$KUBE_BIN_DIR/$b" ] || return 1
  done
}

# Fixed loopback ports, away from the defaults of a real control plane that might run on the machine too.
KUBE_ETCD_PORT=${KUBELET_TS_ETCD_PORT:-23790}
KUBE_ETCD_PEER_PORT=${KUBELET_TS_ETCD_PEER_PORT:-23800}
KUBE_APISERVER_PORT=${KUBELET_TS_APISERVER_PORT:-6443}
KUBE_CONTROLLER_MANAGER_PORT=${KUBELET_TS_CONTROLLER_MANAGER_PORT:-10257}
KUBE_SCHEDULER_PORT=${KUBELET_TS_SCHEDULER_PORT:-10259}
KUBE_SERVICE_CIDR=10.96.0.0/12
KUBE_SERVICE_IP=10.96.0.1

kube_pid_alive() {
  local pid=$1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # a zombie counts as gone
  [ "$(awk '/^State:/{print $2}' "/proc/$pid/status" 2>/dev/null)" != Z ]
}

# Stop a component (its whole process group) by its pid file: SIGTERM, wait up to $2 seconds (default 20), then
# SIGKILL.
kube_stop_component() {
  local name=$1 wait=${2:-20} pidfile="$CLUSTER_ROOT/$1.pid" pid i
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if kube_pid_alive "$pid"; then
    kts_log "stopping $name (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 $((wait * 10))); do
      kube_pid_alive "$pid" || break
      sleep 0.1
    done
    if kube_pid_alive "$pid"; then
      kts_log "$name (pid $pid) did not stop after ${wait}s; killing it"
    fi
  fi
  # Whatever is left of the group (a supervised component's child) goes too.
  [ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

# Start a component detached (its own session and process group, output to $CLUSTER_ROOT/<name>.log) and record
# its pid. `kube_start_component NAME --supervised CMD...` restarts CMD whenever it exits, as the kubelet restarts a
# control plane's static pods: kube-controller-manager and kube-scheduler exit by design when they lose their
# leader lease (an API server outage longer than the renew deadline).
kube_start_component() {
  local name=$1 supervised=""; shift
  if [ "${1:-}" = --supervised ]; then supervised=1; shift; fi
  kts_log "starting $name${supervised:+ (restarted when it exits)} (log $CLUSTER_ROOT/$name.log)"
  echo "---- $(date -u +%Y-%m-%dT%H:%M:%SZ) starting $name" >> "$CLUSTER_ROOT/$name.log"
  printf '%s\0' ${supervised:+--supervised} "$@" > "$CLUSTER_ROOT/$name.cmd"
  if [ -n "$supervised" ]; then
    # shellcheck disable=SC2016
    setsid bash -c 'while :; do "$@"; code=$?; echo "---- $(date -u +%Y-%m-%dT%H:%M:%SZ) $0 exited with $code; restarting in 1 s"; sleep 1; done' \
      "$name" "$@" </dev/null >>"$CLUSTER_ROOT/$name.log" 2>&1 &
  else
    setsid "$@" </dev/null >>"$CLUSTER_ROOT/$name.log" 2>&1 &
  fi
  echo $! > "$CLUSTER_ROOT/$name.pid"
}

# Wait until a command succeeds, failing with the component's log tail if it dies or the time runs out.
kube_wait_for() {
  local name=$1 what=$2 timeout=$3; shift 3
  local pid start
  pid=$(cat "$CLUSTER_ROOT/$name.pid" 2>/dev/null || true)
  start=$(date +%s)
  until "$@" >/dev/null 2>&1; do
    if ! kube_pid_alive "$pid"; then
      tail -n 40 "$CLUSTER_ROOT/$name.log" >&2
      kts_die "$name (pid $pid) exited before $what; log above, full log $CLUSTER_ROOT/$name.log"
    fi
    if [ $(( $(date +%s) - start )) -ge "$timeout" ]; then
      tail -n 40 "$CLUSTER_ROOT/$name.log" >&2
      kts_die "$what not reached after ${timeout}s; log above, full log $CLUSTER_ROOT/$name.log"
    fi
    sleep 0.3
  done
  kts_log "$what after $(( $(date +%s) - start )) s"
}

kube_kubectl() { "$KUBE_BIN_DIR/kubectl" --kubeconfig "$CLUSTER_ROOT/admin.kubeconfig" "$@"; }

# A kubeconfig for the cluster: kube_write_kubeconfig FILE USER (token TOKEN | cert CERT KEY)
kube_write_kubeconfig() {
  local file=$1 user=$2 kind=$3 credentials
  if [ "$kind" = token ]; then
    credentials="    token: $4"
  else
    credentials="    client-certificate-data: $(base64 -w0 < "$4")
    client-key-data: $(base64 -w0 < "$5")"
  fi
  umask 077
  cat > "$file" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kubelet-ts
  cluster:
    server: https://127.0.0.1:$KUBE_APISERVER_PORT
    certificate-authority-data: $(base64 -w0 < "$CLUSTER_ROOT/pki/ca.crt")
users:
- name: $user
  user:
$credentials
contexts:
- name: $user@kubelet-ts
  context:
    cluster: kubelet-ts
    user: $user
current-context: $user@kubelet-ts
KUBECONFIG
}

# A client or serving certificate signed by the cluster CA: kube_issue_cert NAME SUBJECT EXTENDED_KEY_USAGE [SANS]
kube_issue_cert() {
  local name=$1 subject=$2 usage=$3 sans=${4:-} pki="$CLUSTER_ROOT/pki"
  [ -f "$pki/$name.crt" ] && [ -f "$pki/$name.key" ] && return 0
  openssl req -new -nodes -newkey rsa:2048 -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subject" 2>/dev/null \
    || kts_die "openssl req for $name failed"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -n "$sans" ] && echo "subjectAltName=$sans"
  } > "$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -out "$pki/$name.crt" -days 365 -sha256 -extfile "$pki/$name.ext" 2>/dev/null || kts_die "signing $name failed"
  chmod 600 "$pki/$name.key"
  rm -f "$pki/$name.csr" "$pki/$name.ext"
}

# A kubeconfig with a node client certificate (CN=system:node:NAME, O=system:nodes), so that the Node
# authorizer and NodeRestriction apply to the kubelet as in a real cluster. Prints the kubeconfig's path.
kube_node_kubeconfig() {
  local node=$1 file="$CLUSTER_ROOT/nodes/$1.kubeconfig"
  case "$node" in
    ''|*[!a-z0-9.-]*) kts_die "invalid node name '$node' (lower-case DNS subdomain)" ;;
  esac
  mkdir -p "$CLUSTER_ROOT/nodes"
  kube_issue_cert "node-$node" "/O=system:nodes/CN=system:node:$node" clientAuth
  [ -f "$file" ] || kube_write_kubeconfig "$file" "system:node:$node" cert "$CLUSTER_ROOT/pki/node-$node.crt" "$CLUSTER_ROOT/pki/node-$node.key"
  echo "$file"
}
