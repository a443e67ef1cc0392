// Pod worker overhead as pods grow: `npm run bench -w @kubelet-ts/pod-workers`.
//
// A no-op syncer, so the times are the workers' own bookkeeping: N pods created and synced once,
// one resync round, then all killed through terminating and terminated. One cache refresh (as a
// PLEG relist would do) releases each phase.
import type { V1Pod } from '@kubernetes/client-node';
import { PodCache } from '@kubelet-ts/core';
import { PodWorkers } from '../src/index.js';
import { RecordingPodSyncer } from '../src/testing.js';

const SIZES = [100, 1_000, 5_000];

const pod = (i: number): V1Pod => ({
  metadata: { uid: `uid-${i}`, name: `pod-${i}`, namespace: 'default' },
  spec: { containers: [{ name: 'app', image: 'busybox' }], terminationGracePeriodSeconds: 30 },
});

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

async function measure(n: number): Promise<{ n: number; createMs: number; resyncMs: number; killMs: number }> {
  const cache = new PodCache();
  const syncer = new RecordingPodSyncer();
  const workers = new PodWorkers({ syncer, cache });
  const pods = Array.from({ length: n }, (_, i) => pod(i));
  const refresh = async (): Promise<void> => {
    await new Promise((resolve) => setTimeout(resolve, 2)); // the clock must move past the last sync
    cache.updateTime(Date.now());
  };

  let start = performance.now();
  for (const p of pods) workers.updatePod({ updateType: 'create', pod: p });
  await refresh();
  await until(() => syncer.calls.length >= n);
  const createMs = performance.now() - start - 2;

  await refresh();
  start = performance.now();
  for (const p of pods) workers.updatePod({ updateType: 'sync', pod: p });
  await refresh();
  await until(() => syncer.calls.length >= 2 * n);
  const resyncMs = performance.now() - start - 2;

  start = performance.now();
  for (const p of pods) workers.updatePod({ updateType: 'kill', pod: p });
  await refresh();
  await until(() => syncer.callsOf('syncTerminatingPod').length >= n);
  await refresh();
  await until(() => syncer.callsOf('syncTerminatedPod').length >= n);
  const killMs = performance.now() - start - 4;
  await workers.stop();
  return { n, createMs, resyncMs, killMs };
}

await measure(200); // warm-up
console.log('PodWorkers with a no-op syncer: total ms (µs per pod)');
console.log(['pods', 'create+sync', 'resync', 'kill->terminated'].map((s) => s.padStart(18)).join(''));
for (const size of SIZES) {
  const r = await measure(size);
  const cell = (ms: number): string => `${ms.toFixed(1)} (${((ms * 1000) / r.n).toFixed(1)})`.padStart(18);
  console.log(`${String(r.n).padStart(18)}${cell(r.createMs)}${cell(r.resyncMs)}${cell(r.killMs)}`);
}
