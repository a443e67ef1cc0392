import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { harness, Gi, Mi, node, pod } from './helpers.js';

t.test('memory.available hard threshold: ranks by exceeding requests and usage, evicts one pod with Go status, event and annotations', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' } });
  const guaranteed = pod('guaranteed', { requests: { memory: '1Gi', cpu: '1' }, limits: { memory: '1Gi', cpu: '1' } });
  const burstable = pod('burstable', { requests: { memory: '100Mi' } });
  const bestEffort = pod('besteffort');
  const staticPod = pod('static', { annotations: { 'kubernetes.io/config.source': 'file' } });
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } }), [
    [guaranteed, { memoryBytes: 800 * Mi }],
    [bestEffort, { memoryBytes: 100 * Mi }],
    [burstable, { memoryBytes: 300 * Mi }],
    [staticPod, { memoryBytes: 5 * Gi }],
  ]);
  const evicted = await h.manager.synchronize();
  t.same(evicted.map((p) => p.metadata?.name), ['burstable'], 'the static pod ranks first (5Gi above requests) but is critical');
  t.equal(h.killer.kills.length, 1, 'at most one pod per pass');
  const message = 'The node was low on resource: memory. Container app was using 300Mi, which exceeds its request of 100Mi. ';
  t.same(h.killer.kills[0].status, { phase: 'Failed', reason: 'Evicted', message });
  t.equal(h.killer.kills[0].gracePeriodOverrideSeconds, 0, 'hard threshold: no grace period');
  t.same(h.recorder.lines(), ['Warning EvictionThresholdMet Attempting to reclaim memory', `Warning Evicted ${message}`]);
  t.equal(h.recorder.events[0].object.kind, 'Node');
  t.equal(h.recorder.events[1].object, burstable);
  t.same(h.recorder.events[1].details, { annotations: { offending_containers: 'app', offending_containers_usage: '300Mi', starved_resource: 'memory' } });
  t.equal(h.manager.isUnderMemoryPressure(), true);
  t.equal(h.manager.isUnderDiskPressure(), false);
  t.equal(h.manager.isUnderPIDPressure(), false);
  t.ok(h.logger.messages('error').includes('Eviction manager: cannot evict a critical pod'));
  t.match(h.logger.entries.find((e) => e.msg === 'Eviction manager: pods ranked for eviction')?.kv, { pods: '[default/static, default/burstable, default/besteffort, default/guaranteed]' });
  t.same(h.manager.observations().get('memory.available'), { availableBytes: 500 * Mi, capacityBytes: 500 * Mi + 15 * Gi, time: h.clock.now() });
});

t.test('acts only on fresh stats; one pod per pass; the next pass with new stats evicts the next pod', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' } });
  const a = pod('a');
  const b = pod('b');
  const low = { memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } };
  h.set(node(low), [
    [a, { memoryBytes: 2 * Gi }],
    [b, { memoryBytes: 1 * Gi }],
  ]);
  t.same((await h.manager.synchronize()).map((p) => p.metadata?.name), ['a']);
  h.clock.step(5_000);
  t.same(await h.manager.synchronize(), [], 'same stats (same time): no second eviction');
  t.equal(h.manager.isUnderMemoryPressure(), true, 'the condition stays');
  h.clock.step(5_000);
  h.set(node(low), [[b, { memoryBytes: 1 * Gi }]]);
  t.same((await h.manager.synchronize()).map((p) => p.metadata?.name), ['b']);
  t.same(h.killer.names(), ['a', 'b']);
});

t.test('priority: a lower priority pod goes first among those exceeding requests', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' } });
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } }), [
    [pod('important', { priority: 1000 }), { memoryBytes: 4 * Gi }],
    [pod('batch', { priority: -10 }), { memoryBytes: 200 * Mi }],
    [pod('nostats')],
  ]);
  h.stats.summary.pods = h.stats.summary.pods.filter((p) => p.podRef.name !== 'nostats');
  await h.manager.synchronize();
  t.same(h.killer.names(), ['nostats'], 'a pod without stats ranks first (Go cmpBool(!found))');
  h.clock.step(10_000);
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } }), [
    [pod('important', { priority: 1000 }), { memoryBytes: 4 * Gi }],
    [pod('batch', { priority: -10 }), { memoryBytes: 200 * Mi }],
  ]);
  await h.manager.synchronize();
  t.same(h.killer.names(), ['nostats', 'batch']);
});

