import t, { type Test } from 'tap';
import { appendFile, rename, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { ContainerLogManager, STATE_CHECK_PERIOD_MS, readLogs, type ReadLogsOptions } from '../src/index.js';
import { FakeLogRuntime, appendCriLog, criLogLines } from '../src/testing.js';
import { Sink, T0, eventually, tempDir, track } from './helpers.js';

const sec = (s: number): number => T0 + s * 1000;
const line = (s: number, text: string, stream: 'stdout' | 'stderr' = 'stdout') => ({ time: sec(s), text, stream });

async function setup(t: Test, initial = '') {
  const dir = tempDir(t);
  const path = join(dir, '0.log');
  await writeFile(path, initial);
  const out = new Sink();
  const clock = new FakeClock(sec(100));
  const logger = new RecordingLogger();
  const runtime = new FakeLogRuntime();
  runtime.addContainer('c1', path, true);
  const controller = new AbortController();
  t.teardown(() => controller.abort());
  const follow = (options: ReadLogsOptions = {}) =>
    track(readLogs(path, 'c1', { follow: true, ...options }, { runtime, stdout: out, stderr: out, clock, logger, signal: controller.signal }));
  return { dir, path, out, clock, logger, runtime, controller, follow };
}

t.test('follow writes new lines as they come and ends once the container stopped', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'before')]));
  const reader = env.follow();
  await eventually(() => env.out.text() === 'before\n', { what: 'existing lines' });
  await eventually(() => env.clock.pendingTimers() === 1, { what: 'the wait for new data' });
  t.equal(env.runtime.callCount('containerStatus'), 1, 'the state is checked at the first end of file');

  await appendCriLog(env.path, [line(1, 'one'), line(2, 'two', 'stderr')]);
  await eventually(() => env.out.text() === 'before\none\ntwo\n', { clock: env.clock, what: 'appended lines' });

  // A record written in pieces is not lost or duplicated.
  await appendFile(env.path, '2026-01-01T00:00:03Z stdout F thr');
  await env.clock.advance(1000);
  await appendFile(env.path, 'ee\n');
  await eventually(() => env.out.text().endsWith('two\nthree\n'), { clock: env.clock, what: 'a line completed later' });
  t.notOk(reader.done(), 'still following while the container runs');

  env.runtime.setRunning('c1', false);
  await appendCriLog(env.path, [line(4, 'last words')]);
  await eventually(reader.done, { clock: env.clock, what: 'the follow to end' });
  await reader.promise;
  t.equal(env.out.text(), 'before\none\ntwo\nthree\nlast words\n', 'data written before the stop is all there');
  t.equal(env.clock.pendingTimers(), 0, 'no timer left');
});

t.test('the state is checked only once the log has been idle for stateCheckPeriod', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'x')]));
  const reader = env.follow();
  await eventually(() => env.runtime.callCount('containerStatus') === 1);
  for (let i = 0; i < 4; i++) {
    await appendCriLog(env.path, [line(i + 1, `busy ${i}`)]);
    await eventually(() => env.out.text().includes(`busy ${i}\n`), { clock: env.clock, stepMs: 400 });
  }
  t.equal(env.runtime.callCount('containerStatus'), 1, 'no status calls while data keeps coming');
  await env.clock.advance(STATE_CHECK_PERIOD_MS + 1000);
  await eventually(() => env.runtime.callCount('containerStatus') >= 2, { clock: env.clock, what: 'a state check after idling' });
  t.notOk(reader.done(), 'still running');
});

t.test('follow of a container that already stopped returns at its end', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'a'), line(1, 'b')]));
  env.runtime.setRunning('c1', false);
  const reader = env.follow({ tailLines: 1 });
  await reader.promise;
  t.equal(env.out.text(), 'b\n', 'tail applies; no clock needed');
});

t.test('follow with tail 0 shows only new lines', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'old')]));
  const reader = env.follow({ tailLines: 0 });
  await eventually(() => env.runtime.callCount('containerStatus') === 1);
  await appendCriLog(env.path, [line(1, 'new')]);
  await eventually(() => env.out.text() === 'new\n', { clock: env.clock });
  env.controller.abort();
  await t.rejects(reader.promise, { name: 'AbortError' });
});

t.test('follow with limitBytes stops at the limit', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'abc')]));
  const reader = env.follow({ limitBytes: 6 });
  await eventually(() => env.out.text() === 'abc\n');
  await appendCriLog(env.path, [line(1, 'defg')]);
  await eventually(reader.done, { clock: env.clock });
  await reader.promise;
  t.equal(env.out.text(), 'abc\nde');
});

t.test('a status error ends the follow with that error', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'a')]));
  env.runtime.statusError = new Error('runtime down');
  const reader = env.follow();
  await t.rejects(reader.promise, /runtime down/);
});

