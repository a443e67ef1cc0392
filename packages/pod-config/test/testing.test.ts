import t from 'tap';
import { PodOperation } from '@kubelet-ts/core';
import { PodConfig, validatePod } from '../src/index.js';
import { FakePodSource, drainUpdates, makeTestContainer, makeTestManifest, makeTestPod, summarize } from '../src/testing.js';
import { decodeSinglePodManifest } from '../src/index.js';

t.test('makeTestPod builds valid pods with sensible defaults', async (t) => {
  const p = makeTestPod({ name: 'web', containers: ['a', { name: 'b', image: 'nginx:1' }], initContainers: ['init'] });
  t.same(validatePod(p), []);
  t.equal(p.metadata?.uid, 'uid-default-web');
  t.same(
    p.spec?.containers.map((c) => [c.name, c.image]),
    [
      ['a', 'busybox:1.36'],
      ['b', 'nginx:1'],
    ],
  );
  t.equal(p.spec?.initContainers?.[0].name, 'init');
  const q = makeTestPod({
    name: 'x',
    namespace: 'ns',
    uid: 'u',
    labels: { a: 'b' },
    annotations: { c: 'd' },
    nodeName: 'n',
    restartPolicy: 'Never',
    deletionTimestamp: new Date(0),
    deletionGracePeriodSeconds: 5,
    resourceVersion: '7',
    status: { phase: 'Running' },
  });
  t.match(q, {
    metadata: { namespace: 'ns', uid: 'u', labels: { a: 'b' }, annotations: { c: 'd' }, deletionGracePeriodSeconds: 5, resourceVersion: '7' },
    spec: { nodeName: 'n', restartPolicy: 'Never' },
    status: { phase: 'Running' },
  });
  t.equal(makeTestContainer({}).name, 'ctr');
  t.same(decodeSinglePodManifest(JSON.stringify(makeTestManifest('m', { namespace: 'kube-system', containers: ['a', 'b'] })), { kind: 'file', location: 'x', nodeName: 'n' }).errors, []);
});

t.test('FakePodSource pushes each operation through the config', async (t) => {
  const config = new PodConfig();
  const src = new FakePodSource(config);
  t.equal(src.source, 'fake');
  const a = makeTestPod({ name: 'a' });
  await src.set(a);
  await src.add(makeTestPod({ name: 'b' }));
  await src.update({ ...a, status: { phase: 'Running' } });
  await src.delete({ ...a, metadata: { ...a.metadata, deletionTimestamp: new Date(1) }, status: { phase: 'Running' } });
  await src.remove(a);
  await src.push(PodOperation.SET, []);
  t.same(summarize(drainUpdates(config)), ['ADD:a', 'ADD:b', 'RECONCILE:a', 'DELETE:a', 'REMOVE:a', 'REMOVE:b']);
});
