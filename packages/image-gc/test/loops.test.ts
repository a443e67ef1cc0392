import t from 'tap';
import { MiB, MINUTE, runContainer, setup } from './helpers.js';

t.test('start(): detection right away, GC every 5 minutes, stop() leaves no timers', async (t) => {
  const env = setup({ minAgeMs: 2 * MINUTE });
  env.images.setImages({ id: 'sha256:a', size: MiB }, { id: 'sha256:b', size: MiB });
  await runContainer(env.runtime, 'sha256:b');
  env.stats.setUsage(100 * MiB, 95);
  env.manager.start();
  await env.clock.flush();
  t.equal(env.manager.imageRecords().length, 2, 'images detected at start');
  t.same(env.manager.getImageList().length, 2);
  // First GC at start: everything is too young -> fails once (no event).
  t.ok(env.logger.find('Image garbage collection failed once. Stats initialization may not have completed yet'));
  t.same(env.recorder.reasons(), ['FreeDiskSpaceFailed']);

  await env.clock.advance(5 * MINUTE);
  t.same(env.removed.map((r) => r.id), ['sha256:a'], 'the second run removes the unused image');
  t.ok(env.logger.find('Image garbage collection failed multiple times in a row'), 'still short of space');
  t.same(env.recorder.reasons(), ['FreeDiskSpaceFailed', 'FreeDiskSpaceFailed', 'ImageGCFailed']);

  env.stats.setUsage(100 * MiB, 10);
  await env.clock.advance(5 * MINUTE);
  const ok = env.logger.entries.find((e) => e.msg === 'Image garbage collection succeeded');
  t.equal(ok?.v, 1, 'success after failures is logged at V(1)');
  await env.clock.advance(5 * MINUTE);
  t.equal(env.logger.entries.filter((e) => e.msg === 'Image garbage collection succeeded').at(-1)?.v, 4);

  await env.manager.stop();
  t.equal(env.clock.pendingTimers(), 0);
  await env.manager.stop(); // idempotent
});

t.test('the image list refreshes every 30 s', async (t) => {
  const env = setup();
  env.manager.start();
  await env.clock.flush();
  t.same(env.manager.getImageList(), []);
  env.images.setImages({ id: 'sha256:new', size: 5 });
  await env.clock.advance(30_000);
  t.same(env.manager.getImageList().map((i) => i.id), ['sha256:new']);
  await env.manager.stop();
  t.equal(env.clock.pendingTimers(), 0);
});

t.test('high threshold 100 without max age: no GC loop (Go disables image GC)', async (t) => {
  const env = setup({ highThresholdPercent: 100 });
  env.stats.setUsage(100 * MiB, 100);
  env.manager.start();
  await env.clock.advance(20 * MINUTE);
  t.equal(env.stats.calls, 0);
  t.ok(env.logger.find('ImageGCHighThresholdPercent is set 100 and ImageMaximumGCAge is 0, Disable image GC'));
  await env.manager.stop();
});

t.test('detection failures are logged and the loop goes on', async (t) => {
  const env = setup({ highThresholdPercent: 100 });
  env.images.injectError('listImages', new Error('runtime down'), { persistent: true });
  env.manager.start();
  await env.clock.flush();
  t.ok(env.logger.entries.some((e) => e.msg === 'Failed to monitor images' && e.kv.err === 'runtime down'));
  t.ok(env.logger.entries.some((e) => e.msg === 'Failed to update image list' && e.kv.err === 'runtime down'));
  env.images.clearErrors();
  env.images.setImages({ id: 'sha256:a', size: 1 });
  await env.clock.advance(5 * MINUTE);
  t.equal(env.manager.imageRecords().length, 1, 'the next round detects');
  await env.manager.stop();
});

t.test('maxAge counts from start()', async (t) => {
  const env = setup({ minAgeMs: 0, maxAgeMs: 10 * MINUTE }, { gcPeriodMs: MINUTE });
  env.clock.step(60 * MINUTE); // constructed long ago: start() resets when GC began
  env.images.setImages({ id: 'sha256:a', size: MiB });
  env.stats.setUsage(100 * MiB, 0);
  env.manager.start();
  await env.clock.advance(10 * MINUTE);
  t.same(env.removed, []);
  await env.clock.advance(2 * MINUTE);
  t.same(env.removed.map((r) => r.reason), ['age']);
  await env.manager.stop();
});
