import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeClock } from '@kubelet-ts/core/testing';
import { containerConfig, sandboxConfig, startRuntime, waitFor } from './helpers.js';

async function inBatches<T>(count: number, batch: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < count; start += batch) {
    const chunk = await Promise.all(Array.from({ length: Math.min(batch, count - start) }, (_, k) => fn(start + k)));
    results.push(...chunk);
  }
  return results;
}

t.test('1,000 simulated pods: no processes, lists and filters stay consistent', async (t) => {
  const h = await startRuntime(t, { mode: 'simulated' });
  const pods = await inBatches(1000, 100, async (i) => {
    const sandbox = sandboxConfig(`sim-${i}`, { labels: { group: String(i % 10) } });
    const sandboxId = await h.rs.runPodSandbox(sandbox);
    // No command: simulated containers need none.
    const containerId = await h.rs.createContainer(
      sandboxId,
      { ...containerConfig('main', []), labels: { group: String(i % 10) }, logPath: '' },
      sandbox,
    );
    await h.rs.startContainer(containerId);
    return { sandboxId, containerId };
  });
  t.equal((await h.rs.listPodSandbox()).length, 1000);
  t.equal((await h.rs.listContainers({ state: { state: 'CONTAINER_RUNNING' } })).length, 1000);
  t.equal((await h.rs.listContainers({ labelSelector: { group: '3' } })).length, 100);
  t.equal((await h.rs.listContainers({ podSandboxId: pods[42].sandboxId })).length, 1);
  t.same(h.runtime.processIds, [], 'no process was started');
  t.equal((await h.rs.listContainerStats()).length, 1000);
  t.equal((await h.rs.listPodSandboxStats()).length, 1000);
  const exec = await h.rs.execSync(pods[0].containerId, ['cat', '/ready'], 1);
  t.equal(exec.exitCode, 0, 'exec succeeds in simulated mode');

  await inBatches(500, 100, (i) => h.rs.stopPodSandbox(pods[i].sandboxId));
  t.equal((await h.rs.listContainers({ state: { state: 'CONTAINER_EXITED' } })).length, 500);
  t.equal((await h.rs.listPodSandbox({ state: { state: 'SANDBOX_NOTREADY' } })).length, 500);
  await inBatches(500, 100, (i) => h.rs.removePodSandbox(pods[i].sandboxId));
  t.equal((await h.rs.listPodSandbox()).length, 500);
  t.equal((await h.rs.listContainers()).length, 500);
});

