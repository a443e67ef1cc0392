#!/usr/bin/env bash
# Writes a kubeconfig for a node of the cluster started by tools/kube/start.sh, with a client certificate
# CN=system:node:NODE, O=system:nodes signed by the cluster CA, and prints its path:
#   tools/kube/node-kubeconfig.sh NODE
set -euo pipefail

TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tools/kube/lib.sh
. "$TOOLS_DIR/kube/lib.sh"
kube_init_paths
[ -f "$CLUSTER_ROOT/pki/ca.key" ] || kts_die "no cluster CA under $CLUSTER_ROOT/pki: run tools/kube/start.sh first"
kube_node_kubeconfig "${1:-}"
