// Mirror pods with the in-memory client.
import t from 'tap';
import { RecordingLogger } from '@kubelet-ts/core/testing';
import { BasicMirrorClient, deleteOrphanedMirrorPods, isMirrorPodOf, makeMirrorPod, syncMirrorPod, type NodeRef } from '../src/index.js';
import { FakeKubeClient } from '../src/testing.js';
import { makePod } from './helpers.js';

const node: NodeRef = { name: 'node-1', uid: 'node-uid' };
const staticPod = (hash: string) =>
  makePod('etcd', { uid: 'static-uid', namespace: 'kube-system', annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': hash } });

t.test('makeMirrorPod: the static pod with the mirror annotation and a Node owner', async (t) => {
  const pod = staticPod('h1');
  pod.metadata!.resourceVersion = '7';
  const m = makeMirrorPod(pod, node);
  t.equal(m.metadata?.annotations?.['kubernetes.io/config.mirror'], 'h1');
  t.equal(m.metadata?.annotations?.['kubernetes.io/config.source'], 'file');
  t.same(m.metadata?.ownerReferences, [{ apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: 'node-uid', controller: true }]);
  t.equal(m.metadata?.uid, undefined);
  t.equal(m.metadata?.resourceVersion, undefined);
  t.same(m.spec, pod.spec);
  t.ok(isMirrorPodOf(m, pod));
  t.notOk(isMirrorPodOf(m, staticPod('h2')));
});

t.test('create, AlreadyExists with the same hash, delete with a uid precondition', async (t) => {
  const client = new FakeKubeClient();
  const mc = new BasicMirrorClient({ kubeClient: client, getNode: () => node });
  await mc.createMirrorPod(staticPod('h1'));
  const created = client.getPod('kube-system', 'etcd')!;
  t.equal(created.metadata?.annotations?.['kubernetes.io/config.mirror'], 'h1');
  await mc.createMirrorPod(staticPod('h1'));
  t.equal(client.callsOf('createNamespacedPod').length, 2, 'already there with our hash: fine');
  await t.rejects(mc.createMirrorPod(staticPod('h2')), /already exists/, 'another version is there');
  t.equal(await mc.deleteMirrorPod('etcd_kube-system', 'wrong-uid'), false, 'precondition failed: not deleted');
  t.equal(await mc.deleteMirrorPod('etcd_kube-system', created.metadata!.uid), true);
  t.same(client.callsOf('deleteNamespacedPod').at(-1)!.body, { gracePeriodSeconds: 0, preconditions: { uid: created.metadata!.uid } });
  t.equal(await mc.deleteMirrorPod('etcd_kube-system'), false, 'gone: nothing to delete');
  await t.rejects(new BasicMirrorClient({ kubeClient: client, getNode: () => undefined }).createMirrorPod(staticPod('h1')), /node/);
  const standalone = new BasicMirrorClient({ getNode: () => node });
  await standalone.createMirrorPod(staticPod('h1'));
  t.equal(await standalone.deleteMirrorPod('etcd_kube-system'), false);
});

t.test('syncMirrorPod: create, keep, recreate when stale or being deleted; not without a node', async (t) => {
  const client = new FakeKubeClient();
  const logger = new RecordingLogger();
  const mc = new BasicMirrorClient({ kubeClient: client, getNode: () => node, logger });
  const opts = { getNode: () => node, logger };
  t.equal(await syncMirrorPod(mc, staticPod('h1'), undefined, opts), 'created');
  const m1 = client.getPod('kube-system', 'etcd')!;
  t.equal(await syncMirrorPod(mc, staticPod('h1'), m1, opts), 'none');
  t.equal(await syncMirrorPod(mc, staticPod('h2'), m1, opts), 'recreated', 'hash differs');
  const m2 = client.getPod('kube-system', 'etcd')!;
  t.equal(m2.metadata?.annotations?.['kubernetes.io/config.mirror'], 'h2');
  t.not(m2.metadata?.uid, m1.metadata?.uid);
  t.equal(await syncMirrorPod(mc, staticPod('h2'), { ...m2, metadata: { ...m2.metadata, deletionTimestamp: new Date() } }, opts), 'recreated', 'being deleted');
  client.pods.clear();
  t.equal(await syncMirrorPod(mc, staticPod('h2'), undefined, { getNode: () => undefined, logger }), 'skipped');
  t.equal(await syncMirrorPod(mc, staticPod('h2'), undefined, { getNode: () => ({ ...node, deletionTimestamp: new Date() }), logger }), 'skipped');
  client.failNext('createNamespacedPod', 500);
  t.equal(await syncMirrorPod(mc, staticPod('h2'), undefined, opts), 'skipped');
  t.ok(logger.find('Failed creating a mirror pod for'));
});

t.test('deleteOrphanedMirrorPods', async (t) => {
  const client = new FakeKubeClient();
  const mc = new BasicMirrorClient({ kubeClient: client, getNode: () => node });
  await mc.createMirrorPod(staticPod('h1'));
  await mc.createMirrorPod({ ...staticPod('h1'), metadata: { ...staticPod('h1').metadata, name: 'busy' } });
  const deleted = await deleteOrphanedMirrorPods(mc, ['etcd_kube-system', 'busy_kube-system', 'none_kube-system'], (n) => n.startsWith('busy'));
  t.same(deleted, ['etcd_kube-system']);
  t.ok(client.getPod('kube-system', 'busy'));
});
