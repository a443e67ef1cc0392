import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { emptyPodStatus, PodCache } from '@kubelet-ts/core';
import { FakePodWorkers, RecordingPodSyncer } from '../src/testing.js';

const pod = (uid: string): V1Pod => ({ metadata: { uid, name: uid, namespace: 'default' } });

t.test('FakePodWorkers records updates, syncs through the syncer and answers from its sets', async (t) => {
  const syncer = new RecordingPodSyncer();
  syncer.terminal.set('done', true);
  const cache = new PodCache();
  cache.set('a', { ...emptyPodStatus('a'), name: 'a' }, undefined, 1);
  const workers = new FakePodWorkers({ syncer, cache });
  workers.updatePod({ updateType: 'create', pod: pod('a') });
  workers.updatePod({ updateType: 'create', pod: pod('done') });
  workers.updatePod({ updateType: 'kill', pod: pod('b') });
  workers.updatePod({ updateType: 'kill', runningPod: { id: 'r', name: 'r', namespace: 'x', createdAt: 0, containers: [], sandboxes: [] } });
  syncer.failNext('syncPod');
  workers.updatePod({ updateType: 'update', pod: pod('c') });
  await workers.settle();
  t.equal(workers.updates.length, 5);
  t.same(workers.triggeredDeletion, ['b', 'r']);
  t.same(workers.triggeredTerminal, ['done']);
  t.equal(workers.syncErrors.length, 1);
  t.equal(syncer.callsOf('syncPod', 'a')[0].podStatus?.name, 'a', 'the cached status is passed');

  workers.terminated.add('a');
  workers.running.add('b');
  workers.terminatingStaticPods.add('etcd_kube-system');
  t.ok(workers.isPodKnownTerminated('a'));
  t.ok(workers.couldHaveRunningContainers('b'));
  t.ok(workers.isPodForMirrorPodTerminatingByFullName('etcd_kube-system'));
  t.notOk(workers.shouldPodContentBeRemoved('a'));
  t.same([...workers.syncKnownPods([pod('a')])], [['a', { state: 'sync', orphan: false, hasConfig: true, static: false }]]);
  workers.knownPods = () => new Map();
  t.same([...workers.syncKnownPods([pod('a')])], []);
  t.equal(workers.syncKnownPodsCalls.length, 2);
});

t.test('RecordingPodSyncer holds calls until released or aborted', async (t) => {
  const syncer = new RecordingPodSyncer({ clock: { now: () => 42 } });
  const release = syncer.hold('syncTerminatingPod');
  const controller = new AbortController();
  const first = syncer.syncTerminatingPod(pod('a'), emptyPodStatus('a'), 5, undefined, controller.signal);
  const second = syncer.syncTerminatingPod(pod('b'), emptyPodStatus('b'), 5, undefined, new AbortController().signal);
  controller.abort();
  await t.rejects(first, { name: 'AbortError' });
  release();
  await second;
  t.same(syncer.calls.map((c) => [c.uid, c.outcome, c.at]), [['a', 'aborted', 42], ['b', 'ok', 42]]);
  await syncer.syncTerminatingRuntimePod({ id: 'r', name: 'r', namespace: 'x', createdAt: 0, containers: [], sandboxes: [] }, new AbortController().signal);
  await syncer.syncTerminatedPod(pod('a'), emptyPodStatus('a'), new AbortController().signal);
  t.same(syncer.methods(), ['syncTerminatingPod', 'syncTerminatingPod', 'syncTerminatingRuntimePod', 'syncTerminatedPod']);
  t.same(syncer.methods('r'), ['syncTerminatingRuntimePod']);
});
