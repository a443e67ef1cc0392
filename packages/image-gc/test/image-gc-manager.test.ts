import t from 'tap';
import { FREE_ALL_BYTES } from '../src/index.js';
import { MiB, MINUTE, ids, runContainer, setup } from './helpers.js';

t.test('detectImages records first detection, last use, size and pinned', async (t) => {
  const env = setup();
  env.images.setImages({ id: 'sha256:a', tags: ['a:1'], size: 10 }, { id: 'sha256:b', tags: ['b:1'], size: 20, pinned: true }, { id: 'sha256:c', size: 30 });
  const t0 = env.clock.now();
  await runContainer(env.runtime, 'sha256:a', 'running');
  await runContainer(env.runtime, 'b:1', 'exited'); // by tag, not running: still in use
  const inUse = await env.manager.detectImages();
  t.same([...inUse].sort(), ['sha256:a', 'sha256:b']);
  const records = Object.fromEntries(env.manager.imageRecords().map((r) => [r.id, r]));
  t.same(records['sha256:a'], { id: 'sha256:a', firstDetected: t0, lastUsed: t0, size: 10, pinned: false, repoTags: ['a:1'], runtimeHandler: '' });
  t.equal(records['sha256:b'].pinned, true);
  t.equal(records['sha256:c'].lastUsed, 0, 'never used');

  env.clock.step(MINUTE);
  env.images.images.delete('sha256:c');
  env.images.setImages({ id: 'sha256:d', size: 40 });
  await env.manager.detectImages();
  const again = Object.fromEntries(env.manager.imageRecords().map((r) => [r.id, r]));
  t.notOk(again['sha256:c'], 'gone images are forgotten');
  t.equal(again['sha256:d'].firstDetected, t0 + MINUTE);
  t.equal(again['sha256:a'].firstDetected, t0, 'first detection is kept');
  t.equal(again['sha256:a'].lastUsed, t0 + MINUTE, 'last use moves on');
});

t.test('below the high threshold nothing is removed', async (t) => {
  const env = setup();
  env.images.setImages({ id: 'sha256:a', size: MiB });
  env.stats.setUsage(100 * MiB, 84);
  await env.manager.detectImages();
  env.clock.step(10 * MINUTE);
  await env.manager.garbageCollect();
  t.same(env.removed, []);
  t.notOk(env.images.called.includes('removeImage'));
  t.equal(env.stats.calls, 1);
});

/** Shapes the records: D detected first; B and E 10 s later; C used at +1 min, A at +2 min. */
async function lruFixture(env: ReturnType<typeof setup>): Promise<void> {
  env.images.setImages({ id: 'sha256:d', size: 4 * MiB });
  await env.manager.detectImages();
  env.clock.step(10_000);
  env.images.setImages({ id: 'sha256:a', size: 4 * MiB }, { id: 'sha256:b', size: 4 * MiB }, { id: 'sha256:c', size: 4 * MiB }, { id: 'sha256:e', size: 4 * MiB });
  await env.manager.detectImages();
  env.clock.step(50_000);
  const c = await runContainer(env.runtime, 'sha256:c', 'exited');
  await env.manager.detectImages();
  await env.runtime.removeContainer(c);
  env.clock.step(MINUTE);
  const a = await runContainer(env.runtime, 'sha256:a', 'running');
  await env.manager.detectImages();
  await env.runtime.removeContainer(a);
  env.clock.step(3 * MINUTE);
}

t.test('over the high threshold: frees down to the low threshold, least recently used first', async (t) => {
  const env = setup();
  await lruFixture(env);
  t.same(
    env.manager.imageRecords().map((r) => r.id),
    ['sha256:d', 'sha256:b', 'sha256:e', 'sha256:c', 'sha256:a'],
    'never used first (earliest detected first), then by last use',
  );
  // 90% of 100 MiB used: free 100*20% - 10 = 10 MiB, i.e. three 4 MiB images.
  env.stats.setUsage(100 * MiB, 90);
  await env.manager.garbageCollect();
  t.same(ids(env.removed), ['sha256:d', 'sha256:b', 'sha256:e']);
  t.same([...env.images.images.keys()].sort(), ['sha256:a', 'sha256:c']);
  t.ok(env.logger.find('Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold'));
  const removal = env.logger.entries.filter((e) => e.msg === 'Removing image to free bytes');
  t.same(removal[0].kv, { imageID: 'sha256:d', size: 4 * MiB, runtimeHandler: '', reason: 'space' });
  t.same(env.recorder.events, []);
});