t.test('abort stops at once and releases the file, watcher and timers', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'a')]));
  const watchersBefore = process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length;
  const reader = env.follow();
  await eventually(() => env.runtime.callCount('containerStatus') === 1 && env.clock.pendingTimers() === 1);
  t.equal(process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length, watchersBefore + 1, 'watching');
  env.controller.abort();
  await t.rejects(reader.promise, { name: 'AbortError' });
  t.equal(env.clock.pendingTimers(), 0, 'no timer left');
  // A closed handle leaves the active list on the next turn of the event loop.
  await eventually(() => process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length === watchersBefore, {
    timeoutMs: 200,
    what: 'the watcher to close',
  });
  t.pass('watcher closed');
});

t.test('abort while waiting for a slow client', async (t) => {
  const lines = Array.from({ length: 500 }, (_, i) => line(0, `l${i}`));
  const env = await setup(t, criLogLines(lines));
  const slow = new Sink({ highWaterMark: 64, hold: true });
  const reader = track(
    readLogs(env.path, 'c1', { follow: true }, { runtime: env.runtime, stdout: slow, stderr: slow, clock: env.clock, signal: env.controller.signal }),
  );
  await eventually(() => slow.writableNeedDrain);
  env.controller.abort();
  await t.rejects(reader.promise, { name: 'AbortError' });
});

t.test('rotation: the follower drains the old file and goes on with the new one', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'first')]));
  const reader = env.follow();
  await eventually(() => env.out.text() === 'first\n');
  // The manager renames the log; the runtime writes a last line to the old file, then reopens.
  await rename(env.path, `${env.path}.20260101-000140`);
  await appendCriLog(`${env.path}.20260101-000140`, [line(1, 'late in the old file')]);
  await appendCriLog(env.path, [line(2, 'in the new file')]);
  await eventually(() => env.out.text().includes('in the new file'), { clock: env.clock, what: 'the new file' });
  t.equal(env.out.text(), 'first\nlate in the old file\nin the new file\n');
  await appendCriLog(env.path, [line(3, 'more')]);
  await eventually(() => env.out.text().endsWith('more\n'), { clock: env.clock });
  env.runtime.setRunning('c1', false);
  await eventually(reader.done, { clock: env.clock });
  await reader.promise;
});

t.test('rotation by ContainerLogManager while following', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'before rotation')]));
  const manager = new ContainerLogManager({ runtime: env.runtime, maxSize: 10, maxFiles: 3, clock: env.clock, logger: env.logger });
  const reader = env.follow();
  await eventually(() => env.out.text() === 'before rotation\n');
  await manager.rotateLogs();
  t.equal(env.runtime.callCount('reopenContainerLog', 'c1'), 1, 'rotated');
  await appendCriLog(env.path, [line(1, 'after rotation')]);
  await eventually(() => env.out.text() === 'before rotation\nafter rotation\n', { clock: env.clock, what: 'lines of the new file' });

  // And once more: the previous rotated file gets compressed under the follower.
  await appendCriLog(env.path, [line(2, 'second file')]);
  await eventually(() => env.out.text().endsWith('second file\n'), { clock: env.clock });
  env.clock.setTime(sec(200));
  await manager.rotateLogs();
  await appendCriLog(env.path, [line(3, 'third file')]);
  await eventually(() => env.out.text().endsWith('second file\nthird file\n'), { clock: env.clock });
  env.runtime.setRunning('c1', false);
  await eventually(reader.done, { clock: env.clock });
  await reader.promise;
});

t.test('copytruncate: a truncated log is read again from its start', async (t) => {
  const env = await setup(t, criLogLines([line(0, 'a long first line to be truncated')]));
  const reader = env.follow();
  await eventually(() => env.out.text().endsWith('truncated\n'));
  await truncate(env.path, 0);
  await appendCriLog(env.path, [line(1, 'short')]);
  await eventually(() => env.out.text().endsWith('short\n'), { clock: env.clock });
  env.controller.abort();
  await t.rejects(reader.promise, { name: 'AbortError' });
});

t.test('without file events the poll on the clock still finds new data', async (t) => {
  // Watch events may come too; what matters is that advancing the clock alone is enough.
  const env = await setup(t, criLogLines([line(0, 'a')]));
  const reader = env.follow();
  await eventually(() => env.clock.pendingTimers() === 1, { what: 'the poll timer' });
  await appendCriLog(env.path, [line(1, 'b')]);
  await env.clock.advance(1000);
  await eventually(() => env.out.text() === 'a\nb\n', { clock: env.clock });
  env.controller.abort();
  await t.rejects(reader.promise, { name: 'AbortError' });
});
