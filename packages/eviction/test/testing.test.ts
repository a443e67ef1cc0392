import t from 'tap';
import { FakeSummaryProvider as StatsFake } from '@kubelet-ts/stats/testing';
import { makeSignalObservations } from '../src/index.js';
import { buildPodStats, buildSummary, FakePodKiller, FakeSummaryProvider } from '../src/testing.js';
import { Gi, pod, T0 } from './helpers.js';

t.test('buildSummary gives the observations it is asked for', async (t) => {
  const summary = buildSummary(
    {
      memory: { availableBytes: Gi, workingSetBytes: 3 * Gi },
      podsMemory: { workingSetBytes: Gi },
      nodeFs: { availableBytes: 10, capacityBytes: 100 },
      imageFs: { availableBytes: 20, capacityBytes: 200, inodesFree: 1, inodes: 2 },
      rlimit: { maxpid: 10, curproc: 4 },
    },
    [[pod('a'), { memoryBytes: 5, processes: 2 }]],
    T0 + 1500,
  );
  t.equal(summary.node.memory?.time, '2026-01-01T00:00:01Z', 'whole seconds, as on the wire');
  t.same(
    [...makeSignalObservations(summary, { allocatableMemoryBytes: 2 * Gi })].map(([s, o]) => [s, o.availableBytes, o.capacityBytes]),
    [
      ['memory.available', Gi, 4 * Gi],
      ['allocatableMemory.available', Gi, 2 * Gi],
      ['nodefs.available', 10, 100],
      ['imagefs.available', 20, 200],
      ['imagefs.inodesFree', 1, 2],
      ['pid.available', 6, 10],
    ],
  );
  t.same(summary.pods[0].podRef, { name: 'a', namespace: 'default', uid: 'uid-a' });
  t.equal(summary.pods[0].process_stats?.process_count, 2);
  t.equal(buildPodStats(pod('b', { containers: {} })).containers.length, 0);
  t.equal(FakeSummaryProvider, StatsFake, "stats' fake, re-exported");
});

t.test('FakePodKiller records kills and the status, and fails on demand', async (t) => {
  const killer = new FakePodKiller();
  await killer.killPod(pod('a'), 5, (s) => (s.phase = 'Failed'));
  killer.error = new Error('nope');
  await t.rejects(killer.killPod(pod('b'), 0, () => undefined), { message: 'nope' });
  t.same(killer.names(), ['a', 'b']);
  t.same(killer.kills[0].status, { phase: 'Failed' });
  t.equal(killer.kills[0].gracePeriodOverrideSeconds, 5);
});