t.test('soft threshold: pressure at once, eviction after the grace period with --eviction-max-pod-grace-period', async (t) => {
  const h = harness({ soft: { 'memory.available': '2Gi' }, grace: { 'memory.available': '1m30s' } }, { maxPodGracePeriodSeconds: 30 });
  const hog = pod('hog');
  const set = () => h.set(node({ memory: { availableBytes: 1.5 * Gi, workingSetBytes: 14 * Gi } }), [[hog, { memoryBytes: 3 * Gi }]]);
  set();
  t.same(await h.manager.synchronize(), []);
  t.equal(h.manager.isUnderMemoryPressure(), true, 'the condition does not wait for the grace period');
  t.ok(h.logger.entries.some((e) => e.msg === 'Eviction manager: eviction criteria not yet met'));
  h.clock.step(60_000);
  set();
  t.same(await h.manager.synchronize(), [], '60 s < 90 s');
  h.clock.step(30_000);
  set();
  t.same((await h.manager.synchronize()).map((p) => p.metadata?.name), ['hog']);
  t.equal(h.killer.kills[0].gracePeriodOverrideSeconds, 30, 'soft threshold: the max pod grace period');
});

t.test('soft threshold cleared before its grace period: the clock restarts', async (t) => {
  const h = harness({ soft: { 'memory.available': '2Gi' }, grace: { 'memory.available': '1m' } });
  const hog = pod('hog');
  const set = (avail: number) => h.set(node({ memory: { availableBytes: avail, workingSetBytes: 14 * Gi } }), [[hog, { memoryBytes: 3 * Gi }]]);
  set(Gi);
  await h.manager.synchronize();
  h.clock.step(50_000);
  set(3 * Gi);
  await h.manager.synchronize();
  h.clock.step(20_000);
  set(Gi);
  t.same(await h.manager.synchronize(), [], 'met again: observed anew, 0 s into the grace period');
  h.clock.step(60_000);
  set(Gi);
  t.equal((await h.manager.synchronize()).length, 1);
});

t.test('pressure transition period: the condition stays 5 min (default) after the last time the threshold was met', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' } });
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } }));
  await h.manager.synchronize();
  t.same(h.manager.nodeConditions(), ['MemoryPressure']);
  t.same(h.killer.kills, [], 'no pods: nothing to evict');
  t.ok(h.logger.messages('error').includes('Eviction manager: eviction thresholds have been met, but no pods are active to evict'));
  h.clock.step(10_000);
  h.set(node());
  await h.manager.synchronize();
  t.equal(h.manager.isUnderMemoryPressure(), true, 'recovered, still inside the transition period');
  h.clock.step(4 * 60_000 + 49_000);
  await h.manager.synchronize();
  t.equal(h.manager.isUnderMemoryPressure(), true, '4m59s after');
  h.clock.step(1_000);
  await h.manager.synchronize();
  t.equal(h.manager.isUnderMemoryPressure(), false, '5 min after');

  const short = harness({ hard: { 'memory.available': '1Gi' } }, { pressureTransitionPeriodMs: 30_000 });
  short.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } }));
  await short.manager.synchronize();
  short.clock.step(30_000);
  short.set(node());
  await short.manager.synchronize();
  t.equal(short.manager.isUnderMemoryPressure(), false, '--eviction-pressure-transition-period=30s');
});

