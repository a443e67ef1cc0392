import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import {
  PodOperation,
  PodSource,
  podFullName,
  buildPodFullName,
  parsePodFullName,
  isStaticPod,
  isMirrorPod,
  getPodSource,
  ConfigSourceAnnotationKey,
  ConfigMirrorAnnotationKey,
  ConfigFirstSeenAnnotationKey,
  ConfigHashAnnotationKey,
  type PodUpdate,
} from '../src/index.js';

const pod = (annotations?: Record<string, string>): V1Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default', uid: 'u1', annotations },
  spec: { containers: [{ name: 'app', image: 'busybox' }] },
});

t.test('annotation keys and sources match the Go kubelet', async (t) => {
  t.equal(ConfigSourceAnnotationKey, 'kubernetes.io/config.source');
  t.equal(ConfigMirrorAnnotationKey, 'kubernetes.io/config.mirror');
  t.equal(ConfigFirstSeenAnnotationKey, 'kubernetes.io/config.seen');
  t.equal(ConfigHashAnnotationKey, 'kubernetes.io/config.hash');
  t.same(PodSource, { File: 'file', HTTP: 'http', API: 'api', All: '*' });
  t.same(Object.values(PodOperation), ['SET', 'ADD', 'DELETE', 'REMOVE', 'UPDATE', 'RECONCILE']);
  const update: PodUpdate = { pods: [pod()], op: PodOperation.ADD, source: PodSource.File };
  t.equal(update.op, 'ADD');
});

t.test('podFullName is name_namespace', async (t) => {
  t.equal(podFullName(pod()), 'web_default');
  t.equal(podFullName({}), '_', 'missing metadata does not throw');
  t.equal(buildPodFullName('a', 'b'), 'a_b');
  t.same(parsePodFullName('web_default'), { name: 'web', namespace: 'default' });
  t.throws(() => parsePodFullName('nounderscore'), /failed to parse the pod full name/);
  t.throws(() => parsePodFullName('a_b_c'));
  t.throws(() => parsePodFullName('_b'));
});

t.test('getPodSource reads the config.source annotation', async (t) => {
  t.equal(getPodSource(pod({ [ConfigSourceAnnotationKey]: 'file' })), 'file');
  t.equal(getPodSource(pod()), undefined);
  t.equal(getPodSource({}), undefined);
});

t.test('isStaticPod: a known source other than the API server', async (t) => {
  t.ok(isStaticPod(pod({ [ConfigSourceAnnotationKey]: PodSource.File })));
  t.ok(isStaticPod(pod({ [ConfigSourceAnnotationKey]: PodSource.HTTP })));
  t.notOk(isStaticPod(pod({ [ConfigSourceAnnotationKey]: PodSource.API })));
  t.notOk(isStaticPod(pod()), 'no source annotation: not static');
});

t.test('isMirrorPod: has the config.mirror annotation', async (t) => {
  t.ok(isMirrorPod(pod({ [ConfigMirrorAnnotationKey]: 'abc123' })));
  t.ok(isMirrorPod(pod({ [ConfigMirrorAnnotationKey]: '' })), 'even when empty');
  t.notOk(isMirrorPod(pod({ [ConfigSourceAnnotationKey]: 'api' })));
  t.notOk(isMirrorPod({}));
});
