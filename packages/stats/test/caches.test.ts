// What issue 35's performance work added to the stats: caches that go with what they cache, and reads that need no
// thread-pool round trip.
import t from 'tap';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { CpuUsageCache, FsCgroupReader, readHostNetwork, readTaskLimits } from '../src/index.js';
import { CriPodStats } from '../src/cri-pod-stats.js';
import { formatTimeMs } from '../src/time-format.js';
import { formatTime } from '@kubelet-ts/core';
import { container, containerStats, FakeStatsRuntime, fixedStatfs, sandbox, tempDir, writeCgroupV1, writeCgroupV2, writeProc } from './helpers.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const ns = (ms: number) => ms * 1e6;
const inFlightFsRequests = (): number => process.getActiveResourcesInfo().filter((r) => r.startsWith('FSReq')).length;

t.test("a container's static figures are cached by container id and dropped when the container or its sandbox goes", async (t) => {
  const clock = new FakeClock(T0);
  const runtime = new FakeStatsRuntime();
  const podLogsDir = tempDir(t);
  const stats = new CriPodStats({ runtimeService: runtime, clock, cpuUsageCache: new CpuUsageCache(), podLogsDir, statfs: fixedStatfs(), logger: new RecordingLogger() });
  const pod = (i: number) => {
    const sb = sandbox({ id: `sb${i}`, name: `p${i}`, createdAtNs: ns(T0 - 1000 * i) });
    const ct = container({ id: `c${i}`, sandboxId: sb.id, name: `app${i}`, createdAtNs: ns(T0 - 500 * i) });
    const cs = containerStats({ id: ct.id, name: `app${i}`, timestampNs: ns(T0) });
    return { sb, ct, sandboxStats: { attributes: { id: sb.id, metadata: sb.metadata, labels: {}, annotations: {} }, linux: { cpu: null, memory: null, network: null, process: null, containers: [cs] }, windows: null } };
  };
  const set = (...pods: ReturnType<typeof pod>[]) => {
    runtime.sandboxes = pods.map((p) => p.sb);
    runtime.containers = pods.map((p) => p.ct);
    runtime.sandboxStats = pods.map((p) => p.sandboxStats);
  };
  const names = async () => (await stats.listPodStats({ updateCpu: true, cpuAndMemoryOnly: false })).map((p) => [p.podRef.name, p.startTime, p.containers.map((c) => [c.name, c.startTime])]);
  set(pod(1), pod(2));
  t.same(await names(), [
    ['p1', '2025-12-31T23:59:59Z', [['app1', '2025-12-31T23:59:59Z']]],
    ['p2', '2025-12-31T23:59:58Z', [['app2', '2025-12-31T23:59:59Z']]],
  ]);
  t.same(stats.cachedInfoSize, { containers: 2, sandboxes: 2 });
  set(pod(1));
  t.same(await names(), [['p1', '2025-12-31T23:59:59Z', [['app1', '2025-12-31T23:59:59Z']]]], 'the removed pod is no longer reported');
  t.same(stats.cachedInfoSize, { containers: 1, sandboxes: 1 }, 'and what was cached for it is gone');
  set(pod(1), pod(3));
  t.same((await names())[1], ['p3', '2025-12-31T23:59:57Z', [['app3', '2025-12-31T23:59:58Z']]], 'a new pod appears with its own figures');
  set();
  await names();
  t.same(stats.cachedInfoSize, { containers: 0, sandboxes: 0 }, 'no pods, nothing kept');
});

t.test('cgroup and /proc files are read without a thread-pool request (kernel-made files, never waiting for a disk)', async (t) => {
  for (const version of [1, 2] as const) {
    const cgroupRoot = tempDir(t);
    const procRoot = tempDir(t);
    writeProc(procRoot);
    if (version === 1) writeCgroupV1(cgroupRoot, '/', { cpuUsageNanos: 5e9, usageBytes: 100, inactiveFileBytes: 10 });
    else writeCgroupV2(cgroupRoot, '/', { cpuUsageNanos: 5e9, usageBytes: 100, inactiveFileBytes: 10 });
    const reader = new FsCgroupReader({ cgroupRoot, procRoot });
    const before = inFlightFsRequests();
    const reads = [reader.readCpuUsageNanos('/'), reader.readMemory('/'), readTaskLimits(procRoot), readHostNetwork(procRoot)] as const;
    t.equal(inFlightFsRequests(), before, `v${version}: nothing in flight`);
    const [cpu, memory, limits, network] = await Promise.all(reads);
    t.equal(cpu, 5e9);
    t.equal(memory.workingSetBytes, 90);
    t.equal(limits.curproc, 345);
    t.equal(network.defaultInterface, 'eth1');
  }
});

t.test('formatTimeMs is formatTime, each second made once', async (t) => {
  for (const ms of [0, T0, T0 + 999, T0 + 1000, T0 - 1, T0 + 0.5, 1e13 + 123]) t.equal(formatTimeMs(ms), formatTime(ms), String(ms));
  t.equal(formatTimeMs(T0 + 10), formatTimeMs(T0 + 990));
  t.throws(() => formatTimeMs(Number.NaN), RangeError, 'an invalid time fails as formatTime does');
});