t.test('simulated timing goes through the injected clock', async (t) => {
  const clock = new FakeClock();
  const h = await startRuntime(t, {
    mode: 'simulated',
    clock,
    simulated: { startDelayMs: 1000, stopDelayMs: 5000, exitAfterMs: 60_000, exitCode: 1 },
  });
  const sandbox = sandboxConfig('timed');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const create = (name: string) => h.rs.createContainer(sandboxId, containerConfig(name, []), sandbox);
  const first = await create('first');
  let started = false;
  const starting = h.rs.startContainer(first).then(() => (started = true));
  await waitFor(() => clock.pendingTimers() > 0, 5000, 'start timer');
  t.equal((await h.rs.containerStatus(first)).status?.state, 'CONTAINER_CREATED', 'still starting');
  t.notOk(started);
  await clock.advance(1000);
  await starting;
  const status = (await h.rs.containerStatus(first)).status;
  t.equal(status?.state, 'CONTAINER_RUNNING');
  t.equal(Number(status?.startedAt), (Date.parse('2026-01-01T00:00:00Z') + 1000) * 1e6, 'timestamps from the clock');

  // Exits on its own after exitAfterMs with exitCode.
  await clock.advance(60_000);
  await waitFor(async () => (await h.rs.containerStatus(first)).status?.state === 'CONTAINER_EXITED', 5000, 'exit');
  const exited = (await h.rs.containerStatus(first)).status;
  t.equal(exited?.exitCode, 1);
  t.equal(exited?.reason, 'Error');

  // Graceful stop takes stopDelayMs when the timeout allows it...
  const second = await create('second');
  const startSecond = h.rs.startContainer(second);
  await waitFor(() => clock.pendingTimers() > 0, 5000, 'start timer');
  await clock.advance(1000);
  await startSecond;
  const stopping = h.rs.stopContainer(second, 30);
  await waitFor(() => clock.pendingTimers() > 1, 5000, 'stop timer');
  await clock.advance(5000);
  await stopping;
  t.same(
    [(await h.rs.containerStatus(second)).status?.exitCode, (await h.rs.containerStatus(second)).status?.reason],
    [0, 'Completed'],
  );

  // ...and is a kill (137) at the timeout otherwise.
  const third = await create('third');
  const startThird = h.rs.startContainer(third);
  await waitFor(() => clock.pendingTimers() > 0, 5000, 'start timer');
  await clock.advance(1000);
  await startThird;
  const killing = h.rs.stopContainer(third, 2);
  await waitFor(() => clock.pendingTimers() > 1, 5000, 'stop timer');
  await clock.advance(2000);
  await killing;
  t.equal((await h.rs.containerStatus(third)).status?.exitCode, 137);
  // timeout 0 is immediate.
  const fourth = await create('fourth');
  const startFourth = h.rs.startContainer(fourth);
  await waitFor(() => clock.pendingTimers() > 0, 5000, 'start timer');
  await clock.advance(1000);
  await startFourth;
  await h.rs.stopContainer(fourth, 0);
  t.equal((await h.rs.containerStatus(fourth)).status?.exitCode, 137);
});

t.test('remove or shutdown during a simulated start delay', async (t) => {
  const clock = new FakeClock();
  const h = await startRuntime(t, { mode: 'simulated', clock, simulated: { startDelayMs: 10_000 } });
  const sandbox = sandboxConfig('slow');
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const removed = await h.rs.createContainer(sandboxId, containerConfig('removed', []), sandbox);
  const startRemoved = h.rs.startContainer(removed).catch((e: unknown) => e);
  await waitFor(() => clock.pendingTimers() > 0, 5000, 'start timer');
  await h.rs.removeContainer(removed);
  await clock.advance(10_000);
  t.match(await startRemoved, { code: 'NotFound' });

  const pending = await h.rs.createContainer(sandboxId, containerConfig('pending', []), sandbox);
  const startPending = h.rs.startContainer(pending).catch((e: unknown) => e);
  await waitFor(() => clock.pendingTimers() > 0, 5000, 'start timer');
  await h.runtime.stop();
  t.match(await startPending, { code: 'Unavailable' });
});

t.test('a simulated container gets its log file on start, as from a real runtime; one that cannot be made fails the start', async (t) => {
  const h = await startRuntime(t, { mode: 'simulated', clock: new FakeClock() });
  const logDirectory = join(h.dir, 'logs', 'with-log');
  const sandbox = { ...sandboxConfig('with-log'), logDirectory };
  const sandboxId = await h.rs.runPodSandbox(sandbox);
  const id = await h.rs.createContainer(sandboxId, { ...containerConfig('main', []), logPath: 'main/0.log' }, sandbox);
  await h.rs.startContainer(id);
  t.equal(
    readFileSync(join(logDirectory, 'main/0.log'), 'utf8'),
    '2026-01-01T00:00:00Z stdout F simulated container main started\n',
    'the log file has the default start line',
  );
  await h.rs.reopenContainerLog(id);

  writeFileSync(join(logDirectory, 'blocker'), 'a file where a directory should be');
  const bad = await h.rs.createContainer(sandboxId, { ...containerConfig('bad', []), logPath: 'blocker/0.log' }, sandbox);
  await t.rejects(h.rs.startContainer(bad), /failed to create container log file/);
  const status = (await h.rs.containerStatus(bad)).status;
  t.equal(status?.state, 'CONTAINER_EXITED');
  t.equal(status?.reason, 'StartError');
});
