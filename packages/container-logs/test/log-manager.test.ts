import t, { type Test } from 'tap';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import {
  ContainerLogManager,
  ContainerLogManagerOptionsError,
  DEFAULT_CONTAINER_LOG_MAX_FILES,
  DEFAULT_CONTAINER_LOG_MAX_SIZE,
  DEFAULT_LOG_MONITOR_PERIOD_MS,
  formatRotationTimestamp,
  getAllLogs,
} from '../src/index.js';
import { FakeLogRuntime } from '../src/testing.js';
import { T0, eventually, tempDir } from './helpers.js';

const NOW = Date.parse('2026-03-04T05:06:07.890Z');
const STAMP = '20260304-050607';

async function setup(t: Test, opts: { maxSize?: number; maxFiles?: number } = {}) {
  const dir = tempDir(t);
  const log = join(dir, '0.log');
  const clock = new FakeClock(NOW);
  const logger = new RecordingLogger();
  const runtime = new FakeLogRuntime();
  runtime.addContainer('c1', log, true);
  const manager = new ContainerLogManager({ runtime, maxSize: opts.maxSize ?? 10, maxFiles: opts.maxFiles ?? 3, clock, logger });
  t.teardown(() => manager.stop());
  const files = () => readdirSync(dir).sort();
  return { dir, log, clock, logger, runtime, manager, files };
}

t.test('defaults are Go kubelet defaults', async (t) => {
  const manager = new ContainerLogManager({ runtime: new FakeLogRuntime() });
  t.equal(manager.maxSize, DEFAULT_CONTAINER_LOG_MAX_SIZE);
  t.equal(DEFAULT_CONTAINER_LOG_MAX_SIZE, 10 * 1024 * 1024);
  t.equal(manager.maxFiles, DEFAULT_CONTAINER_LOG_MAX_FILES);
  t.equal(DEFAULT_CONTAINER_LOG_MAX_FILES, 5);
  t.equal(DEFAULT_LOG_MONITOR_PERIOD_MS, 10_000);
});

function thrown(fn: () => unknown): ContainerLogManagerOptionsError | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof ContainerLogManagerOptionsError) return err;
    throw err;
  }
  return undefined;
}

t.test('maxFiles must be at least 2', async (t) => {
  for (const maxFiles of [1, 0, -3, 2.5]) {
    const err = thrown(() => new ContainerLogManager({ runtime: new FakeLogRuntime(), maxFiles }));
    t.ok(err instanceof ContainerLogManagerOptionsError, `maxFiles ${maxFiles} fails`);
    t.equal(err?.field, 'maxFiles');
    t.equal(err?.message, `invalid MaxFiles ${maxFiles}, must be > 1`);
  }
  t.doesNotThrow(() => new ContainerLogManager({ runtime: new FakeLogRuntime(), maxFiles: 2 }));
  t.equal(thrown(() => new ContainerLogManager({ runtime: new FakeLogRuntime(), maxSize: 1.5 }))?.field, 'maxSize');
  t.equal(thrown(() => new ContainerLogManager({ runtime: new FakeLogRuntime(), monitorPeriodMs: 0 }))?.field, 'monitorPeriodMs');
});

t.test('the rotated suffix is Go timestampFormat in UTC', async (t) => {
  t.equal(formatRotationTimestamp(NOW), STAMP);
  t.equal(formatRotationTimestamp(T0), '20260101-000000');
});

t.test('a log at maxSize is rotated and the runtime reopens it', async (t) => {
  const env = await setup(t);
  await writeFile(env.log, '0123456789');
  await env.manager.rotateLogs();
  t.same(env.files(), ['0.log', `0.log.${STAMP}`]);
  t.equal(readFileSync(`${env.log}.${STAMP}`, 'utf8'), '0123456789', 'the rotated log is not compressed yet');
  t.equal(readFileSync(env.log, 'utf8'), '', 'a fresh current log');
  t.equal(env.runtime.callCount('reopenContainerLog', 'c1'), 1);
});

t.test('a log under maxSize, or of a container not running, is left alone', async (t) => {
  const env = await setup(t);
  await writeFile(env.log, '012345678');
  const stopped = join(env.dir, 'stopped.log');
  await writeFile(stopped, 'x'.repeat(100));
  env.runtime.addContainer('c2', stopped, false);
  await env.manager.rotateLogs();
  t.same(env.files(), ['0.log', 'stopped.log']);
  t.equal(env.runtime.callCount('containerStatus', 'c2'), 0, 'not even asked for its status');
  t.equal(env.runtime.callCount('reopenContainerLog'), 0);
});

t.test('cleanup, removal of the oldest, compression, rotation (maxFiles 4)', async (t) => {
  const env = await setup(t, { maxFiles: 4 });
  const older = ['20260101-000000', '20260102-000000', '20260103-000000', '20260104-000000'];
  // Oldest two compressed; a compression of the third failed after writing the .gz (both left);
  // the fourth is the last rotated one, uncompressed; plus a stale .tmp.
  await writeFile(`${env.log}.${older[0]}.gz`, gzipSync('zero'));
  await writeFile(`${env.log}.${older[1]}.gz`, gzipSync('one'));
  await writeFile(`${env.log}.${older[2]}`, 'two');
  await writeFile(`${env.log}.${older[2]}.gz`, gzipSync('two'));
  await writeFile(`${env.log}.${older[3]}`, 'three');
  await writeFile(`${env.log}.${older[3]}.tmp`, 'partial gzip');
  await writeFile(join(env.dir, 'other.log.20260101-000000'), 'another container');
  await writeFile(env.log, 'current log content');

  await env.manager.rotateLogs();
  // maxFiles 4: at most 2 rotated before this rotation, + the one rotated now + the current one.
  t.same(env.files(), ['0.log', `0.log.${older[2]}.gz`, `0.log.${older[3]}.gz`, `0.log.${STAMP}`, 'other.log.20260101-000000']);
  t.equal(gunzipSync(readFileSync(`${env.log}.${older[3]}.gz`)).toString(), 'three', 'compressed with gzip');
  t.equal(gunzipSync(readFileSync(`${env.log}.${older[2]}.gz`)).toString(), 'two', 'the existing .gz kept');
  t.equal(readFileSync(`${env.log}.${STAMP}`, 'utf8'), 'current log content');
  t.same(await getAllLogs(env.log), [`${env.log}.${older[2]}.gz`, `${env.log}.${older[3]}.gz`, `${env.log}.${STAMP}`, env.log]);
});

