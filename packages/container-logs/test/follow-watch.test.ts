import t from 'tap';
import { EventEmitter } from 'node:events';
import type { FSWatcher, Stats } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FakeClock, RecordingLogger } from '@kubelet-ts/core/testing';
import { FollowHub, followHub, type FollowPosition, type WakeReason } from '../src/follow-watch.js';
import { readLogs } from '../src/index.js';
import { FakeLogRuntime, appendCriLog, criLogLines } from '../src/testing.js';
import { Sink, T0, eventually, tempDir, track } from './helpers.js';

/** A watcher whose events and errors the test fires, and stats the test sets. */
function fakeFs() {
  const watchers: Array<{ dir: string; emitter: EventEmitter; listener: (event: string, name: string | null) => void; closed: boolean }> = [];
  const files = new Map<string, { ino: number; dev: number; size: number }>();
  let statCalls = 0;
  const watch = (dir: string, listener: (event: string, name: string | Buffer | null) => void): FSWatcher => {
    const emitter = new EventEmitter();
    const entry = { dir, emitter, listener: listener as (event: string, name: string | null) => void, closed: false };
    watchers.push(entry);
    return Object.assign(emitter, { close: () => void (entry.closed = true) }) as unknown as FSWatcher;
  };
  const stat = (path: string, cb: (err: NodeJS.ErrnoException | null, st: Stats) => void): void => {
    statCalls++;
    const f = files.get(path);
    queueMicrotask(() => (f ? cb(null, f as Stats) : cb(Object.assign(new Error('ENOENT'), { code: 'ENOENT' }), undefined as unknown as Stats)));
  };
  return { watchers, files, watch, stat, statCalls: () => statCalls };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test('FollowHub: watch events, the shared tick and the state check', async (t) => {
  const clock = new FakeClock(T0);
  const fs = fakeFs();
  const hub = new FollowHub({ clock, pollMs: 1000, watch: fs.watch, stat: fs.stat });
  const logger = new RecordingLogger();
  fs.files.set('/logs/a/0.log', { ino: 1, dev: 1, size: 100 });
  fs.files.set('/logs/a/1.log', { ino: 2, dev: 1, size: 50 });
  const a = hub.subscribe('/logs/a/0.log', logger);
  const a2 = hub.subscribe('/logs/a/0.log', logger);
  const b = hub.subscribe('/logs/a/1.log', logger);
  t.equal(fs.watchers.length, 1, 'one watch for the directory, shared');
  t.equal(clock.pendingTimers(), 0, 'no tick while nobody waits');

  const at = (position: number, ino: number, stateDueAt = T0 + 5000): FollowPosition => ({ position, ino, dev: 1, stateDueAt });
  const waitFor = (follower: typeof a, pos: FollowPosition) => {
    let reason: WakeReason | undefined;
    const promise = follower.wait(pos, undefined).then((r) => (reason = r));
    return { reason: () => reason, promise };
  };

  // An event for the file wakes its followers only.
  let wa = waitFor(a, at(100, 1));
  let wa2 = waitFor(a2, at(100, 1));
  let wb = waitFor(b, at(50, 2));
  t.equal(clock.pendingTimers(), 1, 'one tick timer for all waiters');
  fs.watchers[0]!.listener('change', '0.log');
  await settle();
  t.equal(wa.reason(), 'change');
  t.equal(wa2.reason(), 'change');
  t.equal(wb.reason(), undefined, 'the other file in the directory is not woken');

  // The tick: one stat per path; nobody whose file is unchanged wakes.
  wa = waitFor(a, at(100, 1));
  wa2 = waitFor(a2, at(100, 1));
  const stats = fs.statCalls();
  await clock.advance(1000);
  await settle();
  t.equal(fs.statCalls() - stats, 2, 'one stat per waiting path, not per follower');
  t.equal(wa.reason(), undefined);
  t.equal(wb.reason(), undefined);
  // Grown, truncated or replaced: woken by the tick.
  fs.files.set('/logs/a/0.log', { ino: 1, dev: 1, size: 120 });
  await clock.advance(1000);
  await settle();
  t.equal(wa.reason(), 'change', 'grown');
  t.equal(wa2.reason(), 'change');
  t.equal(wb.reason(), undefined, 'unchanged');
  fs.files.set('/logs/a/1.log', { ino: 3, dev: 1, size: 50 });
  await clock.advance(1000);
  await settle();
  t.equal(wb.reason(), 'change', 'replaced');
  t.equal(clock.pendingTimers(), 0, 'the tick stops with its last waiter');

  // The state check comes due on the tick.
  wa = waitFor(a, at(120, 1, clock.now() + 500));
  await clock.advance(1000);
  await settle();
  t.equal(wa.reason(), 'state', 'idle long enough: the state is due');

  // A path gone (renamed, not recreated yet): the follower reads on in its old file.
  fs.files.delete('/logs/a/0.log');
  wa = waitFor(a, at(120, 1, T0 + 60_000));
  await clock.advance(1000);
  await settle();
  t.equal(wa.reason(), 'change');

  // An event while not waiting is remembered; a name-less event wakes everyone in the directory.
  fs.watchers[0]!.listener('rename', '0.log');
  t.equal(await a.wait(at(0, 1), undefined), 'change', 'remembered');
  wb = waitFor(b, at(50, 3, T0 + 60_000));
  fs.watchers[0]!.listener('change', null);
  await settle();
  t.equal(wb.reason(), 'change');

  // A watch error: logged, followers woken, the tick carries on alone.
  wa = waitFor(a, at(0, 1, T0 + 60_000));
  fs.watchers[0]!.emitter.emit('error', new Error('inotify gone'));
  await settle();
  t.equal(wa.reason(), 'change');
  t.ok(fs.watchers[0]!.closed, 'the failed watch is closed');
  t.ok(logger.entries.some((e) => e.msg === 'Log file watch failed; polling instead'));

  // Abort while waiting: rejected, the tick stops.
  const c = hub.subscribe('/logs/a/0.log', logger);
  const controller = new AbortController();
  const aborted = c.wait(at(0, 1, T0 + 60_000), controller.signal);
  t.equal(clock.pendingTimers(), 1);
  controller.abort();
  await t.rejects(aborted, { name: 'AbortError' });
  t.equal(clock.pendingTimers(), 0);

  // The directory's watch closes with its last follower.
  a.close();
  a2.close();
  b.close();
  c.close();
  t.equal(hub.followers, 0);
  const again = hub.subscribe('/logs/a/0.log', logger);
  t.equal(fs.watchers.length, 2, 'a new subscriber watches again');
  again.close();
  t.ok(fs.watchers[1]!.closed);
});

t.test('readLogs: idle followers share one watch and one tick, and a tick reads nothing', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, '0.log');
  await writeFile(path, criLogLines([{ time: T0, text: 'hello' }]));
  const clock = new FakeClock(T0 + 100_000);
  const runtime = new FakeLogRuntime();
  runtime.addContainer('c1', path, true);
  const controller = new AbortController();
  t.teardown(() => controller.abort());
  const hub = followHub(clock, 1000);
  const watchersBefore = process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length;
  const sinks = Array.from({ length: 50 }, () => new Sink());
  const readers = sinks.map((out) =>
    track(readLogs(path, 'c1', { follow: true }, { runtime, stdout: out, stderr: out, clock, signal: controller.signal, logger: new RecordingLogger() })),
  );
  await eventually(() => hub.waiting === 50, { what: 'all 50 waiting' });
  const firstChecks = runtime.callCount('containerStatus');
  t.ok(firstChecks >= 1 && firstChecks <= 50, 'the state is checked at the first end of file (calls in flight shared)');
  t.equal(process.getActiveResourcesInfo().filter((r) => r === 'FSEventWrap').length, watchersBefore + 1, 'one fs.watch for 50 followers');
  t.equal(hub.followers, 50);

  const before = { ...hub.counts };
  for (let i = 0; i < 3; i++) {
    await clock.advance(1000);
    await eventually(() => hub.counts.stats - before.stats === i + 1, { what: 'the tick stat' });
  }
  t.equal(hub.counts.ticks - before.ticks, 3);
  t.equal(hub.counts.tickWakes - before.tickWakes, 0, 'no follower woken by a tick while its file is unchanged');
  t.equal(runtime.callCount('containerStatus'), firstChecks, 'no state check before the log was idle for stateCheckPeriod');

  // New data reaches every follower through the watch, without the clock.
  await appendCriLog(path, [{ time: T0 + 1, text: 'world' }]);
  await eventually(() => sinks.every((s) => s.text() === 'hello\nworld\n'), { what: 'the new line, by fs.watch alone' });
  t.ok(hub.counts.eventWakes > 0);

  // After stateCheckPeriod of idling the tick wakes them all at once for the state check: one call for the 50.
  const checks = runtime.callCount('containerStatus');
  await eventually(() => runtime.callCount('containerStatus') > checks, { clock, stepMs: 1000, what: 'the state check' });
  await eventually(() => hub.waiting === 50, { what: 'all waiting again' });
  t.equal(runtime.callCount('containerStatus') - checks, 1, 'followers of one container checking at one tick share the call');
  // They end once it stopped.
  runtime.setRunning('c1', false);
  await eventually(() => readers.every((r) => r.done()), { clock, what: 'the follows to end' });
  for (const r of readers) await r.promise;
  t.equal(clock.pendingTimers(), 0, 'no timer left');
  t.equal(hub.followers, 0, 'no subscription left');
});
