// Simulated mode's pod-annotation conventions (README "Simulated mode"), each driven by a FakeClock.
import t, { type Test } from 'tap';
import { createReadStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { readCriLog, type ImageService, type RuntimeService, type runtimeapi as api } from '@kubelet-ts/cri-client';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { LocalRuntime, type SimulatedOptions } from '../src/index.js';
import { tempDir } from './helpers.js';

const P = 'simulated.kubelet-ts.io/';
const MI = 1024 * 1024;

interface Sim {
  runtime: LocalRuntime;
  rs: RuntimeService;
  is: ImageService;
  clock: FakeClock;
  logger: RecordingLogger;
  logDir: string;
}

async function simulated(t: Test, simulatedOptions: SimulatedOptions = {}): Promise<Sim> {
  const dir = tempDir(t);
  const clock = new FakeClock();
  const logger = new RecordingLogger();
  const runtime = new LocalRuntime({ mode: 'simulated', rootDir: join(dir, 'root'), clock, logger, simulated: simulatedOptions });
  const { runtimeService, imageService } = await runtime.startInProcess();
  t.teardown(() => runtime.stop());
  return { runtime, rs: runtimeService, is: imageService, clock, logger, logDir: join(dir, 'pods') };
}

let pods = 0;

/** A pod with these annotations: its sandbox, and a function creating (not starting) its containers. */
async function pod(sim: Sim, annotations: Record<string, string>, name = `pod-${++pods}`) {
  const config: api.PodSandboxConfigInit = {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, attempt: 0 },
    annotations,
    logDirectory: join(sim.logDir, name),
  };
  const sandboxId = await sim.rs.runPodSandbox(config);
  const create = (container: string, attempt = 0, image = 'busybox') =>
    sim.rs.createContainer(sandboxId, { metadata: { name: container, attempt }, image: { image }, logPath: `${container}/${attempt}.log` }, config);
  return { config, sandboxId, create };
}

async function status(sim: Sim, id: string): Promise<api.ContainerStatus> {
  return (await sim.rs.containerStatus(id)).status!;
}

t.test('start-delay: StartContainer takes that long; a container override wins', async (t) => {
  const sim = await simulated(t, { startDelayMs: 100 });
  const p = await pod(sim, { [`${P}start-delay`]: '2s', [`${P}start-delay.fast`]: '500ms' });
  const slow = await p.create('slow');
  const fast = await p.create('fast');
  const plain = await (await pod(sim, {})).create('plain');
  const startingSlow = sim.rs.startContainer(slow);
  const startingFast = sim.rs.startContainer(fast);
  const startingPlain = sim.rs.startContainer(plain);
  await tick();
  const state = async (id: string) => (await status(sim, id)).state;
  await sim.clock.advance(99);
  t.equal(await state(plain), 'CONTAINER_CREATED');
  await sim.clock.advance(1);
  await startingPlain;
  t.equal(await state(plain), 'CONTAINER_RUNNING', 'a pod without annotations: the runtime default (startDelayMs)');
  t.equal(await state(fast), 'CONTAINER_CREATED');
  await sim.clock.advance(400);
  await startingFast;
  t.equal(await state(fast), 'CONTAINER_RUNNING', 'start-delay.fast overrides the pod-wide value');
  await sim.clock.advance(1499);
  t.equal(await state(slow), 'CONTAINER_CREATED');
  await sim.clock.advance(1);
  await startingSlow;
  t.equal(await state(slow), 'CONTAINER_RUNNING');
  t.equal((await status(sim, slow)).startedAt, (Date.parse('2026-01-01T00:00:00Z') + 2000) * 1e6);
});

t.test('exit-after and exit-code: every start exits the same way, so restarts crash again (CrashLoopBackOff)', async (t) => {
  const sim = await simulated(t);
  const p = await pod(sim, { [`${P}exit-after`]: '10s', [`${P}exit-code`]: '3', [`${P}exit-code.ok`]: '0' });
  for (let attempt = 0; attempt < 3; attempt++) {
    const id = await p.create('app', attempt);
    await sim.rs.startContainer(id);
    t.equal((await status(sim, id)).state, 'CONTAINER_RUNNING', `attempt ${attempt} runs`);
    await sim.clock.advance(9_999);
    t.equal((await status(sim, id)).state, 'CONTAINER_RUNNING');
    await sim.clock.advance(1);
    const exited = await status(sim, id);
    t.match(exited, { state: 'CONTAINER_EXITED', exitCode: 3, reason: 'Error' }, `attempt ${attempt} exits with 3 after 10s`);
    await sim.rs.removeContainer(id);
  }
  const ok = await p.create('ok');
  await sim.rs.startContainer(ok);
  await sim.clock.advance(10_000);
  t.match(await status(sim, ok), { state: 'CONTAINER_EXITED', exitCode: 0, reason: 'Completed' }, 'exit-code.ok overrides');
});

