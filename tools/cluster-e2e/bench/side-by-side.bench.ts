// Our kubelet and the Go kubelet v1.20.2 (from the same tools/kube build), one after the other, each the cluster's
// only node, on the same containerd, with the same workload: a Deployment scaled 0 -> N until N pods are Ready, then
// N -> 0 until all are gone; before that, the time from process start to healthz OK and to the node Ready. Prints each
// figure for both and as ours / Go; RSS and CPU seconds beside every figure. Targets: 100 pods Ready ours / Go <= 0.8,
// CPU per pod start <= 1.0, RSS <= 1.0.
//
//   npm run bench                                   # every benchmark, this one included
//   npx tsx tools/cluster-e2e/bench/side-by-side.bench.ts
//   KUBELET_BENCH_CLUSTER_PODS=20 KUBELET_BENCH_KUBELETS=kubelet-ts npx tsx tools/cluster-e2e/bench/side-by-side.bench.ts
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import type { ProcessResources } from '@kubelet-ts/core';
import { readContainerdEnv, removeRuntimePods } from '@kubelet-ts/cri-conformance';
import { removeHostCgroup } from '@kubelet-ts/container-manager/testing';
import { Kubectl, KubeletProcess, ensureCluster, nodeKubeconfig, ourCgroupRoot, unmountAndRemove, waitFor } from '../src/index.js';
import { condition, httpDeployment } from '../src/workloads.js';

type Kind = KubeletProcess['kind'];

const sizes = (process.env.KUBELET_BENCH_CLUSTER_PODS ?? '20,100').split(',').map((n) => Number.parseInt(n, 10));
const kinds = (process.env.KUBELET_BENCH_KUBELETS ?? 'kubelet-ts,go-kubelet').split(',') as Kind[];
const PHASE_TIMEOUT_MS = 600_000;

interface Phase {
  seconds: number;
  rssMiB: number;
  cpuSeconds: number;
}

interface Run {
  /** Process start -> healthz OK (127.0.0.1:10248, both kubelets' default), and -> the node Ready. */
  healthzSeconds: number;
  readySeconds: number;
  idleRssMiB: number;
  up: Map<number, Phase>;
  down: Map<number, Phase>;
}

const mib = (bytes: number) => bytes / (1 << 20);

async function timed(kubelet: KubeletProcess, what: () => Promise<unknown>): Promise<Phase> {
  const cpuBefore = kubelet.resources().cpuSeconds;
  const start = performance.now();
  await what();
  const seconds = (performance.now() - start) / 1000;
  const after: ProcessResources = kubelet.resources();
  return { seconds, rssMiB: mib(after.rssBytes), cpuSeconds: after.cpuSeconds - cpuBefore };
}

