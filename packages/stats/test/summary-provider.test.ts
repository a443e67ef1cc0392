import t from 'tap';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FakeRuntimeService, FakeImageService } from '@kubelet-ts/cri-client/testing';
import { criError, type runtimeapi } from '@kubelet-ts/cri-client';
import { diskUsage, SummaryProvider, TMPFS_MAGIC, VolumeDirStats, type SummaryProviderOptions } from '../src/index.js';
import {
  container,
  containerStats,
  FakeImageFs,
  FakeStatsRuntime,
  fixedStatfs,
  GiB,
  MiB,
  sandbox,
  tempDir,
  writeCgroupV1,
  writeCgroupV2,
  writeFile,
  writeProc,
} from './helpers.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const ns = (ms: number) => ms * 1e6;
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

function setup(t: { teardown(fn: () => void): void }, opts: { cgroupVersion?: 1 | 2; provider?: Partial<SummaryProviderOptions> } = {}) {
  const cgroupRoot = tempDir(t);
  const procRoot = tempDir(t);
  const rootDir = tempDir(t);
  const podLogsDir = tempDir(t);
  writeProc(procRoot, { memTotalKb: 8 * 1024 * 1024, btime: T0 / 1000 - 3600 });
  const writeRoot = (f: Parameters<typeof writeCgroupV1>[2]) => (opts.cgroupVersion === 2 ? writeCgroupV2(cgroupRoot, '/', f) : writeCgroupV1(cgroupRoot, '/', f));
  writeRoot({ cpuUsageNanos: 100e9, usageBytes: 3 * GiB, inactiveFileBytes: GiB, rssBytes: GiB, pgfault: 10, pgmajfault: 1 });
  const clock = new FakeClock(T0);
  const runtime = new FakeStatsRuntime();
  const imageFs = new FakeImageFs('/var/lib/containerd/snapshots');
  imageFs.timestampNs = ns(T0);
  const statfs = fixedStatfs();
  const logger = new RecordingLogger();
  const provider = new SummaryProvider({
    runtimeService: runtime,
    imageService: imageFs,
    nodeName: 'node-1',
    rootDir,
    podLogsDir,
    cgroupRoot,
    procRoot,
    statfs,
    clock,
    logger,
    ...opts.provider,
  });
  return { cgroupRoot, procRoot, rootDir, podLogsDir, clock, runtime, imageFs, statfs, logger, provider, writeRoot };
}

// fixedStatfs(): 4096-byte blocks, 1000 blocks, 600 free, 500 available, 2000 inodes, 1500 free.
const FS = { availableBytes: 500 * 4096, capacityBytes: 1000 * 4096, inodesFree: 1500, inodes: 2000 };

t.test('node figures from a cgroup v1 tree, /proc, statfs and CRI ImageFsInfo', async (t) => {
  const env = setup(t);
  const first = await env.provider.get(false);
  t.same(first.node, {
    nodeName: 'node-1',
    startTime: iso(T0 - 3600_000),
    cpu: { time: iso(T0), usageCoreNanoSeconds: 100e9 },
    memory: {
      time: iso(T0),
      availableBytes: 8 * GiB - 2 * GiB,
      usageBytes: 3 * GiB,
      workingSetBytes: 2 * GiB,
      rssBytes: GiB,
      pageFaults: 10,
      majorPageFaults: 1,
    },
    network: {
      time: iso(T0),
      name: 'eth1',
      rxBytes: 3000,
      rxErrors: 0,
      txBytes: 4000,
      txErrors: 0,
      interfaces: [
        { name: 'eth0', rxBytes: 1000, rxErrors: 1, txBytes: 2000, txErrors: 2 },
        { name: 'eth1', rxBytes: 3000, rxErrors: 0, txBytes: 4000, txErrors: 0 },
      ],
    },
    fs: { time: iso(T0), ...FS, usedBytes: 400 * 4096, inodesUsed: 500 },
    runtime: { imageFs: { time: iso(T0), availableBytes: FS.availableBytes, capacityBytes: FS.capacityBytes, usedBytes: 5 * MiB, inodesFree: 1500, inodes: 2000, inodesUsed: 50 } },
    rlimit: { time: iso(T0), maxpid: 63336, curproc: 345 },
  });
  t.same(first.pods, []);
  t.same(env.statfs.calls.sort(), [env.rootDir, '/var/lib/containerd/snapshots'].sort(), 'statfs of the root dir and the image fs mountpoint');
  t.same(
    Object.keys(first.node),
    ['nodeName', 'startTime', 'cpu', 'memory', 'network', 'fs', 'runtime', 'rlimit'],
    'keys in Go struct order, so the JSON reads like the Go kubelet',
  );

  // usageNanoCores needs two samples: 10 s later, 5 more CPU-seconds is half a core.
  env.clock.step(10_000);
  env.writeRoot({ cpuUsageNanos: 105e9, usageBytes: 3 * GiB, inactiveFileBytes: GiB });
  const second = await env.provider.get(false);
  t.same(second.node.cpu, { time: iso(T0 + 10_000), usageNanoCores: 500_000_000, usageCoreNanoSeconds: 105e9 });
  // Right away again: too close to the last sample, the rate stays.
  env.writeRoot({ cpuUsageNanos: 106e9, usageBytes: 3 * GiB });
  t.equal((await env.provider.getCPUAndMemoryStats()).node.cpu?.usageNanoCores, 500_000_000);
});