t.test('exit-code without exit-after: the container exits right after its start', async (t) => {
  const sim = await simulated(t);
  const p = await pod(sim, { [`${P}exit-code.init`]: '1' });
  const init = await p.create('init');
  const main = await p.create('main');
  await sim.rs.startContainer(init);
  await sim.rs.startContainer(main);
  await tick();
  t.match(await status(sim, init), { state: 'CONTAINER_EXITED', exitCode: 1, reason: 'Error' });
  t.equal((await status(sim, main)).state, 'CONTAINER_RUNNING', 'the other container is untouched');
  const again = await p.create('init', 1);
  await sim.rs.startContainer(again);
  await tick();
  t.match(await status(sim, again), { state: 'CONTAINER_EXITED', exitCode: 1 }, 'and again on its restart');
});

t.test('cpu and memory: stats accumulate CPU at the simulated rate while running; exited containers use nothing', async (t) => {
  const sim = await simulated(t);
  const p = await pod(sim, { [`${P}cpu`]: '250m', [`${P}memory`]: '64Mi', [`${P}memory.side`]: '16Mi', [`${P}exit-after.side`]: '20s' });
  const app = await p.create('app');
  const side = await p.create('side');
  await sim.rs.startContainer(app);
  await sim.rs.startContainer(side);
  await sim.clock.advance(10_000);
  const stats = await sim.rs.containerStats(app);
  t.equal(stats.cpu?.usageCoreNanoSeconds?.value, 2.5e9, '250m for 10s is 2.5 core-seconds');
  t.equal(stats.cpu?.usageNanoCores?.value, 250_000_000);
  t.equal(stats.memory?.workingSetBytes?.value, 64 * MI);
  t.equal(stats.memory?.usageBytes?.value, 64 * MI);
  t.equal(stats.memory?.rssBytes?.value, 64 * MI);
  const sandbox = await sim.rs.podSandboxStats(p.sandboxId);
  t.equal(sandbox.linux?.memory?.workingSetBytes?.value, 80 * MI, 'the pod sums its containers');
  t.equal(sandbox.linux?.cpu?.usageNanoCores?.value, 500_000_000);
  t.equal(sandbox.linux?.process?.processCount?.value, 2);
  t.same(sim.runtime.simulatedUsage(), { cpuUsageCoreNanoSeconds: 5e9, cpuNanoCores: 500_000_000, memoryWorkingSetBytes: 80 * MI });

  await sim.clock.advance(10_000);
  t.equal((await sim.rs.containerStats(app)).cpu?.usageCoreNanoSeconds?.value, 5e9, 'accumulates while running');
  const exited = await sim.rs.containerStats(side);
  t.equal(exited.cpu?.usageCoreNanoSeconds?.value, 5e9, 'the exited container keeps the CPU time it used (20s)');
  t.equal(exited.cpu?.usageNanoCores?.value, 0);
  t.equal(exited.memory?.workingSetBytes?.value, 0);
  t.same((await sim.rs.listContainerStats()).map((s) => s.attributes?.metadata?.name), ['app'], 'list: running only');
  const listed = await sim.rs.listPodSandboxStats();
  t.equal(listed[0].linux?.memory?.workingSetBytes?.value, 64 * MI);
  t.same(sim.runtime.simulatedUsage(), { cpuUsageCoreNanoSeconds: 5e9, cpuNanoCores: 250_000_000, memoryWorkingSetBytes: 64 * MI });

  const defaults = await (await pod(sim, {})).create('plain');
  await sim.rs.startContainer(defaults);
  await sim.clock.advance(1000);
  const plain = await sim.rs.containerStats(defaults);
  t.equal(plain.cpu?.usageNanoCores?.value, 1_000_000, 'default cpu 1m');
  t.equal(plain.cpu?.usageCoreNanoSeconds?.value, 1_000_000);
  t.equal(plain.memory?.workingSetBytes?.value, 4 * MI, 'default memory 4Mi');
});

