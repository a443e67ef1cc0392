#!/usr/bin/env bash
# The main job: installs and builds kubelet-ts, then runs the kubelet on the example static pods in
# examples/static-pods with the embedded local runtime (containers are host processes, no isolation),
# printing each pod's status as it changes. Stop it with Ctrl-C (SIGINT) or SIGTERM.
# Extra arguments go to the kubelet, e.g. `bash tools/run.sh --runonce` runs the pods once and exits.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install.sh
echo "run: building" >&2
npx nx run @kubelet-ts/kubelet:build --output-style=static >/dev/null

demo=${KUBELET_TS_DEMO_DIR:-/tmp/kubelet-ts-demo}
mkdir -p "$demo"
echo "run: starting the kubelet on examples/static-pods (state in $demo)" >&2
exec apps/kubelet/dist/kubelet.mjs \
  --pod-manifest-path examples/static-pods \
  --root-dir "$demo/root" \
  --pod-logs-dir "$demo/logs" \
  --hostname-override "${KUBELET_TS_NODE_NAME:-node1}" \
  "$@"