t.test('minimum reclaim: a met threshold stays met until the signal is above threshold + min reclaim', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' }, minReclaim: { 'memory.available': '500Mi' } });
  const pods = ['a', 'b', 'c'].map((n) => pod(n));
  const pass = async (avail: number) => {
    h.clock.step(10_000);
    h.set(node({ memory: { availableBytes: avail, workingSetBytes: 14 * Gi } }), pods.filter((p) => !h.killer.kills.some((k) => k.pod === p)).map((p) => [p, { memoryBytes: Gi }]));
    return (await h.manager.synchronize()).length;
  };
  t.equal(await pass(900 * Mi), 1, 'below 1Gi: evicts');
  t.equal(await pass(1200 * Mi), 1, 'above 1Gi but below 1.5Gi: still reclaiming');
  t.equal(await pass(1600 * Mi), 0, 'above 1Gi + 500Mi: done');
  t.equal(await pass(1200 * Mi), 0, 'not met any more: the min reclaim only holds a threshold already met');
  t.same(h.killer.names(), ['a', 'b']);
});

t.test('allocatableMemory.available: from the pods cgroup, or allocatable - its working set when it has no limit', async (t) => {
  const h = harness({ hard: { 'memory.available': '500Mi' }, allocatable: ['pods'] });
  h.set(node({ podsMemory: { availableBytes: 100 * Mi, workingSetBytes: 8 * Gi } }), [[pod('a'), { memoryBytes: Gi }]]);
  t.equal((await h.manager.synchronize()).length, 1);
  t.same(h.manager.observations().get('allocatableMemory.available'), { availableBytes: 100 * Mi, capacityBytes: 100 * Mi + 8 * Gi, time: h.clock.now() });
  t.equal(h.killer.kills[0].status.message, 'The node was low on resource: memory. Container app was using 1Gi, which exceeds its request of 0. ');

  const unlimited = harness({ hard: { 'memory.available': '500Mi' }, allocatable: ['pods'] }, { capacity: () => ({ memoryBytes: 16 * Gi, allocatableMemoryBytes: 8 * Gi }) });
  unlimited.set(node({ podsMemory: { workingSetBytes: 8 * Gi - 50 * Mi } }), [[pod('a'), { memoryBytes: Gi }]]);
  t.equal((await unlimited.manager.synchronize()).length, 1);
  t.same(unlimited.manager.observations().get('allocatableMemory.available'), { availableBytes: 50 * Mi, capacityBytes: 8 * Gi, time: unlimited.clock.now() });

  const noAllocatable = harness({ hard: { 'memory.available': '500Mi' }, allocatable: ['pods'] });
  noAllocatable.set(node({ podsMemory: { workingSetBytes: 8 * Gi } }), [[pod('a'), { memoryBytes: Gi }]]);
  t.same(await noAllocatable.manager.synchronize(), [], 'no limit and no allocatable: no observation');
  t.ok(noAllocatable.logger.entries.some((e) => e.msg === 'Eviction manager: no observation found for eviction signal' && e.kv.signal === 'allocatableMemory.available'));
});

t.test('percentage thresholds use the observed capacity', async (t) => {
  const h = harness({ hard: { 'memory.available': '10%' } });
  h.set(node({ memory: { availableBytes: 1.5 * Gi, workingSetBytes: 14.5 * Gi } }), [[pod('a'), { memoryBytes: Gi }]]);
  t.equal((await h.manager.synchronize()).length, 1, '1.5Gi < 10% of 16Gi');
  h.clock.step(10_000);
  h.set(node({ memory: { availableBytes: 1.7 * Gi, workingSetBytes: 14.3 * Gi } }), [[pod('b'), { memoryBytes: Gi }]]);
  t.equal((await h.manager.synchronize()).length, 0, '1.7Gi > 1.6Gi');
});

