#!/usr/bin/env bash
# Stops the control plane started by tools/kube/start.sh, each component by its own pid (scheduler,
# controller-manager, API server, then etcd). With --purge it also removes $KUBELET_TS_CLUSTER_ROOT (the etcd
# data, certificates and kubeconfigs); the built binaries stay cached.
set -euo pipefail

TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/kube/lib.sh
. "$TOOLS_DIR/kube/lib.sh"
kube_init_paths
[ -d "$CLUSTER_ROOT" ] || exit 0
for component in kube-scheduler kube-controller-manager kube-apiserver etcd; do
  kube_stop_component "$component"
done
if [ "${1:-}" = --purge ]; then
  rm -rf "$CLUSTER_ROOT"
  kts_log "removed $CLUSTER_ROOT"
fi