t.test('exactly at the high threshold GC runs (usage >= high)', async (t) => {
  const env = setup();
  await lruFixture(env);
  env.stats.setUsage(100 * MiB, 85); // free 20 - 15 = 5 MiB: two images
  await env.manager.garbageCollect();
  t.same(ids(env.removed), ['sha256:d', 'sha256:b']);
});

t.test('images younger than minAge are never removed', async (t) => {
  const env = setup({ minAgeMs: 2 * MINUTE });
  env.images.setImages({ id: 'sha256:old', size: MiB });
  await env.manager.detectImages();
  env.clock.step(2 * MINUTE);
  env.images.setImages({ id: 'sha256:new', size: MiB });
  env.clock.step(MINUTE); // old: 3 min, new: 1 min
  env.stats.setUsage(100 * MiB, 99);
  await t.rejects(env.manager.garbageCollect(), {
    message: `Failed to garbage collect required amount of images. Attempted to free ${19 * MiB} bytes, but only found ${MiB} bytes eligible to free.`,
  });
  t.same(ids(env.removed), ['sha256:old']);
  t.ok(env.images.images.has('sha256:new'));
  t.equal(env.recorder.events.length, 1);
  t.same(env.recorder.events[0], {
    object: { kind: 'Node', name: 'node-a', uid: 'node-a' },
    type: 'Warning',
    reason: 'FreeDiskSpaceFailed',
    message: `Failed to garbage collect required amount of images. Attempted to free ${19 * MiB} bytes, but only found ${MiB} bytes eligible to free.`,
  });
});

t.test('a first GC right after start finds every image too young (detection happens at GC time)', async (t) => {
  const env = setup();
  env.images.setImages({ id: 'sha256:a', size: MiB });
  env.stats.setUsage(100 * MiB, 95);
  await t.rejects(env.manager.garbageCollect(), /only found 0 bytes eligible to free/);
  env.clock.step(2 * MINUTE);
  await t.rejects(env.manager.garbageCollect(), /only found 1048576 bytes eligible/);
  t.same(ids(env.removed), ['sha256:a']);
});

t.test('images used by any container (running, exited or created) are kept', async (t) => {
  const env = setup({ minAgeMs: 0 });
  env.images.setImages({ id: 'sha256:run', size: MiB }, { id: 'sha256:exited', tags: ['exited:1'], size: MiB }, { id: 'sha256:created', size: MiB }, { id: 'sha256:free', size: MiB });
  await runContainer(env.runtime, 'sha256:run', 'running');
  await runContainer(env.runtime, 'exited:1', 'exited');
  await runContainer(env.runtime, 'sha256:created', 'created');
  env.clock.step(MINUTE);
  await env.manager.deleteUnusedImages();
  t.same(ids(env.removed), ['sha256:free']);
  t.same([...env.images.images.keys()].sort(), ['sha256:created', 'sha256:exited', 'sha256:run']);
});

t.test('pinned images and the sandbox image are kept', async (t) => {
  const env = setup({ minAgeMs: 0 }, { sandboxImage: 'registry.k8s.io/pause:3.9' });
  env.images.setImages(
    { id: 'sha256:pause', tags: ['registry.k8s.io/pause:3.9'], size: MiB },
    { id: 'sha256:pinned', size: MiB, pinned: true },
    { id: 'sha256:free', size: MiB },
  );
  env.clock.step(MINUTE);
  env.stats.setUsage(100 * MiB, 100);
  await t.rejects(env.manager.garbageCollect(), /Attempted to free 20971520 bytes, but only found 1048576 bytes eligible to free/);
  t.same(ids(env.removed), ['sha256:free']);
  t.same([...env.images.images.keys()].sort(), ['sha256:pause', 'sha256:pinned']);
  await env.manager.deleteUnusedImages();
  t.same([...env.images.images.keys()].sort(), ['sha256:pause', 'sha256:pinned']);
});

