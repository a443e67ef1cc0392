import t from 'tap';
import type { EventRecorder } from '@kubelet-ts/runtime-manager';
import { noopEventRecorder } from '@kubelet-ts/runtime-manager';
import { RealImageGCManager, nodeReference, noopGCEventRecorder, type GCEventRecorder, type ImageGCManager } from '../src/index.js';
import { FakeImageFsStatsProvider, FakeImageGCManager, RecordingGCEventRecorder } from '../src/testing.js';
import { FakeImageService, FakeRuntimeService } from '@kubelet-ts/cri-client/testing';

t.test('FakeImageGCManager records calls and fails on demand', async (t) => {
  const fake: ImageGCManager = new FakeImageGCManager();
  const f = fake as FakeImageGCManager;
  fake.start();
  t.equal(f.started, true);
  await fake.garbageCollect();
  f.errors.set('deleteUnusedImages', new Error('nope'));
  await t.rejects(fake.deleteUnusedImages(), { message: 'nope' });
  await fake.deleteUnusedImages();
  f.images = [{ id: 'sha256:a', repoTags: [], repoDigests: [], size: 1, pinned: false }];
  t.equal(fake.getImageList().length, 1);
  await fake.stop();
  t.same(f.calls, ['start', 'garbageCollect', 'deleteUnusedImages', 'deleteUnusedImages', 'stop']);
  t.equal(f.count('deleteUnusedImages'), 2);
  f.persistentErrors = true;
  f.errors.set('garbageCollect', new Error('always'));
  await t.rejects(fake.garbageCollect());
  await t.rejects(fake.garbageCollect());
});

t.test('FakeImageFsStatsProvider', async (t) => {
  const stats = new FakeImageFsStatsProvider();
  stats.setUsage(1000, 85);
  t.same(await stats.imageFsStats(), { capacityBytes: 1000, availableBytes: 150 });
  stats.error = new Error('x');
  await t.rejects(stats.imageFsStats());
  t.equal(stats.calls, 2);
});

t.test('recorders: runtime-manager\'s EventRecorder fits, the default drops events', async (t) => {
  const fromRuntimeManager: EventRecorder = noopEventRecorder;
  const recorder: GCEventRecorder = fromRuntimeManager; // type-level compatibility
  recorder.event(nodeReference('n1'), 'Warning', 'ImageGCFailed', 'x');
  noopGCEventRecorder.event(nodeReference('n1'), 'Normal', 'r', 'm');
  t.same(nodeReference('n1'), { kind: 'Node', name: 'n1', uid: 'n1', namespace: '' });
  const rec = new RecordingGCEventRecorder();
  rec.event(nodeReference('n1'), 'Warning', 'FreeDiskSpaceFailed', 'm');
  t.same(rec.reasons(), ['FreeDiskSpaceFailed']);
  // Defaults: a manager needs only the two services.
  const manager = new RealImageGCManager({ imageService: new FakeImageService(), runtimeService: new FakeRuntimeService() });
  t.same(manager.policy, { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 });
});