t.test('probe results follow readiness, liveness and startup, with -after= measured from the start', async (t) => {
  const sim = await simulated(t);
  const p = await pod(sim, {
    [`${P}readiness`]: 'success-after=5s',
    [`${P}liveness`]: 'failure-after=30s',
    [`${P}startup.fixed`]: 'failure',
    [`${P}readiness.fixed`]: 'failure',
  });
  const app = await p.create('app');
  const fixed = await p.create('fixed');
  t.equal(sim.runtime.simulatedProbeResult(app, 'readiness'), 'failure', 'not running yet');
  await sim.clock.advance(1000);
  await sim.rs.startContainer(app);
  await sim.rs.startContainer(fixed);
  const probe = (id: string) => (['readiness', 'liveness', 'startup'] as const).map((type) => sim.runtime.simulatedProbeResult(id, type));
  t.same(probe(app), ['failure', 'success', 'success']);
  await sim.clock.advance(4999);
  t.same(probe(app), ['failure', 'success', 'success']);
  await sim.clock.advance(1);
  t.same(probe(app), ['success', 'success', 'success'], 'ready 5s after the start');
  await sim.clock.advance(25_000);
  t.same(probe(app), ['success', 'failure', 'success'], 'liveness fails 30s after the start');
  t.same(probe(fixed), ['failure', 'failure', 'failure'], 'per-container values; liveness inherited from the pod');
  t.equal(sim.runtime.simulatedProbeResult(`containerd://${fixed}`, 'startup'), 'failure', 'the kubelet id form');
  t.equal(sim.runtime.simulatedProbeResult(`containerd://${app}`, 'readiness'), 'success');
  t.equal(sim.runtime.simulatedProbeResult('nope', 'readiness'), 'failure', 'unknown container');
  await sim.rs.stopContainer(app, 0);
  t.equal(sim.runtime.simulatedProbeResult(app, 'readiness'), 'failure', 'exited container');
  const plain = await (await pod(sim, {})).create('plain');
  await sim.rs.startContainer(plain);
  t.same(probe(plain), ['success', 'success', 'success'], 'default: success');
});

t.test('image sizes and pull time: size / imagePullBytesPerSecond on the clock; ListImages and ImageStatus report it', async (t) => {
  const sim = await simulated(t, { imagePullBytesPerSecond: 10 * MI });
  const p = await pod(sim, { [`${P}image-size`]: '100Mi' });
  let pulled: string | undefined;
  const pulling = sim.is.pullImage({ image: 'registry.local/big:1' }, undefined, p.config).then((ref) => (pulled = ref));
  const second = sim.is.pullImage({ image: 'registry.local/big:1' }, undefined, p.config);
  await tick();
  t.equal((await sim.is.imageStatus({ image: 'registry.local/big:1' })).image, null, 'not there while pulling');
  await sim.clock.advance(9_999);
  t.equal(pulled, undefined);
  await sim.clock.advance(1);
  await pulling;
  t.equal(await second, pulled, 'a concurrent pull of the same image shares it');
  t.equal((await sim.is.imageStatus({ image: 'registry.local/big:1' })).image?.size, 100 * MI);
  t.equal(await sim.is.pullImage({ image: 'registry.local/big:1' }, undefined, p.config), pulled, 'present: instant');

  // Without the annotation: a deterministic 5 to 200 MiB from the name.
  const defaultPull = sim.is.pullImage({ image: 'nginx:1.27' });
  await sim.clock.advance(20_000);
  await defaultPull;
  const size = Number((await sim.is.listImages({ image: { image: 'nginx:1.27' } }))[0].size);
  t.ok(size >= 5 * MI && size <= 200 * MI, `default size ${size} in 5..200 MiB`);
  const other = await simulated(t);
  await other.is.pullImage({ image: 'nginx:1.27' });
  t.equal((await other.is.imageStatus({ image: 'nginx:1.27' })).image?.size, size, 'the same size for the same name');
  const fs = await sim.is.imageFsInfo();
  t.equal(fs.imageFilesystems[0].usedBytes?.value, 100 * MI + size, 'ImageFsInfo: the simulated images');
  t.equal(fs.imageFilesystems[0].inodesUsed?.value, 2);
  await t.rejects(sim.is.pullImage({ image: 'doesnotexist/x' }), { name: 'NotFoundError' });

  const instant = await simulated(t);
  await instant.is.pullImage({ image: 'busybox' }); // no bandwidth: no timer, no clock advance needed
  t.equal(instant.clock.pendingTimers(), 0);
});