t.test('an image used again after detection moves to the back of the line', async (t) => {
  const env = setup({ minAgeMs: 0 });
  env.images.setImages({ id: 'sha256:x', size: 6 * MiB }, { id: 'sha256:y', size: 6 * MiB });
  await env.manager.detectImages();
  env.clock.step(MINUTE);
  const c = await runContainer(env.runtime, 'sha256:x', 'exited');
  await env.manager.detectImages();
  await env.runtime.removeContainer(c);
  env.clock.step(MINUTE);
  env.stats.setUsage(100 * MiB, 90); // free 10 MiB -> both needed, y first
  await env.manager.garbageCollect();
  t.same(ids(env.removed), ['sha256:y', 'sha256:x']);
});

t.test('capacity 0 is an InvalidDiskCapacity event and an error; available is clamped to capacity', async (t) => {
  const env = setup();
  env.stats.stats = { capacityBytes: 0, availableBytes: 0 };
  await t.rejects(env.manager.garbageCollect(), { message: 'invalid capacity 0 on image filesystem' });
  t.same(env.recorder.reasons(), ['InvalidDiskCapacity']);

  env.stats.stats = { capacityBytes: 100, availableBytes: 200 };
  await env.manager.garbageCollect();
  t.ok(env.logger.find('Availability is larger than capacity'));
});

t.test('stats errors are returned as they are', async (t) => {
  const env = setup();
  env.stats.error = new Error('failed to get imageFs info: unable to find data in memory cache');
  await t.rejects(env.manager.garbageCollect(), { message: 'failed to get imageFs info: unable to find data in memory cache' });
});

t.test('removal errors: the others are still tried, and the error aggregates them', async (t) => {
  const env = setup({ minAgeMs: 0 });
  env.images.setImages({ id: 'sha256:a', size: MiB }, { id: 'sha256:b', size: MiB }, { id: 'sha256:c', size: MiB });
  env.clock.step(MINUTE);
  env.images.injectError('removeImage', new Error('image is in use by a container'));
  await t.rejects(env.manager.deleteUnusedImages(), {
    message: `wanted to free ${FREE_ALL_BYTES} bytes, but freed ${2 * MiB} bytes space with errors in image deletion: image is in use by a container`,
  });
  t.same(ids(env.removed), ['sha256:b', 'sha256:c']);
  t.ok(env.logger.find('Failed to remove image'));
});

t.test('maxAge removes images unused for longer, whatever the disk usage, once GC has run that long', async (t) => {
  const env = setup({ minAgeMs: MINUTE, maxAgeMs: 10 * MINUTE });
  const began = env.clock.now();
  env.images.setImages({ id: 'sha256:stale', size: MiB }, { id: 'sha256:used', size: MiB });
  await env.manager.detectImages();
  env.stats.setUsage(100 * MiB, 10);

  env.clock.step(9 * MINUTE);
  const c = await runContainer(env.runtime, 'sha256:used', 'exited');
  await env.manager.detectImages(); // used at +9 min
  await env.runtime.removeContainer(c);

  env.clock.step(MINUTE); // +10 min: not more than maxAge since GC began
  await env.manager.garbageCollect(began);
  t.same(env.removed, []);

  env.clock.step(1000); // +10m1s
  await env.manager.garbageCollect(began);
  t.same(env.removed, [{ id: 'sha256:stale', size: MiB, reason: 'age' }]);
  t.ok(env.images.images.has('sha256:used'));

  env.clock.step(9 * MINUTE); // used: unused for 10m1s
  await env.manager.garbageCollect(began);
  t.same(ids(env.removed), ['sha256:stale', 'sha256:used']);
});

