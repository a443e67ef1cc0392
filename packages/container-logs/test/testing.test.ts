import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runtimeapi } from '@kubelet-ts/cri-client';
import { FakeLogRuntime, appendCriLog, criLogLines } from '../src/testing.js';
import { T0, tempDir } from './helpers.js';

t.test('FakeLogRuntime', async (t) => {
  const dir = tempDir(t);
  const runtime = new FakeLogRuntime();
  runtime.addContainer('a', join(dir, 'a.log'));
  runtime.addContainer('b', join(dir, 'b.log'), false);

  const listed = await runtime.listContainers();
  t.same(
    listed.map((c) => [c.id, c.state]),
    [
      ['a', runtimeapi.ContainerState.CONTAINER_RUNNING],
      ['b', runtimeapi.ContainerState.CONTAINER_EXITED],
    ],
  );
  const status = await runtime.containerStatus('a');
  t.equal(status.status?.logPath, join(dir, 'a.log'));
  runtime.setRunning('a', false);
  t.equal((await runtime.containerStatus('a')).status?.state, runtimeapi.ContainerState.CONTAINER_EXITED);
  await t.rejects(runtime.containerStatus('nope'), /not found/);

  runtime.setRunning('a', true);
  await runtime.reopenContainerLog('a');
  t.ok(existsSync(join(dir, 'a.log')), 'reopen creates the log file');
  await writeFile(join(dir, 'a.log'), 'kept');
  await runtime.reopenContainerLog('a');
  t.equal(readFileSync(join(dir, 'a.log'), 'utf8'), 'kept', 'an existing file is left alone');
  await t.rejects(runtime.reopenContainerLog('b'), /not running/, 'a stopped container cannot reopen');
  runtime.failReopen('a');
  await t.rejects(runtime.reopenContainerLog('a'), /reopen of container a failed/);
  runtime.failReopen('a', false);
  runtime.reopenError = new Error('boom');
  await t.rejects(runtime.reopenContainerLog('a'), /boom/);
  t.equal(runtime.callCount('reopenContainerLog', 'a'), 4);
});

t.test('CRI log helpers', async (t) => {
  const dir = tempDir(t);
  t.equal(criLogLines([{ time: T0, text: 'x' }, { time: T0 + 1.5, stream: 'stderr', tag: 'P', text: 'y' }]), '2026-01-01T00:00:00Z stdout F x\n2026-01-01T00:00:00.0015Z stderr P y\n');
  const path = join(dir, 'l.log');
  await appendCriLog(path, [{ time: T0, text: 'one' }]);
  await appendCriLog(path, [{ time: T0, text: 'two' }]);
  t.equal(readFileSync(path, 'utf8'), '2026-01-01T00:00:00Z stdout F one\n2026-01-01T00:00:00Z stdout F two\n');
});
