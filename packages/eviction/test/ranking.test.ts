import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { buildSignalToRankFunc, evictionMessage, podRequest, rankDiskPressureFunc, rankMemoryPressure } from '../src/index.js';
import { cachedStatsFunc } from '../src/signals.js';
import { buildPodStats } from '../src/testing.js';
import { Gi, Mi, pod } from './helpers.js';

t.test("podRequest: Go's GetResourceRequestQuantity (containers summed, init containers as a floor, overhead)", async (t) => {
  const p: V1Pod = {
    metadata: { name: 'p', uid: 'p' },
    spec: {
      containers: [
        { name: 'a', resources: { requests: { memory: '100Mi' } } },
        { name: 'b', resources: { requests: { memory: '200Mi' } } },
      ],
      initContainers: [{ name: 'init', resources: { requests: { memory: '500Mi' } } }],
      overhead: { memory: '10Mi', cpu: '100m' },
    },
  };
  t.equal(podRequest(p, 'memory').toString(), '510Mi');
  t.equal(podRequest(p, 'ephemeral-storage').toString(), '0', 'nothing requested: no overhead either');
  t.equal(podRequest(pod('x'), 'memory').isZero(), true);
});

t.test('rankMemoryPressure and the disk rankers sort in place, stable for ties', async (t) => {
  const a = pod('a');
  const b = pod('b');
  const c = pod('c', { requests: { memory: '1Gi' } });
  const stats = cachedStatsFunc([buildPodStats(a, { memoryBytes: 100 * Mi }), buildPodStats(b, { memoryBytes: 100 * Mi }), buildPodStats(c, { memoryBytes: 2 * Gi })]);
  const pods = [c, b, a];
  rankMemoryPressure(pods, stats);
  t.same(pods.map((p) => p.metadata?.name), ['c', 'b', 'a'], 'c exceeds by 1Gi; a and b tie and keep their order');

  const x = pod('x', { volumes: [{ name: 'host', hostPath: { path: '/data' } }, { name: 'cm', configMap: { name: 'c' } }] });
  const y = pod('y');
  const diskStats = cachedStatsFunc([
    buildPodStats(x, { rootfsBytes: 0, logsBytes: 0, logsInodes: 1, volumes: { host: 3 * Gi, cm: Gi } }),
    buildPodStats(y, { rootfsBytes: 3 * Gi, logsBytes: 0, rootfsInodes: 9, logsInodes: 1 }),
  ]);
  const all = buildSignalToRankFunc(false).get('nodefs.available')!;
  const shared = [y, x];
  all(shared, diskStats);
  t.same(shared.map((p) => p.metadata?.name), ['x', 'y'], 'hostPath and configMap volumes count (4Gi > 3Gi)');
  const inodes = [x, y];
  rankDiskPressureFunc(['root', 'logs', 'localVolumeSource'], 'inodes')(inodes, diskStats);
  t.same(inodes.map((p) => p.metadata?.name), ['y', 'x'], 'inodes: 10 > 3');
  const logsOnly = [x, y];
  buildSignalToRankFunc(true).get('imagefs.available')!(logsOnly, diskStats);
  t.same(logsOnly.map((p) => p.metadata?.name), ['y', 'x'], 'dedicated imagefs: imagefs ranks by rootfs');
});

t.test("evictionMessage: Go's message and annotations", async (t) => {
  const p = pod('p', { containers: { web: { requests: { memory: '100Mi', 'ephemeral-storage': '1Gi' } }, sidecar: {}, quiet: { requests: { memory: '1Gi' } } } });
  const stats = cachedStatsFunc([
    buildPodStats(p, {
      containers: {
        web: { memoryBytes: 150 * Mi, rootfsBytes: Gi, logsBytes: Mi },
        sidecar: { memoryBytes: 1536 * Mi, rootfsBytes: 10 * Mi },
        quiet: { memoryBytes: Mi },
        gone: { memoryBytes: Gi },
      },
    }),
  ]);
  t.same(evictionMessage('memory', p, stats), {
    message:
      'The node was low on resource: memory. Container web was using 150Mi, which exceeds its request of 100Mi. Container sidecar was using 1536Mi, which exceeds its request of 0. ',
    annotations: { offending_containers: 'web,sidecar', offending_containers_usage: '150Mi,1536Mi', starved_resource: 'memory' },
  });
  t.same(evictionMessage('ephemeral-storage', p, stats), {
    message: 'The node was low on resource: ephemeral-storage. Container web was using 1025Mi, which exceeds its request of 1Gi. ',
    annotations: { offending_containers: 'web', offending_containers_usage: '1025Mi', starved_resource: 'ephemeral-storage' },
  }, 'a container needs both rootfs and logs figures');
  t.same(evictionMessage('memory', pod('nostats'), stats), { message: 'The node was low on resource: memory. ', annotations: {} });
});