t.test('nodefs on a shared image filesystem: container GC, then image GC, then re-observe; no eviction when that is enough', async (t) => {
  const calls: string[] = [];
  const low = node({ nodeFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi }, imageFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi } });
  const recovered = node();
  let gcFrees = true;
  const h = harness(
    { hard: { 'nodefs.available': '10%' } },
    {
      containerGC: { deleteAllUnusedContainers: async () => void calls.push('containers') },
      imageGC: {
        deleteUnusedImages: async () => {
          calls.push('images');
          if (gcFrees) h.set(recovered, [[pod('a'), { rootfsBytes: Gi, logsBytes: 0 }]]);
        },
      },
    },
  );
  h.set(low, [[pod('a'), { rootfsBytes: Gi, logsBytes: 0 }]]);
  t.same(await h.manager.synchronize(), []);
  t.same(calls, ['containers', 'images']);
  t.ok(h.logger.messages('info').includes('Eviction manager: able to reduce resource pressure without evicting pods.'));
  t.equal(h.manager.isUnderDiskPressure(), true);
  t.same(h.recorder.reasons(), ['EvictionThresholdMet']);
  t.equal(h.recorder.events[0].message, 'Attempting to reclaim ephemeral-storage');

  // GC frees nothing: rank by disk usage (rootfs + logs + local volumes) above requests.
  gcFrees = false;
  h.clock.step(10_000);
  const big = pod('big', { requests: { 'ephemeral-storage': '20Gi' } });
  const small = pod('small', { volumes: [{ name: 'cache', emptyDir: {} }, { name: 'mem', emptyDir: { medium: 'Memory' } }] });
  h.set(low, [
    [big, { rootfsBytes: 10 * Gi, logsBytes: Gi }],
    [small, { rootfsBytes: 100 * Mi, logsBytes: 100 * Mi, volumes: { cache: 824 * Mi, mem: 50 * Gi } }],
  ]);
  t.same((await h.manager.synchronize()).map((p) => p.metadata?.name), ['small'], 'big stays under its request; memory-backed volumes do not count');
  t.same(calls, ['containers', 'images', 'containers', 'images']);
  t.equal(h.killer.kills[0].status.message, 'The node was low on resource: ephemeral-storage. Container app was using 200Mi, which exceeds its request of 0. ');
});

t.test('GC failures are logged and eviction goes on', async (t) => {
  const low = node({ nodeFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi }, imageFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi } });
  const h = harness(
    { hard: { 'nodefs.available': '10%' } },
    { imageGC: { deleteUnusedImages: async () => Promise.reject(new Error('disk on fire')) } },
  );
  h.set(low, [[pod('a'), { rootfsBytes: Gi, logsBytes: 0 }]]);
  t.equal((await h.manager.synchronize()).length, 1);
  t.match(h.logger.entries.find((e) => e.msg === 'Eviction manager: unexpected error when attempting to reduce resource pressure')?.kv, { resourceName: 'ephemeral-storage', err: /disk on fire/ });
});

t.test('dedicated image filesystem: nodefs has no node-level reclaim and ranks by logs and volumes; imagefs reclaims and ranks by rootfs', async (t) => {
  const calls: string[] = [];
  const gc = {
    containerGC: { deleteAllUnusedContainers: async () => void calls.push('containers') },
    imageGC: { deleteUnusedImages: async () => void calls.push('images') },
  };
  const layers = pod('layers');
  const logs = pod('logs');
  const usage = (): Array<[ReturnType<typeof pod>, { rootfsBytes: number; logsBytes: number }]> => [
    [layers, { rootfsBytes: 50 * Gi, logsBytes: 0 }],
    [logs, { rootfsBytes: 0, logsBytes: 2 * Gi }],
  ];
  // Different capacities: a dedicated imagefs (detected from the summary).
  const nodefs = harness({ hard: { 'nodefs.available': '10%' } }, gc);
  nodefs.set(node({ nodeFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi }, imageFs: { availableBytes: 400 * Gi, capacityBytes: 500 * Gi } }), usage());
  t.same(nodefs.killer.names(), []);
  await nodefs.manager.synchronize();
  t.same(nodefs.killer.names(), ['logs']);
  t.same(calls, [], 'nodefs with a dedicated imagefs: no GC');

  const imagefs = harness({ hard: { 'imagefs.available': '15%' } }, gc);
  imagefs.set(node({ nodeFs: { availableBytes: 50 * Gi, capacityBytes: 100 * Gi }, imageFs: { availableBytes: 10 * Gi, capacityBytes: 500 * Gi } }), usage());
  await imagefs.manager.synchronize();
  t.same(imagefs.killer.names(), ['layers']);
  t.same(calls, ['containers', 'images']);

  // The option wins over detection: same capacities, but declared dedicated.
  const declared = harness({ hard: { 'nodefs.available': '10%' } }, { ...gc, dedicatedImageFs: true });
  declared.set(node({ nodeFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi }, imageFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi } }), usage());
  await declared.manager.synchronize();
  t.same(declared.killer.names(), ['logs']);
  t.same(calls, ['containers', 'images'], 'no GC for nodefs');

  // Shared: rootfs counts for nodefs.
  const shared = harness({ hard: { 'nodefs.available': '10%' } });
  shared.set(node({ nodeFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi }, imageFs: { availableBytes: 5 * Gi, capacityBytes: 100 * Gi } }), usage());
  await shared.manager.synchronize();
  t.same(shared.killer.names(), ['layers']);
});