t.test('maxFiles 2 keeps only the newly rotated log and the current one', async (t) => {
  const env = await setup(t, { maxFiles: 2 });
  await writeFile(`${env.log}.20260101-000000`, 'old');
  await writeFile(`${env.log}.20260102-000000.gz`, gzipSync('older'));
  await writeFile(env.log, 'current log content');
  await env.manager.rotateLogs();
  t.same(env.files(), ['0.log', `0.log.${STAMP}`]);
});

t.test('the loop rotates every monitor period on the clock', async (t) => {
  const env = await setup(t, { maxFiles: 3 });
  // A pass is over once the loop sleeps again (its one timer) and the files are as expected.
  const passDone = (files: string[]) => () => env.clock.pendingTimers() === 1 && env.files().join() === files.join();
  await writeFile(env.log, 'first content');
  env.manager.start();
  await eventually(passDone(['0.log', `0.log.${STAMP}`]), { what: 'the first rotation' });

  await writeFile(env.log, 'second content', { flag: 'a' });
  await env.clock.advance(DEFAULT_LOG_MONITOR_PERIOD_MS);
  const second = formatRotationTimestamp(NOW + DEFAULT_LOG_MONITOR_PERIOD_MS);
  await eventually(passDone(['0.log', `0.log.${STAMP}.gz`, `0.log.${second}`]), { what: 'the second rotation' });
  t.pass('second rotation: the first one compressed');

  await writeFile(env.log, 'third content', { flag: 'a' });
  await env.clock.advance(DEFAULT_LOG_MONITOR_PERIOD_MS);
  const third = formatRotationTimestamp(NOW + 2 * DEFAULT_LOG_MONITOR_PERIOD_MS);
  await eventually(passDone(['0.log', `0.log.${second}.gz`, `0.log.${third}`]), { what: 'the third rotation' });
  t.pass('third rotation: at most maxFiles (3) files');
  t.equal(gunzipSync(readFileSync(`${env.log}.${second}.gz`)).toString(), 'second content');

  await env.manager.stop();
  t.equal(env.clock.pendingTimers(), 0, 'stop leaves no timer');
});

t.test('a failed reopen renames the log back and reports the error', async (t) => {
  const env = await setup(t);
  await writeFile(env.log, 'precious content');
  env.runtime.failReopen('c1');
  await env.manager.rotateLogs();
  t.same(env.files(), ['0.log'], 'no rotated file left');
  t.equal(readFileSync(env.log, 'utf8'), 'precious content', 'the log is back');
  const entry = env.logger.entries.find((e) => e.msg === 'Failed to rotate log for container');
  t.ok(entry, 'logged');
  t.match(String((entry?.err as Error)?.message), /failed to rotate log .*: failed to reopen container log "c1": reopen of container c1 failed/);

  env.runtime.failReopen('c1', false);
  await env.manager.rotateLogs();
  t.same(env.files(), ['0.log', `0.log.${STAMP}`], 'the next pass succeeds');
});

t.test('a missing log is recreated by reopening it', async (t) => {
  const env = await setup(t);
  await env.manager.rotateLogs();
  t.ok(existsSync(env.log), 'the runtime created it again');
  t.equal(env.runtime.callCount('reopenContainerLog', 'c1'), 1);
  t.same(env.files(), ['0.log'], 'empty: nothing rotated');
});

t.test('one failing container does not stop the others', async (t) => {
  const env = await setup(t);
  const other = join(env.dir, '1.log');
  env.runtime.addContainer('c0', join(env.dir, 'missing-dir', 'x.log'), true);
  env.runtime.failReopen('c0');
  env.runtime.addContainer('c2', other, true);
  await writeFile(other, 'big enough content');
  await env.manager.rotateLogs();
  t.ok(existsSync(`${other}.${STAMP}`), 'the other container rotated');
  t.ok(env.logger.entries.some((e) => e.msg === "Container log doesn't exist, reopen container log failed"));
});

t.test('rotation is disabled by a negative maxSize', async (t) => {
  const runtime = new FakeLogRuntime();
  const clock = new FakeClock(NOW);
  const manager = new ContainerLogManager({ runtime, maxSize: -1, clock });
  t.equal(manager.rotationEnabled, false);
  manager.start();
  await clock.advance(60_000);
  t.equal(runtime.calls.length, 0);
  await manager.stop();
});

t.test('clean removes every log file of a container', async (t) => {
  const env = await setup(t);
  await writeFile(env.log, 'x');
  await writeFile(`${env.log}.20260101-000000.gz`, 'x');
  await writeFile(`${env.log}.20260102-000000`, 'x');
  await writeFile(join(env.dir, 'other.log'), 'x');
  await env.manager.clean('c1');
  t.same(env.files(), ['other.log']);
});
