import t from 'tap';
import { CanceledError, type runtimeapi } from '../src/index.js';
import { FakeImageService, FakeRuntimeService } from '../src/testing/index.js';

/** A minimal fake clock with timers (cri-client does not depend on core's FakeClock). */
class TimerClock {
  private t = 1_000_000;
  private seq = 0;
  private readonly timers = new Map<number, { due: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): { cancel(): void } {
    const id = this.seq++;
    this.timers.set(id, { due: this.t + Math.max(0, ms), fn });
    return { cancel: () => this.timers.delete(id) };
  }
  pending(): number {
    return this.timers.size;
  }
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await flush();
    for (;;) {
      const next = [...this.timers.entries()].sort((a, b) => a[1].due - b[1].due || a[0] - b[0])[0];
      if (!next || next[1].due > target) break;
      this.timers.delete(next[0]);
      this.t = next[1].due;
      next[1].fn();
      await flush();
    }
    this.t = target;
    await flush();
  }
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

const sandboxConfig: runtimeapi.PodSandboxConfigInit = {
  metadata: { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 0 },
  labels: { 'io.kubernetes.pod.uid': 'uid-1' },
  logDirectory: '/var/log/pods/default_web_uid-1',
};

async function runningContainer(runtime: FakeRuntimeService, name = 'app'): Promise<string> {
  const sandboxId = await runtime.runPodSandbox(sandboxConfig);
  const id = await runtime.createContainer(sandboxId, { metadata: { name } }, sandboxConfig);
  await runtime.startContainer(id);
  return id;
}

/** Tracks a promise's outcome without awaiting it. */
function watch(p: Promise<unknown>): { settled: boolean; error?: unknown } {
  const state: { settled: boolean; error?: unknown } = { settled: false };
  p.then(
    () => (state.settled = true),
    (err: unknown) => {
      state.settled = true;
      state.error = err;
    },
  );
  return state;
}

const state = async (runtime: FakeRuntimeService, id: string) => (await runtime.containerStatus(id)).status!;

t.test('StopContainer of a container ignoring SIGTERM returns when the timeout elapses on the clock, with 137', async (t) => {
  const clock = new TimerClock();
  const runtime = new FakeRuntimeService(clock);
  runtime.ignoreSigterm('app');
  const id = await runningContainer(runtime);
  const stop = watch(runtime.stopContainer(id, 30));
  await clock.advance(29_999);
  t.notOk(stop.settled, 'still stopping before the timeout');
  t.equal((await state(runtime, id)).state, 'CONTAINER_RUNNING');
  await clock.advance(1);
  t.ok(stop.settled);
  t.equal(stop.error, undefined);
  const exited = await state(runtime, id);
  t.same([exited.state, exited.exitCode, exited.finishedAt], ['CONTAINER_EXITED', 137, (1_000_000 + 30_000) * 1_000_000]);
  t.equal(clock.pending(), 0, 'no timer left behind');
});

t.test('a container that exits some time after SIGTERM ends the stop then, with its exit code', async (t) => {
  const clock = new TimerClock();
  const runtime = new FakeRuntimeService(clock);
  const id = await runningContainer(runtime);
  runtime.stopBehaviors.set(id, { exitAfterMs: 5_000 });
  const stop = watch(runtime.stopContainer(id, 30));
  await clock.advance(4_000);
  t.notOk(stop.settled);
  await clock.advance(1_000);
  t.ok(stop.settled);
  t.same([(await state(runtime, id)).exitCode, (await state(runtime, id)).reason], [0, 'Completed']);
  t.equal(clock.pending(), 0);
});

t.test('an aborted StopContainer returns Canceled at once; a later one with a shorter timeout kills the container', async (t) => {
  const clock = new TimerClock();
  const runtime = new FakeRuntimeService(clock);
  runtime.ignoreSigterm('app');
  const id = await runningContainer(runtime);
  const controller = new AbortController();
  const first = watch(runtime.stopContainer(id, 30, { signal: controller.signal }));
  await clock.advance(1_000);
  controller.abort();
  await clock.advance(0);
  t.ok(first.settled, 'the aborted call returns without time passing');
  t.type(first.error, CanceledError);
  t.match((first.error as CanceledError).message, /RuntimeService\/StopContainer failed: rpc error: code = Canceled/);
  t.equal((await state(runtime, id)).state, 'CONTAINER_RUNNING', 'aborting the call does not kill the container');

  const second = watch(runtime.stopContainer(id, 2));
  await clock.advance(2_000);
  t.ok(second.settled);
  t.equal((await state(runtime, id)).finishedAt, (1_000_000 + 3_000) * 1_000_000, 'killed 2 s after the second call');
  t.equal(clock.pending(), 0, "the aborted call's 30 s deadline was dropped");
});