t.test('inodes: nodefs.inodesFree ranks by inodes used and reports the inodes resource', async (t) => {
  const h = harness({ hard: { 'nodefs.inodesFree': '5%' } });
  h.set(node({ nodeFs: { availableBytes: 50 * Gi, capacityBytes: 100 * Gi, inodesFree: 10_000, inodes: 1_000_000 } }), [
    [pod('few'), { rootfsBytes: 10 * Gi, rootfsInodes: 10, logsBytes: 0 }],
    [pod('many'), { rootfsBytes: Mi, rootfsInodes: 500_000, logsBytes: 0 }],
  ]);
  await h.manager.synchronize();
  t.same(h.killer.names(), ['many']);
  t.equal(h.killer.kills[0].status.message, 'The node was low on resource: inodes. ');
  t.same(h.recorder.find('Evicted')?.details?.annotations, { offending_containers: '', offending_containers_usage: '', starved_resource: 'inodes' });
  t.equal(h.manager.isUnderDiskPressure(), true);
});

t.test('pid.available: PIDPressure, ranks by priority then process count', async (t) => {
  const h = harness({ hard: { 'pid.available': '10%' } });
  h.set(node({ rlimit: { maxpid: 1000, curproc: 950 } }), [
    [pod('forky', { priority: 100 }), { processes: 800 }],
    [pod('few'), { processes: 5 }],
    [pod('some'), { processes: 50 }],
  ]);
  await h.manager.synchronize();
  t.same(h.killer.names(), ['some']);
  t.equal(h.killer.kills[0].status.message, 'The node was low on resource: pids. ');
  t.equal(h.manager.isUnderPIDPressure(), true);
  t.same(h.manager.observations().get('pid.available'), { availableBytes: 50, capacityBytes: 1000, time: h.clock.now() });
});

t.test('several thresholds met: memory is reclaimed first', async (t) => {
  const h = harness({ hard: { 'nodefs.available': '10%', 'pid.available': '10%', 'memory.available': '1Gi' } });
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi }, nodeFs: { availableBytes: Gi, capacityBytes: 100 * Gi }, rlimit: { maxpid: 100, curproc: 99 } }), [
    [pod('a'), { memoryBytes: Gi, rootfsBytes: Gi, logsBytes: 0, processes: 1 }],
  ]);
  await h.manager.synchronize();
  t.equal(h.recorder.events[0].message, 'Attempting to reclaim memory');
  t.same(h.manager.nodeConditions(), ['MemoryPressure', 'DiskPressure', 'PIDPressure']);
});

