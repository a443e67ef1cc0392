// The Summary API JSON (and /metrics/resource, /metrics/cadvisor rendered from it) for a fixed fake node with the
// clock fixed, against a golden file captured from the implementation before the performance work of issue 35:
// caching and cheaper reads must not change a byte. Regenerate (only for an intended change of output) with
// UPDATE_GOLDEN=1. The fixture's files live on tmpfs (/dev/shm), so du figures are the same on every machine.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { FsCgroupReader, renderCadvisorMetrics, renderResourceMetrics, SummaryProvider, TMPFS_MAGIC } from '../src/index.js';
import { container, containerStats, FakeImageFs, FakeStatsRuntime, fixedStatfs, GiB, MiB, sandbox, writeCgroupV1, writeFile, writeProc } from './helpers.js';

const GOLDEN = new URL('./fixtures/summary-golden.json', import.meta.url);
const T0 = Date.parse('2026-01-01T00:00:00Z');
const ns = (ms: number) => ms * 1e6;

const shmIsTmpfs = (() => {
  try {
    return statfsSync('/dev/shm').type === TMPFS_MAGIC;
  } catch {
    return false;
  }
})();

/** A fixed node: 12 pods of varied shapes (restarts, a not-ready older sandbox, volumes, no logs, an exited container). */
function fixture(root: string, clock: FakeClock) {
  const cgroupRoot = join(root, 'cgroup');
  const procRoot = join(root, 'proc');
  const rootDir = join(root, 'kubelet');
  const podLogsDir = join(root, 'logs');
  writeProc(procRoot, { memTotalKb: 8 * 1024 * 1024, btime: T0 / 1000 - 3600 });
  writeCgroupV1(cgroupRoot, '/', { cpuUsageNanos: 100e9, usageBytes: 3 * GiB, inactiveFileBytes: GiB, rssBytes: GiB, pgfault: 10, pgmajfault: 1 });
  writeCgroupV1(cgroupRoot, '/kubepods', { cpuUsageNanos: 40e9, usageBytes: GiB, inactiveFileBytes: 100 * MiB, rssBytes: 500 * MiB, limitBytes: 6 * GiB });
  writeCgroupV1(cgroupRoot, '/system.slice/containerd.service', { cpuUsageNanos: 5e9, usageBytes: 200 * MiB, inactiveFileBytes: 10 * MiB, rssBytes: 50 * MiB });
  writeCgroupV1(cgroupRoot, '/kubelet', { cpuUsageNanos: 7e9, usageBytes: 150 * MiB, rssBytes: 90 * MiB });
  const runtime = new FakeStatsRuntime();
  const sandboxes: runtimeapi.PodSandbox[] = [];
  const containers: runtimeapi.Container[] = [];
  const stats: runtimeapi.PodSandboxStats[] = [];
  const cStats: runtimeapi.ContainerStats[] = [];
  for (let i = 0; i < 12; i++) {
    const name = `p${i}`;
    const uid = `uid-${i}`;
    const sb = sandbox({ id: `sb${i}`, name, namespace: i % 3 === 0 ? 'kube-system' : 'default', uid, createdAtNs: ns(T0 - 100_000 + i * 1000) + 123 });
    sandboxes.push(sb);
    const pod = { name, namespace: sb.metadata!.namespace, uid };
    const names = i % 4 === 1 ? ['app', 'sidecar'] : ['app'];
    const podContainers: runtimeapi.ContainerStats[] = [];
    for (const [k, cname] of names.entries()) {
      const id = `c${i}-${k}`;
      containers.push(container({ id, sandboxId: sb.id, name: cname, createdAtNs: ns(T0 - 90_000 + i * 1000 + k) + 456, pod }));
      const exited = i === 7;
      if (exited) containers[containers.length - 1].state = 'CONTAINER_EXITED';
      const cs = containerStats({
        id,
        name: cname,
        timestampNs: ns(T0 - 500 + i),
        cpuNanos: (i + 1) * 1e8 + k,
        usageNanoCores: i % 5 === 0 ? 1000 * i : undefined,
        workingSetBytes: (i + 1) * MiB,
        usageBytes: (i + 2) * MiB,
        rssBytes: i % 2 === 0 ? (i + 1) * 1000 : undefined,
        writableLayer: i % 6 === 4 ? undefined : { usedBytes: 4096 * (i + 1), inodesUsed: i + 3, mountpoint: '/var/lib/containerd/snapshots' },
        noCpuMemory: exited,
      });
      podContainers.push(cs);
      cStats.push(cs);
      if (i !== 5) writeFile(join(podLogsDir, `${pod.namespace}_${name}_${uid}`, cname, '0.log'), 'l'.repeat(100 + 1000 * i + k));
      if (i === 2) writeFile(join(podLogsDir, `${pod.namespace}_${name}_${uid}`, cname, '0.log.20260101-000000.gz'), 'z'.repeat(9000));
    }
    // A restart of p3's app: the older exited instance is left out.
    if (i === 3) {
      containers.push({ ...container({ id: 'c3-old', sandboxId: sb.id, name: 'app', createdAtNs: ns(T0 - 95_000), pod }), state: 'CONTAINER_EXITED' });
      podContainers.push(containerStats({ id: 'c3-old', name: 'app', timestampNs: ns(T0 - 500), cpuNanos: 5 }));
    }
    stats.push({
      attributes: { id: sb.id, metadata: sb.metadata, labels: {}, annotations: {} },
      linux: {
        cpu: i % 4 === 2 ? null : { timestamp: ns(T0 - 400 + i), usageCoreNanoSeconds: { value: (i + 1) * 2e8 }, usageNanoCores: i % 3 === 0 ? { value: 5000 + i } : null },
        memory:
          i % 4 === 2
            ? null
            : {
                timestamp: ns(T0 - 400 + i),
                workingSetBytes: { value: (i + 3) * MiB },
                availableBytes: { value: i % 2 ? 100 * MiB : 0 },
                usageBytes: { value: (i + 4) * MiB },
                rssBytes: { value: (i + 1) * MiB },
                pageFaults: { value: 100 + i },
                majorPageFaults: { value: i },
              },
        network:
          i % 3 === 1
            ? null
            : {
                timestamp: ns(T0 - 300),
                defaultInterface: { name: 'eth0', rxBytes: { value: 10 * i }, rxErrors: { value: 0 }, txBytes: { value: 20 * i }, txErrors: { value: 1 } },
                interfaces: [
                  { name: 'eth0', rxBytes: { value: 10 * i }, rxErrors: { value: 0 }, txBytes: { value: 20 * i }, txErrors: { value: 1 } },
                  { name: 'net1', rxBytes: { value: 3 }, rxErrors: null, txBytes: { value: 4 }, txErrors: null },
                ],
              },
        process: i % 2 ? { timestamp: ns(T0 - 300), processCount: { value: i } } : null,
        containers: podContainers,
      },
      windows: null,
    } as runtimeapi.PodSandboxStats);
    if (i % 3 === 0) {
      writeFile(join(rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'cache', 'data'), 'y'.repeat(3000 + i));
      writeFile(join(rootDir, 'pods', uid, 'volumes', 'kubernetes.io~secret', 'token', 'token'), 'secret');
      writeFile(join(rootDir, 'pods', uid, 'volumes', 'kubernetes.io~configmap', 'config', 'a', 'b'), 'c'.repeat(5000));
    }
  }
  // p4's older sandbox, not ready: removeTerminatedPods keeps the ready one.
  sandboxes.push(sandbox({ id: 'sb4-old', name: 'p4', namespace: 'default', uid: 'uid-4', createdAtNs: ns(T0 - 200_000), ready: false }));
  runtime.sandboxes = sandboxes;
  runtime.containers = containers;
  runtime.sandboxStats = stats;
  runtime.containerStats = cStats;
  const imageFs = new FakeImageFs('/var/lib/containerd/snapshots');
  imageFs.timestampNs = ns(T0 - 700);
  const fsReader = new FsCgroupReader({ cgroupRoot, procRoot });
  // The cgroup directories' creation times are the machine's: fixed here.
  const cgroupReader = Object.assign(Object.create(fsReader) as FsCgroupReader, { creationTimeMs: async (cgroup: string) => T0 - 3_000_000 + cgroup.length });
  const provider = (sandboxStats: boolean) => {
    const rt = Object.assign(Object.create(runtime) as FakeStatsRuntime, { sandboxStats: sandboxStats ? runtime.sandboxStats : null });
    return new SummaryProvider({
      runtimeService: rt,
      imageService: imageFs,
      nodeName: 'golden-node',
      rootDir,
      podLogsDir,
      procRoot,
      cgroupReader,
      systemCgroups: { kubelet: '/kubelet', runtime: '/system.slice/containerd.service', pods: '/kubepods' },
      statfs: fixedStatfs(),
      clock,
      logger: new RecordingLogger(),
    });
  };
  return { runtime, stats, cStats, provider };
}

