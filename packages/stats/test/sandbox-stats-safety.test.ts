// containerd 1.6 before 1.6.22 can die in ListPodSandboxStats (containerd#8130): the stats ask the runtime's version
// first and use ListContainerStats there, as the Go kubelet does without its PodAndContainerStatsFromCRI gate.
import t from 'tap';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import type { runtimeapi } from '@kubelet-ts/cri-client';
import { CpuUsageCache } from '../src/index.js';
import { CriPodStats, unsafeSandboxStatsReason } from '../src/cri-pod-stats.js';
import { FakeStatsRuntime, fixedStatfs, tempDir } from './helpers.js';

const version = (runtimeName: string, runtimeVersion: string): runtimeapi.VersionResponse => ({ version: '0.1.0', runtimeName, runtimeVersion, runtimeApiVersion: 'v1' });

t.test('unsafeSandboxStatsReason names containerd 1.6 before 1.6.22 only', async (t) => {
  for (const v of ['1.6.20~ds1', 'v1.6.21', '1.6.0', '1.6.9-rc.1']) t.match(unsafeSandboxStatsReason(version('containerd', v)), /containerd#8130, fixed in 1.6.22/, v);
  for (const v of ['1.6.22', 'v1.6.38', '1.7.0', '1.7.13', '2.0.4', '1.60.1', 'unknown']) t.equal(unsafeSandboxStatsReason(version('containerd', v)), undefined, v);
  t.equal(unsafeSandboxStatsReason(version('cri-o', '1.6.2')), undefined, 'another runtime of the same number');
});

class VersionedRuntime extends FakeStatsRuntime {
  constructor(private readonly answer: () => runtimeapi.VersionResponse) {
    super();
  }

  async version(): Promise<runtimeapi.VersionResponse> {
    this.calls.push('version');
    return this.answer();
  }
}

function statsOver(runtime: FakeStatsRuntime, t: { teardown(fn: () => void): void }) {
  const logger = new RecordingLogger();
  const stats = new CriPodStats({ runtimeService: runtime, clock: new FakeClock(0), cpuUsageCache: new CpuUsageCache(), podLogsDir: tempDir(t), statfs: fixedStatfs(), logger });
  return { stats, logger, scrape: () => stats.listPodStats({ updateCpu: true, cpuAndMemoryOnly: false }) };
}

t.test('on containerd 1.6.20 ListPodSandboxStats is never called; the scrape uses ListContainerStats and says why once', async (t) => {
  const runtime = new VersionedRuntime(() => version('containerd', '1.6.20~ds1'));
  const { stats, logger, scrape } = statsOver(runtime, t);
  await scrape();
  await scrape();
  t.notOk(runtime.calls.includes('listPodSandboxStats'));
  t.equal(runtime.calls.filter((c) => c === 'listContainerStats').length, 2);
  t.equal(runtime.calls.filter((c) => c === 'version').length, 1, 'the version is asked once');
  t.equal(stats.usesSandboxStats, false);
  const warnings = logger.entries.filter((e) => e.level === 'warn');
  t.equal(warnings.length, 1);
  t.match(warnings[0], { msg: 'Not calling ListPodSandboxStats; using ListContainerStats', kv: { reason: /containerd 1\.6\.20~ds1 can crash/ } });
});

t.test('on a fixed containerd, and without a version method, ListPodSandboxStats is used as before', async (t) => {
  const fixed = new VersionedRuntime(() => version('containerd', '1.7.13'));
  await statsOver(fixed, t).scrape();
  t.ok(fixed.calls.includes('listPodSandboxStats'));
  const plain = new FakeStatsRuntime();
  await statsOver(plain, t).scrape();
  t.ok(plain.calls.includes('listPodSandboxStats'));
});

t.test('a failed Version is asked again at the next scrape, and ListPodSandboxStats waits for the answer', async (t) => {
  let down = true;
  const runtime = new VersionedRuntime(() => {
    if (down) throw new Error('connection refused');
    return version('containerd', '1.6.20~ds1');
  });
  const { scrape } = statsOver(runtime, t);
  await scrape();
  t.ok(runtime.calls.includes('listPodSandboxStats'), 'an unknown version does not stop the stats');
  down = false;
  runtime.calls.length = 0;
  await scrape();
  await scrape();
  t.same(runtime.calls.filter((c) => c === 'version' || c.startsWith('listPodSandboxStats')), ['version'], 'asked again, then never ListPodSandboxStats');
});