t.test('critical pods are never evicted: static, mirror, system priority', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' } });
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } }), [
    [pod('static', { annotations: { 'kubernetes.io/config.source': 'http' } }), { memoryBytes: Gi }],
    [pod('mirror', { annotations: { 'kubernetes.io/config.mirror': 'abc' } }), { memoryBytes: Gi }],
    [pod('node-critical', { priority: 2_000_001_000 }), { memoryBytes: Gi }],
  ]);
  t.same(await h.manager.synchronize(), []);
  t.same(h.killer.kills, []);
  t.equal(h.logger.messages('error').filter((m) => m === 'Eviction manager: cannot evict a critical pod').length, 3);
  t.ok(h.logger.messages('info').includes('Eviction manager: unable to evict any pods from the node'));
  t.same(h.recorder.reasons(), ['EvictionThresholdMet'], 'no Evicted event');
});

t.test('a failed kill is logged and still counts as the eviction of this pass', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' } });
  h.killer.error = new Error('kill timed out');
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } }), [[pod('a'), { memoryBytes: Gi }], [pod('b'), { memoryBytes: Gi }]]);
  t.equal((await h.manager.synchronize()).length, 1);
  t.equal(h.killer.kills.length, 1);
  t.ok(h.logger.entries.some((e) => e.level === 'error' && e.msg === 'Eviction manager: pod failed to evict' && /kill timed out/.test(String(e.err))));
});

t.test('summary errors: nothing happens, the error is logged', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi' } });
  h.stats.error = new Error('runtime down');
  t.same(await h.manager.synchronize(), []);
  t.ok(h.logger.entries.some((e) => e.msg === 'Eviction manager: failed to get summary stats' && /runtime down/.test(String(e.err))));
  t.same(h.manager.nodeConditions(), []);
});

t.test('no thresholds and no local storage isolation: nothing to do, no stats read', async (t) => {
  const h = harness([], { localStorageCapacityIsolation: false });
  t.same(await h.manager.synchronize(), []);
  t.same(h.stats.calls, []);
  const withIsolation = harness([]);
  await withIsolation.manager.synchronize();
  t.same(withIsolation.stats.calls, [{ method: 'get', updateStats: true }], 'local storage isolation still reads the stats');
});

t.test('admission: Go Admit rules and message', async (t) => {
  const h = harness({ hard: { 'memory.available': '1Gi', 'nodefs.available': '10%' } });
  const bestEffort = pod('be');
  const burstable = pod('burst', { requests: { memory: '100Mi' } });
  const tolerates = pod('tolerant', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }] });
  const tolerateAll = pod('tolerate-all', { tolerations: [{ operator: 'Exists' }] });
  const wrongEffect = pod('noexec', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoExecute' }] });
  const critical = pod('critical', { priority: 2_000_000_000 });
  const admit = (p: ReturnType<typeof pod>) => h.manager.admit({ pod: p, otherPods: [] });

  t.same(admit(bestEffort), { admit: true }, 'no pressure');
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi } }));
  await h.manager.synchronize();
  t.same(admit(bestEffort), { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' });
  t.same(admit(burstable), { admit: true }, 'memory pressure: not BestEffort');
  t.same(admit(tolerates), { admit: true });
  t.same(admit(tolerateAll), { admit: true }, 'an empty key with Exists tolerates every taint');
  t.same(admit(wrongEffect).admit, false);
  t.same(admit(critical), { admit: true });
  t.ok(h.logger.messages('warn').includes('Failed to admit pod to node'));

  h.clock.step(10_000);
  h.set(node({ memory: { availableBytes: 500 * Mi, workingSetBytes: 15 * Gi }, nodeFs: { availableBytes: Gi, capacityBytes: 100 * Gi } }));
  await h.manager.synchronize();
  t.same(admit(burstable), { admit: false, reason: 'Evicted', message: 'The node had condition: [MemoryPressure DiskPressure]. ' });
  t.same(admit(critical), { admit: true });

  const disk = harness({ hard: { 'nodefs.available': '10%' } });
  disk.set(node({ nodeFs: { availableBytes: Gi, capacityBytes: 100 * Gi } }));
  await disk.manager.synchronize();
  t.same(disk.manager.admit({ pod: tolerates, otherPods: [] }), { admit: false, reason: 'Evicted', message: 'The node had condition: [DiskPressure]. ' });
});

