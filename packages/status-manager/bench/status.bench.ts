// Benchmark: 1,000 pod status changes synced to @kubelet-ts/test-apiserver through client-node.
//  - API requests and bytes sent per change, and time to converge (every change visible in the server);
//  - with our sync (patch against the last seen copy + resourceVersion) and with Go's (GET before every patch);
//  - 100 pods x 10 quick changes each: what batching saves.
// Rate limiting is off (qps 1e9) to measure the sync itself; at the kubelet's default --kube-api-qps 50 /
// burst 100 the time is bounded by (requests - 100) / 50 s, printed alongside.
// Figures only, no thresholds. Run: npm run bench -w @kubelet-ts/status-manager
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { realClock, type PodStatus } from '@kubelet-ts/core';
import { startTestApiServer, type TestApiServer } from '@kubelet-ts/test-apiserver';
import { KubeletStatusManager, generateAPIPodStatus } from '../src/index.js';
import { FakePodManager } from '../src/testing.js';

const N = Number(process.env.PODS ?? 1000);

function podSpec(i: number) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `pod-${String(i).padStart(4, '0')}`, namespace: 'default' },
    spec: { nodeName: 'node-1', containers: [{ name: 'main', image: 'busybox:1.36' }, { name: 'sidecar', image: 'busybox:1.36' }] },
  };
}

function runtime(pod: V1Pod, restarts: number): PodStatus {
  const t = Date.parse('2026-01-01T00:00:00Z');
  const c = (name: string, createdAt: number, restartCount: number) => ({
    id: { type: 'containerd', id: `${pod.metadata!.uid}-${name}-${restartCount}` },
    name,
    state: 'running' as const,
    createdAt,
    startedAt: createdAt + 100,
    exitCode: 0,
    image: 'docker.io/library/busybox:1.36',
    imageId: 'sha256:abc',
    imageRef: 'docker.io/library/busybox@sha256:abc',
    hash: 'h',
    restartCount,
  });
  return {
    id: pod.metadata!.uid!,
    name: pod.metadata!.name!,
    namespace: 'default',
    ips: ['10.88.0.2'],
    containerStatuses: [c('main', t + restarts * 1000, restarts), c('sidecar', t, 0)],
    sandboxStatuses: [{ id: 's', name: '', namespace: '', uid: '', attempt: 0, state: 'SANDBOX_READY', createdAt: t, labels: {}, annotations: {} }],
    timestamp: t,
  };
}

async function run(server: TestApiServer, core: CoreV1Api, label: string, opts: { getBeforePatch: boolean; pods: number; changesPerPod: number }) {
  // Fresh pods, as the pod manager would hold them (from the watch).
  const listed = await core.listNamespacedPod({ namespace: 'default' });
  const pods = listed.items.slice(0, opts.pods);
  const podManager = new FakePodManager();
  for (const p of pods) podManager.addPod(p);
  const sm = new KubeletStatusManager({ kubeClient: core, podManager, clock: realClock, qps: 1e9, burst: 1e9, getBeforePatch: opts.getBeforePatch });
  sm.start();
  // A first status per pod, so the measured changes are changes (not first writes).
  for (const p of pods) sm.setPodStatus(p, generateAPIPodStatus({ pod: p, status: runtime(p, 0), now: Date.now() }));
  await sm.whenIdle();
  server.clearRequests();
  const changes = opts.pods * opts.changesPerPod;
  const start = performance.now();
  for (let round = 1; round <= opts.changesPerPod; round++) {
    for (const p of pods) {
      const old = sm.getPodStatus(p.metadata!.uid!);
      sm.setPodStatus(p, generateAPIPodStatus({ pod: p, status: runtime(p, round), oldPodStatus: old, now: Date.now() }));
    }
  }
  await sm.whenIdle();
  const ms = performance.now() - start;
  const final = opts.changesPerPod;
  const converged = pods.every((p) => (server.store.get('pods', 'default', p.metadata!.name!)?.status as any)?.containerStatuses?.find((c: any) => c.name === 'main')?.restartCount === final);
  const reqs = server.requests.filter((r) => r.resource === 'pods');
  const bytes = reqs.reduce((a, r) => a + r.requestBytes, 0);
  const respBytes = reqs.reduce((a, r) => a + r.responseBytes, 0);
  const byVerb = reqs.reduce<Record<string, number>>((a, r) => ((a[r.verb] = (a[r.verb] ?? 0) + 1), a), {});
  const atDefaultQps = Math.max(0, (reqs.length - 100) / 50);
  console.log(
    `${label.padEnd(44)} changes=${changes} requests/change=${(reqs.length / changes).toFixed(2)} (${Object.entries(byVerb).map(([v, n]) => `${v} ${n}`).join(', ')}) ` +
      `bytes sent/change=${(bytes / changes).toFixed(0)} bytes received/change=${(respBytes / changes).toFixed(0)} converge=${ms.toFixed(0)} ms ` +
      `(${((ms * 1000) / changes).toFixed(0)} us/change) at --kube-api-qps 50: >= ${atDefaultQps.toFixed(1)} s converged=${converged}`,
  );
  await sm.stop();
}

async function main(): Promise<void> {
  const server = await startTestApiServer({ bookmarkIntervalMs: 0 });
  const dir = await mkdtemp(join(tmpdir(), 'status-bench-'));
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(await server.writeKubeconfig(join(dir, 'kubeconfig')));
    const core = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < N; i++) server.store.create('pods', podSpec(i));
    console.log(`status manager bench: ${N} pods, 2 containers each, test-apiserver at ${server.url}, node ${process.version}`);
    await run(server, core, `${N} pods x 1 change (patch + resourceVersion)`, { getBeforePatch: false, pods: N, changesPerPod: 1 });
    await run(server, core, `${N} pods x 1 change (Go: GET + patch)`, { getBeforePatch: true, pods: N, changesPerPod: 1 });
    await run(server, core, `${Math.min(100, N)} pods x 10 quick changes (batched)`, { getBeforePatch: false, pods: Math.min(100, N), changesPerPod: 10 });
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