t.test('maxAge counts a never-used image from its first detection', async (t) => {
  const env = setup({ minAgeMs: 0, maxAgeMs: 5 * MINUTE });
  const began = env.clock.now();
  env.stats.setUsage(100 * MiB, 10);
  env.clock.step(20 * MINUTE);
  env.images.setImages({ id: 'sha256:fresh', size: MiB });
  await env.manager.garbageCollect(began);
  t.same(env.removed, [], 'just pulled: not removed although never used');
  env.clock.step(5 * MINUTE + 1);
  await env.manager.garbageCollect(began);
  t.same(ids(env.removed), ['sha256:fresh']);
});

t.test('maxAge removal errors reject GC', async (t) => {
  const env = setup({ minAgeMs: 0, maxAgeMs: MINUTE });
  const began = env.clock.now();
  env.images.setImages({ id: 'sha256:a', size: MiB });
  await env.manager.detectImages();
  env.clock.step(2 * MINUTE);
  env.images.injectError('removeImage', new Error('boom'));
  await t.rejects(env.manager.garbageCollect(began), { message: 'wanted to free images older than 1m0s, encountered errors in image deletion: boom' });
});

t.test('deleteUnusedImages removes every unused image old enough, whatever the usage', async (t) => {
  const env = setup();
  env.images.setImages({ id: 'sha256:a', size: MiB }, { id: 'sha256:b', size: MiB });
  await runContainer(env.runtime, 'sha256:b');
  await env.manager.detectImages();
  env.clock.step(2 * MINUTE);
  env.images.setImages({ id: 'sha256:young', size: MiB });
  await env.manager.deleteUnusedImages();
  t.same(ids(env.removed), ['sha256:a']);
  t.ok(env.logger.find('Attempting to delete unused images'));
  t.equal(env.stats.calls, 0, 'no disk stats needed');
});

t.test('getImageList is the last list, largest first, without removed images', async (t) => {
  const env = setup({ minAgeMs: 0 });
  t.same(env.manager.getImageList(), []);
  env.images.setImages({ id: 'sha256:s', tags: ['s:1'], size: 1 }, { id: 'sha256:l', size: 3 }, { id: 'sha256:m', size: 2 });
  await env.manager.detectImages();
  t.same(env.manager.getImageList().map((i) => i.id), ['sha256:l', 'sha256:m', 'sha256:s']);
  t.same(env.manager.getImageList()[2], { id: 'sha256:s', repoTags: ['s:1'], repoDigests: [], size: 1, pinned: false });
  env.clock.step(MINUTE);
  await runContainer(env.runtime, 'sha256:l');
  await env.manager.deleteUnusedImages();
  t.same(env.manager.getImageList().map((i) => i.id), ['sha256:l']);
});

t.test('runtime errors during detection fail GC', async (t) => {
  const env = setup();
  env.runtime.injectError('listContainers', 'Unavailable');
  await t.rejects(env.manager.garbageCollect(), { name: 'UnavailableError' });
  env.images.injectError('listImages', new Error('list failed'));
  await t.rejects(env.manager.deleteUnusedImages(), { message: 'list failed' });
});

t.test('calls are serialized', async (t) => {
  const env = setup({ minAgeMs: 0 });
  env.images.setImages({ id: 'sha256:a', size: MiB }, { id: 'sha256:b', size: MiB });
  env.clock.step(MINUTE);
  env.stats.setUsage(100 * MiB, 100);
  const results = await Promise.allSettled([env.manager.deleteUnusedImages(), env.manager.garbageCollect(), env.manager.deleteUnusedImages()]);
  t.equal(results[0].status, 'fulfilled');
  t.equal(results[1].status, 'rejected', 'nothing left to free');
  t.same(ids(env.removed), ['sha256:a', 'sha256:b'], 'each image removed once');
  t.equal(env.images.called.filter((m) => m === 'removeImage').length, 2);
});