t.test('concurrent stops: the first deadline to pass kills the container and every call returns', async (t) => {
  const clock = new TimerClock();
  const runtime = new FakeRuntimeService(clock);
  runtime.ignoreSigterm('app');
  const id = await runningContainer(runtime);
  const long = watch(runtime.stopContainer(id, 30));
  const short = watch(runtime.stopContainer(id, 3));
  await clock.advance(3_000);
  t.ok(long.settled && short.settled);
  t.equal((await state(runtime, id)).exitCode, 137);
  t.equal(clock.pending(), 0);
});

t.test('a stopping container that exits another way (sandbox stopped, removed) releases the callers', async (t) => {
  const clock = new TimerClock();
  const runtime = new FakeRuntimeService(clock);
  runtime.ignoreSigterm('app');
  const id = await runningContainer(runtime);
  const stop = watch(runtime.stopContainer(id, 30));
  await runtime.stopPodSandbox('web_default_uid-1_0');
  await clock.advance(0);
  t.ok(stop.settled);
  t.equal(clock.pending(), 0);
  t.equal((await state(runtime, id)).exitCode, 137);
});

t.test('without a stop behavior StopContainer stays immediate (the default)', async (t) => {
  const runtime = new FakeRuntimeService({ now: () => 5 });
  const id = await runningContainer(runtime);
  await runtime.stopContainer(id, 30);
  t.equal((await state(runtime, id)).state, 'CONTAINER_EXITED');
});

t.test('a call whose signal is already aborted fails with Canceled and never reaches the runtime', async (t) => {
  const runtime = new FakeRuntimeService({ now: () => 5 });
  const controller = new AbortController();
  controller.abort();
  await t.rejects(runtime.listContainers({}, { signal: controller.signal }), CanceledError);
  await t.rejects(runtime.runPodSandbox(sandboxConfig, '', { signal: controller.signal }), { code: 'Canceled', rpc: 'RuntimeService/RunPodSandbox' });
  t.same(runtime.called, []);
  t.equal(runtime.sandboxes.size, 0);
});

t.test('ExecSync of a slow command returns Canceled when the signal aborts, and aborts the command', async (t) => {
  const clock = new TimerClock();
  const runtime = new FakeRuntimeService(clock);
  const id = await runningContainer(runtime);
  let commandSignal: AbortSignal | undefined;
  runtime.execResults.set(id, (cmd, signal) => {
    commandSignal = signal;
    return new Promise((resolve) => clock.setTimeout(() => resolve({ stdout: Buffer.from(cmd.join(' ')), stderr: Buffer.alloc(0), exitCode: 0 }), 10_000));
  });
  const done = await (async () => {
    const p = runtime.execSync(id, ['sleep', '10'], 0);
    await clock.advance(10_000);
    return p;
  })();
  t.equal(done.stdout.toString(), 'sleep 10');
  const controller = new AbortController();
  const slow = watch(runtime.execSync(id, ['sleep', '10'], 0, { signal: controller.signal }));
  await clock.advance(1_000);
  controller.abort();
  await clock.advance(0);
  t.ok(slow.settled);
  t.type(slow.error, CanceledError);
  t.equal(commandSignal?.aborted, true, 'the command sees the abort');
});

t.test('PullImage takes its configured time on the clock and returns Canceled at once on abort', async (t) => {
  const clock = new TimerClock();
  const images = new FakeImageService(clock);
  images.pullDelays.set('big:1', 60_000);
  const pull = watch(images.pullImage({ image: 'big:1' }));
  await clock.advance(59_000);
  t.notOk(pull.settled);
  await clock.advance(1_000);
  t.ok(pull.settled);
  t.ok((await images.imageStatus({ image: 'big:1' })).image, 'pulled after the delay');

  images.pullDelays.set('big:2', 60_000);
  const controller = new AbortController();
  const aborted = watch(images.pullImage({ image: 'big:2' }, undefined, undefined, { signal: controller.signal }));
  await clock.advance(1_000);
  controller.abort();
  await clock.advance(0);
  t.ok(aborted.settled);
  t.match(aborted.error, { code: 'Canceled', rpc: 'ImageService/PullImage' });
  t.equal((await images.imageStatus({ image: 'big:2' })).image, null, 'an aborted pull leaves no image');
  t.equal(clock.pending(), 0);
});

t.test('a host-network sandbox reports no IP of its own; a pod-network one does', async (t) => {
  const runtime = new FakeRuntimeService({ now: () => 5 });
  const hostId = await runtime.runPodSandbox({
    ...sandboxConfig,
    metadata: { ...sandboxConfig.metadata, name: 'host' },
    linux: { securityContext: { namespaceOptions: { network: 'NODE' } } },
  });
  const podId = await runtime.runPodSandbox(sandboxConfig);
  t.equal((await runtime.podSandboxStatus(hostId)).status?.network?.ip, '');
  t.equal((await runtime.podSandboxStatus(hostId)).status?.linux?.namespaces?.options?.network, 'NODE');
  t.not((await runtime.podSandboxStatus(podId)).status?.network?.ip, '');
});