t.test('local storage: emptyDir over its sizeLimit, container over its ephemeral-storage limit, pod over the sum of limits', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'eviction-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'uid-hosts'), 'x'.repeat(2048));
  const h = harness([], { etcHostsPath: (uid) => join(dir, uid) });
  const emptyDir = pod('emptydir', { volumes: [{ name: 'cache', emptyDir: { sizeLimit: '1Gi' } }] });
  // Two limits (2Gi for the pod): one container over its own 1Gi, the pod under 2Gi.
  const container = pod('container', { containers: { app: { limits: { 'ephemeral-storage': '1Gi' } }, sidecar: { limits: { 'ephemeral-storage': '1Gi' } } } });
  const podLimit = pod('podlimit', {
    containers: { one: { limits: { 'ephemeral-storage': '1Gi' } }, two: { limits: { 'ephemeral-storage': '1Gi' } } },
    volumes: [{ name: 'scratch', emptyDir: {} }],
  });
  const hosts = pod('hosts', { limits: { 'ephemeral-storage': '1Mi' } });
  const fine = pod('fine', { limits: { 'ephemeral-storage': '1Gi' }, volumes: [{ name: 'cache', emptyDir: { sizeLimit: '1Gi' } }] });
  const critical = pod('critical', { limits: { 'ephemeral-storage': '1Mi' }, annotations: { 'kubernetes.io/config.source': 'file' } });
  h.set(node(), [
    [emptyDir, { volumes: { cache: 2 * Gi } }],
    [container, { containers: { app: { rootfsBytes: 600 * Mi, logsBytes: 600 * Mi }, sidecar: { rootfsBytes: 0, logsBytes: 0 } } }],
    [podLimit, { containers: { one: { rootfsBytes: 900 * Mi, logsBytes: 0 }, two: { rootfsBytes: 900 * Mi, logsBytes: 0 } }, volumes: { scratch: 500 * Mi } }],
    [hosts, { rootfsBytes: Mi - 1024, logsBytes: 0 }],
    [fine, { rootfsBytes: 100 * Mi, logsBytes: 0, volumes: { cache: 100 * Mi } }],
    [critical, { rootfsBytes: 2 * Gi, logsBytes: 0 }],
  ]);
  const evicted = await h.manager.synchronize();
  t.same(evicted.map((p) => p.metadata?.name), ['emptydir', 'container', 'podlimit', 'hosts'], 'local storage evictions are not limited to one per pass');
  t.same(
    h.killer.kills.map((k) => [k.pod.metadata?.name, k.gracePeriodOverrideSeconds, k.status.message]),
    [
      ['emptydir', 0, 'Usage of EmptyDir volume "cache" exceeds the limit "1Gi". '],
      ['container', 0, 'Container app exceeded its local ephemeral storage limit "1Gi". '],
      ['podlimit', 0, 'Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. '],
      ['hosts', 0, 'Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. '],
    ],
  );
  t.same(h.recorder.events.filter((e) => e.reason === 'Evicted').map((e) => e.details), [undefined, undefined, undefined, undefined], 'no annotations');

  // With a dedicated imagefs the writable layer does not count.
  const dedicated = harness([], { dedicatedImageFs: true });
  dedicated.set(node(), [[pod('container', { limits: { 'ephemeral-storage': '1Gi' } }), { rootfsBytes: 5 * Gi, logsBytes: 600 * Mi }]]);
  t.same(await dedicated.manager.synchronize(), []);
  dedicated.clock.step(10_000);
  dedicated.set(node(), [[pod('container', { limits: { 'ephemeral-storage': '1Gi' } }), { rootfsBytes: 0, logsBytes: 2 * Gi }]]);
  t.same(dedicated.killer.names(), []);
  t.equal((await dedicated.manager.synchronize()).length, 1, 'logs count');

  const off = harness([], { localStorageCapacityIsolation: false });
  off.set(node(), [[emptyDir, { volumes: { cache: 2 * Gi } }]]);
  t.same(await off.manager.synchronize(), [], 'LocalStorageCapacityIsolation off');
});
