import t from 'tap';
import * as core from '@kubelet-ts/core';
import { RecordingEventRecorder } from '@kubelet-ts/core/testing';
import { RealImageGCManager, nodeReference, noopEventRecorder, type ImageGCManager } from '../src/index.js';
import { FakeImageFsStatsProvider, FakeImageGCManager, RecordingEventRecorder as ReexportedRecorder } from '../src/testing.js';
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

t.test('the recorder names are core\'s, re-exported; the default drops events', async (t) => {
  t.equal(noopEventRecorder, core.noopEventRecorder);
  t.equal(nodeReference, core.nodeReference);
  t.equal(ReexportedRecorder, RecordingEventRecorder);
  noopEventRecorder.event(nodeReference('n1'), 'Normal', 'r', 'm');
  t.same(nodeReference('n1'), { kind: 'Node', name: 'n1', uid: 'n1', namespace: '' });
  const rec = new RecordingEventRecorder();
  const gc = new RealImageGCManager({
    imageService: new FakeImageService(),
    runtimeService: new FakeRuntimeService(),
    statsProvider: new FakeImageFsStatsProvider({ capacityBytes: 0, availableBytes: 0 }),
    recorder: rec,
    nodeRef: nodeReference('n1'),
  });
  await t.rejects(gc.garbageCollect(), { message: 'invalid capacity 0 on image filesystem' });
  t.same(rec.events, [{ object: nodeReference('n1'), type: 'Warning', reason: 'InvalidDiskCapacity', message: 'invalid capacity 0 on image filesystem' }]);
  // Defaults: a manager needs only the two services.
  const manager = new RealImageGCManager({ imageService: new FakeImageService(), runtimeService: new FakeRuntimeService() });
  t.same(manager.policy, { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 });
});
