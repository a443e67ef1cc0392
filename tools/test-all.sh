#!/usr/bin/env bash
# The test command: installs everything the tests need, starts a real containerd, builds the real control plane
# (in the background), builds, lints and runs every package's tap suite (unit and integration), then the e2e suite
# against the real control plane, and prints one closing line with the totals.
set -uo pipefail
cd "$(dirname "$0")/.."

bash tools/install.sh || exit 1
# The node-shutdown suite runs a private dbus-daemon and the real systemd-inhibit (no systemd needs to run); the
# container-manager suite and the cluster e2e boot a systemd with systemd-nspawn (tools/systemd-node). Installed here,
# before the control plane's build starts its own apt-get in the background.
bash -c '. tools/lib/common.sh && kts_ensure_packages dbus-daemon systemd systemd-container' || exit 1

echo "test-all: starting containerd for the integration tests" >&2
if ! bash tools/containerd/start.sh >/dev/null; then
  echo "test-all: containerd did not start; see ${KUBELET_TS_CONTAINERD_ROOT:-/tmp/kubelet-ts-containerd}/containerd.log" >&2
  exit 1
fi

# The real control plane (tools/kube) is built once per machine and cached (about 6-9 min on 2 cores). The build
# starts now, at the lowest CPU priority, so it overlaps the unit and integration suites; the cluster e2e suite,
# which runs last, waits for it (tools/kube/start.sh takes the build's lock).
kube_build_log=$(mktemp /tmp/kubelet-ts-kube-build.XXXXXX)
nice -n 19 bash tools/kube/build.sh >"$kube_build_log" 2>&1 &
kube_build_pid=$!
cleanup() {
  # the systemd node of the cluster e2e (its suite stops it; this is for a run cut short)
  bash tools/systemd-node/stop.sh >/dev/null 2>&1 || true
  bash tools/kube/stop.sh --purge >/dev/null 2>&1 || true
  bash tools/containerd/stop.sh >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Plain TAP output: nx runs tasks in a pseudo-terminal, where tap would draw its interactive reporter.
export TAP_REPORTER=tap

log=$(mktemp /tmp/kubelet-ts-test.XXXXXX)
status=0
# Lint and type errors fail the run, but the tests still run so their results are visible.
npx nx run-many -t build --output-style=static 2>&1 | tee -a "$log" || status=1
npx nx run-many -t lint typecheck --output-style=static 2>&1 | tee -a "$log" || status=1
npx nx run-many -t test --output-style=static --parallel=1 --exclude=@kubelet-ts/cluster-e2e,@kubelet-ts/chaos 2>&1 | tee -a "$log" || status=1

if ! wait "$kube_build_pid"; then
  echo "test-all: building the control plane failed:" >&2
  tail -n 60 "$kube_build_log" >&2
  status=1
fi
echo "test-all: the control plane was built in the background; its log:" >&2
tail -n 3 "$kube_build_log" >&2
rm -f "$kube_build_log"
# The kubelet against the real control plane (started by the suite itself with tools/kube/start.sh).
npx nx run @kubelet-ts/cluster-e2e:test --output-style=static 2>&1 | tee -a "$log" || status=1
# The chaos suite's CI variant (scenarios 1-3 under pod churn: the kubelet killed, containerd killed and slowed, the
# API server down and etcd restarted) on the same control plane; the full runs and the soak are `npm run chaos`.
npx nx run @kubelet-ts/chaos:test --output-style=static 2>&1 | tee -a "$log" || status=1

node tools/tap-summary.mjs "$log" || status=1
rm -f "$log"
exit "$status"