async function capture(root: string): Promise<Record<string, unknown>> {
  const clock = new FakeClock(T0);
  const f = fixture(root, clock);
  const out: Record<string, unknown> = {};
  for (const [label, useSandboxStats] of [
    ['sandboxStats', true],
    ['containerStats', false],
  ] as const) {
    clock.setTime(T0);
    const provider = f.provider(useSandboxStats);
    out[`${label}.first`] = JSON.parse(JSON.stringify(await provider.get(true)));
    clock.step(10_000);
    // CPU moves on: usageNanoCores from the cached samples, on the next get(true) only.
    for (const s of f.stats) for (const c of s.linux?.containers ?? []) if (c.cpu?.usageCoreNanoSeconds) c.cpu.timestamp += ns(10_000);
    for (const s of f.stats) {
      if (!s.linux?.cpu?.usageCoreNanoSeconds) continue;
      s.linux.cpu.usageCoreNanoSeconds.value += 1e9;
      s.linux.cpu.timestamp += ns(10_000);
    }
    for (const c of f.cStats) {
      if (!c.cpu?.usageCoreNanoSeconds) continue;
      c.cpu.usageCoreNanoSeconds.value += 5e8;
      c.cpu.timestamp += ns(10_000);
    }
    out[`${label}.notUpdated`] = JSON.parse(JSON.stringify(await provider.get(false)));
    const updated = await provider.get(true);
    out[`${label}.updated`] = JSON.parse(JSON.stringify(updated));
    const cpuAndMemory = await provider.getCPUAndMemoryStats();
    out[`${label}.cpuAndMemory`] = JSON.parse(JSON.stringify(cpuAndMemory));
    out[`${label}.metricsResource`] = renderResourceMetrics(cpuAndMemory);
    out[`${label}.metricsCadvisor`] = renderCadvisorMetrics(updated, [{ namespace: 'default', pod: 'p1', container: 'app', id: '/kubepods/podsb1/c1-0', name: 'c1-0', image: 'busybox' }]);
    // Undo the CPU step for the next provider.
    for (const s of f.stats) for (const c of s.linux?.containers ?? []) if (c.cpu?.usageCoreNanoSeconds) c.cpu.timestamp -= ns(10_000);
    for (const s of f.stats) {
      if (!s.linux?.cpu?.usageCoreNanoSeconds) continue;
      s.linux.cpu.usageCoreNanoSeconds.value -= 1e9;
      s.linux.cpu.timestamp -= ns(10_000);
    }
    for (const c of f.cStats) {
      if (!c.cpu?.usageCoreNanoSeconds) continue;
      c.cpu.usageCoreNanoSeconds.value -= 5e8;
      c.cpu.timestamp -= ns(10_000);
    }
  }
  return out;
}

t.test('the summary, /metrics/resource and /metrics/cadvisor of a fixed node are byte for byte those of the golden file', { skip: !shmIsTmpfs && 'no tmpfs at /dev/shm' }, async (t) => {
  const root = mkdtempSync('/dev/shm/kts-stats-golden-');
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  // Paths inside the output (none expected) would carry the temp dir's name: replace it.
  const actual = JSON.parse(JSON.stringify(await capture(root)).replaceAll(root, '<root>')) as Record<string, unknown>;
  if (process.env.UPDATE_GOLDEN) writeFileSync(GOLDEN, `${JSON.stringify(actual, null, 1)}\n`);
  const golden = JSON.parse(readFileSync(GOLDEN, 'utf8')) as Record<string, unknown>;
  for (const key of Object.keys(golden)) t.same(actual[key], golden[key], key);
  t.same(Object.keys(actual), Object.keys(golden));
  // Key order matters on the wire (Go's field order): compare the serialized form too.
  t.equal(JSON.stringify(actual), JSON.stringify(golden), 'same JSON, same key order');
});
