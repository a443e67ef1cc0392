#!/usr/bin/env bash
# Runs every benchmark (each package's "bench" script) one after another, with containerd started so the
# benchmarks that compare against it can. Figures are printed as ratios against references measured in
# the same run; nothing here has a pass/fail threshold.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/install.sh
bash tools/containerd/start.sh >/dev/null
# The cluster benchmark (tools/cluster-e2e) starts the real control plane itself (building it once if needed).
trap 'bash tools/kube/stop.sh --purge >/dev/null 2>&1 || true; bash tools/containerd/stop.sh >/dev/null 2>&1 || true' EXIT
npx nx run-many -t build --output-style=static >/dev/null
npx nx run-many -t bench --parallel=1 --output-style=static "$@"