async function benchOne(kind: Kind, kubectl: Kubectl, containerd: ReturnType<typeof readContainerdEnv>, cluster: Awaited<ReturnType<typeof ensureCluster>>): Promise<Run> {
  const node = `bench-${kind}`;
  const namespace = `bench-${kind}`;
  const dir = mkdtempSync(join(containerd.root, `bench-${kind}-`));
  const kubeconfig = await nodeKubeconfig(node);
  const options = { node, kubeconfig, runtimeEndpoint: containerd.endpoint, dir };
  const rates = ['--kube-api-qps=50', '--kube-api-burst=100', '--event-qps=50', '--event-burst=100'];
  // The Go kubelet gets the same API rates through its config file.
  const started = performance.now();
  const kubelet = kind === 'go-kubelet' ? KubeletProcess.startGo(options, cluster) : await KubeletProcess.startOurs({ ...options, extraArgs: rates });
  const run: Run = { healthzSeconds: 0, readySeconds: 0, idleRssMiB: 0, up: new Map(), down: new Map() };
  try {
    await waitFor(`${kind}: healthz OK`, async () => (await fetch('http://127.0.0.1:10248/healthz').catch(() => undefined))?.ok === true, 120_000, () => kubelet.logTail(), 10);
    run.healthzSeconds = (performance.now() - started) / 1000;
    await waitFor(`${kind}: node Ready`, async () => condition(await kubectl.getOrUndefined(['node', node]), 'Ready')?.status === 'True', 120_000, () => kubelet.logTail(), 50);
    run.readySeconds = (performance.now() - started) / 1000;
    await kubectl.run(['delete', 'namespace', namespace, '--ignore-not-found', '--wait=true', '--timeout=300s']);
    await kubectl.run(['create', 'namespace', namespace]);
    await waitFor('the namespace default service account', async () => ((await kubectl.getOrUndefined(['serviceaccount', '-n', namespace, 'default']))?.secrets?.length ?? 0) > 0);
    await kubectl.apply(httpDeployment({ name: 'load', namespace, replicas: 0, image: containerd.busyboxImage, nodeName: node }));
    // Settle: the first node status and lease rounds are done.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    run.idleRssMiB = mib(kubelet.resources().rssBytes);

    for (const n of sizes) {
      const up = await timed(kubelet, async () => {
        await kubectl.run(['scale', '-n', namespace, 'deployment/load', `--replicas=${n}`]);
        await waitFor(`${kind}: ${n} pods Ready`, async () => (await kubectl.json(['get', 'deployment', '-n', namespace, 'load'])).status?.readyReplicas === n, PHASE_TIMEOUT_MS, () => kubelet.logTail(10));
      });
      run.up.set(n, up);
      const down = await timed(kubelet, async () => {
        await kubectl.run(['scale', '-n', namespace, 'deployment/load', '--replicas=0']);
        await waitFor(`${kind}: all ${n} pods gone`, async () => (await kubectl.json(['get', 'pods', '-n', namespace])).items.length === 0, PHASE_TIMEOUT_MS, () => kubelet.logTail(10));
      });
      run.down.set(n, down);
      console.error(`${kind} ${n} pods: Ready in ${up.seconds.toFixed(1)} s (RSS ${up.rssMiB.toFixed(0)} MiB), gone in ${down.seconds.toFixed(1)} s (RSS ${down.rssMiB.toFixed(0)} MiB)`);
    }
  } finally {
    await kubelet.stop();
    await kubectl.run(['delete', 'namespace', namespace, '--ignore-not-found', '--wait=false']).catch(() => undefined);
    await kubectl.run(['delete', 'node', node, '--ignore-not-found']).catch(() => undefined);
    await removeRuntimePods(containerd.endpoint, (pod) => pod.namespace === namespace);
    if (kind === 'kubelet-ts') await removeHostCgroup(ourCgroupRoot(node)).catch(() => undefined);
    unmountAndRemove(dir);
  }
  return run;
}

const containerd = readContainerdEnv();
const cluster = await ensureCluster();
const kubectl = new Kubectl(cluster);
const runs = new Map<Kind, Run>();
for (const kind of kinds) runs.set(kind, await benchOne(kind, kubectl, containerd, cluster));

const ours = runs.get('kubelet-ts');
const go = runs.get('go-kubelet');
const rows: Array<[string, number | undefined, number | undefined, string]> = [
  ['kubelet start -> healthz OK', ours?.healthzSeconds, go?.healthzSeconds, 's'],
  ['kubelet start -> node Ready', ours?.readySeconds, go?.readySeconds, 's'],
  ['idle RSS after registration', ours?.idleRssMiB, go?.idleRssMiB, 'MiB'],
];
for (const n of sizes) {
  const [ou, gu, od, gd] = [ours?.up.get(n), go?.up.get(n), ours?.down.get(n), go?.down.get(n)];
  rows.push(
    [`0 -> ${n}: time until ${n} Ready`, ou?.seconds, gu?.seconds, 's'],
    [`0 -> ${n}: RSS at ${n} Ready`, ou?.rssMiB, gu?.rssMiB, 'MiB'],
    [`0 -> ${n}: CPU`, ou?.cpuSeconds, gu?.cpuSeconds, 's'],
    [`0 -> ${n}: CPU per pod start`, ou && ou.cpuSeconds / n, gu && gu.cpuSeconds / n, 's'],
    [`${n} -> 0: time until all gone`, od?.seconds, gd?.seconds, 's'],
    [`${n} -> 0: RSS after`, od?.rssMiB, gd?.rssMiB, 'MiB'],
    [`${n} -> 0: CPU`, od?.cpuSeconds, gd?.cpuSeconds, 's'],
  );
}
const fmt = (v: number | undefined, unit: string) => (v === undefined ? '-' : `${v.toFixed(unit === 'MiB' ? 0 : v < 0.1 ? 3 : 2)} ${unit}`);
console.log(`\nkubelet-ts vs the Go kubelet ${cluster.version} on containerd, each the only node of a real ${cluster.version} control plane (one run; only ratios within it count)`);
console.log(`${'figure'.padEnd(36)} ${'kubelet-ts'.padStart(12)} ${'Go kubelet'.padStart(12)} ${'ours / Go'.padStart(10)}`);
for (const [name, o, g, unit] of rows) {
  const ratio = o !== undefined && g !== undefined && g > 0 ? (o / g).toFixed(2) : '-';
  console.log(`${name.padEnd(36)} ${fmt(o, unit).padStart(12)} ${fmt(g, unit).padStart(12)} ${ratio.padStart(10)}`);
}
