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

# Plain TAP output: nx runs tasks in a pseudo-terminal, where tap would draw its interactive reporter.
export TAP_REPORTER=tap

log=$(mktemp /tmp/kubelet-ts-test.XXXXXX)
status=0
# Lint and type errors fail the run, but the tests still run so their results are visible.
npx nx run-many -t build --output-style=static 2>&1 | tee -a "$log" || status=1
npx nx run-many -t lint typecheck --output-style=static 2>&1 | tee -a "$log" || status=1
npx nx run-many -t test --output-style=static --parallel=1 2>&1 | tee -a "$log" || status=1

node tools/tap-summary.mjs "$log" || status=1
rm -f "$log"
exit "$status"
