// The kubelet's use of the volume manager: SyncPod waits for volumes (FailedMount while it cannot), mounts
// reach the container config, a terminated pod's volumes go before its status is final; pull secrets and
// env values come from the secret and configMap managers.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { RecordingEventRecorder, RecordingLogger } from '@kubelet-ts/core/testing';
import { makeTestPod } from '@kubelet-ts/pod-config/testing';
import { FakeApiObjects, FakeVolumeManager } from '@kubelet-ts/volume-manager/testing';
import { Tokens, type KubeletOptions } from '../src/index.js';
import { configMapAndSecretSource, criMountsFor, pullSecretsFor, referencesObject } from '../src/volumes.js';
import { setupKubelet } from './kubelet-env.js';

function podWithVolumes(name: string): V1Pod {
  const pod = makeTestPod({ name, containers: ['app'] });
  pod.spec!.volumes = [
    { name: 'scratch', emptyDir: {} },
    { name: 'info', downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
  ];
  pod.spec!.containers[0].volumeMounts = [
    { name: 'scratch', mountPath: '/scratch' },
    { name: 'info', mountPath: '/etc/info' },
  ];
  return pod;
}

/** Relists and moves time in half-second steps until cond holds (at most limitMs of fake time). */
async function until(env: ReturnType<typeof setupKubelet>, cond: () => boolean, limitMs = 30_000): Promise<void> {
  for (let elapsed = 0; elapsed < limitMs && !cond(); elapsed += 500) {
    await env.relist();
    await env.advance(500);
    // Fake time moves on if cond needs it: a short real wait per step.
    await env.settle(cond, 200);
  }
}

function withFakeVolumes(volumes: FakeVolumeManager, recorder = new RecordingEventRecorder()) {
  const env = setupKubelet({
    register: (c) => {
      c.register<NonNullable<KubeletOptions['createVolumeManager']>>(Tokens.VolumeManagerFactory, { useValue: () => volumes });
      c.register(Tokens.EventRecorder, { useValue: recorder });
    },
  });
  return { ...env, recorder, volumes };
}

t.test('SyncPod waits for the pod\'s volumes before the runtime starts anything', async (t) => {
  const env = withFakeVolumes(new FakeVolumeManager());
  t.teardown(env.stop);
  const pod = podWithVolumes('web');
  await env.source.add(pod);
  await env.relist();
  await env.advance(300);
  await env.settle(() => env.runtime.syncPodCalls.length > 0);
  t.same(env.volumes.waitedForMount, [pod.metadata!.uid!]);
  t.equal(env.runtime.syncPodCalls.length, 1, 'then the runtime syncs it');
});

t.test('volumes that cannot be mounted: FailedMount with Go\'s message, no container started, retried', async (t) => {
  const volumes = new FakeVolumeManager();
  volumes.mountError = new Error('unmounted volumes=[config], unattached volumes=[config]: timed out waiting for the condition');
  const env = withFakeVolumes(volumes);
  t.teardown(env.stop);
  const pod = podWithVolumes('web');
  await env.source.add(pod);
  await env.relist();
  await env.advance(300);
  await env.settle(() => env.recorder.events.some((e) => e.reason === 'FailedMount'));
  const event = env.recorder.events.find((e) => e.reason === 'FailedMount');
  t.equal(event?.type, 'Warning');
  t.equal(event?.message, 'Unable to attach or mount volumes: unmounted volumes=[config], unattached volumes=[config]: timed out waiting for the condition');
  t.equal(env.runtime.syncPodCalls.length, 0, 'no container starts without its volumes');
  volumes.mountError = undefined;
  await until(env, () => env.runtime.syncPodCalls.length > 0);
  t.equal(env.runtime.syncPodCalls.length, 1, 'the pod worker retries and the pod starts once its volumes are there');
});

t.test('a deleted pod\'s volumes are torn down before its termination is final', async (t) => {
  const env = withFakeVolumes(new FakeVolumeManager());
  t.teardown(env.stop);
  const pod = podWithVolumes('web');
  await env.source.add(pod);
  await env.relist();
  await env.advance(300);
  await env.settle(() => env.runtime.syncPodCalls.length > 0);
  await env.source.remove(pod);
  await until(env, () => env.volumes.waitedForUnmount.length > 0);
  t.same(env.volumes.waitedForUnmount, [pod.metadata!.uid]);
  await env.source.set(); // every source has spoken: housekeeping runs
  await until(env, () => env.volumes.cleanups.length > 0);
  t.ok(env.volumes.cleanups.length > 0, 'housekeeping asks for orphaned pod directories to be cleaned up');
});

t.test('the real volume manager: emptyDir and downwardAPI set up under the root dir, removed with the pod', async (t) => {
  const env = setupKubelet();
  t.teardown(env.stop);
  const pod = podWithVolumes('web');
  const uid = pod.metadata!.uid!;
  await env.source.add(pod);
  await env.relist();
  await env.advance(300);
  await env.settle(() => env.runtime.syncPodCalls.length > 0);
  t.equal(env.runtime.syncPodCalls.length, 1, 'started once the volumes were set up');
  const rootDir = env.container.resolve<{ rootDir: string }>(Tokens.Config).rootDir;
  const volumesDir = join(rootDir, 'pods', uid, 'volumes');
  t.same(readdirSync(volumesDir).sort(), ['kubernetes.io~downward-api', 'kubernetes.io~empty-dir']);
  t.equal(readFileSync(join(volumesDir, 'kubernetes.io~downward-api', 'info', 'name'), 'utf8'), 'web', 'the downward API file has the pod name');
  const mounts = await criMountsFor(env.kubelet.volumeManager as never, pod, pod.spec!.containers[0], new Map());
  t.same(
    mounts.map((m) => [m.containerPath, m.hostPath, m.readonly]),
    [
      ['/scratch', join(volumesDir, 'kubernetes.io~empty-dir', 'scratch'), false],
      ['/etc/info', join(volumesDir, 'kubernetes.io~downward-api', 'info'), true],
    ],
    'CRI mounts: a downwardAPI volume is read-only in the container',
  );
  await env.source.remove(pod);
  await until(env, () => !existsSync(join(rootDir, 'pods', uid)));
  t.notOk(existsSync(join(rootDir, 'pods', uid)), 'the pod directory is gone with its volumes');
});

t.test('env values and pull secrets come from the managers; a missing object is not found, not an error', async (t) => {
  const api = new FakeApiObjects();
  api.setConfigMap({ metadata: { namespace: 'ns', name: 'cm' }, data: { a: '1' } });
  api.setSecret({ metadata: { namespace: 'ns', name: 's' }, data: { token: Buffer.from('sekret').toString('base64') } });
  api.setSecret({ metadata: { namespace: 'ns', name: 'pull' }, type: 'kubernetes.io/dockerconfigjson', data: {} });
  const source = configMapAndSecretSource(api, api)!;
  t.same(await source.getConfigMap('ns', 'cm'), { a: '1' });
  t.same(await source.getSecret('ns', 's'), { token: 'sekret' }, 'secret data decoded');
  t.equal(await source.getConfigMap('ns', 'missing'), undefined);
  t.equal(configMapAndSecretSource(undefined, undefined), undefined, 'standalone: none');

  const logger = new RecordingLogger();
  const pull = pullSecretsFor(api, logger)!;
  const pod = makeTestPod({ name: 'p', containers: ['c'] });
  pod.metadata!.namespace = 'ns';
  pod.spec!.imagePullSecrets = [{ name: 'pull' }, { name: 'absent' }];
  t.same((await pull(pod)).map((s) => s.metadata?.name), ['pull']);
  t.ok(logger.find('Unable to retrieve pull secret, the image pull may not succeed.'));

  pod.spec!.containers[0].env = [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'cm', key: 'a' } } }];
  t.ok(referencesObject(pod, 'configmap', 'ns', 'cm'));
  t.notOk(referencesObject(pod, 'configmap', 'other', 'cm'), 'another namespace');
  t.ok(referencesObject(pod, 'secret', 'ns', 'pull'), 'image pull secrets count');
});