t.test('node figures from a cgroup v2 tree: the root usage from /proc/meminfo', async (t) => {
  const env = setup(t, { cgroupVersion: 2 });
  const summary = await env.provider.get(true);
  t.same(summary.node.cpu, { time: iso(T0), usageCoreNanoSeconds: 100e9 });
  // writeCgroupV2 writes memory.current for '/', which the v2 root does not have in reality; it is read when there.
  t.equal(summary.node.memory?.workingSetBytes, 2 * GiB);
  env.clock.step(2_000);
  env.writeRoot({ cpuUsageNanos: 101e9, usageBytes: 3 * GiB });
  t.equal((await env.provider.get(true)).node.cpu?.usageNanoCores, 500_000_000);
});

t.test('missing files and failing sources leave figures out, never the summary', async (t) => {
  const env = setup(t, { provider: { statfs: async () => Promise.reject(Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT' })) } });
  const empty = tempDir(t);
  const provider = new SummaryProvider({
    runtimeService: env.runtime,
    imageService: { imageFsInfo: async () => Promise.reject(criError({ rpc: 'ImageService/ImageFsInfo', code: 'Unavailable', details: 'down' })) },
    nodeName: 'node-1',
    rootDir: join(empty, 'no-root'),
    cgroupRoot: join(empty, 'no-cgroups'),
    procRoot: join(empty, 'no-proc'),
    clock: env.clock,
    logger: env.logger,
  });
  const summary = await provider.get(true);
  t.same(summary, { node: { nodeName: 'node-1', startTime: iso(T0) }, pods: [] }, 'only what is always known: name and (fallback) start time');
  const messages = env.logger.entries.map((e) => `${e.msg} ${JSON.stringify(e.kv ?? {})}`).join('\n');
  t.match(messages, /Cgroup stats unavailable .*read .*no-cgroups\/cpuacct\/cpuacct\.usage: ENOENT/);
  t.match(messages, /Cgroup stats unavailable .*no-cgroups\/memory\/memory\.usage_in_bytes/);
  t.match(messages, /Unable to read the memory capacity .*no-proc\/meminfo/);
  t.match(messages, /Unable to get imageFs info from the runtime/);
  t.match(messages, /Unable to get the root filesystem info .*statfs .*no-root/);
});

t.test('pods from ListPodSandboxStats: containers, pod cpu/memory/network/processes, rootfs, logs, volumes, ephemeral storage', async (t) => {
  const env = setup(t);
  const uid = 'uid-web';
  env.runtime.sandboxes = [sandbox({ id: 'sb1', name: 'web', uid, createdAtNs: ns(T0 - 60_000) })];
  env.runtime.containers = [container({ id: 'c1', sandboxId: 'sb1', name: 'app', createdAtNs: ns(T0 - 50_000) })];
  const layer = { usedBytes: 8192, inodesUsed: 5, mountpoint: '/var/lib/containerd/snapshots' };
  const sandboxStats = (timeMs: number, cpuNanos: number): runtimeapi.PodSandboxStats => ({
    attributes: { id: 'sb1', metadata: env.runtime.sandboxes[0].metadata, labels: {}, annotations: {} },
    linux: {
      cpu: { timestamp: ns(timeMs), usageCoreNanoSeconds: { value: cpuNanos + 1e6 }, usageNanoCores: null },
      memory: {
        timestamp: ns(timeMs),
        workingSetBytes: { value: 3 * MiB },
        availableBytes: { value: 0 },
        usageBytes: { value: 4 * MiB },
        rssBytes: { value: MiB },
        pageFaults: { value: 100 },
        majorPageFaults: { value: 2 },
      },
      network: {
        timestamp: ns(timeMs),
        defaultInterface: { name: 'eth0', rxBytes: { value: 10 }, rxErrors: { value: 0 }, txBytes: { value: 20 }, txErrors: { value: 0 } },
        interfaces: [{ name: 'eth0', rxBytes: { value: 10 }, rxErrors: { value: 0 }, txBytes: { value: 20 }, txErrors: { value: 0 } }],
      },
      process: { timestamp: ns(timeMs), processCount: { value: 3 } },
      containers: [containerStats({ id: 'c1', name: 'app', timestampNs: ns(timeMs), cpuNanos, workingSetBytes: 2 * MiB, usageBytes: 3 * MiB, writableLayer: layer })],
    },
  });
  env.runtime.sandboxStats = [sandboxStats(T0, 1e9)];
  writeFile(join(env.podLogsDir, `default_web_${uid}`, 'app', '0.log'), 'x'.repeat(5000));
  writeFile(join(env.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'cache', 'data'), 'y'.repeat(3000));
  writeFile(join(env.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~secret', 'token', 'token'), 'secret');

  const first = await env.provider.get(true);
  t.equal(first.pods.length, 1);
  const pod = first.pods[0];
  const logs = await diskUsage(join(env.podLogsDir, `default_web_${uid}`, 'app'));
  const emptyDir = await diskUsage(join(env.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'cache'));
  const secret = await diskUsage(join(env.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~secret', 'token'));
  t.same(pod, {
    podRef: { name: 'web', namespace: 'default', uid },
    startTime: iso(T0 - 60_000),
    containers: [
      {
        name: 'app',
        startTime: iso(T0 - 50_000),
        cpu: { time: iso(T0), usageCoreNanoSeconds: 1e9 },
        memory: { time: iso(T0), usageBytes: 3 * MiB, workingSetBytes: 2 * MiB },
        rootfs: { time: iso(T0), availableBytes: FS.availableBytes, capacityBytes: FS.capacityBytes, usedBytes: 8192, inodesFree: 1500, inodes: 2000, inodesUsed: 5 },
        logs: { time: iso(T0), availableBytes: FS.availableBytes, capacityBytes: FS.capacityBytes, usedBytes: logs.bytes, inodesFree: 1500, inodes: 2000, inodesUsed: logs.inodes },
      },
    ],
    cpu: { time: iso(T0), usageCoreNanoSeconds: 1e9 + 1e6 },
    memory: { time: iso(T0), usageBytes: 4 * MiB, workingSetBytes: 3 * MiB, rssBytes: MiB, pageFaults: 100, majorPageFaults: 2 },
    network: {
      time: iso(T0),
      name: 'eth0',
      rxBytes: 10,
      rxErrors: 0,
      txBytes: 20,
      txErrors: 0,
      interfaces: [{ name: 'eth0', rxBytes: 10, rxErrors: 0, txBytes: 20, txErrors: 0 }],
    },
    volume: [
      { time: iso(T0), ...FS, usedBytes: emptyDir.bytes, inodesUsed: emptyDir.inodes, name: 'cache' },
      { time: iso(T0), ...FS, usedBytes: secret.bytes, inodesUsed: secret.inodes, name: 'token' },
    ],
    'ephemeral-storage': {
      time: iso(T0),
      availableBytes: FS.availableBytes,
      capacityBytes: FS.capacityBytes,
      usedBytes: 8192 + logs.bytes + emptyDir.bytes,
      inodesFree: 1500,
      inodes: 2000,
      inodesUsed: 5 + logs.inodes + emptyDir.inodes,
    },
    process_stats: { process_count: 3 },
  });
  const json = JSON.stringify(first);
  for (const key of ['"ephemeral-storage"', '"process_stats"', '"process_count"', '"imageFs"', '"rlimit"', '"workingSetBytes"', '"podRef"', '"inodesUsed"']) {
    t.ok(json.includes(key), `JSON has ${key}`);
  }

  // 10 s later, 2 more CPU-seconds: the container and the pod get usageNanoCores from the cached samples.
  env.clock.step(10_000);
  env.runtime.sandboxStats = [sandboxStats(T0 + 10_000, 3e9)];
  const notUpdated = await env.provider.get(false);
  t.equal(notUpdated.pods[0].containers[0].cpu?.usageNanoCores, undefined, 'get(false) only reads the cache: nothing computed yet');
  const updated = await env.provider.get(true);
  t.equal(updated.pods[0].containers[0].cpu?.usageNanoCores, 200_000_000);
  t.equal(updated.pods[0].cpu?.usageNanoCores, 200_000_000);
  t.equal((await env.provider.get(false)).pods[0].containers[0].cpu?.usageNanoCores, 200_000_000, 'get(false) serves the last computed rate');
  t.equal(env.runtime.calls.filter((c) => c === 'listContainerStats').length, 0, 'ListContainerStats never needed');
});

t.test('the runtime usageNanoCores wins over the cache; a memory-backed emptyDir is not ephemeral storage', async (t) => {
  const statfs = async (path: string) => ({ type: path.includes('memory-vol') ? TMPFS_MAGIC : 0xef53, bsize: 4096, blocks: 10, bfree: 5, bavail: 5, files: 10, ffree: 5 });
  const env = setup(t, { provider: { statfs } });
  env.runtime.sandboxes = [sandbox({ id: 'sb1', name: 'web', createdAtNs: ns(T0) })];
  env.runtime.containers = [container({ id: 'c1', sandboxId: 'sb1', name: 'app', createdAtNs: ns(T0) })];
  env.runtime.sandboxStats = [
    {
      attributes: { id: 'sb1', metadata: env.runtime.sandboxes[0].metadata, labels: {}, annotations: {} },
      linux: { cpu: null, memory: null, network: null, process: null, containers: [containerStats({ id: 'c1', name: 'app', timestampNs: ns(T0), cpuNanos: 7, usageNanoCores: 1234 })] },
    },
  ];
  writeFile(join(env.rootDir, 'pods', 'uid-web', 'volumes', 'kubernetes.io~empty-dir', 'memory-vol', 'f'), 'z');
  const pod = (await env.provider.get(true)).pods[0];
  t.same(pod.containers[0].cpu, { time: iso(T0), usageNanoCores: 1234, usageCoreNanoSeconds: 7 });
  t.same(pod.cpu, { time: iso(T0), usageNanoCores: 1234, usageCoreNanoSeconds: 7 }, 'no sandbox cpu: the sum of the containers');
  t.equal(pod.volume?.length, 1, 'the tmpfs emptyDir is still listed as a volume');
  t.equal(pod['ephemeral-storage']?.usedBytes, undefined, 'but not counted: no rootfs, no disk-backed volume');
});

t.test('pods from ListContainerStats when ListPodSandboxStats is unimplemented (Go criStatsProvider.listPodStats)', async (t) => {
  const env = setup(t);
  env.runtime.sandboxStats = null;
  const webRef = { name: 'web', namespace: 'default', uid: 'uid-web' };
  env.runtime.sandboxes = [
    sandbox({ id: 'sb-old', name: 'web', createdAtNs: ns(T0 - 100_000), ready: false }),
    sandbox({ id: 'sb1', name: 'web', createdAtNs: ns(T0 - 60_000) }),
    sandbox({ id: 'sb2', name: 'job', createdAtNs: ns(T0 - 60_000) }),
    sandbox({ id: 'sb3', name: 'done', createdAtNs: ns(T0 - 60_000), ready: false }),
  ];
  env.runtime.containers = [
    // web/app restarted: the running instance wins over the exited one.
    container({ id: 'app-0', sandboxId: 'sb1', name: 'app', createdAtNs: ns(T0 - 50_000), running: false, pod: webRef }),
    container({ id: 'app-1', sandboxId: 'sb1', name: 'app', createdAtNs: ns(T0 - 40_000), pod: webRef }),
    container({ id: 'side-0', sandboxId: 'sb1', name: 'sidecar', createdAtNs: ns(T0 - 50_000), pod: webRef }),
    // job/run exited twice: only the newest is reported.
    container({ id: 'run-0', sandboxId: 'sb2', name: 'run', createdAtNs: ns(T0 - 30_000), running: false }),
    container({ id: 'run-1', sandboxId: 'sb2', name: 'run', createdAtNs: ns(T0 - 20_000), running: false }),
    // done is not ready and its container has no stats: skipped.
    container({ id: 'fin-0', sandboxId: 'sb3', name: 'fin', createdAtNs: ns(T0 - 20_000), running: false }),
    // A container of a sandbox that vanished mid-scrape.
    container({ id: 'orphan', sandboxId: 'sb-gone', name: 'x', createdAtNs: ns(T0) }),
  ];
  env.runtime.containerStats = [
    containerStats({ id: 'app-0', name: 'app', timestampNs: ns(T0), noCpuMemory: true }),
    containerStats({ id: 'app-1', name: 'app', timestampNs: ns(T0), cpuNanos: 2e9, workingSetBytes: 100, rssBytes: 10 }),
    containerStats({ id: 'side-0', name: 'sidecar', timestampNs: ns(T0), cpuNanos: 1e9, workingSetBytes: 50 }),
    containerStats({ id: 'run-0', name: 'run', timestampNs: ns(T0), noCpuMemory: true }),
    containerStats({ id: 'run-1', name: 'run', timestampNs: ns(T0), noCpuMemory: true }),
    containerStats({ id: 'fin-0', name: 'fin', timestampNs: ns(T0), noCpuMemory: true }),
    containerStats({ id: 'orphan', name: 'x', timestampNs: ns(T0), cpuNanos: 1 }),
  ];
  const summary = await env.provider.get(true);
  const byName = Object.fromEntries(summary.pods.map((p) => [p.podRef.name, p]));
  t.same(Object.keys(byName).sort(), ['job', 'web']);
  t.same(byName.web.containers.map((c) => c.name), ['app', 'sidecar']);
  t.equal(byName.web.containers[0].cpu?.usageCoreNanoSeconds, 2e9, 'the running app instance');
  t.same(byName.web.cpu, { time: iso(T0), usageCoreNanoSeconds: 3e9 }, 'pod cpu: sum of containers');
  t.same(byName.web.memory, { time: iso(T0), workingSetBytes: 150, rssBytes: 10 }, 'pod memory: sum of what containers report');
  t.same(byName.job.containers.map((c) => c.name), ['run']);
  t.same(byName.job.containers[0].cpu, { time: iso(T0), usageNanoCores: 0, usageCoreNanoSeconds: 0 }, 'no figures: zeros, as Go');

  env.clock.step(10_000);
  env.runtime.containerStats = [
    containerStats({ id: 'app-1', name: 'app', timestampNs: ns(T0 + 10_000), cpuNanos: 7e9, workingSetBytes: 100 }),
    containerStats({ id: 'side-0', name: 'sidecar', timestampNs: ns(T0 + 10_000), cpuNanos: 1e9, workingSetBytes: 50 }),
  ];
  const second = await env.provider.get(true);
  const web = second.pods.find((p) => p.podRef.name === 'web');
  t.same(web?.containers.map((c) => c.cpu?.usageNanoCores), [500_000_000, 0]);
  t.equal(web?.cpu?.usageNanoCores, 500_000_000, 'pod rate: the sum of the container rates');
  t.equal(env.runtime.calls.filter((c) => c === 'listPodSandboxStats').length, 1, 'Unimplemented is remembered');
});

t.test('a failing ListPodSandboxStats falls back for that scrape; failing lists fail the summary with the call named', async (t) => {
  const env = setup(t);
  env.runtime.sandboxes = [sandbox({ id: 'sb1', name: 'web', createdAtNs: ns(T0) })];
  env.runtime.containers = [container({ id: 'c1', sandboxId: 'sb1', name: 'app', createdAtNs: ns(T0) })];
  env.runtime.containerStats = [containerStats({ id: 'c1', name: 'app', timestampNs: ns(T0), cpuNanos: 5 })];
  env.runtime.errors.set('listPodSandboxStats', criError({ rpc: 'RuntimeService/ListPodSandboxStats', code: 'Unknown', details: 'failed to get sandbox stats' }));
  t.equal((await env.provider.get(false)).pods[0].containers[0].cpu?.usageCoreNanoSeconds, 5);
  t.match(env.logger.entries, [{ msg: 'ListPodSandboxStats failed; using ListContainerStats for this scrape' }]);
  env.runtime.errors.delete('listPodSandboxStats');
  env.runtime.calls.length = 0;
  await env.provider.get(false);
  t.same(env.runtime.calls.filter((c) => c.startsWith('listPodSandboxStats')), ['listPodSandboxStats'], 'asked again next time');

  env.runtime.errors.set('listContainers', new Error('connection refused'));
  await t.rejects(env.provider.get(false), { message: 'failed to list pod stats: failed to list all containers: connection refused' });
  await t.rejects(env.provider.getCPUAndMemoryStats(), { message: /failed to list all containers: connection refused/ });
});

t.test('getCPUAndMemoryStats: only cpu and memory, the pod cpu cache not moved', async (t) => {
  const env = setup(t, { provider: { systemCgroups: { pods: '/kubepods', kubelet: '/kubelet', runtime: '/missing' } } });
  writeCgroupV1(env.cgroupRoot, '/kubepods', { cpuUsageNanos: 50e9, usageBytes: GiB, inactiveFileBytes: 0, limitBytes: 4 * GiB });
  writeCgroupV1(env.cgroupRoot, '/kubelet', { cpuUsageNanos: 1e9, usageBytes: MiB });
  env.runtime.sandboxes = [sandbox({ id: 'sb1', name: 'web', createdAtNs: ns(T0) })];
  env.runtime.containers = [container({ id: 'c1', sandboxId: 'sb1', name: 'app', createdAtNs: ns(T0) })];
  const stats = (ms: number, cpu: number): runtimeapi.PodSandboxStats[] => [
    {
      attributes: { id: 'sb1', metadata: env.runtime.sandboxes[0].metadata, labels: {}, annotations: {} },
      linux: {
        cpu: null,
        memory: null,
        network: null,
        process: { timestamp: ns(ms), processCount: { value: 1 } },
        containers: [containerStats({ id: 'c1', name: 'app', timestampNs: ns(ms), cpuNanos: cpu, writableLayer: { usedBytes: 1, inodesUsed: 1, mountpoint: '/x' } })],
      },
    },
  ];
  env.runtime.sandboxStats = stats(T0, 1e9);
  await env.provider.getCPUAndMemoryStats();
  env.clock.step(10_000);
  env.runtime.sandboxStats = stats(T0 + 10_000, 2e9);
  const summary = await env.provider.getCPUAndMemoryStats();
  t.same(summary.pods, [
    {
      podRef: { name: 'web', namespace: 'default', uid: 'uid-web' },
      startTime: iso(T0),
      containers: [{ name: 'app', startTime: iso(T0), cpu: { time: iso(T0 + 10_000), usageCoreNanoSeconds: 2e9 }, memory: { time: iso(T0 + 10_000), workingSetBytes: 0 } }],
      cpu: { time: iso(T0 + 10_000), usageCoreNanoSeconds: 2e9 },
      memory: { time: iso(T0 + 10_000), workingSetBytes: 0 },
    },
  ]);
  t.same(Object.keys(summary.node), ['nodeName', 'systemContainers', 'startTime', 'cpu', 'memory']);
  t.same(
    summary.node.systemContainers?.map((c) => [c.name, c.cpu?.usageNanoCores, c.memory?.availableBytes]),
    [
      ['kubelet', 0, undefined],
      ['pods', 0, 3 * GiB],
    ],
    'a system cgroup that cannot be read is left out; available = limit - working set',
  );
  t.equal(summary.node.systemContainers?.[0].startTime, iso(T0), 'the kubelet system container started with the provider');
});

t.test('works with cri-client FakeRuntimeService and FakeImageService', async (t) => {
  const clock = new FakeClock(T0);
  const runtime = new FakeRuntimeService(clock);
  const images = new FakeImageService(clock);
  const config = { metadata: { name: 'web', namespace: 'ns', uid: 'u1', attempt: 0 } };
  const sandboxId = await runtime.runPodSandbox(config);
  const containerId = await runtime.createContainer(sandboxId, { metadata: { name: 'app', attempt: 0 }, image: { image: 'busybox' } }, config);
  await runtime.startContainer(containerId);
  const env = setup(t, { provider: { runtimeService: runtime, imageService: images, clock } });
  const summary = await env.provider.get(true);
  t.same(summary.pods.map((p) => [p.podRef, p.containers.map((c) => c.name)]), [[{ name: 'web', namespace: 'ns', uid: 'u1' }, ['app']]]);
  t.equal(summary.node.runtime?.imageFs?.capacityBytes, FS.capacityBytes);
});

t.test('what eviction reads from get(true) on cgroup v2: node memory.available = MemTotal - (usage - inactive_file), the pods cgroup, rlimit', async (t) => {
  const env = setup(t, { cgroupVersion: 2, provider: { systemCgroups: { pods: '/kubepods' } } });
  writeCgroupV2(env.cgroupRoot, '/kubepods', { cpuUsageNanos: 1e9, usageBytes: 2 * GiB, inactiveFileBytes: 512 * MiB, limitBytes: 6 * GiB });
  const node = (await env.provider.get(true)).node;
  t.same(node.memory && [node.memory.availableBytes, node.memory.workingSetBytes], [8 * GiB - 2 * GiB, 2 * GiB], 'root: 3GiB used - 1GiB inactive file');
  const pods = node.systemContainers?.find((c) => c.name === 'pods');
  t.same(pods?.memory && [pods.memory.availableBytes, pods.memory.workingSetBytes], [6 * GiB - 1.5 * GiB, 1.5 * GiB], 'pods: its limit - (usage - inactive_file)');
  t.same(node.rlimit, { time: iso(T0), maxpid: 63336, curproc: 345 }, 'pid.available = maxpid - curproc');

  writeCgroupV2(env.cgroupRoot, '/kubepods', { cpuUsageNanos: 1e9, usageBytes: 2 * GiB, inactiveFileBytes: 512 * MiB });
  const unlimited = (await env.provider.get(true)).node.systemContainers?.find((c) => c.name === 'pods');
  t.same(unlimited?.memory && [unlimited.memory.availableBytes, unlimited.memory.workingSetBytes], [undefined, 1.5 * GiB], 'no limit: no availableBytes, as cAdvisor');
});

t.test('VolumeDirStats leaves out the plugin directories whose plugin reports usage itself', async (t) => {
  const root = tempDir(t);
  for (const [plugin, name] of [['kubernetes.io~empty-dir', 'cache'], ['kubernetes.io~csi', 'pv-1']]) writeFile(join(root, 'pods', 'uid1', 'volumes', plugin!, name!, 'f'), 'x');
  const all = await new VolumeDirStats({ rootDir: root, clock: new FakeClock() }).podVolumeStats('uid1');
  t.same([...all!.ephemeralVolumes, ...all!.persistentVolumes].map((v) => v.name).sort(), ['cache', 'pv-1']);
  const some = await new VolumeDirStats({ rootDir: root, clock: new FakeClock(), skipPluginDirs: ['kubernetes.io~csi'] }).podVolumeStats('uid1');
  t.same([...some!.ephemeralVolumes, ...some!.persistentVolumes].map((v) => v.name), ['cache']);
});

t.test('VolumeDirStats forgets the measurements of pods gone from the node once they are a period old (no per-pod state kept for good)', async (t) => {
  const root = tempDir(t);
  const clock = new FakeClock();
  const stats = new VolumeDirStats({ rootDir: root, clock, cachePeriodMs: 60_000 });
  const volume = (uid: string) => writeFile(join(root, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'cache', 'f'), 'x');
  for (const uid of ['gone1', 'gone2', 'stays']) {
    volume(uid);
    await stats.podVolumeStats(uid);
  }
  t.equal(stats.cachedVolumeCount, 3);
  rmSync(join(root, 'pods', 'gone1'), { recursive: true });
  rmSync(join(root, 'pods', 'gone2'), { recursive: true });
  clock.step(30_000);
  await stats.podVolumeStats('stays');
  t.equal(stats.cachedVolumeCount, 3, 'within the period, nothing is swept (the figures are still fresh)');
  clock.step(30_000);
  await stats.podVolumeStats('stays');
  t.equal(stats.cachedVolumeCount, 1, 'a period on, only the volume measured again stays');
  volume('new');
  await stats.podVolumeStats('new');
  t.equal(stats.cachedVolumeCount, 2);
});

t.test('nodeMemoryCapacityBytes: a node of its own size (simulated) reports available memory against it, not MemTotal', async (t) => {
  let capacity = 4 * GiB;
  const env = setup(t, { cgroupVersion: 2, provider: { nodeMemoryCapacityBytes: () => capacity } });
  const node = (await env.provider.get(true)).node;
  t.same(node.memory && [node.memory.availableBytes, node.memory.workingSetBytes], [4 * GiB - 2 * GiB, 2 * GiB], 'its capacity - working set');
  capacity = GiB;
  const over = (await env.provider.get(true)).node;
  t.equal(over.memory?.availableBytes, 0, 'a working set over the capacity: nothing available, never negative');
});