t.test('logs: the log annotation at each start, an exit line at each exit, in the CRI format', async (t) => {
  const sim = await simulated(t);
  const p = await pod(sim, { [`${P}log`]: 'booting\nlistening on :8080', [`${P}exit-after`]: '1m', [`${P}exit-code`]: '2', [`${P}log.quiet`]: '' });
  const id = await p.create('web');
  await sim.rs.startContainer(id);
  await sim.clock.advance(60_000);
  const path = (await status(sim, id)).logPath;
  const entries = [];
  for await (const entry of readCriLog(createReadStream(path))) entries.push([new Date(entry.timestamp).toISOString(), entry.stream, entry.text]);
  t.same(entries, [
    ['2026-01-01T00:00:00.000Z', 'stdout', 'booting'],
    ['2026-01-01T00:00:00.000Z', 'stdout', 'listening on :8080'],
    ['2026-01-01T00:01:00.000Z', 'stdout', 'simulated container web exited with code 2'],
  ]);
  const quiet = await p.create('quiet');
  await sim.rs.startContainer(quiet);
  await sim.rs.stopContainer(quiet, 0);
  t.equal(
    readFileSync((await status(sim, quiet)).logPath, 'utf8'),
    '2026-01-01T00:01:00Z stdout F \n2026-01-01T00:01:00Z stdout F simulated container quiet exited with code 0\n',
    'an empty log annotation: one empty line; a stop: its exit code',
  );
});

t.test('bad annotation values: a warning naming the pod, annotation and value, and the default', async (t) => {
  const sim = await simulated(t);
  const p = await pod(
    sim,
    {
      [`${P}exit-code`]: 'three',
      [`${P}start-delay`]: '-1s',
      [`${P}cpu`]: 'lots',
      [`${P}memory.app`]: '12 apples',
      [`${P}readiness`]: 'maybe',
      [`${P}liveness`]: 'success-after=soon',
      [`${P}colour`]: 'blue',
      [`${P}image-size`]: 'huge',
      'other.io/annotation': 'not ours',
    },
    'bad-values',
  );
  await sim.is.pullImage({ image: 'busybox' }, undefined, p.config);
  const id = await p.create('app');
  await sim.rs.startContainer(id);
  await tick();
  t.equal((await status(sim, id)).state, 'CONTAINER_RUNNING', 'no exit, no delay: the defaults');
  await sim.clock.advance(1000);
  const stats = await sim.rs.containerStats(id);
  t.equal(stats.cpu?.usageNanoCores?.value, 1_000_000);
  t.equal(stats.memory?.workingSetBytes?.value, 4 * MI);
  t.equal(sim.runtime.simulatedProbeResult(id, 'readiness'), 'success');
  t.equal(sim.runtime.simulatedProbeResult(id, 'liveness'), 'success');
  const size = Number((await sim.is.imageStatus({ image: 'busybox' })).image?.size);
  t.ok(size >= 5 * MI && size <= 200 * MI, 'default image size');
  const warnings = sim.logger.entries.filter((e) => e.level === 'warn');
  t.same(
    warnings.map((w) => [w.kv.pod, w.kv.annotation, w.kv.value]).sort(),
    [
      ['default/bad-values', `${P}colour`, 'blue'],
      ['default/bad-values', `${P}cpu`, 'lots'],
      ['default/bad-values', `${P}exit-code`, 'three'],
      ['default/bad-values', `${P}image-size`, 'huge'],
      ['default/bad-values', `${P}liveness`, 'success-after=soon'],
      ['default/bad-values', `${P}memory.app`, '12 apples'],
      ['default/bad-values', `${P}readiness`, 'maybe'],
      ['default/bad-values', `${P}start-delay`, '-1s'],
    ],
  );
  t.ok(warnings.every((w) => w.msg === 'Invalid simulation annotation ignored, using the default' && typeof w.kv.err === 'string' && w.kv.err !== ''));
  t.match(warnings.find((w) => w.kv.annotation === `${P}readiness`)?.kv.err, /success-after=<duration>/);
});
