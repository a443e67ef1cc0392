#!/usr/bin/env bash
# The test command: installs everything the tests need, starts a real containerd, builds, lints and
# runs every package's tap suite (unit and integration), then prints one closing line with the totals.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/install.sh || exit 1

echo "test-all: starting containerd for the integration tests" >&2
if ! bash tools/containerd/start.sh >/dev/null; then
  echo "test-all: containerd did not start; see ${KUBELET_TS_CONTAINERD_ROOT:-/tmp/kubelet-ts-containerd}/containerd.log" >&2
  exit 1
fi
trap 'bash tools/containerd/stop.sh >/dev/null 2>&1 || true' EXIT

log=$(mktemp /tmp/kubelet-ts-test.XXXXXX)
status=0
npx nx run-many -t build lint typecheck --output-style=static 2>&1 | tee -a "$log" || status=1
if [ "$status" -eq 0 ]; then
  npx nx run-many -t test --output-style=static --parallel=1 2>&1 | tee -a "$log" || status=1
fi

node tools/tap-summary.mjs "$log" || status=1
rm -f "$log"
exit "$status"
