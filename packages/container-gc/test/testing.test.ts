import t from 'tap';
import { FakePodWorkers } from '@kubelet-ts/pod-workers/testing';
import * as core from '@kubelet-ts/core';
import * as imageGC from '@kubelet-ts/image-gc';
import { evictableContainers, nodeReference, noopEventRecorder, planContainerEviction, type ContainerGarbageCollector, type PodStateProvider } from '../src/index.js';
import { FakeContainerGC, FakePodStateProvider } from '../src/testing.js';

t.test('FakeContainerGC records calls', async (t) => {
  const fake = new FakeContainerGC();
  const gc: ContainerGarbageCollector = fake;
  gc.start(() => true);
  t.equal(fake.allSourcesReady?.(), true);
  await gc.garbageCollect(true, false);
  fake.errors.set('deleteAllUnusedContainers', new Error('x'));
  await t.rejects(gc.deleteAllUnusedContainers(), { message: 'x' });
  await gc.deleteAllUnusedContainers();
  await gc.stop();
  t.same(fake.calls, [
    { method: 'start' },
    { method: 'garbageCollect', allSourcesReady: true, evictNonDeletedPods: false },
    { method: 'deleteAllUnusedContainers' },
    { method: 'deleteAllUnusedContainers' },
    { method: 'stop' },
  ]);
  t.equal(fake.count('deleteAllUnusedContainers'), 2);
  t.equal(fake.started, false);
});

t.test('PodWorkers (and its fake) are PodStateProviders; the recorder names are core\'s, as image GC\'s', async (t) => {
  const workers = new FakePodWorkers();
  workers.removeContent.add('a');
  const provider: PodStateProvider = workers;
  t.equal(provider.shouldPodContentBeRemoved('a'), true);
  t.equal(provider.shouldPodContentBeRemoved('b'), false);
  t.equal(noopEventRecorder, core.noopEventRecorder);
  t.equal(noopEventRecorder, imageGC.noopEventRecorder);
  t.equal(nodeReference, core.nodeReference);
  noopEventRecorder.event(nodeReference('n'), 'Warning', 'ContainerGCFailed', 'm');
});

t.test('FakePodStateProvider', async (t) => {
  const p = new FakePodStateProvider({ live: ['l'], deleted: ['d'], terminated: ['t'] });
  t.same([p.shouldPodContentBeRemoved('l'), p.shouldPodContentBeRemoved('d'), p.shouldPodContentBeRemoved('t'), p.shouldPodContentBeRemoved('x')], [false, true, false, false]);
  t.same([p.shouldPodRuntimeBeRemoved('l'), p.shouldPodRuntimeBeRemoved('d'), p.shouldPodRuntimeBeRemoved('t'), p.shouldPodRuntimeBeRemoved('x')], [false, true, true, false]);
  p.unknownPodsRemovable = true;
  t.equal(p.shouldPodContentBeRemoved('x'), true);
});

t.test('evictableContainers groups dead containers by (pod UID, container name)', async (t) => {
  const c = (id: string, uid: string, name: string, state: string, createdAtMs: number) => ({
    id, podSandboxId: 's', metadata: { name, attempt: 0 }, image: null, imageRef: '', state: state as 'CONTAINER_EXITED',
    createdAt: createdAtMs * 1_000_000, labels: (uid ? { 'io.kubernetes.pod.uid': uid } : {}) as Record<string, string>, annotations: {}, imageId: '',
  });
  const units = evictableContainers(
    [c('1', 'a', 'x', 'CONTAINER_EXITED', 0), c('2', 'a', 'x', 'CONTAINER_CREATED', 1), c('3', 'a', 'y', 'CONTAINER_UNKNOWN', 2), c('4', 'b', 'x', 'CONTAINER_RUNNING', 0), c('5', '', 'x', 'CONTAINER_EXITED', 0), c('6', 'a', 'x', 'CONTAINER_EXITED', 100)],
    50,
    100,
  );
  t.same([...units.values()].map((u) => [u.uid, u.name, u.containers.map((x) => x.id)]), [['a', 'x', ['1', '2']], ['a', 'y', ['3']], ['', 'x', ['5']]]);
  t.equal([...units.values()][1].containers[0].unknown, true);
  const plan = planContainerEviction(units, {
    policy: { minAgeMs: 0, maxPerPodContainer: 0, maxContainers: -1 },
    allSourcesReady: true,
    evictNonDeletedPods: false,
    podStateProvider: new FakePodStateProvider({ live: ['a', ''] }),
  });
  t.same(plan.map((x) => x.id), ['2', '1', '3', '5'], 'when a unit goes entirely, Go does not sort it: last listed first');
});
