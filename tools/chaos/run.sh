#!/usr/bin/env bash
# `npm run chaos`: the full chaos runs and the soak (a benchmark, not part of the test command). Installs what they
# need, starts containerd, builds, and runs tools/chaos/src/cli.ts with the given arguments; the control plane is
# started (built once if needed) by the suite itself. Examples:
#   npm run chaos                                         every scenario, full variant
#   npm run chaos -- --scenarios=kubelet-kill --seed=42   one scenario, a repeatable run
#   npm run chaos -- --soak=60m                           the one-hour soak
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/install.sh
bash tools/containerd/start.sh >/dev/null
trap 'bash tools/kube/stop.sh --purge >/dev/null 2>&1 || true; bash tools/containerd/stop.sh >/dev/null 2>&1 || true' EXIT
npx nx run-many -t build --output-style=static >/dev/null
npx tsx tools/chaos/src/cli.ts "$@"
